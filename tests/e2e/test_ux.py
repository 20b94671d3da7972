"""The dashboard's fit and finish in a real browser (issue #20): a phone-width header, the error
pages, the billing page."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from playwright.sync_api import Browser, BrowserContext, ViewportSize, expect

from accounts import services
from accounts.models import Account, User
from dashboard.principals import principal_for_user
from memories.services import memory_remember
from orgs.models import Membership
from tests import live
from tests.e2e.conftest import shot
from tests.factories import on_plan

pytestmark = pytest.mark.slow

PHONE: ViewportSize = {"width": 390, "height": 844}

# The width the selected option's text needs in the select's own font, against the room the
# select gives it (its inner width minus the drop-down arrow).
_SELECT_FITS = """select => {
  const style = getComputedStyle(select);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
  const needed = ctx.measureText(select.options[select.selectedIndex].text).width;
  const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 16;
  const box = select.getBoundingClientRect();
  return {needed, room, right: box.right, viewport: window.innerWidth};
}"""


def signed_in(browser: Browser, base: str, user: User, viewport: ViewportSize | None = None) -> BrowserContext:
    client = Client()
    client.force_login(user)
    context = browser.new_context(base_url=base, viewport=viewport or {"width": 1280, "height": 800})
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}])
    return context


def org_with_member(email: str) -> tuple[User, Account]:
    owner, _ = services.user_get_or_create(email="owner@example.com")
    org = on_plan(services.account_create(name="Exar Labs", owner=owner))
    person, _ = services.user_get_or_create(email=email)
    Membership.objects.create(account=org, user=person, role=Membership.Role.MEMBER)
    return person, org


def test_at_390px_the_header_hides_the_email_and_the_account_switcher_is_not_cut(
    browser: Browser, live_server: live.LiveServer
) -> None:
    """B10: the e-mail stayed in the header at 390 px (``.hide-sm`` applied to table cells only)
    and the account switcher was cut ("dana@exar")."""
    dana, org = org_with_member("dana@exarlabs.example")
    context = signed_in(browser, live_server.url, dana, PHONE)
    page = context.new_page()
    page.goto(f"/a/{org.tenant_id}/")
    header = page.locator("header.top")
    expect(header.get_by_text("dana@exarlabs.example", exact=True)).to_be_hidden()
    switcher = header.get_by_label("Account")
    expect(switcher).to_be_visible()
    fit = switcher.evaluate(_SELECT_FITS)
    assert fit["needed"] <= fit["room"], fit
    assert fit["right"] <= fit["viewport"], fit
    shot(page, "projects-phone")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    desktop = signed_in(browser, live_server.url, dana)
    wide = desktop.new_page()
    wide.goto(f"/a/{org.tenant_id}/")
    expect(wide.locator("header.top").get_by_text("dana@exarlabs.example", exact=True)).to_be_visible()
    for ctx in (context, desktop):
        ctx.close()


def test_error_pages_are_branded_with_a_way_home_and_every_page_has_a_favicon(
    browser: Browser, live_server: live.LiveServer
) -> None:
    """Gap 7: Django's bare 404 page, no navigation, and a 404 for /favicon.ico on every page."""
    person, org = org_with_member("erin@example.com")
    context = signed_in(browser, live_server.url, person)
    page = context.new_page()
    failed: list[str] = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    page.goto(f"/a/{org.tenant_id}/")
    icon = page.evaluate("fetch(document.querySelector('link[rel=icon]').href).then(r => r.status)")
    assert icon == 200
    assert failed == []
    answer = page.goto("/p/00000000-0000-0000-0000-000000000000/")
    assert answer is not None
    assert answer.status == 404
    expect(page.get_by_role("heading", name="This page does not exist")).to_be_visible()
    expect(page.locator("header.top .brand")).to_be_visible()
    shot(page, "error-404")
    page.get_by_role("link", name="Your projects").click()
    expect(page).to_have_url(re.compile(r"/a/[^/]+/$"))
    context.close()


