"""The dashboard in a real browser: a newcomer's first five minutes, an organisation with an
auditor, and the billing banner. Screenshots of the main pages land in var/screenshots/
(`make screenshots` refreshes docs/screenshots/)."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.core import mail
from django.test import Client
from playwright.sync_api import Browser, BrowserContext, expect

from accounts import services
from accounts.models import User
from billing.models import Subscription
from dashboard.principals import principal_for_user
from memories.services import memory_remember
from tests import live
from tests.e2e.conftest import shot
from tests.factories import on_plan

pytestmark = pytest.mark.slow


def mcp(base: str, key: str, tool: str, args: dict[str, Any]) -> tuple[bool, Any]:
    """One MCP call with the official client, off the browser's thread (Playwright's sync API
    owns an event loop there)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(live.mcp_call, base, key, tool, args).result(timeout=60)


def signed_in(browser: Browser, base: str, user: User) -> BrowserContext:
    client = Client()
    client.force_login(user)
    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 800})
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}])
    return context


def test_newcomer_signs_up_issues_a_key_and_forgets_what_an_agent_stored(
    browser: Browser, live_server: live.LiveServer
) -> None:
    base = live_server.url
    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())

    page.goto("/accounts/signup/")
    shot(page, "signup")
    page.fill("input[name=email]", "newcomer@example.com")
    page.fill("input[name=password1]", "a-long-pass-phrase-9")
    page.fill("input[name=password2]", "a-long-pass-phrase-9")
    page.click("button[type=submit]")
    expect(page.get_by_text("Verify Your Email Address")).to_be_visible()

    link = re.search(r"https?://\S+/accounts/confirm-email/\S+/", str(mail.outbox[-1].body))
    assert link is not None
    page.goto(urlsplit(link.group(0)).path)
    page.click("button[type=submit]")  # "Confirm"
    expect(page.get_by_role("heading", name=re.compile("^Personal"))).to_be_visible()  # the personal account
    expect(page.get_by_text("No projects yet.")).to_be_visible()

    page.fill("input[name=name]", "my-app")
    page.get_by_role("button", name="Create project").click()
    expect(page.get_by_role("heading", name="my-app")).to_be_visible()
    page.fill("input[name=device_label]", "e2e laptop")
    page.get_by_role("button", name="Create key").click()
    raw_key = page.get_by_test_id("raw-key").inner_text().strip()
    assert raw_key.startswith("mmw_")
    expect(page.get_by_text("claude mcp add --transport http")).to_be_visible()
    shot(page, "key-created")

    is_error, stored = mcp(
        base,
        raw_key,
        "remember",
        {
            "content": "release notes live in docs/CHANGES.md",
            "source_id": "docs/CHANGES.md",
            "fact_key": "release-notes",
        },
    )
    assert not is_error, stored
    page.get_by_role("link", name="Memories").click()
    row = page.locator(f"#m-{stored['id']}")
    expect(row).to_contain_text("release notes live in docs/CHANGES.md")
    expect(row).to_contain_text("e2e laptop")
    shot(page, "memories")

    page.get_by_role("link", name=re.compile("release notes live")).click()
    expect(page.get_by_test_id("record")).to_contain_text("release-notes")
    shot(page, "memory-detail")
    page.get_by_role("button", name="Forget this record").click()
    expect(page.get_by_text("Forgotten: the record left search")).to_be_visible()
    expect(page.get_by_text("No memories in this project yet.")).to_be_visible()

    is_error, found = mcp(base, raw_key, "search", {"query": "release notes"})
    assert not is_error
    assert found["results"] == []

    page.get_by_role("link", name="API keys").click()
    expect(page.get_by_text("e2e laptop")).to_be_visible()
    shot(page, "keys")
    page.get_by_role("link", name="Usage").click()
    expect(page.locator("svg.chart")).to_have_count(3)
    shot(page, "usage")
    context.close()


def test_organisation_invites_an_auditor_who_reads_but_cannot_forget_and_sees_the_banner(
    browser: Browser, live_server: live.LiveServer
) -> None:
    base = live_server.url
    alice, _ = services.user_get_or_create(email="alice@example.com")
    org = on_plan(services.account_create(name="Alice & Co", owner=alice))  # Team: members and roles
    alpha, _ = services.project_get_or_create(account=org, name="alpha", actor=alice)
    principal = principal_for_user(alice, alpha)
    assert principal is not None
    memory_remember(principal=principal, payload={"content": "deploys go out on Tuesdays", "fact_key": "deploy-day"})
    memory_remember(principal=principal, payload={"content": "deploys go out on Thursdays", "fact_key": "deploy-day"})

    owner = signed_in(browser, base, alice)
    page = owner.new_page()
    page.goto(f"/a/{org.tenant_id}/members/")
    page.fill("input[name=email]", "dana@example.com")
    page.select_option("select[name=role]", "auditor")
    page.get_by_role("button", name="Send invitation").click()
    expect(page.get_by_text("Invitation sent to dana@example.com")).to_be_visible()
    shot(page, "members")
    link = re.search(r"https?://\S+/invitations/accept/\?token=\S+", str(mail.outbox[-1].body))
    assert link is not None

    dana, _ = services.user_get_or_create(email="dana@example.com")
    auditor = signed_in(browser, base, dana)
    dpage = auditor.new_page()
    split = urlsplit(link.group(0))
    dpage.goto(f"{split.path}?{split.query}")
    shot(dpage, "invitation")
    dpage.get_by_role("button", name="Accept invitation").click()
    expect(dpage.get_by_text("you joined as auditor")).to_be_visible()
    dpage.get_by_role("link", name="alpha").click()
    expect(dpage.get_by_text("deploys go out on Tuesdays")).to_be_visible()
    expect(dpage.get_by_role("button", name="Forget")).to_have_count(0)
    dpage.get_by_role("link", name=re.compile("Thursdays")).click()
    expect(dpage.get_by_text("Conflict — the versions disagree")).to_be_visible()
    expect(dpage.get_by_role("button", name=re.compile("Forget"))).to_have_count(0)

    page.goto(f"/p/{alpha.pk}/")
    page.get_by_role("link", name=re.compile("Thursdays")).click()
    shot(page, "conflict")
    page.goto(f"/a/{org.tenant_id}/audit/")
    expect(page.get_by_role("cell", name="invitation.accepted")).to_be_visible()
    shot(page, "audit-log")

    Subscription.objects.filter(account=org).update(state=Subscription.State.SUSPENDED)
    page.goto(f"/a/{org.tenant_id}/")
    expect(page.get_by_test_id("billing-banner")).to_contain_text("suspended")
    shot(page, "billing-banner")
    page.goto(f"/a/{org.tenant_id}/billing/")
    shot(page, "billing")
    phone = browser.new_context(
        base_url=base, viewport={"width": 390, "height": 844}, storage_state=owner.storage_state()
    )
    ppage = phone.new_page()
    ppage.goto(f"/p/{alpha.pk}/")
    shot(ppage, "memories-phone")
    for context in (phone, auditor, owner):
        context.close()
