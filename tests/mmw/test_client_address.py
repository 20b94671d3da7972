"""Which address a request comes from (docs/deploy.md, "Client addresses"): the throttles keyed by
it (OAuth registration, failed logins) must not be fooled by an ``X-Forwarded-For`` a client wrote
itself, and behind a configured proxy they must see each client, not the proxy.

Issue #35: uvicorn trusted ``X-Forwarded-For`` from 127.0.0.1 by default, so through a local
proxy that passed the header along, 22 registrations from one spoofed address were refused (429)
and the next spoofed address got 201; failed logins from rotating addresses were never throttled.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured

from accounts.management.commands import serve
from mmw.client_address import REWRITTEN_TEXT, ClientAddress, client_address
from mmw.env import env_networks
from tests import live
from tests.haproxy import haproxy_binary, haproxy_config
from tests.live import LiveServer


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


live_server = live.live_server

REDIRECT = "http://127.0.0.1:9/callback"
LOOPBACK = (ipaddress.ip_network("127.0.0.0/8"),)


def register(url: str, forwarded_for: str | None = None) -> int:
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for is not None else {}
    body = {"client_name": "Drive-by", "redirect_uris": [REDIRECT]}
    return httpx.post(f"{url}/oauth/register", json=body, headers=headers).status_code


def test_a_spoofed_forwarded_for_from_an_untrusted_peer_buys_no_new_registration_allowance(
    live_server: LiveServer, settings: Any
) -> None:
    settings.PUBLIC_URL = live_server.url
    settings.MMW_OAUTH_REGISTRATIONS_PER_HOUR = 2
    settings.MMW_TRUSTED_PROXIES = ()
    assert [register(live_server, "198.51.100.1") for _ in range(3)] == [201, 201, 429]
    # Another made-up address is the same peer: still refused.
    assert register(live_server, "198.51.100.2") == 429
    assert register(live_server) == 429


def test_behind_a_configured_proxy_each_client_has_its_own_registration_allowance(
    live_server: LiveServer, settings: Any
) -> None:
    settings.PUBLIC_URL = live_server.url
    settings.MMW_OAUTH_REGISTRATIONS_PER_HOUR = 1
    settings.MMW_TRUSTED_PROXIES = LOOPBACK
    assert register(live_server, "198.51.100.1") == 201
    assert register(live_server, "198.51.100.1") == 429
    assert register(live_server, "198.51.100.2") == 201  # another client behind the same proxy
    # What the client wrote itself sits left of what the proxy appended: the right-most
    # untrusted address is the client the proxy saw.
    assert register(live_server, "203.0.113.50, 198.51.100.1") == 429
    assert register(live_server, "198.51.100.3, 127.0.0.1") == 201  # a chain of trusted proxies


LOGIN_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def failed_login(client: httpx.Client, email: str, forwarded_for: str) -> str:
    page = client.get("/accounts/login/")
    token = LOGIN_TOKEN.search(page.text)
    assert token is not None
    answer = client.post(
        "/accounts/login/",
        data={"login": email, "password": "wrong-password", "csrfmiddlewaretoken": token.group(1)},
        headers={"X-Forwarded-For": forwarded_for, "Referer": f"{client.base_url}/accounts/login/"},
    )
    return answer.text


def test_failed_logins_from_rotating_spoofed_addresses_are_throttled_by_the_real_peer(
    live_server: LiveServer, settings: Any
) -> None:
    settings.MMW_TRUSTED_PROXIES = ()
    with httpx.Client(base_url=live_server.url) as client:
        # Ten a minute per address (ACCOUNT_RATE_LIMITS); each try names another person so only
        # the per-address limit can apply.
        pages = [failed_login(client, f"nobody{i}@example.com", f"198.51.100.{i}") for i in range(12)]
    assert "Too many failed login attempts" not in pages[9]
    assert "Too many failed login attempts" in pages[10]
    assert "Too many failed login attempts" in pages[11]


@pytest.fixture(autouse=True)
def _fresh_counters(transactional_db: None) -> Any:
    """Rate counters live in the cache, which outlives a test's database flush."""
    cache.clear()
    yield
    cache.clear()


