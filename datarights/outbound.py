"""Outbound HTTP to addresses customers give us (webhooks), guarded against SSRF.

Every hop — the URL given and each redirect — is checked before any byte is sent: the scheme
must be https (plain http only when ``MMW_WEBHOOK_ALLOW_HTTP``), and *every* address the host
resolves to must be public: loopback, private, link-local, multicast, reserved and unspecified
addresses are refused unless they fall in ``MMW_WEBHOOK_ALLOWED_NETWORKS``. The connection then
goes to the address that was checked (the host is resolved once per hop and the request pinned to
it, with the name kept for ``Host`` and TLS), so a DNS answer that changes between the check and
the connection (rebinding) cannot redirect it.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx
from django.conf import settings

MAX_REDIRECTS = 3
REDIRECTS = (301, 302, 303, 307, 308)

# The resolver (tests replace it with a stub: a DNS answer they control).
Resolver = Callable[[str, int], list[str]]


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


resolve: Resolver = system_resolver


class Refused(Exception):
    """The URL, or an address it resolves or redirects to, may not be reached. ``str()`` says why."""


@dataclass(frozen=True)
class Answer:
    status: int
    ms: int


def check_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an acceptable URL; ``Refused`` otherwise. No DNS lookup."""
    parts = urlsplit(url)
    allowed = ("https", "http") if settings.MMW_WEBHOOK_ALLOW_HTTP else ("https",)
    if parts.scheme not in allowed:
        raise Refused("the URL must start with https://")
    if not parts.hostname or parts.username or parts.password:
        raise Refused("the URL must name a host, without user or password")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, parts.hostname, port


def checked_addresses(host: str, port: int) -> list[str]:
    """The host's addresses, all of them allowed; ``Refused`` if any is not (or none resolve)."""
    try:
        addresses = [host] if _is_ip(host) else resolve(host, port)
    except OSError as exc:
        raise Refused(f"{host} does not resolve") from exc
    if not addresses:
        raise Refused(f"{host} does not resolve")
    for address in addresses:
        if not _allowed(ipaddress.ip_address(address)):
            raise Refused(f"{host} resolves to {address}, a private, loopback or link-local address")
    return addresses


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _allowed(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if any(address in ipaddress.ip_network(n, strict=False) for n in settings.MMW_WEBHOOK_ALLOWED_NETWORKS):
        return True
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        return _allowed(mapped)
    return address.is_global and not address.is_multicast


def post(url: str, *, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
    """POST ``body`` to ``url``, following up to ``MAX_REDIRECTS`` redirects, each hop checked
    and pinned (see the module). Network errors and timeouts raise ``httpx.HTTPError``."""
    started = time.perf_counter()
    for _ in range(MAX_REDIRECTS + 1):
        scheme, host, port = check_url(url)
        address = checked_addresses(host, port)[0]
        response = _pinned_post(url, scheme, host, port, address, body, headers, timeout)
        location = response.headers.get("location")
        if response.status_code in REDIRECTS and location:
            url = urljoin(url, location)
            continue
        return Answer(response.status_code, round((time.perf_counter() - started) * 1000))
    raise Refused(f"more than {MAX_REDIRECTS} redirects")


def _pinned_post(
    url: str, scheme: str, host: str, port: int, address: str, body: bytes, headers: dict[str, str], timeout: float
) -> httpx.Response:
    parts = urlsplit(url)
    literal = f"[{address}]" if ":" in address else address
    pinned = urlunsplit((scheme, f"{literal}:{port}", parts.path or "/", parts.query, ""))
    default_port = 443 if scheme == "https" else 80
    host_header = host if port == default_port else f"{host}:{port}"
    extensions: dict[str, Any] = {"sni_hostname": host} if scheme == "https" else {}
    with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
        request = client.build_request(
            "POST", pinned, content=body, headers={**headers, "Host": host_header}, extensions=extensions
        )
        return client.send(request)
