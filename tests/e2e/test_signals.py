"""The trust signals in a real browser: a blind divergent write shows as a conflict that "Keep this
version" resolves (audited), a record whose source has a newer hash shows as stale with the
reason, and a search about nothing stored says "Nothing matches" instead of listing everything."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, expect

from accounts.models import AuditEvent
from dashboard.principals import principal_for_user
from memories.services import memory_remember
from tests import live
from tests.conftest import Tenancy
from tests.e2e.conftest import shot
from tests.e2e.test_journeys import signed_in

pytestmark = pytest.mark.slow


def test_conflict_is_resolved_by_keeping_a_version_stale_shows_its_reason_and_search_has_a_floor(
    browser: Browser, live_server: live.LiveServer, tenancy: Tenancy
) -> None:
    alice = tenancy.alice
    principal = principal_for_user(alice.user, alice.project)
    assert principal is not None
    memory_remember(principal=principal, payload={"content": "deploys go out on Tuesdays", "fact_key": "deploy-day"})
    memory_remember(principal=principal, payload={"content": "deploys go out on Thursdays", "fact_key": "deploy-day"})
    memory_remember(
        principal=principal,
        payload={"content": "the runbook says restart workers first", "source_id": "runbook.md", "source_hash": "h1"},
    )
    memory_remember(
        principal=principal,
        payload={"content": "the runbook says drain the queue first", "source_id": "runbook.md", "source_hash": "h2"},
    )
    project = alice.project.pk
    context = signed_in(browser, live_server.url, alice.user)
    page = context.new_page()

    # Search has a floor: a query about nothing stored lists nothing.
    page.goto(f"/p/{project}/?q=how+often+to+feed+a+sourdough+starter")
    expect(page.get_by_text(re.compile("Nothing matches"))).to_be_visible()
    page.goto(f"/p/{project}/?q=deploys+Thursdays")
    expect(page.get_by_role("link", name=re.compile("Thursdays"))).to_be_visible()

    # Stale: the older runbook record says why.
    page.goto(f"/p/{project}/")
    page.get_by_role("link", name=re.compile("restart workers first")).click()
    expect(page.get_by_test_id("status-reason")).to_contain_text("stale")
    shot(page, "stale")

    # Conflict: both versions side by side; keeping one supersedes the other.
    page.goto(f"/p/{project}/")
    page.get_by_role("link", name=re.compile("Thursdays")).click()
    expect(page.get_by_text("Conflict — the versions disagree")).to_be_visible()
    page.get_by_test_id("keep").click()
    expect(page.get_by_text(re.compile("Kept as version 3"))).to_be_visible()
    expect(page.get_by_text("Conflict — the versions disagree")).to_have_count(0)
    expect(page.get_by_test_id("record")).to_contain_text("deploys go out on Thursdays")
    assert AuditEvent.objects.filter(action="memory.version_kept").exists()
    context.close()
