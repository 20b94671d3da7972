"""Issue #42, "Done when": a person who picked Русский (or Français) meets none of the English our
catalogue translates on any dashboard page they can reach — every page of an account and of a
project, the Data pages, the sign-in settings, an error page — for an owner, a member and an
auditor. A message of the catalogue showing in English means a page bypassed the translation."""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Iterator

import pytest
from django.test import Client
from django.urls import reverse

from accounts.keys import resolve_key
from accounts.models import ALL_SCOPES, User
from ledger import services as ledger_services
from memories import services as memory_services
from mmw import catalogues
from orgs import services as org_services
from orgs.models import Membership
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.factories import issue_key, on_plan

pytestmark = pytest.mark.django_db

PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%%")
TAG = re.compile(r"<[^>]+>")
# Code, and text a page marks as English on purpose (``lang="en"``: what an agent read, a stored reason).
HIDDEN = re.compile(
    r"<(script|style|pre|code)\b.*?</\1>|<(span|td) class=\"[^\"]*mono[^\"]*\">.*?</\2>"
    r"|<(span|td|option) [^>]*lang=\"en\"[^>]*>.*?</\3>",
    re.DOTALL,
)
# The reference's pages not translated are English Markdown, titles included, served as English
# (``lang="en"``, with a notice in the reader's language): the crawler reads the frame around them,
# not their text, nor the contents' list of titles. A page written in the reader's language (the
# "how MMW works" guide, remember, forget) is read whole, its article included.
ARTICLE = re.compile(r'<article class="docs-page" lang="en">.*?</article>|<nav class="docs-nav".*?</nav>', re.DOTALL)
SPOKEN = re.compile(r'\s(?:title|placeholder|aria-label|alt|data-confirm|hx-confirm)="([^"]*)"')


def english_fragments(language: str) -> dict[str, str]:
    """The English pieces (between placeholders and tags) of every message the catalogue
    translates differently, long enough to mean something: fragment -> its msgid. A piece the
    translations themselves use (a code like ``memory:read``, a name like Claude Code or Memory
    Guard, a word both languages share like "page") proves nothing and is left out."""
    catalog = catalogues.read(language)
    translated = " | ".join(
        s for m in catalog if m.id for s in (m.string if isinstance(m.string, tuple | list) else (m.string,)) if s
    )
    found: dict[str, str] = {}
    for message in catalog:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple | list) else (message.id,)
        strings = message.string if isinstance(message.string, tuple | list) else (message.string,)
        for msgid in ids:
            if msgid in strings:
                continue
            for piece in PLACEHOLDER.split(TAG.sub("\x00", msgid)):
                for fragment in piece.split("\x00"):
                    fragment = fragment.strip(" .,:;()—·→←…")
                    if len(fragment) < 4 or not re.search(r"[A-Za-z]{3}", fragment):
                        continue
                    if not re.search(rf"(?<![\w-]){re.escape(fragment)}(?![\w-])", translated):
                        found.setdefault(fragment, msgid)
    return found


def visible(page: str) -> str:
    page = ARTICLE.sub(" ", HIDDEN.sub(" ", page))
    spoken = " | ".join(SPOKEN.findall(page))
    text = TAG.sub(" | ", page.split("<body", 1)[-1])
    return html.unescape(re.sub(r"\s+", " ", f"{text} | {spoken}"))


def untranslated(page: str, fragments: dict[str, str]) -> list[str]:
    text = visible(page)
    # A word inside a dotted or underscored code (account.created, api_key) is the code, not English.
    return sorted(f for f in fragments if re.search(rf"(?<![\w.-]){re.escape(f)}(?![\w.-])", text))


