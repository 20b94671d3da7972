"""Outbound HTTP to URLs customers and clients give us (webhooks, OAuth client ID metadata
documents), guarded against SSRF.

Each use passes a :class:`Policy` (its allowances, timeout and size bound), built from its own
settings at the moment of use. Every hop — the URL given and each redirect — is checked before
any byte is sent: the scheme must be https (plain http only when the policy allows it), and
*every* address the host resolves to must be public: loopback, private, link-local, multicast,
reserved and unspecified addresses are refused unless they fall in the policy's
``allowed_networks``. The connection then goes to the address that was checked (the host is
resolved once per hop and the request pinned to it, with the name kept for ``Host``, TLS SNI and
certificate verification), so a DNS answer that changes between the check and the connection
(rebinding) cannot redirect it.

This module reads no settings and imports nothing of MMW: it sits on the ground floor
(docs/architecture.md) so any app may use it.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

MAX_REDIRECTS = 3
REDIRECTS = (301, 302, 303, 307, 308)

# The resolver (tests replace it with a stub: a DNS answer they control).
Resolver = Callable[[str, int], list[str]]


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


resolve: Resolver = system_resolver


class Refused(Exception):
    """The URL, or an address it resolves or redirects to, may not be reached, or the answer was
    too large or too slow. ``str()`` says why."""


@dataclass(frozen=True)
class Policy:
    """What one use of outbound HTTP allows. ``allow_http`` and ``allowed_networks`` are test or
    operator allowances (off by default); ``ca_file`` trusts an extra CA bundle instead of the
    system's (tests with their own certificate); ``timeout`` bounds each network operation and,
    for :func:`get`, the whole exchange; ``max_bytes`` bounds a :func:`get` body."""

    allow_http: bool = False
    allowed_networks: tuple[str, ...] = ()
    ca_file: str = ""
    timeout: float = 10.0
    max_bytes: int = 64 * 1024
    max_redirects: int = MAX_REDIRECTS


@dataclass(frozen=True)
class Answer:
    status: int
    ms: int


@dataclass(frozen=True)
class Fetched:
    """A :func:`get` answer: the final URL (after redirects), status, headers and the body."""

    url: str
    status: int
    headers: httpx.Headers
    body: bytes


def check_url(url: str, policy: Policy) -> tuple[str, str, int]:
    """(scheme, host, port) of an acceptable URL; ``Refused`` otherwise. No DNS lookup."""
    parts = urlsplit(url)
    allowed = ("https", "http") if policy.allow_http else ("https",)
    if parts.scheme not in allowed:
        raise Refused("the URL must start with https://")
    if not parts.hostname or parts.username or parts.password:
        raise Refused("the URL must name a host, without user or password")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise Refused("the URL's port is not a number from 0 to 65535") from None
    return parts.scheme, parts.hostname, port


def checked_addresses(host: str, port: int, policy: Policy) -> list[str]:
    """The host's addresses, all of them allowed; ``Refused`` if any is not (or none resolve)."""
    try:
        addresses = [host] if _is_ip(host) else resolve(host, port)
    except OSError as exc:
        raise Refused(f"{host} does not resolve") from exc
    if not addresses:
        raise Refused(f"{host} does not resolve")
    for address in addresses:
        if not _allowed(ipaddress.ip_address(address), policy.allowed_networks):
            raise Refused(f"{host} resolves to {address}, a private, loopback or link-local address")
    return addresses


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _allowed(address: ipaddress.IPv4Address | ipaddress.IPv6Address, networks: tuple[str, ...]) -> bool:
    if any(address in ipaddress.ip_network(n, strict=False) for n in networks):
        return True
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        return _allowed(mapped, networks)
    return address.is_global and not address.is_multicast


def post(url: str, *, body: bytes, headers: dict[str, str], policy: Policy) -> Answer:
    """POST ``body`` to ``url``, following up to ``policy.max_redirects`` redirects, each hop
    checked and pinned (see the module). Network errors and timeouts raise ``httpx.HTTPError``."""
    started = time.perf_counter()
    with _followed(url, "POST", body, headers, policy) as (_, response):
        return Answer(response.status_code, round((time.perf_counter() - started) * 1000))


def get(url: str, *, headers: dict[str, str], policy: Policy) -> Fetched:
    """GET ``url`` within ``policy``: each hop checked and pinned, at most ``policy.max_redirects``
    redirects, a body of at most ``policy.max_bytes`` (read no further: ``Refused``) and the whole
    exchange within ``policy.timeout`` seconds (``Refused``). Network errors raise
    ``httpx.HTTPError``."""
    deadline = time.monotonic() + policy.timeout
    with _followed(url, "GET", b"", headers, policy) as (final_url, response):
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > policy.max_bytes:
                raise Refused(f"the answer is larger than {policy.max_bytes} bytes")
            if time.monotonic() > deadline:
                raise Refused(f"the answer took longer than {policy.timeout:g} s")
        return Fetched(final_url, response.status_code, response.headers, bytes(body))


@contextmanager
def _followed(
    url: str, method: str, body: bytes, headers: dict[str, str], policy: Policy
) -> Iterator[tuple[str, httpx.Response]]:
    """The first answer that is not a redirect (its URL, its open response), each hop checked
    and pinned (``_PinnedStream``); more than ``policy.max_redirects`` redirects: ``Refused``."""
    for _ in range(policy.max_redirects + 1):
        with _PinnedStream(url, method, body, headers, policy) as response:
            location = response.headers.get("location")
            if response.status_code in REDIRECTS and location:
                url = urljoin(url, location)
                continue
            yield url, response
            return
    raise Refused(f"more than {policy.max_redirects} redirects")


class _PinnedStream:
    """One hop: ``url`` checked, resolved once, and requested at the checked address."""

    def __init__(self, url: str, method: str, body: bytes, headers: dict[str, str], policy: Policy) -> None:
        scheme, host, port = check_url(url, policy)
        address = checked_addresses(host, port, policy)[0]
        parts = urlsplit(url)
        literal = f"[{address}]" if ":" in address else address
        pinned = urlunsplit((scheme, f"{literal}:{port}", parts.path or "/", parts.query, ""))
        default_port = 443 if scheme == "https" else 80
        host_header = host if port == default_port else f"{host}:{port}"
        extensions: dict[str, Any] = {"sni_hostname": host} if scheme == "https" else {}
        verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=policy.ca_file) if policy.ca_file else True
        self._client = httpx.Client(timeout=policy.timeout, follow_redirects=False, trust_env=False, verify=verify)
        self._request = self._client.build_request(
            method, pinned, content=body or None, headers={**headers, "Host": host_header}, extensions=extensions
        )
        self._response: httpx.Response | None = None

    def __enter__(self) -> httpx.Response:
        try:
            self._response = self._client.send(self._request, stream=True)
        except BaseException:
            self._client.close()
            raise
        return self._response

    def __exit__(self, *exc: object) -> None:
        if self._response is not None:
            self._response.close()
        self._client.close()
