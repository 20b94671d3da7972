"""The reference is served to people (/docs/, in the dashboard's style) and agents (Markdown, /llms.txt)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.test import Client

from interfaces import reference
from oauth.endpoints import protected_resource_metadata

PAGES = Path(__file__).resolve().parents[2] / "docs" / "reference"
pytestmark = pytest.mark.django_db


def test_the_index_and_every_page_render_without_logging_in(client: Client) -> None:
    index = client.get("/docs/")
    assert index.status_code == 200
    assert b"MMW reference" in index.content
    for tool in reference.TOOLS:
        page = client.get(f"/docs/{tool}")
        assert page.status_code == 200, tool
        assert b"<table>" in page.content or tool == "list_workspaces"
    remember = client.get("/docs/remember").content.decode()
    assert "<code>expected_version</code>" in remember
    assert 'href="/docs/errors"' in remember  # links between pages lead to pages, not raw files


def test_the_protected_resource_metadata_points_at_a_served_page(client: Client) -> None:
    documentation = protected_resource_metadata()["resource_documentation"]
    page = client.get(urlsplit(documentation).path)
    assert page.status_code == 200
    assert b"/oauth/register" in page.content


def test_each_page_is_also_served_as_its_markdown(client: Client) -> None:
    response = client.get("/docs/errors.md")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/markdown")
    assert response.content.decode() == (PAGES / "errors.md").read_text()


def test_llms_txt_lists_every_page_for_agents(client: Client) -> None:
    text = client.get("/llms.txt").content.decode()
    assert text.startswith("# MMW\n")
    for page in PAGES.glob("*.md"):
        if page.stem != "README":
            assert f"/docs/{page.stem}.md)" in text


@pytest.mark.parametrize("path", ["/docs/nope", "/docs/nope.md", "/docs/..%2Fsettings", "/docs/%2e%2e/secret_key.md"])
def test_only_existing_pages_are_served(client: Client, path: str) -> None:
    assert client.get(path).status_code == 404
