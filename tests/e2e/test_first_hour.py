"""A team's first hour on a fresh server without payments (issue #40), in a real browser at 1280
and 390 px: what a plan lacks is said before the click, with the way forward."""

from __future__ import annotations

import io
import re
from typing import Any, Literal

import httpx
import pytest
from django.core import mail
from django.core.management import call_command
from playwright.sync_api import Browser, expect

from accounts import services
from accounts.models import User
from dashboard.principals import principal_for_user
from dashboard.support import ensure_support_group
from memories.services import memory_remember
from orgs import services as org_services
from orgs.models import Membership
from tests import live
from tests.e2e.conftest import shot
from tests.e2e.test_ux import PHONE, signed_in
from tests.factories import on_plan

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


def test_the_quickstart_link_takes_its_user_into_the_dashboard_with_a_password(
    browser: Browser, live_server: live.LiveServer, settings: Any
) -> None:
    """Items 2 and 3: the quickstart user had no password, and the way in was a password reset
    e-mail, then a password, a log-in, a verification e-mail, a second e-mail, all on the console."""
    settings.PUBLIC_URL = live_server.url
    out = io.StringIO()
    call_command("quickstart", "--email", "dana@acme.test", stdout=out)
    link = re.search(r"Dashboard:  (\S+)", out.getvalue())
    assert link is not None
    page = browser.new_context(base_url=live_server.url, viewport=PHONE).new_page()
    page.goto(link.group(1))
    expect(page.get_by_test_id("sign-in-link")).to_contain_text("dana@acme.test")
    page.get_by_role("button", name="Sign in as dana@acme.test").click()
    expect(page.locator(".messages")).to_contain_text("Choose a password")
    page.locator("#id_password1").fill("a-long-pass-phrase-9")
    page.locator("#id_password2").fill("a-long-pass-phrase-9")
    page.get_by_role("button", name="Set password").click()
    page.goto("/")
    expect(page.get_by_role("link", name="default")).to_be_visible()  # the quickstart project
    shot(page, "quickstart-signed-in-phone")
    page.goto(link.group(1))
    expect(page.locator(".messages")).to_contain_text("This sign-in link was already used")
    page.context.close()


def test_support_answers_my_key_stopped_working_and_search_returns_nothing_from_the_customer_page(
    browser: Browser, live_server: live.LiveServer, settings: Any
) -> None:
    """Item 4: six page hops, a key search that found nothing for ``mmw_DtDrnBJw…``, and 401s
    recorded nowhere. Dana's old key was revoked by a colleague; the key she made since is for
    the empty project "staging", so search answers nothing."""
    settings.MMW_REFUSED_CALLS_FLUSH_SECONDS = 0.0
    owner, _ = services.user_get_or_create(email="owner@acme.test")
    acme = on_plan(services.account_create(name="Acme", owner=owner))
    dana, _ = services.user_get_or_create(email="dana@acme.test")
    Membership.objects.create(account=acme, user=dana, role=Membership.Role.MEMBER)
    prod, _ = services.project_get_or_create(account=acme, name="prod", actor=owner)
    staging, _ = services.project_get_or_create(account=acme, name="staging", actor=owner)
    old = services.api_key_create(user=dana, project=prod, device_label="dana-laptop")
    principal = principal_for_user(dana, prod)
    assert principal is not None
    memory_remember(principal=principal, payload={"content": "prod deploys from the main branch"})
    services.api_key_revoke(api_key=old.api_key, actor=owner)
    new = services.api_key_create(user=dana, project=staging, device_label="dana-laptop")
    for _ in range(3):
        answer = httpx.get(f"{live_server}/api/v1/workspaces", headers={"Authorization": f"Bearer {old.raw}"})
        assert answer.json()["error"]["message"] == "API key revoked"
    search = httpx.post(
        f"{live_server}/api/v1/memories/search",
        headers={"Authorization": f"Bearer {new.raw}"},
        json={"query": "how does prod deploy"},
    )
    assert search.json()["results"] == []
    support = User.objects.create_user("support@mmw.test", "pw", is_staff=True)
    support.groups.add(ensure_support_group())

    page = signed_in(browser, live_server.url, support).new_page()
    page.goto("/admin/accounts/account/")
    page.locator("#searchbar").fill(f"mmw_{old.api_key.prefix}…")  # as the ticket quotes it
    page.locator("#changelist-search input[type=submit]").click()

    expect(page.get_by_role("heading", name="Customer: Acme")).to_be_visible()
    searched = page.get_by_test_id("searched-key")
    expect(searched).to_contain_text("revoked")
    expect(searched).to_contain_text("dana@acme.test")
    expect(searched).to_contain_text("prod")
    refused = page.get_by_test_id("refused")
    expect(refused).to_contain_text(f"mmw_{old.api_key.prefix}…")
    expect(refused).to_contain_text("API key revoked")
    keys = page.get_by_test_id("keys")
    expect(keys.locator("tr", has_text=f"mmw_{new.api_key.prefix}…")).to_contain_text("active")
    expect(keys.locator("tr", has_text=f"mmw_{new.api_key.prefix}…")).to_contain_text("staging")
    usage = page.get_by_test_id("usage")
    expect(usage.locator("tr", has_text="staging")).to_contain_text("0")
    expect(usage.locator("tr", has_text="prod")).to_contain_text("1")
    expect(page.get_by_test_id("plan")).to_contain_text("Team")
    expect(page.get_by_test_id("deletion")).to_contain_text("None.")
    shot(page, "admin-customer")
    page.context.close()