def pages(tenancy: Tenancy, memory_id: str) -> Iterator[str]:
    tenant, project = tenancy.alice.account.tenant_id, tenancy.alice.project.pk
    for name in ("projects", "usage", "billing", "members", "departments", "audit", "organization-settings"):
        yield reverse(f"dashboard:{name}", args=[tenant])
    for name in ("memories", "sessions", "ledger", "workspaces", "keys", "settings", "forget-source"):
        yield reverse(f"dashboard:{name}", args=[project])
    yield reverse("dashboard:memories", args=[project]) + "?q=nothing-matches-this&why=on"
    yield reverse("dashboard:memories", args=[project]) + "?q=INV-42&why=on"
    yield reverse("dashboard:memory", args=[project, memory_id])
    yield reverse("dashboard:connected-apps")
    yield reverse("dashboard:docs")
    for name in ("how_mmw_works", "remember", "forget", "search"):
        yield reverse("dashboard:docs-page", args=[name])
    yield reverse("datarights:home")
    yield reverse("datarights:account", args=[tenant])
    yield reverse("datarights:webhooks", args=[project])
    yield reverse("datarights:import", args=[project])
    for name in ("account_email", "account_change_password", "mfa_index", "usersessions_list"):
        yield reverse(name)
    yield reverse("dashboard:memories", args=[uuid.uuid4()])  # the 404 page


@pytest.fixture
def world(tenancy: Tenancy) -> str:
    """Alice's organisation on a plan with members, a department, records in conflict, a ledger
    entry and a reminder, an open invitation; returns a record's id."""
    on_plan(tenancy.alice.account)
    dana, _ = User.objects.get_or_create(email="dana@example.com")
    Membership.objects.create(account=tenancy.alice.account, user=dana, role=Membership.Role.AUDITOR)
    org_services.department_create(account=tenancy.alice.account, actor=tenancy.alice.user, name="finance")
    org_services.invitation_create(account=tenancy.alice.account, actor=tenancy.alice.user, email="eve@example.com")
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    first = memory_services.memory_remember(
        principal=principal, payload={"content": "INV-42: 300 EUR, 2027-05-07", "fact_key": "invoice.due"}
    )
    memory_services.memory_remember(
        principal=principal, payload={"content": "INV-42: 300 EUR, 2027-05-10", "fact_key": "invoice.due"}
    )
    ledger = resolve_key(issue_key(tenancy.alice.user, tenancy.alice.project, scopes=ALL_SCOPES))
    assert ledger is not None
    ledger_services.ledger_record(
        principal=ledger, payload={"kind": "transaction", "amount": "-12.50", "currency": "EUR", "counterparty": "Cafe"}
    )
    ledger_services.ledger_record(
        principal=ledger,
        payload={"kind": "reminder", "amount": "-900", "currency": "EUR", "due_at": "2099-01-01T09:00:00Z"},
    )
    return str(first["id"])


@pytest.mark.parametrize("language", catalogues.LANGUAGES)
@pytest.mark.parametrize("role", ["owner", "member", "auditor"])
def test_no_page_shows_a_translated_message_in_english(tenancy: Tenancy, world: str, language: str, role: str) -> None:
    person = {
        "owner": tenancy.alice.user,
        "member": tenancy.bob.user,
        "auditor": User.objects.get(email="dana@example.com"),
    }[role]
    person.language = language
    person.save(update_fields=["language"])
    client: Client = client_for(person)
    fragments = english_fragments(language)
    seen, english = 0, {}
    for url in pages(tenancy, world):
        response = client.get(url, follow=True)
        assert response.status_code in (200, 403, 404), (url, response.status_code)
        page = response.content.decode()
        assert f'<html lang="{language}">' in page, url
        if url.startswith("/docs/") and url.rstrip("/").rsplit("/", 1)[-1] in ("how_mmw_works", "remember", "forget"):
            assert f'<article class="docs-page" lang="{language}">' in page, url  # served translated
        seen += 1
        left = untranslated(page, fragments)
        if left:
            english[url] = left
    assert seen >= 25
    assert not english, f"{role} in {language}: English left on {len(english)} page(s): {english}"


def test_the_crawler_sees_english_when_a_page_is_not_translated(tenancy: Tenancy) -> None:
    fragments = english_fragments("ru")
    assert untranslated("<body><h1>Projects</h1></body>", fragments) == ["Projects"]
    assert untranslated("<body><h1>Проекты</h1></body>", fragments) == []
    assert untranslated('<body><button title="Show the signals that ranked each result"></button></body>', fragments)
