"""Issue #20, the parts about trust: the memory browser's export, key expiry and usage, the
team's audit log and invitations, organisation settings, two-factor sign-in and the relation
graph, each driven in headless Chromium (some at 390 px)."""

from __future__ import annotations

import csv
import io
import json
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from accounts import services
from dashboard.principals import principal_for_user
from memories.models import MemoryRelation
from memories.services import memory_remember
from orgs import services as org_services
from orgs.models import Membership
from tests import live
from tests.e2e.conftest import shot
from tests.e2e.test_ux import PHONE, org_with_member, signed_in

pytestmark = pytest.mark.slow


def test_the_browser_downloads_its_current_filter_as_csv_and_jsonl(
    browser: Browser, live_server: live.LiveServer
) -> None:
    owner, _ = services.user_get_or_create(email="exa@example.com")
    account = owner.memberships.get().account
    project, _ = services.project_get_or_create(account=account, name="ops", actor=owner)
    principal = principal_for_user(owner, project)
    assert principal is not None
    memory_remember(principal=principal, payload={"content": "=2+3 is a formula", "tags": ["ops"]})
    memory_remember(principal=principal, payload={"content": "untagged"})
    context = signed_in(browser, live_server.url, owner, PHONE)
    page = context.new_page()
    page.goto(f"/p/{project.pk}/")
    page.locator("summary", has_text="Filters").click()
    page.fill("input[name=tags]", "ops")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_test_id("results").locator("tbody tr")).to_have_count(1)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    with page.expect_download() as got:
        page.get_by_test_id("export").get_by_role("link", name="CSV").click()
    rows = list(csv.DictReader(io.StringIO(Path(got.value.path()).read_text(encoding="utf-8"))))
    assert [r["content"] for r in rows] == ["'=2+3 is a formula"]
    assert got.value.suggested_filename.endswith(".csv")
    with page.expect_download() as got:
        page.get_by_test_id("export").get_by_role("link", name="JSON Lines").focus()
        page.keyboard.press("Enter")
    lines = Path(got.value.path()).read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["content"] for line in lines] == ["=2+3 is a formula"]
    context.close()