# --- the rule, without a server -------------------------------------------------------------------

PROXIES = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("2001:db8:ffff::/48"))


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "client"),
    [
        ("203.0.113.9", ["198.51.100.1"], "203.0.113.9"),  # an untrusted peer: the header is ignored
        ("10.0.0.2", [], "10.0.0.2"),  # a proxy that added nothing
        ("10.0.0.2", ["198.51.100.1"], "198.51.100.1"),
        ("10.0.0.2", ["203.0.113.50, 198.51.100.1"], "198.51.100.1"),  # the client's own entry is left of ours
        ("10.0.0.2", ["203.0.113.50", "198.51.100.1"], "198.51.100.1"),  # two header lines, in order
        ("10.0.0.2", ["198.51.100.1, 10.9.9.9"], "198.51.100.1"),  # a chain of our proxies
        ("10.0.0.2", ["10.1.1.1, 10.9.9.9"], "10.1.1.1"),  # from inside: the left-most
        ("10.0.0.2", ["198.51.100.1:4711"], "198.51.100.1"),
        ("10.0.0.2", ["[2001:db8::7]:4711"], "2001:db8::7"),
        ("10.0.0.2", ["2001:db8::7"], "2001:db8::7"),
        ("10.0.0.2", ["::ffff:198.51.100.1"], "198.51.100.1"),
        ("::ffff:10.0.0.2", ["198.51.100.1"], "198.51.100.1"),  # a dual-stack socket's peer
        ("2001:db8:ffff::1", ["198.51.100.1"], "198.51.100.1"),
        ("10.0.0.2", ["unknown"], "10.0.0.2"),  # garbage: the last hop we believe
        ("10.0.0.2", ["198.51.100.1, evil.example, 10.9.9.9"], "10.9.9.9"),
        ("10.0.0.2", ["[2001:db8::7"], "10.0.0.2"),
        ("10.0.0.2", [""], "10.0.0.2"),
    ],
)
def test_the_client_is_the_right_most_address_no_trusted_proxy_added(
    peer: str, forwarded_for: list[str], client: str
) -> None:
    assert client_address(peer, forwarded_for, PROXIES) == client


def test_with_no_trusted_proxy_the_peer_is_always_the_client() -> None:
    assert client_address("127.0.0.1", ["198.51.100.1"], ()) == "127.0.0.1"


def scope(client: tuple[str, int], forwarded_for: str | None) -> dict[str, Any]:
    headers = [(b"host", b"mmw.example.com")]
    if forwarded_for is not None:
        headers.append((b"x-forwarded-for", forwarded_for.encode()))
    return {"type": "http", "client": client, "headers": headers, "path": "/"}


def seen_client(app_scope: dict[str, Any], wrapper: ClientAddress | None = None) -> Any:
    """The ``client`` the application behind ``ClientAddress`` sees for ``app_scope``."""
    seen: list[Any] = []

    async def app(s: Any, receive: Any, send: Any) -> None:
        seen.append(s["client"])

    wrapper = wrapper or ClientAddress(app)
    wrapper.app = app
    asyncio.run(wrapper(app_scope, _never, _never))
    return seen[0]


async def _never(*args: Any) -> Any:
    raise AssertionError("not called")


def test_the_wrapper_rewrites_the_scope_only_behind_a_trusted_proxy(settings: Any) -> None:
    settings.MMW_TRUSTED_PROXIES = PROXIES
    assert seen_client(scope(("10.0.0.2", 5000), "198.51.100.1")) == ("198.51.100.1", 0)
    assert seen_client(scope(("203.0.113.9", 5000), "198.51.100.1")) == ("203.0.113.9", 5000)
    assert seen_client(scope(("10.0.0.2", 5000), None)) == ("10.0.0.2", 5000)


