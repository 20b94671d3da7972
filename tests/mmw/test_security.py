"""Hardening: the admin login's throttle, Content-Security-Policy on every page, the production
transport settings when MMW_PUBLIC_URL is https, and one Authorization rule on REST and MCP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from accounts.keys import bearer_token
from accounts.models import User
from tests import live
from tests.conftest import Tenancy

ROOT = Path(__file__).resolve().parents[2]
CSP = "Content-Security-Policy"
live_server = live.live_server


# --- the admin login -------------------------------------------------------------------------


@pytest.fixture
def staff(db: None) -> User:
    return User.objects.create_user("support@example.com", "right-password-1", is_staff=True)


def admin_login(client: Client, password: str) -> Any:
    return client.post(
        reverse("admin:login"), {"username": "support@example.com", "password": password, "next": "/admin/"}
    )


def test_admin_login_is_throttled_like_the_dashboard_login(client: Client, staff: User) -> None:
    for _ in range(6):
        assert admin_login(client, "wrong").status_code == 200
    right = admin_login(client, "right-password-1")
    assert right.status_code == 200
    assert b"Too many failed login attempts" in right.content
    assert "_auth_user_id" not in client.session


def test_admin_and_dashboard_failures_share_one_counter(client: Client, staff: User) -> None:
    for _ in range(5):
        client.post(reverse("account_login"), {"login": "support@example.com", "password": "wrong"})
    assert b"Too many failed login attempts" in admin_login(client, "right-password-1").content


def test_admin_login_still_works_and_still_requires_staff(client: Client, staff: User, tenancy: Tenancy) -> None:
    tenancy.alice.user.set_password("alice-password-1")
    tenancy.alice.user.save()
    refused = client.post(
        reverse("admin:login"), {"username": "alice@example.com", "password": "alice-password-1", "next": "/admin/"}
    )
    assert refused.status_code == 200
    assert "_auth_user_id" not in client.session
    ok = admin_login(client, "right-password-1")
    assert ok.status_code == 302
    assert ok["Location"] == "/admin/"
    assert client.session["_auth_user_id"] == str(staff.pk)


# --- Content-Security-Policy -----------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/accounts/login/", "/accounts/signup/", "/admin/login/", "/healthz", "/api/v1/workspaces"]
)
def test_every_page_carries_the_strict_policy(client: Client, tenancy: Tenancy, path: str) -> None:
    policy = client.get(path)[CSP]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    assert directives["base-uri"] == "'self'"
    assert directives["form-action"].startswith("'self'")
    assert "unsafe" not in policy


def test_signed_in_dashboard_pages_carry_the_policy(tenancy: Tenancy) -> None:
    client = Client()
    client.force_login(tenancy.alice.user)
    for url in (reverse("dashboard:projects", args=[tenancy.alice.account.tenant_id]), "/admin/"):
        assert "default-src 'self'" in client.get(url)[CSP]


def test_templates_carry_no_inline_script_style_or_handler() -> None:
    """The policy forbids them; a template that adds one would break silently in the browser."""
    offenders = []
    for template in (ROOT / "dashboard" / "templates").rglob("*.html"):
        text = template.read_text()
        for needle in (" style=", " onclick=", " onsubmit=", " onchange=", "<style", "<script>", "javascript:"):
            if needle in text:
                offenders.append(f"{template.relative_to(ROOT)}: {needle.strip()}")
    assert offenders == []


# --- production transport settings -----------------------------------------------------------

SETTINGS_PROBE = """
import json
from django.conf import settings
names = ["SECURE_SSL_REDIRECT", "SECURE_PROXY_SSL_HEADER", "SECURE_REDIRECT_EXEMPT", "SECURE_HSTS_SECONDS",
         "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE"]
