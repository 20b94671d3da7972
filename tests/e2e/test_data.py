"""The Data and Webhooks pages in a real browser (live server, headless Chromium): Alice exports
her project, adds a webhook and sends it a test event, deletes her organisation with its typed
name and her password, finds it under "Accounts being deleted" and cancels. No CSP violation or
console error on the way."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from accounts.keys import resolve_key
from datarights.models import AccountDeletion
from memories.services import memory_remember
from tests import live
from tests.conftest import Tenancy
from tests.e2e.conftest import shot
from tests.e2e.test_csp import Watcher
from tests.e2e.test_journeys import signed_in
from tests.webhooks.test_webhooks import Receiver
from webhooks import services as webhooks
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.slow


def test_export_webhook_delete_and_cancel_in_the_browser(
    browser: Browser, live_server: live.LiveServer, tenancy: Tenancy, settings: Any
) -> None:
    settings.MMW_WEBHOOK_ALLOW_HTTP = True
    settings.MMW_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    alice = tenancy.alice
    alice.user.set_password("correct horse")
    alice.user.save()
    principal = resolve_key(alice.key)
    assert principal is not None
    memory_remember(principal=principal, payload={"content": "exported through the browser"})
    context = signed_in(browser, live_server.url, alice.user)
    watcher = Watcher(context)
    page = context.new_page()
    watcher.visit(page, f"/a/{alice.account.tenant_id}/data/")
    shot(page, "data")
    with page.expect_download() as download:
        page.get_by_test_id("export-project").first.click()
    path = download.value.path()
    lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).decode().splitlines()]
    assert any(line.get("content") == "exported through the browser" for line in lines)

    receiver = Receiver()
    try:
        watcher.visit(page, f"/p/{alice.project.pk}/webhooks/")
        page.fill("input[name=url]", receiver.url)
        page.get_by_role("button", name="Add webhook").click()
        expect(page.get_by_test_id("webhook")).to_contain_text(receiver.url)
        page.get_by_role("button", name="Send test event").click()
        webhooks.deliver_due()  # the worker's job (no worker runs in this test)
        page.reload()
        expect(page.get_by_test_id("delivery")).to_contain_text("succeeded")
        shot(page, "webhooks")
    finally:
        receiver.close()
    assert json.loads(receiver.received[0][1])["type"] == "test"
    assert WebhookEndpoint.objects.count() == 1

    watcher.visit(page, f"/a/{alice.account.tenant_id}/data/")
    form = page.get_by_test_id("delete-account")
    form.locator("input[name=confirm]").fill("Alice & Co")
    form.locator("input[name=password]").fill("correct horse")
    form.get_by_role("button", name="Delete account").click()
    expect(page.get_by_test_id("deletion")).to_contain_text("Alice & Co")
    assert resolve_key(alice.key) is None
    shot(page, "data-deletion")
    page.get_by_role("button", name="Cancel deletion").click()
    expect(page.get_by_text("Deletion cancelled")).to_be_visible()
    assert resolve_key(alice.key) is not None
    assert AccountDeletion.objects.get().cancelled_at is not None
    watcher.check(page)
    context.close()
