"""Issue #42: Russian and French are longer than English; every page fits at 390 and 1280 px in
each language — no horizontal scroll of the page, no button whose text is clipped or that leaves
the viewport (boxes measured in the browser). Screenshots per language and width go where
``shot`` puts them (``make screenshots`` regenerates docs/screenshots/)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, ViewportSize

from accounts import services
from accounts.models import User
from dashboard.principals import principal_for_user
from memories.services import memory_remember
from orgs.models import Membership
from tests import live
from tests.e2e.conftest import shot
from tests.e2e.test_ux import signed_in
from tests.factories import on_plan

pytestmark = pytest.mark.slow

WIDTHS: list[ViewportSize] = [{"width": 390, "height": 844}, {"width": 1280, "height": 800}]

# Every button-like element the person can see: its text must fit its box, and the box the viewport
# (or the table it scrolls with).
_CLIPPED = """() => {
  const out = [];
  for (const el of document.querySelectorAll('button, a.button, .tabs a, header.top nav a, select')) {
    const box = el.getBoundingClientRect();
    if (!box.width || getComputedStyle(el).visibility === 'hidden') continue;
    const text = (el.innerText || el.value || '').trim().slice(0, 40);
    if (el.tagName !== 'SELECT' && el.scrollWidth > el.clientWidth + 1) out.push(`clipped: ${text}`);
    // A wide table scrolls inside its .table-wrap (reachable, on purpose); anything else must fit.
    if (box.right > window.innerWidth + 1 && !el.closest('.table-wrap'))
      out.push(`off-screen: ${text} (${Math.round(box.right)}px)`);
  }
  return out;
}"""


@pytest.mark.parametrize("language", ["en", "ru", "fr"])
def test_every_page_fits_at_390_and_1280_px_in_each_language(
    browser: Browser, live_server: live.LiveServer, language: str
) -> None:
    owner, _ = services.user_get_or_create(email=f"owner-{language}@example.com")
    owner.language = language
    owner.save(update_fields=["language"])
    org = on_plan(services.account_create(name="Exar Labs", owner=owner))
    project, _ = services.project_get_or_create(account=org, name="alpha", actor=owner)
    member, _ = services.user_get_or_create(email=f"member-{language}@example.com")
    Membership.objects.create(account=org, user=member, role=Membership.Role.MEMBER)
    principal = principal_for_user(owner, project)
    assert principal is not None
    memory_remember(principal=principal, payload={"content": "The deploy key rotates every 90 days"})
    pages = {
        "projects": f"/a/{org.tenant_id}/",
        "usage": f"/a/{org.tenant_id}/usage/",
        "billing": f"/a/{org.tenant_id}/billing/",
        "members": f"/a/{org.tenant_id}/members/",
        "org-settings": f"/a/{org.tenant_id}/settings/",
        "memories": f"/p/{project.pk}/",
        "keys": f"/p/{project.pk}/keys/",
        "ledger": f"/p/{project.pk}/ledger/",
        "project-settings": f"/p/{project.pk}/settings/",
        "data": f"/a/{org.tenant_id}/data/",
    }
    problems: dict[str, list[str]] = {}
    for viewport in WIDTHS:
        context = signed_in(browser, live_server.url, User.objects.get(pk=owner.pk), viewport)
        page = context.new_page()
        for name, url in pages.items():
            page.goto(url)
            assert page.locator("html").get_attribute("lang") == language, url
            found = list(page.evaluate(_CLIPPED))
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > viewport["width"]:
                found.append(f"page {width}px wide")
            if found:
                problems[f"{name} @ {viewport['width']}px"] = found
            shot(page, f"i18n-{language}-{name}-{viewport['width']}")
        context.close()
    assert not problems, f"{language}: {problems}"
