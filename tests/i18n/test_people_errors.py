"""Issue #42: a domain error a page shows (a flash message, a form error) reads in the page's
language, while the same error answered to an agent (REST, MCP) keeps its English text, byte for
byte. ``interfaces.people_errors`` translates at the page's edge."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import translation

from interfaces.people_errors import TEXTS, for_people
from mmw.errors import Conflict, InvalidInput
from orgs import services as org_services
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.factories import on_plan

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["accounts", "orgs", "datarights", "webhooks", "mmw", "memories", "billing"]
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
        assert for_people(Conflict("a department named 'finance' already exists")) == expected


def test_a_refused_name_names_its_field_in_the_readers_language() -> None:
    with translation.override("ru"):
        assert (
            for_people(InvalidInput("project name must not be empty"))
            == "Поле «название проекта» не может быть пустым."
        )
        assert for_people(InvalidInput("key name exceeds maximum length of 200")) == (
            "Поле «название ключа» длиннее 200 символов."
        )


def test_a_text_the_table_does_not_know_stays_as_it_is() -> None:
    with translation.override("fr"):
        assert for_people(InvalidInput("something new went wrong")) == "something new went wrong"


def test_english_is_the_message_itself_byte_for_byte() -> None:
    with translation.override("en"):
        for text in (
            "invitation link is invalid",
            "a project named 'x' already exists",
            "you are the last owner of A & B: x",
        ):
            assert for_people(InvalidInput(text)) == text


def test_every_text_of_the_table_is_raised_somewhere_in_the_code() -> None:
    """A message reworded in a service would silently fall back to English: each pattern's longest
    literal run must still be in the code that raises it."""
    code = "\n".join(
        p.read_text() for source in SOURCES for p in (ROOT / source).rglob("*.py") if "migrations" not in p.parts
    )
    stale = []
    for pattern, _text in TEXTS:
        literal = max(re.split(r"\(\?P<\w+>[^)]*\)|\\[()*]|\\S\+|[()]", pattern.pattern), key=len).strip()
        if literal not in code:
            stale.append(pattern.pattern)
    assert not stale, f"no longer raised (reworded?): {stale}"


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