def test_a_key_is_created_with_an_expiry_and_the_list_shows_its_use(
    browser: Browser, live_server: live.LiveServer
) -> None:
    owner, _ = services.user_get_or_create(email="kel@example.com")
    account = owner.memberships.get().account
    project, _ = services.project_get_or_create(account=account, name="keys", actor=owner)
    context = signed_in(browser, live_server.url, owner, PHONE)
    page = context.new_page()
    page.goto(f"/p/{project.pk}/keys/")
    expect(page.get_by_label("Expires")).to_have_value("90")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.fill("input[name=name]", "ci runner")
    page.get_by_label("Expires").select_option("7")
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_test_id("key-expires")).to_contain_text("expires in 7 days")  # rounded, not truncated
    raw = page.get_by_test_id("raw-key").inner_text()
    for _ in range(2):
        answer = live.rest(live_server, raw, "POST", "/api/v1/memories/search", {"query": "anything"})
        assert answer.status_code == 200
    page.goto(f"/p/{project.pk}/keys/")
    row = page.locator("tr", has_text="ci runner")
    expect(row.get_by_test_id("key-expiry")).to_contain_text("in 7 days")
    expect(row.get_by_test_id("key-usage")).to_contain_text("2 calls this month")
    expect(row.get_by_test_id("key-usage")).to_contain_text("just now")
    shot(page, "keys-expiry-phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    context.close()


def test_an_owner_resends_an_invitation_filters_the_audit_log_and_downloads_it(
    browser: Browser, live_server: live.LiveServer
) -> None:
    _person, org = org_with_member("mia@exarlabs.example")
    owner = Membership.objects.get(account=org, role=Membership.Role.OWNER).user
    org_services.invitation_create(account=org, actor=owner, email="eve@exarlabs.example", role="auditor")
    context = signed_in(browser, live_server.url, owner, PHONE)
    page = context.new_page()
    page.goto(f"/a/{org.tenant_id}/members/")
    page.get_by_role("button", name="Resend the invitation to eve@exarlabs.example").click()
    expect(page.locator(".messages")).to_contain_text("Invitation sent again to eve@exarlabs.example")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.goto(f"/a/{org.tenant_id}/audit/")
    page.get_by_label("Action").select_option("invitation.resent")
    page.get_by_label("Who").fill(owner.email)
    page.get_by_label("Who").press("Enter")  # the keyboard submits the filter form
    rows = page.get_by_test_id("audit-rows").locator("tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("invitation.resent")
    shot(page, "audit-filtered-phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    with page.expect_download() as got:
        page.get_by_test_id("audit-csv").click()
    lines = list(csv.DictReader(io.StringIO(Path(got.value.path()).read_text(encoding="utf-8"))))
    assert [r["action"] for r in lines] == ["invitation.resent"]
    page.get_by_label("From").fill("2099-01-01")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_test_id("no-match")).to_be_visible()
    context.close()


def test_organisation_settings_rename_transfer_and_leave(browser: Browser, live_server: live.LiveServer) -> None:
    _person, org = org_with_member("mia@exarlabs.example")
    owner = Membership.objects.get(account=org, role=Membership.Role.OWNER).user
    context = signed_in(browser, live_server.url, owner, PHONE)
    page = context.new_page()
    page.goto(f"/a/{org.tenant_id}/")
    page.locator("header.top").get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", name="Settings — Exar Labs")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    expect(page.get_by_test_id("leave")).to_contain_text("you cannot leave")
    shot(page, "organization-settings-phone")
    expect(page.get_by_role("link", name="Data").last).to_be_visible()
    page.get_by_label("Name").fill("Exar Research")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator(".messages")).to_contain_text("Renamed to Exar Research.")
    page.get_by_label("New owner").select_option(label="mia@exarlabs.example (Member)")
    page.get_by_role("button", name="Transfer").click()
    expect(page.locator(".messages")).to_contain_text("mia@exarlabs.example is now an owner; you are an admin.")
    page.get_by_label("Organisation name").fill("Exar Research")
    page.get_by_role("button", name="Leave").click()
    expect(page.locator(".messages")).to_contain_text("You left Exar Research")
    assert not Membership.objects.filter(account=org, user=owner).exists()
    context.close()


def test_two_factor_with_an_authenticator_app_recovery_codes_and_the_sessions_list(
    browser: Browser, live_server: live.LiveServer
) -> None:
    from allauth.account.models import EmailAddress
    from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value

    user, _ = services.user_get_or_create(email="tara@example.com")
    user.set_password("a-long-pass-phrase-9")
    user.save()
    EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
    context = browser.new_context(base_url=live_server.url, viewport=PHONE)
    page = context.new_page()

    def log_in() -> None:
        page.goto("/accounts/login/")
        page.fill("input[name=login]", user.email)
        page.fill("input[name=password]", "a-long-pass-phrase-9")
        page.get_by_role("button", name="Sign In").click()

    log_in()
    expect(page.locator("header.top")).to_be_visible()
    page.goto("/accounts/email/")
    page.get_by_role("link", name="Two-factor").click()
    activate = page.get_by_role("link", name="Activate")
    expect(activate).to_be_visible()  # the two-factor page is in (measured before, it raced the navigation)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    activate.click()
    qr_code = page.get_by_role("img", name=re.compile("."))
    confirm = page.get_by_role("heading", name="Confirm Access")
    expect(qr_code.or_(confirm)).to_be_visible()  # wait for the next page, whichever it is
    if confirm.is_visible():  # allauth asks for the password again first
        page.fill("input[name=password]", "a-long-pass-phrase-9")
        page.get_by_role("button", name="Confirm").click()
    expect(qr_code).to_be_visible()
    secret = page.locator("#authenticator_secret").input_value()
    page.fill("input[name=code]", format_hotp_value(hotp_value(secret, int(time.time()) // 30)))
    page.get_by_role("button", name="Activate").click()
    codes = page.locator("#recovery_codes").input_value().split()
    assert len(codes) == 10
    shot(page, "recovery-codes-phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    page.goto("/accounts/logout/")
    page.get_by_role("button", name="Sign Out").click()
    log_in()
    expect(page).to_have_url(re.compile(r"/accounts/2fa/authenticate/"))
    page.fill("input[name=code]", codes[0])
    page.keyboard.press("Enter")
    expect(page.locator("header.top .who")).to_contain_text("tara@example.com")

    page.goto("/accounts/sessions/")
    expect(page.get_by_role("link", name="Sessions")).to_have_class(re.compile("on"))
    expect(page.get_by_test_id("sessions")).to_contain_text("Current")
    shot(page, "sessions-phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    context.close()


def test_the_record_page_draws_its_relations_and_enter_on_a_node_opens_it(
    browser: Browser, live_server: live.LiveServer
) -> None:
    owner, _ = services.user_get_or_create(email="gus@example.com")
    account = owner.memberships.get().account
    project, _ = services.project_get_or_create(account=account, name="graph", actor=owner)
    principal = principal_for_user(owner, project)
    assert principal is not None
    source = memory_remember(principal=principal, payload={"content": "the deploy runbook, section 3"})["id"]
    summary = memory_remember(
        principal=principal, payload={"content": "deploys need two approvals", "derived_from": [source]}
    )["id"]
    other = memory_remember(principal=principal, payload={"content": "approvals are given in #releases"})["id"]
    MemoryRelation.objects.create(from_memory_id=other, to_memory_id=summary, relation="refines", score=0.8)
    context = signed_in(browser, live_server.url, owner, PHONE)
    page = context.new_page()
    page.goto(f"/p/{project.pk}/memories/{summary}/")
    drawing = page.get_by_test_id("relation-graph")
    expect(drawing).to_be_visible()
    nodes = drawing.locator("a")
    expect(nodes).to_have_count(2)
    expect(
        drawing.get_by_role("link", name="This record is refined by: approvals are given in #releases")
    ).to_have_count(1)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "memory-graph-phone")
    # Each node is a link: focusable, Tab moves to the next node, Enter opens the focused record.
    nodes.first.focus()
    assert page.evaluate("document.activeElement.closest('svg') !== null")
    label = page.evaluate("document.activeElement.getAttribute('aria-label')")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.closest('svg') !== null")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == label
    page.keyboard.press("Enter")
    opened = source if "derived from" in label else other
    expect(page).to_have_url(re.compile(f"/memories/{opened}/$"))
    context.close()