def test_billing_with_payments_off_explains_and_lists_plans_with_prices(
    browser: Browser, live_server: live.LiveServer
) -> None:
    owner, _ = services.user_get_or_create(email="olga@example.com")
    account = owner.memberships.get().account
    context = signed_in(browser, live_server.url, owner, PHONE)
    page = context.new_page()
    page.goto(f"/a/{account.tenant_id}/billing/")
    expect(page.get_by_test_id("billing-off")).to_contain_text("Payments are not set up on this server")
    expect(page.get_by_test_id("plan-pro")).to_contain_text("$19 / month")
    expect(page.get_by_test_id("plan-free")).to_contain_text("1,000 records per project")
    expect(page.get_by_test_id("plan-free")).to_contain_text("current")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "billing-off-phone")
    context.close()


def test_the_memory_browser_triages_on_a_phone(browser: Browser, live_server: live.LiveServer) -> None:
    """Status filter, sort and bulk selection fit at 390 px; the record page names its relations."""
    owner, _ = services.user_get_or_create(email="tess@example.com")
    account = owner.memberships.get().account
    project, _ = services.project_get_or_create(account=account, name="ops", actor=owner)
    principal = principal_for_user(owner, project)
    assert principal is not None
    for text in ("the office opens at 8", "the office opens at 9"):
        memory_remember(principal=principal, payload={"content": text, "fact_key": "office-hours"})
    memory_remember(principal=principal, payload={"content": "a plain note"})
    context = signed_in(browser, live_server.url, owner, PHONE)
    page = context.new_page()
    page.goto(f"/p/{project.pk}/")
    page.select_option("select[name=status]", "conflict")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_test_id("results").locator("tbody tr")).to_have_count(2)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(page, "memories-conflicts-phone")
    page.get_by_label("Select this record").first.check()
    page.get_by_role("button", name="Forget selected…").click()
    expect(page.get_by_role("heading", name="Forget 1 record?")).to_be_visible()
    page.get_by_role("link", name="Cancel").click()
    expect(page.get_by_test_id("results")).to_be_visible()
    context.close()


def test_the_memory_browser_sorts_shows_exact_times_on_hover_and_forgets_the_ticked_records(
    browser: Browser, live_server: live.LiveServer
) -> None:
    """Issue #20's triage, in the browser: the sort applies, a record's age is in words with the
    ISO time as its tooltip, and a confirmed bulk forget removes exactly the ticked records."""
    owner, _ = services.user_get_or_create(email="sam@example.com")
    account = owner.memberships.get().account
    project, _ = services.project_get_or_create(account=account, name="triage", actor=owner)
    principal = principal_for_user(owner, project)
    assert principal is not None
    for text in ("first written", "second written", "third written"):
        memory_remember(principal=principal, payload={"content": text})
    context = signed_in(browser, live_server.url, owner)
    page = context.new_page()
    page.goto(f"/p/{project.pk}/")
    rows = page.get_by_test_id("results").locator("tbody tr")
    expect(rows.first).to_contain_text("third written")  # newest first by default
    page.get_by_text("Filters").click()
    page.get_by_label("Sort").select_option("oldest")
    page.get_by_role("button", name="Search").click()
    expect(rows.first).to_contain_text("first written")
    stamp = rows.first.locator("time")
    expect(stamp).to_have_text(re.compile(r"just now|seconds? ago|minutes? ago"))
    assert re.match(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d", stamp.get_attribute("title") or "")
    rows.nth(0).get_by_label("Select this record").check()
    rows.nth(1).get_by_label("Select this record").check()
    page.get_by_role("button", name="Forget selected…").click()
    page.get_by_role("button", name="Forget 2 records").click()
    expect(page.get_by_text("Forgot 2 record(s)")).to_be_visible()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("third written")
    context.close()


def test_a_new_key_page_confirms_the_first_call_by_itself(browser: Browser, live_server: live.LiveServer) -> None:
    owner, _ = services.user_get_or_create(email="kim@example.com")
    account = owner.memberships.get().account
    project, _ = services.project_get_or_create(account=account, name="first", actor=owner)
    context = signed_in(browser, live_server.url, owner)
    page = context.new_page()
    page.goto(f"/p/{project.pk}/keys/")
    page.fill("input[name=name]", "laptop")
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_test_id("first-call")).to_contain_text("Waiting for the first call")
    raw = page.get_by_test_id("raw-key").inner_text()
    answer = live.rest(live_server, raw, "POST", "/api/v1/memories/search", {"query": "anything"})
    assert answer.status_code == 200
    expect(page.get_by_test_id("first-call")).to_contain_text("First call received", timeout=10_000)
    context.close()
