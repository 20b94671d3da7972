"""docs/reference/mcp.md says what ``/mcp`` serves: the revisions and the caching hints it names
are the server's own (``interfaces.mcp_server.endpoint``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from interfaces.mcp_server.endpoint import CACHE_HINTS, HANDSHAKE_REVISIONS, SERVED_REVISIONS, STATELESS_REVISIONS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "mcp.md"


def test_the_page_names_the_revisions_served_in_each_era() -> None:
    text = PAGE.read_text()
    rows = dict(re.findall(r"^\| (`[^|]+`) \| (.+) \|$", text, flags=re.MULTILINE))
    eras = {tuple(re.findall(r"`([^`]+)`", revisions)): how for revisions, how in rows.items()}
    assert set(eras) >= {STATELESS_REVISIONS, HANDSHAKE_REVISIONS}
    assert "stateless" in eras[STATELESS_REVISIONS]
    assert "initialize" in eras[HANDSHAKE_REVISIONS]
    assert json.dumps(list(SERVED_REVISIONS)) in text  # the refusal's example lists them all


def test_the_page_gives_the_caching_hints_the_server_sends() -> None:
    rows = re.findall(r"^\| `([a-z/]+)` \| `(public|private)` \| (\d+) \|", PAGE.read_text(), flags=re.MULTILINE)
    assert {method: (scope, int(ttl)) for method, scope, ttl in rows} == {
        method: (hint.scope, hint.ttl_ms) for method, hint in CACHE_HINTS.items()
    }
