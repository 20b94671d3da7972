"""The project's Import tab in a real browser (live server, headless Chromium): Alice brings a
file mem0 wrote into her project with "Import from another service", sees what was created, then
sends it again and sees that nothing was added. No CSP violation or console error on the way."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from memories.models import Memory
from tests import live
from tests.conftest import Tenancy
from tests.e2e.conftest import shot
from tests.e2e.test_csp import Watcher
from tests.e2e.test_journeys import signed_in

pytestmark = pytest.mark.slow

MEM0 = Path(__file__).resolve().parents[1] / "datarights" / "fixtures" / "peers" / "mem0" / "get_all.json"


def test_importing_a_mem0_file_from_the_import_tab(
    browser: Browser, live_server: live.LiveServer, tenancy: Tenancy
) -> None:
    alice = tenancy.alice
    context = signed_in(browser, live_server.url, alice.user)
    watcher = Watcher(context)
    page = context.new_page()
    watcher.visit(page, f"/p/{alice.project.pk}/import/")
    form = page.get_by_test_id("import-from-form")
    form.locator("select[name=service]").select_option("mem0")
    form.locator("input[name=file]").set_input_files(str(MEM0))
    form.get_by_role("button", name="Import from this service").click()
    expect(page.locator("body")).to_contain_text("Imported from mem0: 3 item(s) read — 3 created")
    shot(page, "import-from")
    assert Memory.objects.filter(project=alice.project, source="mem0").count() == 3

    form = page.get_by_test_id("import-from-form")
    form.locator("select[name=service]").select_option("mem0")
    form.locator("input[name=file]").set_input_files(str(MEM0))
    form.get_by_role("button", name="Import from this service").click()
    expect(page.locator("body")).to_contain_text("0 created, 0 updated, 3 unchanged")
    assert Memory.objects.filter(project=alice.project).count() == 3
    assert watcher.problems == []
