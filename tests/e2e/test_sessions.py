"""The Sessions page in a real browser, under the Content-Security-Policy: Alice's uploaded
session is listed, read as a conversation, found by search with its neighbours, shared with the
project (then Bob sees it), and forgotten (after the confirm dialog)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, expect

from dashboard.principals import principal_for_user
from tests import live
from tests.conftest import Tenancy
from tests.e2e.conftest import shot
from tests.e2e.test_csp import Watcher
from tests.e2e.test_journeys import signed_in
from tests.transcripts.test_sessions import CONVERSATION
from transcripts.services import session_add_turns, session_upsert

pytestmark = pytest.mark.slow


def test_sessions_page_lists_reads_searches_shares_and_forgets(
    browser: Browser, live_server: live.LiveServer, tenancy: Tenancy
) -> None:
    alice, bob = tenancy.alice, tenancy.bob
    principal = principal_for_user(alice.user, alice.project)
    assert principal is not None
    session_upsert(
        principal=principal,
        client="claude-code",
        session_id="s-1",
        payload={"title": "Deploy chat", "device": "alice-laptop", "started_at": "2026-03-01T09:00:00Z"},
    )
    session_add_turns(principal=principal, client="claude-code", session_id="s-1", payload={"turns": CONVERSATION})
    project = alice.project.pk

    context = signed_in(browser, live_server.url, alice.user)
    watcher = Watcher(context)
    page = context.new_page()
    watcher.visit(page, f"/p/{project}/sessions/")
    row = page.get_by_test_id("sessions").locator("tbody tr")
    expect(row).to_have_count(1)
    for text in ("Deploy chat", "claude-code", "alice-laptop", "6", "1 Mar 2026, 09:00"):
        expect(row).to_contain_text(text)
    shot(page, "sessions")

    # Search within sessions: the hit comes with its neighbours.
    page.fill("input[name=q]", "pin pgvector Dockerfile")
    page.get_by_role("button", name="Search sessions").click()
    hits = page.get_by_test_id("session-hits")
    expect(hits).to_contain_text("pin pgvector to 0.8")
    expect(hits).to_contain_text("No, that's not needed.")  # the turn before
    expect(hits).to_contain_text("builds with pgvector 0.8.0")  # the turn after
    watcher.check(page)

    # Read it as a conversation, then share it with the project.
    page.get_by_role("link", name="Deploy chat").first.click()
    expect(page.get_by_test_id("turns").locator(".turn")).to_have_count(6)
    expect(page.locator("#turn-1")).to_contain_text("No, that's not needed.")
    expect(page.get_by_test_id("visibility")).to_have_text("only you")
    page.get_by_role("button", name="Share with project").click()
    expect(page.get_by_test_id("visibility")).to_have_text("shared with the project")
    shot(page, "session")
    watcher.check(page)
    session_url = page.url

    # Bob now sees it, without the share button (it is Alice's).
    bob_context = signed_in(browser, live_server.url, bob.user)
    bob_page = bob_context.new_page()
    bob_page.goto(session_url)
    expect(bob_page.locator("#turn-5")).to_contain_text("app-staging")
    expect(bob_page.get_by_role("button", name="Make private")).to_have_count(0)
    bob_context.close()

    # Forget asks first (data-confirm; the watcher accepts), then the list is empty.
    page.get_by_role("button", name="Forget this session").click()
    expect(page.get_by_text("Forgotten: the session left search")).to_be_visible()
    expect(page.get_by_text("No sessions yet.")).to_be_visible()
    watcher.check(page)
    context.close()
    assert watcher.problems == []
