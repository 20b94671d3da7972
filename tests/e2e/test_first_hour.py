"""A team's first hour on a fresh server without payments (issue #40), in a real browser at 1280
and 390 px: what a plan lacks is said before the click, with the way forward."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from playwright.sync_api import Browser, expect

from accounts import services
from tests import live
from tests.e2e.conftest import shot
from tests.e2e.test_ux import PHONE, signed_in

pytestmark = pytest.mark.slow


def test_a_new_organisation_on_a_server_without_payments_learns_the_way_forward_then_invites(
    browser: Browser, live_server: live.LiveServer
) -> None:
    """Item 1: "Create organisation", then "Invite people from Members", then a 400 "organization
    features are not included in this account's plan", lower case and no link."""
    olga, _ = services.user_get_or_create(email="olga@example.com")
    personal = services.personal_account(user=olga)
    context = signed_in(browser, live_server.url, olga)
    page = context.new_page()
    page.goto(f"/a/{personal.tenant_id}/")
    expect(page.get_by_test_id("plan-gap")).to_contain_text("not included in the Free plan that new organisations")
    page.get_by_label("Organisation name").fill("Olga's team")
    page.get_by_role("button", name="Create organisation").click()
    expect(page.locator(".messages")).to_contain_text("Its plan does not include members yet.")
    page.get_by_role("link", name="Members", exact=True).click()
    note = page.get_by_test_id("plan-gap")
    expect(note).to_contain_text("Members, roles and departments are not included in the Free plan.")
    expect(note).to_contain_text("Ask them to move Olga's team to the Team plan.")
    expect(page.get_by_role("button", name="Send invitation")).to_be_disabled()
    phone = signed_in(browser, live_server.url, olga, PHONE).new_page()
    phone.goto(page.url)
    expect(phone.get_by_test_id("plan-gap")).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    shot(phone, "plan-gap-phone")

    call_command("default_plan", "team", "--move-accounts", stdout=None)  # the operator's choice

    page.reload()
    expect(page.get_by_test_id("plan-gap")).to_have_count(0)
    page.get_by_label("Email").fill("ivan@example.com")
    page.get_by_role("button", name="Send invitation").click()
    expect(page.locator(".messages")).to_contain_text("Invitation sent to ivan@example.com.")
    context.close()
