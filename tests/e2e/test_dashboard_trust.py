"""Issue #20, the parts about trust: the memory browser's export, key expiry and usage, the
team's audit log and invitations, organisation settings, two-factor sign-in and the relation
graph, each driven in headless Chromium (some at 390 px)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from accounts import services
from dashboard.principals import principal_for_user
from memories.services import memory_remember
from tests import live
from tests.e2e.test_ux import PHONE, signed_in

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
    expect(page.get_by_test_id("key-expires")).to_contain_text("expires in 6 days")
    raw = page.get_by_test_id("raw-key").inner_text()
    for _ in range(2):
        answer = live.rest(live_server, raw, "POST", "/api/v1/memories/search", {"query": "anything"})
        assert answer.status_code == 200
    page.goto(f"/p/{project.pk}/keys/")
    row = page.locator("tr", has_text="ci runner")
    expect(row.get_by_test_id("key-expiry")).to_contain_text("in 6 days")
    expect(row.get_by_test_id("key-usage")).to_contain_text("2 calls this month")
    expect(row.get_by_test_id("key-usage")).to_contain_text("just now")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    context.close()
