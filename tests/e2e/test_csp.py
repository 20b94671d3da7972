"""The Content-Security-Policy in a real browser: the dashboard, allauth's pages and the Django
admin load without a single CSP violation, and what used inline code still works (htmx's revoke,
the confirm dialogs, the account switcher, the copy buttons)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from accounts.models import ApiKey, User
from dashboard.principals import principal_for_user
from memories.services import memory_remember
from tests import live
from tests.conftest import Tenancy
from tests.e2e.conftest import shot
from tests.e2e.test_journeys import signed_in

pytestmark = pytest.mark.slow

# Records every violation the page reports (the init script runs before the page's own scripts,
# outside the page's policy).
WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
});
"""


class Watcher:
    """Collects CSP violations and console errors across every page of a browser context."""

    def __init__(self, context: BrowserContext) -> None:
        self.problems: list[str] = []
        context.add_init_script(WATCH)
        context.on("page", self.attach)

    def attach(self, page: Page) -> None:
        def on_console(message: Any) -> None:
            # A failed load is reported below with its URL (the console message carries none).
            if message.text.startswith("Failed to load resource"):
                return
            if message.type == "error" or "Content Security Policy" in message.text:
                self.problems.append(f"{page.url}: console {message.type}: {message.text}")

        def on_response(response: Any) -> None:
            if response.status >= 400 and not response.url.endswith("/favicon.ico"):
                self.problems.append(f"{page.url}: {response.status} for {response.url}")

        page.on("console", on_console)
        page.on("response", on_response)
        page.on("pageerror", lambda error: self.problems.append(f"{page.url}: page error {error}"))
        page.on("dialog", lambda dialog: dialog.accept())

    def visit(self, page: Page, path: str) -> None:
        response = page.goto(path)
        assert response is not None
        assert response.status == 200, (path, response.status)
        assert "default-src 'self'" in response.headers["content-security-policy"], path
        self.check(page)

    def check(self, page: Page) -> None:
        page.wait_for_load_state("load")
        violations = page.evaluate("window.__csp")
        self.problems.extend(f"{page.url}: {v}" for v in violations)
        # htmx was told not to inject its indicator <style>: no page has a <style> element.
        assert page.evaluate("document.querySelectorAll('style').length") == 0, page.url


def test_allauth_pages_and_admin_login_have_no_csp_violations(browser: Browser, live_server: live.LiveServer) -> None:
    context = browser.new_context(base_url=live_server.url)
    watcher = Watcher(context)
    page = context.new_page()
    for path in ("/accounts/login/", "/accounts/signup/", "/accounts/password/reset/", "/admin/login/"):
        watcher.visit(page, path)
    context.close()
    assert watcher.problems == []


def test_dashboard_pages_work_under_the_policy(
    browser: Browser, live_server: live.LiveServer, tenancy: Tenancy
) -> None:
    alice = tenancy.alice
    principal = principal_for_user(alice.user, alice.project)
    assert principal is not None
    record = memory_remember(principal=principal, payload={"content": "deploys go out on Tuesdays"})
    context = signed_in(browser, live_server.url, alice.user)
    watcher = Watcher(context)
    page = context.new_page()
    tenant, project = alice.account.tenant_id, alice.project.pk
    for path in (
        f"/a/{tenant}/",
        f"/a/{tenant}/usage/",
        f"/a/{tenant}/billing/",
        f"/a/{tenant}/members/",
        f"/a/{tenant}/departments/",
        f"/a/{tenant}/audit/",
        f"/a/{tenant}/settings/",
        "/accounts/2fa/",
        "/accounts/sessions/",
        f"/p/{project}/",
        f"/p/{project}/workspaces/",
        f"/p/{project}/settings/",
        f"/p/{project}/keys/",
    ):
        watcher.visit(page, path)
    assert page.evaluate("typeof htmx") == "object"

    # htmx's revoke (hx-post + hx-confirm) swaps the row in place.
    key = ApiKey.objects.get(user=alice.user, project=alice.project)
    page.locator(f"#key-{key.pk}").get_by_role("button", name="Revoke").click()
    expect(page.locator(f"#key-{key.pk}").get_by_text("revoked")).to_be_visible()
    watcher.check(page)

    # A key's creation page: the copy button (clipboard granted) reports success.
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.fill("input[name=device_label]", "csp laptop")
    page.get_by_role("button", name="Create key").click()
    page.locator("[data-copy='#raw-key']").click()
    expect(page.locator("[data-copy='#raw-key']")).to_have_text("Copied")
    watcher.check(page)

    # The memory page's forget button asks first (data-confirm), then forgets.
    watcher.visit(page, f"/p/{project}/memories/{record['id']}/")
    page.get_by_role("button", name="Forget this record").click()
    expect(page.get_by_text("Forgotten")).to_be_visible()
    watcher.check(page)

    # The account switcher (data-navigate) goes to the chosen account.
    switcher = page.locator("select[data-navigate]")
    if switcher.count():
        options = switcher.locator("option").evaluate_all("os => os.map(o => o.value)")
        target = next(v for v in options if tenant not in v)
        switcher.select_option(target)
        page.wait_for_url(f"**{target}")
        watcher.check(page)
    context.close()
    assert watcher.problems == []


def test_admin_pages_have_no_csp_violations(browser: Browser, live_server: live.LiveServer, tenancy: Tenancy) -> None:
    admin = User.objects.create_superuser("root@example.com", "root-password-1")
    context = signed_in(browser, live_server.url, admin)
    watcher = Watcher(context)
    page = context.new_page()
    key = ApiKey.objects.get(user=tenancy.alice.user)
    for path in (
        "/admin/",
        "/admin/accounts/account/",
        f"/admin/accounts/account/{tenancy.alice.account.pk}/change/",
        "/admin/accounts/apikey/",
        f"/admin/accounts/apikey/{key.pk}/change/",
        "/admin/accounts/user/",
        "/admin/memories/memory/",
    ):
        watcher.visit(page, path)
        if path == "/admin/":
            shot(page, "admin")
    context.close()
    assert watcher.problems == []
