"""Issue #42: a domain error a page shows (a flash message, a form error) reads in the page's
language, while the same error answered to an agent (REST, MCP) keeps its English text, byte for
byte. ``interfaces.people_errors`` translates at the page's edge."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import translation

from accounts import services as accounts
from datarights import deletion
from interfaces.people_errors import TEXTS, for_people
from mmw import errors, text
from mmw.errors import Conflict, InvalidInput, Template
from orgs import services as org_services
from orgs.services import departments, invitations, memberships, project_access
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.factories import on_plan
from webhooks import services as webhooks

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["accounts", "orgs", "datarights", "webhooks", "mmw", "billing"]
MODULES = [text, accounts, departments, invitations, memberships, project_access, deletion, webhooks]
ERRORS = {
    name for name, value in vars(errors).items() if isinstance(value, type) and issubclass(value, errors.MMWError)
}
pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("en", "a department named 'finance' already exists"),
        ("ru", "Отдел с названием 'finance' уже есть."),
        ("fr", "Un département nommé 'finance' existe déjà."),
    ],
)
def test_a_raised_text_reads_in_the_pages_language(language: str, expected: str) -> None:
    with translation.override(language):
        assert for_people(Conflict(departments.DEPARTMENT_EXISTS, name="'finance'")) == expected


def test_a_refused_name_names_its_field_in_the_readers_language() -> None:
    with translation.override("ru"):
        assert for_people(InvalidInput(text.EMPTY, field="project name")) == (
            "Поле «название проекта» не может быть пустым."
        )
        assert for_people(InvalidInput(text.TOO_LONG, field="key name", limit=200)) == (
            "Поле «название ключа» длиннее 200 символов."
        )


def test_the_services_raise_from_their_templates() -> None:
    """The checks pages meet raise from the table's templates (so they are translated), with
    the same English text as ever."""
    with pytest.raises(InvalidInput) as empty:
        text.clean_label("project name", "  ")
    assert (empty.value.template, empty.value.message) == (text.EMPTY, "project name must not be empty")
    with pytest.raises(InvalidInput) as email:
        text.clean_email("not an address")
    assert (email.value.template, email.value.message) == (
        text.INVALID_EMAIL,
        "invalid e-mail address: 'not an address'",
    )
    with translation.override("fr"):
        assert for_people(empty.value) == "« nom du projet » ne peut pas être vide."


def test_an_error_from_no_template_of_the_table_stays_as_it_is() -> None:
    with translation.override("fr"):
        assert for_people(InvalidInput("something new went wrong")) == "something new went wrong"
        # the same words as a table's text, raised without its template: not guessed at
        assert for_people(InvalidInput("invitation link is invalid")) == "invitation link is invalid"
        assert for_people(InvalidInput(Template("invitation link is invalid"))) == "invitation link is invalid"


def test_english_is_the_message_itself_byte_for_byte() -> None:
    with translation.override("en"):
        for error in (
            InvalidInput(invitations.LINK_INVALID),
            Conflict(accounts.PROJECT_EXISTS, name="'x'"),
            Conflict(deletion.LAST_OWNER, name="A & B"),
        ):
            assert for_people(error) == error.message
        assert Conflict(deletion.LAST_OWNER, name="A & B").message == (
            "you are the last owner of A & B: make someone else an owner, or delete that organisation first"
        )


def test_a_template_rendered_is_the_text_raised_before_templates() -> None:
    """What agents read did not change when the raise sites moved to templates (docs/reference/errors.md)."""
    assert Conflict(invitations.ALREADY_MEMBER_DEACTIVATED, email="a@b.c").message == (
        "a@b.c is already a member of this organization (deactivated: reactivate the membership instead)"
    )
    assert InvalidInput(webhooks.URL_TOO_LONG, limit=2000).message == "url exceeds maximum length of 2000"
    assert InvalidInput(text.WILDCARD_IN_NAME, field="workspace").message == "workspace must not contain '*'"
    with pytest.raises(TypeError):
        InvalidInput("plain text", field="x")


def test_every_translation_was_written_for_its_templates_current_text() -> None:
    """Rewording a template (what the raise site says, by construction) fails here until its row
    is looked at again: the translation may no longer say the same thing."""
    stale = [(template.text, english) for template, (english, _text) in TEXTS.items() if template.text != english]
    assert not stale, f"reworded since translated (update the row and its translation): {stale}"


@pytest.mark.parametrize("language", ["ru", "fr"])
def test_every_template_of_the_table_reads_translated_with_its_values(language: str) -> None:
    for template in TEXTS:
        names = re.findall(r"%\((\w+)\)s", template.text)
        values = {name: f"<{name}-value>" for name in names}
        error = InvalidInput(template, **values)
        with translation.override(language):
            shown = for_people(error)
        assert shown != error.message, template.text
        for name in names:
            if name != "field":
                assert f"<{name}-value>" in shown, (template.text, shown)


def test_every_template_of_the_table_is_raised_in_the_code() -> None:
    """A row whose template no raise site uses any more is dead: its module names it outside
    its own definition."""
    code = "\n".join(
        p.read_text() for source in SOURCES for p in (ROOT / source).rglob("*.py") if "migrations" not in p.parts
    )
    names = {
        template: name
        for module in MODULES
        for name, template in vars(module).items()
        if isinstance(template, Template) and template in TEXTS
    }
    assert set(names) == set(TEXTS)
    unused = [name for name in names.values() if len(re.findall(rf"\b{name}\b", code)) < 2]
    assert not unused, f"never raised: {unused}"


def test_no_plain_text_raise_says_what_a_template_says() -> None:
    """A text of the table raised as a plain string (or an f-string) in the modules that raise
    them would reach pages in English: raise it from its template."""
    patterns = [
        re.compile(".+".join(re.escape(part) for part in re.split(r"%\(\w+\)s", t.text)), re.DOTALL) for t in TEXTS
    ]
    found = []
    for source in SOURCES:
        for path in (ROOT / source).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args):
                    continue
                if node.func.id not in ERRORS:
                    continue
                message = node.args[0]
                if isinstance(message, ast.Constant) and isinstance(message.value, str):
                    sample = message.value
                elif isinstance(message, ast.JoinedStr):
                    sample = "".join(str(p.value) if isinstance(p, ast.Constant) else "X" for p in message.values)
                else:
                    continue
                if any(p.fullmatch(sample) for p in patterns):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {sample}")
    assert not found, found


@pytest.mark.parametrize("language", ["ru", "fr"])
def test_the_departments_page_shows_the_refusal_translated(tenancy: Tenancy, language: str) -> None:
    on_plan(tenancy.alice.account)
    org_services.department_create(account=tenancy.alice.account, actor=tenancy.alice.user, name="finance")
    alice = tenancy.alice.user
    alice.language = language
    alice.save(update_fields=["language"])
    url = reverse("dashboard:departments", args=[tenancy.alice.account.tenant_id])
    page = client_for(alice).post(url, {"action": "create", "name": "finance"}, follow=True).content.decode()
    assert "already exists" not in page
    with translation.override(language):
        translated = translation.gettext("A department named %(name)s already exists.") % {"name": "'finance'"}
    assert translated.replace("'", "&#x27;") in page
