"""docs/reference/ can never drift from the server: generated tables are current, every operation
has its page, and every error text the code can raise is explained on the errors page."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from django.urls import reverse

from interfaces import reference
from oauth import config as oauth_config
from oauth import endpoints as oauth_endpoints
from oauth.services import GRANTABLE_SCOPES

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "reference"
ERROR_CLASSES = {
    "MMWError", "InvalidInput", "PayloadTooLarge", "NotAuthenticated", "Forbidden", "NotFound",
    "Conflict", "BillingNotice", "RateLimited", "ServiceUnavailable", "WriteFailed",
}  # fmt: skip
# Where the texts agents and REST clients can see are raised (the dashboard's own texts are not API).
SOURCES = [
    "memories",
    "transcripts",
    "ledger",
    "datarights",
    "mmw",
    "billing/gate.py",
    "accounts/keys.py",
    "accounts/authentication.py",
    "oauth/client_metadata.py",
    "accounts/services.py",
]


def test_every_generated_table_is_current() -> None:
    assert reference.stale_pages(PAGES) == [], "run: DJANGO_SETTINGS_MODULE=mmw.settings.test manage.py reference"


def test_every_operation_has_a_page_with_its_parameter_table() -> None:
    for tool in reference.TOOLS:
        page = PAGES / f"{tool}.md"
        assert page.exists(), f"docs/reference/{tool}.md is missing"
        assert f"<!-- generated: parameters {tool} -->" in page.read_text()
        assert f"]({tool}.md)" in (PAGES / "README.md").read_text()


def test_every_oauth_route_is_on_the_oauth_page() -> None:
    page = (PAGES / "oauth.md").read_text()
    dashboard = [oauth_config.CONSENT_PATH, reverse("dashboard:connected-apps"), "/connected-apps/<id>/revoke"]
    for path in [*sorted(oauth_endpoints.PATHS), *dashboard]:
        assert f"{path}" in page, f"docs/reference/oauth.md does not document {path}"
    assert "](oauth.md)" in (PAGES / "README.md").read_text()
    for scope in GRANTABLE_SCOPES:
        assert f"`{scope}`" in page or f'"{scope}"' in page


def raised_texts() -> list[tuple[str, str]]:
    """(where, constant text) of every domain error raised with a literal or f-string message, and
    of every error template (``Template("… %(name)s …")``: its text between the values)."""
    found = []
    paths: list[Path] = []
    for source in SOURCES:
        target = ROOT / source
        paths += [target] if target.is_file() else [p for p in target.rglob("*.py") if "migrations" not in p.parts]
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            if node.func.id == "Template" and node.args and isinstance(node.args[0], ast.Constant):
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                for part in re.split(r"%\(\w+\)s", str(node.args[0].value)):
                    if len(part.strip()) >= 6:
                        found.append((where, part.strip()))
                continue
            if node.func.id not in ERROR_CLASSES:
                continue
            if not node.args:
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            message = node.args[0]
            if isinstance(message, ast.Constant) and isinstance(message.value, str):
                found.append((where, message.value))
            elif isinstance(message, ast.JoinedStr):
                for part in message.values:
                    if isinstance(part, ast.Constant) and len(str(part.value).strip()) >= 6:
                        found.append((where, str(part.value).strip()))
    return found


def test_every_error_text_in_the_code_is_on_the_errors_page() -> None:
    page = (PAGES / "errors.md").read_text()
    texts = raised_texts()
    assert len(texts) > 40  # the scan found the services' texts
    missing = [f"{where}: {text!r}" for where, text in texts if text not in page]
    assert not missing, "explain these in docs/reference/errors.md:\n" + "\n".join(missing)


def test_the_boundarys_own_texts_are_on_the_errors_page() -> None:
    from mmw import boundary

    page = (PAGES / "errors.md").read_text()
    for text in (
        boundary.UNAVAILABLE_MESSAGE,
        boundary.OVERLOADED_MESSAGE,
        boundary.DEADLINE_MESSAGE,
        boundary.TOO_LARGE_MESSAGE,
        boundary.TOO_LARGE_BULK_MESSAGE,
        boundary.TOO_DEEP_MESSAGE,
        "internal error (request <id>)",
    ):
        assert text in page, text


def test_the_oauth_routes_own_texts_are_on_the_errors_page() -> None:
    page = (PAGES / "errors.md").read_text()
    for text in (oauth_endpoints.TOO_MANY_REGISTRATIONS, oauth_endpoints.TOO_MANY_CLIENTS):
        assert f"`{text}`" in page, text
