"""Headless Chromium (Debian's package, driven by Playwright for Python) against a live server.

``scripts/ensure_chromium.sh`` installs ``/usr/bin/chromium`` where missing; Playwright's own
browser download is never used."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests import live

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[2]
# Tests never rewrite tracked files: screenshots go to var/ (git-ignored) unless regenerated on
# purpose with `make screenshots` (MMW_SCREENSHOTS_DIR=docs/screenshots).
SCREENSHOTS = Path(os.environ.get("MMW_SCREENSHOTS_DIR") or ROOT / "var" / "screenshots").resolve()
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

live_server = live.live_server


@pytest.fixture(autouse=True)
def _fast_embeddings(settings: Any) -> None:
    settings.MMW_EMBEDDING_BACKEND = "ngram"
    settings.MMW_EMBEDDING_OPTIONS = {}


@pytest.fixture(scope="module")  # the sync API runs an event loop in this thread until stopped
def browser() -> Iterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        subprocess.run(["bash", str(ROOT / "scripts" / "ensure_chromium.sh")], check=True)
    # Playwright's sync API keeps an event loop running on this thread; the test's own ORM calls
    # are synchronous and safe there (pytest-playwright documents the same switch).
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as pw:
            chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