def test_at_390px_every_key_row_shows_its_revoke_button_without_scrolling(
    browser: Browser, live_server: live.LiveServer
) -> None:
    """Item 7: the keys table hid Revoke off the right edge at 390 px."""
    dana, _ = services.user_get_or_create(email="dana@acme.test")
    personal = services.personal_account(user=dana)
    project, _ = services.project_get_or_create(account=personal, name="default", actor=dana)
    for label in ("dana-laptop", "dana-desktop-with-a-long-device-label"):
        services.api_key_create(user=dana, project=project, name="quickstart", device_label=label)
    page = signed_in(browser, live_server.url, dana, PHONE).new_page()
    page.goto(f"/p/{project.pk}/keys/")
    buttons = page.get_by_role("button", name="Revoke")
    expect(buttons).to_have_count(2)
    for i in range(2):
        box = buttons.nth(i).bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= PHONE["width"], box
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    expect(page.locator(".crumbs")).to_have_text("Personal › default")
    shot(page, "keys-phone")
    page.context.close()


def test_dark_mode_follows_the_system_setting(browser: Browser, live_server: live.LiveServer) -> None:
    dana, _ = services.user_get_or_create(email="dana@acme.test")
    personal = services.personal_account(user=dana)
    background = "getComputedStyle(document.body).backgroundColor"
    schemes: tuple[tuple[Literal["dark", "light"], bool], ...] = (("dark", True), ("light", False))
    for scheme, dark in schemes:
        context = signed_in(browser, live_server.url, dana)
        page = context.new_page()
        page.emulate_media(color_scheme=scheme)
        page.goto(f"/a/{personal.tenant_id}/")
        red, green, blue = (int(c) for c in re.findall(r"\d+", page.evaluate(background))[:3])
        assert (max(red, green, blue) < 60) is dark, (scheme, red, green, blue)
        text = page.evaluate("getComputedStyle(document.querySelector('h1')).color")
        assert (min(int(c) for c in re.findall(r"\d+", text)[:3]) > 180) is dark, text
        if dark:
            shot(page, "projects-dark")
        context.close()


def test_the_header_keeps_the_account_docs_and_security_on_sign_in_settings_data_and_docs(
    browser: Browser, live_server: live.LiveServer
) -> None:
    """Item 7: on /accounts/*, /data/ and /docs/ the header lost Projects, Usage and Billing;
    /docs/ was linked only from error pages; two-factor only through one's own e-mail."""
    dana, _ = services.user_get_or_create(email="dana@acme.test")
    personal = services.personal_account(user=dana)
    page = signed_in(browser, live_server.url, dana).new_page()
    page.goto(f"/a/{personal.tenant_id}/")
    for path in ("/accounts/email/", "/data/", "/docs/"):
        page.goto(path)
        nav = page.get_by_role("navigation", name="Main")
        for name in ("Projects", "Usage", "Billing", "Docs", "Security"):
            expect(nav.get_by_role("link", name=name, exact=True)).to_be_visible()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Security").click()
    expect(page.get_by_role("heading", name="Two-Factor Authentication")).to_be_visible()
    page.context.close()


def test_an_invitee_without_an_account_reads_the_invitation_then_signs_up_and_joins(
    browser: Browser, live_server: live.LiveServer
) -> None:
    """Item 7: the invitation link led a stranger to a bare "Sign In" page."""
    owner, _ = services.user_get_or_create(email="owner@acme.test")
    acme = on_plan(services.account_create(name="Acme", owner=owner))
    issued = org_services.invitation_create(account=acme, actor=owner, email="ivan@acme.test", role="member")
    link = "/" + issued.url.split("://", 1)[1].split("/", 1)[1]
    page = browser.new_context(base_url=live_server.url, viewport=PHONE).new_page()
    page.goto(link)
    expect(page.get_by_test_id("invitation-summary")).to_contain_text("owner@acme.test invited ivan@acme.test to Acme")
    shot(page, "invitation-stranger-phone")
    page.get_by_role("link", name="Create an account").click()
    page.get_by_label("Email").fill("ivan@acme.test")
    page.locator("#id_password1").fill("a-long-pass-phrase-9")
    page.locator("#id_password2").fill("a-long-pass-phrase-9")
    page.get_by_role("button", name="Sign Up").click()
    confirm = re.search(r"https?://\S+/accounts/confirm-email/\S+/", str(mail.outbox[-1].body))
    assert confirm is not None
    page.goto(confirm.group(0))
    page.get_by_role("button", name="Confirm").click()
    expect(page.get_by_test_id("invitation-summary")).to_contain_text("invited you to Acme")
    page.get_by_role("button", name="Accept invitation").click()
    expect(page.locator(".messages")).to_contain_text("Welcome to Acme: you joined as member.")
    page.context.close()