def test_an_address_already_rewritten_by_uvicorn_is_reported_once(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.MMW_TRUSTED_PROXIES = ()
    wrapper = ClientAddress(_never)
    for _ in range(3):
        assert seen_client(scope(("198.51.100.1", 0), "198.51.100.1"), wrapper) == ("198.51.100.1", 0)
    assert seen_client(scope(("198.51.100.1", 5000), "198.51.100.1"), ClientAddress(_never)) == ("198.51.100.1", 5000)
    assert [r.getMessage() for r in caplog.records if r.name == "mmw.client_address"] == [REWRITTEN_TEXT]


# --- the setting ----------------------------------------------------------------------------------


def test_trusted_proxies_are_read_as_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MMW_TRUSTED_PROXIES", " 10.0.0.0/8, 127.0.0.1 ,::1,")
    assert env_networks("MMW_TRUSTED_PROXIES", []) == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("127.0.0.1/32"),
        ipaddress.ip_network("::1/128"),
    )
    monkeypatch.delenv("MMW_TRUSTED_PROXIES")
    assert env_networks("MMW_TRUSTED_PROXIES", []) == ()


@pytest.mark.parametrize("value", ["10.0.0.1/8", "proxy.internal", "10.0.0.0/33", "*"])
def test_a_trusted_proxy_that_is_not_an_address_or_network_fails_loudly(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("MMW_TRUSTED_PROXIES", value)
    with pytest.raises(ImproperlyConfigured, match="MMW_TRUSTED_PROXIES"):
        env_networks("MMW_TRUSTED_PROXIES", [])


# --- what the repository ships --------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent.parent


def test_every_shipped_uvicorn_command_leaves_forwarded_for_to_mmw() -> None:
    """uvicorn's own proxy headers (on by default, trusting 127.0.0.1) would rewrite the client
    before MMW sees it; every command line the repository ships turns them off."""
    assert "--no-proxy-headers" in serve._web("127.0.0.1", 8000, 1)
    shipped = [ROOT / "Procfile", ROOT / "deploy/systemd/mmw-web@.service", ROOT / "bench/scaleout.py"]
    for path in shipped:
        text = path.read_text()
        assert "uvicorn" in text
        assert "--no-proxy-headers" in text, path


@pytest.fixture
def haproxy(live_server: LiveServer, tmp_path: Path) -> Iterator[str]:
    """Debian's haproxy with ``deploy/haproxy.cfg`` in front of the live server (the config
    rewritten as ``bench/scaleout.py`` does: its port and one server); its URL."""
    binary = haproxy_binary()
    if binary is None:
        pytest.fail("haproxy is not installed: make test installs it (scripts/ensure_haproxy.sh)")
    port = free_port()
    config = tmp_path / "haproxy.cfg"
    config.write_text(haproxy_config(port, [int(live_server.url.rsplit(":", 1)[1])]))
    proc = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def register_from(url: str, source: str, forwarded_for: str) -> int:
    """A registration sent from the local address ``source`` (any of 127.0.0.0/8 on Linux)."""
    transport = httpx.HTTPTransport(local_address=source)
    body = {"client_name": "Drive-by", "redirect_uris": [REDIRECT]}
    with httpx.Client(transport=transport) as client:
        answer = client.post(f"{url}/oauth/register", json=body, headers={"X-Forwarded-For": forwarded_for})
    return answer.status_code


def test_through_the_shipped_haproxy_config_each_client_is_counted_and_spoofing_is_not(
    haproxy: str, settings: Any
) -> None:
    settings.PUBLIC_URL = haproxy
    settings.MMW_OAUTH_REGISTRATIONS_PER_HOUR = 1
    settings.MMW_TRUSTED_PROXIES = (ipaddress.ip_network("127.0.0.1/32"),)  # haproxy's address only
    assert register_from(haproxy, "127.0.0.2", "198.51.100.1") == 201
    # The same client, pretending to be someone else: haproxy dropped its header.
    assert register_from(haproxy, "127.0.0.2", "198.51.100.2") == 429
    # Another client behind the same balancer has its own allowance.
    assert register_from(haproxy, "127.0.0.3", "198.51.100.1") == 201


def test_the_haproxy_config_replaces_a_client_forwarded_for_with_its_own() -> None:
    frontend = (ROOT / "deploy/haproxy.cfg").read_text().split("frontend mmw", 1)[1].split("backend", 1)[0]
    lines = [line.strip() for line in frontend.splitlines()]
    assert "http-request del-header X-Forwarded-For" in lines
    assert "option forwardfor" in lines