print(json.dumps({name: getattr(settings, name) for name in names}))
"""


def load_settings(public_url: str) -> dict[str, Any]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mmw.settings.base",
        "MMW_PUBLIC_URL": public_url,
        "MMW_SECRET_KEY": "probe",
        "DATABASE_URL": "postgres://probe@127.0.0.1:1/probe",  # settings only; nothing connects
    }
    for name in ("MMW_SSL_REDIRECT", "MMW_HSTS_SECONDS", "MMW_SECURE_COOKIES", "MMW_HSTS_PRELOAD"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", SETTINGS_PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.slow  # a fresh interpreter loads the settings
def test_https_public_url_turns_on_the_production_transport_settings() -> None:
    loaded = load_settings("https://mmw.example.com")
    assert loaded == {
        "SECURE_SSL_REDIRECT": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "SECURE_REDIRECT_EXEMPT": ["^healthz$"],
        "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": False,
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
    }


@pytest.mark.slow  # a fresh interpreter loads the settings
def test_http_public_url_leaves_them_off() -> None:
    loaded = load_settings("http://127.0.0.1:8000")
    assert loaded["SECURE_SSL_REDIRECT"] is False
    assert loaded["SECURE_HSTS_SECONDS"] == 0
    assert loaded["SESSION_COOKIE_SECURE"] is False


@pytest.mark.django_db
def test_plain_http_is_redirected_except_healthz(settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    client = Client()
    assert client.get("/healthz").status_code == 200
    redirected = client.get("/accounts/login/")
    assert redirected.status_code == 301
    assert redirected["Location"].startswith("https://")
    behind_tls = client.get("/accounts/login/", headers={"X-Forwarded-Proto": "https"})
    assert behind_tls.status_code == 200
    assert behind_tls["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"


# --- one Authorization rule ------------------------------------------------------------------

# (name, header value or None for no header, whether it carries the key)
AUTH_VARIANTS: list[tuple[str, str | None, bool]] = [
    ("valid", "Bearer {key}", True),
    ("double space", "Bearer  {key}", True),
    ("tab", "Bearer\t{key}", True),
    ("lowercase scheme", "bearer {key}", True),
    ("uppercase scheme", "BEARER {key}", True),
    ("trailing space after key", "Bearer {key} ", True),
    ("missing header", None, False),
    ("empty header", "", False),
    ("basic scheme", "Basic {key}", False),
    ("scheme only", "Bearer", False),
    ("empty key", "Bearer ", False),
    ("no separator", "Bearer{key}", False),
    ("key with a blank inside", "Bearer {key} x", False),
    ("wrong key", "Bearer mmw_notakeynotakeynotakey", False),
]


@pytest.mark.parametrize(("name", "template", "carries"), AUTH_VARIANTS, ids=[v[0] for v in AUTH_VARIANTS])
def test_the_parser_rule(name: str, template: str | None, carries: bool) -> None:
    token = bearer_token(None if template is None else template.format(key="mmw_abcdefgh1234"))
    if name == "wrong key":
        assert token == "mmw_notakeynotakeynotakey"
    else:
        assert (token == "mmw_abcdefgh1234") is carries
        assert (token is None) is (not carries)


def raw_status(base_url: str, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> int:
    """Send one request over a plain socket and return its status: header values go on the wire
    byte for byte (httpx refuses to send a value with a trailing blank)."""
    host, port = base_url.removeprefix("http://").split(":")
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: close", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body)
        first_line = sock.makefile("rb").readline()
    return int(first_line.split()[1])


@pytest.mark.slow
def test_rest_and_mcp_give_the_same_answer_for_every_authorization_header(
    live_server: live.LiveServer, tenancy: Tenancy
) -> None:
    tools_list = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    mcp_headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    for name, template, carries in AUTH_VARIANTS:
        headers = {} if template is None else {"Authorization": template.format(key=tenancy.alice.key)}
        rest = raw_status(live_server, "GET", "/api/v1/workspaces", headers)
        mcp = raw_status(live_server, "POST", "/mcp", {**mcp_headers, **headers}, tools_list)
        assert (rest, mcp) == ((200, 200) if carries else (401, 401)), (name, rest, mcp)
