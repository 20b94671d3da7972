"""The Sessions pages outside a browser: another account's member gets 404 on every one of
them, and a member cannot share someone else's session."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.principals import principal_for_user
from tests.conftest import Tenancy
from tests.transcripts.test_sessions import CONVERSATION
from transcripts.models import Session
from transcripts.services import session_add_turns, session_upsert

pytestmark = pytest.mark.django_db


def alices_session(tenancy: Tenancy) -> Session:
    principal = principal_for_user(tenancy.alice.user, tenancy.alice.project)
    assert principal is not None
    session_upsert(principal=principal, client="codex", session_id="x", payload={"title": "Mine"})
    session_add_turns(principal=principal, client="codex", session_id="x", payload={"turns": CONVERSATION})
    return Session.objects.get()


def test_charlie_gets_404_on_every_sessions_page_of_alices_project(tenancy: Tenancy) -> None:
    session = alices_session(tenancy)
    client = Client()
    client.force_login(tenancy.charlie.user)
    base = f"/p/{tenancy.alice.project.pk}/sessions/"
    assert client.get(base).status_code == 404
    assert client.get(f"{base}{session.pk}/").status_code == 404
    assert client.post(f"{base}{session.pk}/share", {"shared": "1"}).status_code == 404
    assert client.post(f"{base}{session.pk}/forget").status_code == 404
    session.refresh_from_db()
    assert session.forgotten_at is None
    assert not session.shared_with_project


def test_bob_neither_sees_nor_shares_nor_forgets_alices_private_session(tenancy: Tenancy) -> None:
    session = alices_session(tenancy)
    client = Client()
    client.force_login(tenancy.bob.user)
    base = f"/p/{tenancy.alice.project.pk}/sessions/"
    listing = client.get(base)
    assert listing.status_code == 200
    assert b"Mine" not in listing.content
    assert client.get(f"{base}{session.pk}/").status_code == 404
    assert client.post(f"{base}{session.pk}/share", {"shared": "1"}).status_code == 404
    client.post(f"{base}{session.pk}/forget")
    session.refresh_from_db()
    assert session.forgotten_at is None
    assert not session.shared_with_project


def test_alice_lists_reads_and_searches_her_session(tenancy: Tenancy) -> None:
    session = alices_session(tenancy)
    client = Client()
    client.force_login(tenancy.alice.user)
    base = f"/p/{tenancy.alice.project.pk}/sessions/"
    assert b"Mine" in client.get(base).content
    assert b"app-staging" in client.get(f"{base}{session.pk}/").content
    found = client.get(base, {"q": "staging systemd unit"})
    assert b"app-staging" in found.content
