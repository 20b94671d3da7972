"""Outbound HTTP to URLs customers and clients give us (webhooks, OAuth client ID metadata
documents), guarded against SSRF and bounded in time.

Each use passes a :class:`Policy` (its allowances, timeout and size bound), built from its own
settings at the moment of use. Every hop — the URL given and each redirect — is checked before
any byte is sent:

- the URL must be well formed (:func:`check_url`): https (plain http only when the policy allows
  it), a host that is an IP address or a DNS name whose labels are 1–63 letters, digits, ``-`` or
  ``_`` (an internationalised name is taken in its ASCII form), at most 253 characters, a port
  from 1 to 65535, no user or password, no spaces or control characters. A URL that is not is
  :class:`Refused` with its reason — never another exception.
- *every* address the host resolves to must be public (:func:`is_public`): IPv4 special ranges
  (private, loopback, link-local, shared, documentation, benchmarking, multicast, reserved) are
  refused; an IPv6 address that stands for an IPv4 one (IPv4-mapped, -compatible or -translated,
  NAT64's well-known prefix, 6to4) is judged by that IPv4 address; any other IPv6 address must be
  global unicast (``2000::/3``), global by IANA's registry, and not Teredo or documentation.
  The policy's ``allowed_networks`` are the operator's exceptions.

The connection then goes to the address that was checked (the host is resolved once per hop and
the request pinned to it, with the name kept for ``Host``, TLS SNI and certificate verification),
so a DNS answer that changes between the check and the connection (rebinding) cannot redirect it.

``policy.timeout`` is one deadline for the whole exchange, measured on a monotonic clock: DNS,
connecting, TLS, sending, the answer's headers and body, across every redirect. Each socket
operation gets only what is left of it (``_DeadlineBackend``), so a receiver that drips its answer
a byte at a time is cut at the deadline (:class:`TimedOut`), however short each wait.

This module reads no settings and imports nothing of MMW: it sits on the ground floor
(docs/architecture.md) so any app may use it.

Why one module of this length: the SSRF guard is one contract (each hop checked, addresses pinned, a
deadline over the whole exchange); splitting its transport pieces from its checks would hide that.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, urljoin, urlsplit, urlunsplit

import httpcore
import httpx

MAX_REDIRECTS = 3
REDIRECTS = (301, 302, 303, 307, 308)
NOT_PUBLIC = "a private, loopback or link-local address"
WRITE_CHUNK = 16 * 1024

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# The resolver (tests replace it with a stub: a DNS answer they control).
Resolver = Callable[[str, int], list[str]]


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


resolve: Resolver = system_resolver


class Refused(Exception):
    """The URL, or an address it resolves or redirects to, may not be reached, or the answer was
    too large or too slow. ``str()`` says why."""


class TimedOut(Refused):
    """The exchange did not finish within the policy's deadline. ``str()`` says what was late."""


@dataclass(frozen=True)
class Policy:
    """What one use of outbound HTTP allows. ``allow_http`` and ``allowed_networks`` are test or
    operator allowances (off by default); ``ca_file`` trusts an extra CA bundle instead of the
    system's (tests with their own certificate); ``timeout`` is the deadline of the whole exchange
    (DNS, connecting, sending, the answer's headers and body, every redirect); ``max_bytes``
    bounds a :func:`get` body (a :func:`post` reads that much of its answer and ignores the rest)."""

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


# --- URLs -----------------------------------------------------------------------------------

_LABEL = re.compile(r"[a-z0-9_-]+")
_PORT = "the URL's port is not a number from 1 to 65535"


def check_url(url: str, policy: Policy) -> tuple[str, str, int]:
    """(scheme, host, port) of an acceptable URL, the host in ASCII (an internationalised name in
    its ``xn--`` form); ``Refused`` naming what is wrong otherwise. No DNS lookup."""
    if any(ch <= " " or ch == "\x7f" for ch in url):
        raise Refused("the URL may not contain spaces or control characters")
    try:
        parts = urlsplit(url)
    except ValueError:
        raise Refused("the URL is not well formed") from None
    allowed = ("https", "http") if policy.allow_http else ("https",)
    if parts.scheme not in allowed:
        raise Refused("the URL must start with https://")
    if not parts.hostname or "@" in parts.netloc:  # any userinfo, even an empty ":@"
        raise Refused("the URL must name a host, without user or password")
    try:
        port = parts.port
    except ValueError:
        raise Refused(_PORT) from None
    if port == 0:
        raise Refused(_PORT)
    return parts.scheme, _host(parts), port or (443 if parts.scheme == "https" else 80)


def _host(parts: SplitResult) -> str:
    host = parts.hostname or ""
    if "[" not in parts.netloc:
        return _domain(host)
    if "%" in host:
        raise Refused("the URL's host may not name an IPv6 zone")
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        raise Refused("the URL is not well formed") from None
    return host


def _domain(host: str) -> str:
    """``host`` (lower-cased, an IPv4 address or a DNS name) in ASCII, its labels checked."""
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise Refused("the URL's host name is not a valid internationalised domain name") from None
    if len(host) > 253:
        raise Refused("the URL's host name is longer than 253 characters")
    for label in host.split("."):
        if not label:
            raise Refused("the URL's host name has an empty label")
        if len(label) > 63:
            raise Refused("a label of the URL's host name is longer than 63 characters")
        if not _LABEL.fullmatch(label):
            raise Refused("the URL's host name may hold only letters, digits, '-' and '_'")
    return host


# --- addresses ------------------------------------------------------------------------------


def _networks(*cidrs: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(c) for c in cidrs)


# Refused whatever the running Python's ``is_global`` says (its tables have changed between versions).
NOT_PUBLIC_V4 = _networks(
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
    "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
)  # fmt: skip
GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
# Inside 2000::/3 but not public: IETF protocol assignments (Teredo 2001::/32, ORCHID, …) and documentation.
NOT_PUBLIC_V6 = _networks("2001::/23", "2001:db8::/32", "3fff::/20")
# IPv6 forms whose last 32 bits are the IPv4 address the packet really goes to.
IPV4_IN_LAST_32 = _networks(
    "::ffff:0:0/96",  # IPv4-mapped
    "::ffff:0:0:0/96",  # IPv4-translated (SIIT)
    "64:ff9b::/96",  # NAT64, well-known prefix (the local-use 64:ff9b:1::/48 is outside 2000::/3: refused)
    "::/96",  # IPv4-compatible (deprecated); :: and ::1 excepted
)
SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")


def stands_for(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a packet to ``address`` is really sent to, when ``address`` is an IPv6
    form of one (mapped, translated, NAT64 well-known prefix, compatible, 6to4); else ``None``."""
    if isinstance(address, ipaddress.IPv4Address) or int(address) <= 1:  # an IPv4 address, ::, ::1
        return None
    if any(address in network for network in IPV4_IN_LAST_32):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.sixtofour if address in SIX_TO_FOUR else None


def is_public(address: Address, allowed: Iterable[str] = ()) -> bool:
    """Whether outbound HTTP may reach ``address``: in an ``allowed`` network (CIDRs), or public —
    an IPv6 form of an IPv4 address is judged by that IPv4 address (see the module)."""
    allowed = tuple(allowed)
    if any(address in ipaddress.ip_network(cidr, strict=False) for cidr in allowed):
        return True
    ipv4 = stands_for(address)
    if ipv4 is not None:
        return is_public(ipv4, allowed)
    if isinstance(address, ipaddress.IPv4Address):
        special = any(address in network for network in NOT_PUBLIC_V4)
        return address.is_global and not address.is_multicast and not special
    special = any(address in network for network in NOT_PUBLIC_V6)
    return address in GLOBAL_UNICAST_V6 and address.is_global and not special


def checked_addresses(host: str, port: int, policy: Policy, *, deadline: float | None = None) -> list[str]:
    """The host's addresses, all of them allowed; ``Refused`` if any is not, or none resolve, or
    the lookup outlasts ``deadline`` (a ``time.monotonic`` instant; default ``policy.timeout`` from
    now: ``TimedOut``)."""
    if deadline is None:
        deadline = time.monotonic() + policy.timeout
    addresses = [host] if _is_ip(host) else _resolved(host, port, policy, deadline)
    if not addresses:
        raise Refused(f"{host} does not resolve")
    for text in addresses:
        address = ipaddress.ip_address(text)
        if not is_public(address, policy.allowed_networks):
            ipv4 = stands_for(address)
            reason = f", which stands for {ipv4}," if ipv4 else ","
            raise Refused(f"{host} resolves to {text}{reason} {NOT_PUBLIC}")
    return addresses


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _resolved(host: str, port: int, policy: Policy, deadline: float) -> list[str]:
    """``resolve(host, port)`` within the deadline. The lookup runs in a daemon thread: a resolver
    that does not answer is left behind (the system resolver gives up on its own) and the caller
    gets ``TimedOut`` at the deadline."""
    answer: list[list[str] | BaseException] = []

    def lookup() -> None:
        try:
            answer.append(resolve(host, port))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            answer.append(exc)

    thread = threading.Thread(target=lookup, name=f"resolve {host}", daemon=True)
    thread.start()
    thread.join(max(deadline - time.monotonic(), 0.0))
    if not answer:
        raise TimedOut(f"{host} did not resolve within {policy.timeout:g} s")
    result = answer[0]
    if isinstance(result, OSError | UnicodeError):
        raise Refused(f"{host} does not resolve") from result
    if isinstance(result, BaseException):
        raise result
    return result


# --- requests -------------------------------------------------------------------------------


def post(url: str, *, body: bytes, headers: dict[str, str], policy: Policy) -> Answer:
    """POST ``body`` to ``url``, following up to ``policy.max_redirects`` redirects, each hop
    checked and pinned (see the module), and read the answer (at most ``policy.max_bytes`` of its
    body; the rest is ignored) — all within ``policy.timeout`` (``TimedOut``). Network errors
    raise ``httpx.HTTPError``; ``ms`` is the time until the answer was read."""
    started = time.monotonic()
    deadline = started + policy.timeout
    with _timing_out(policy), _followed(url, "POST", body, headers, policy, deadline) as (_, response):
        read = 0
        for chunk in response.iter_raw():
            read += len(chunk)
            if read >= policy.max_bytes:
                break
        return Answer(response.status_code, round((time.monotonic() - started) * 1000))


def get(url: str, *, headers: dict[str, str], policy: Policy) -> Fetched:
    """GET ``url`` within ``policy``: each hop checked and pinned, at most ``policy.max_redirects``
    redirects, a body of at most ``policy.max_bytes`` (read no further: ``Refused``) and the whole
    exchange within ``policy.timeout`` seconds (``TimedOut``). Network errors raise
    ``httpx.HTTPError``."""
    deadline = time.monotonic() + policy.timeout
    with _timing_out(policy), _followed(url, "GET", b"", headers, policy, deadline) as (final_url, response):
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > policy.max_bytes:
                raise Refused(f"the answer is larger than {policy.max_bytes} bytes")
        return Fetched(final_url, response.status_code, response.headers, bytes(body))


@contextmanager
def _timing_out(policy: Policy) -> Iterator[None]:
    """Any timeout inside is the deadline passing (every operation is given only what is left of
    it): ``TimedOut``."""
    try:
        yield
    except httpx.TimeoutException:
        raise TimedOut(f"the answer took longer than {policy.timeout:g} s") from None


@contextmanager
def _followed(
    url: str, method: str, body: bytes, headers: dict[str, str], policy: Policy, deadline: float
) -> Iterator[tuple[str, httpx.Response]]:
    """The first answer that is not a redirect (its URL, its open response), each hop checked
    and pinned (``_PinnedStream``); more than ``policy.max_redirects`` redirects: ``Refused``."""
    for _ in range(policy.max_redirects + 1):
        with _PinnedStream(url, method, body, headers, policy, deadline) as response:
            location = response.headers.get("location")
            if response.status_code in REDIRECTS and location:
                url = urljoin(url, location)
                continue
            yield url, response
            return
    raise Refused(f"more than {policy.max_redirects} redirects")


class _PinnedStream:
    """One hop: ``url`` checked, resolved once, and requested at the checked address, every
    network operation bounded by ``deadline``."""

    def __init__(
        self, url: str, method: str, body: bytes, headers: dict[str, str], policy: Policy, deadline: float
    ) -> None:
        scheme, host, port = check_url(url, policy)
        address = checked_addresses(host, port, policy, deadline=deadline)[0]
        parts = urlsplit(url)
        literal = f"[{address}]" if ":" in address else address
        pinned = urlunsplit((scheme, f"{literal}:{port}", parts.path or "/", parts.query, ""))
        default_port = 443 if scheme == "https" else 80
        host_header = host if port == default_port else f"{host}:{port}"
        extensions: dict[str, Any] = {"sni_hostname": host} if scheme == "https" else {}
        verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=policy.ca_file) if policy.ca_file else True
        transport = _DeadlineTransport(verify, deadline)
        self._client = httpx.Client(
            transport=transport, timeout=policy.timeout, follow_redirects=False, trust_env=False
        )
        try:
            self._request = self._client.build_request(
                method, pinned, content=body or None, headers={**headers, "Host": host_header}, extensions=extensions
            )
        except httpx.InvalidURL:
            self._client.close()
            raise Refused("the URL is not well formed") from None
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


# --- the deadline, at the socket --------------------------------------------------------------


class _DeadlineTransport(httpx.HTTPTransport):
    """httpx's transport whose connections come from ``_DeadlineBackend``. httpx takes no network
    backend, so the connection pool it sends through (``_pool``) is replaced by one built with it."""

    def __init__(self, verify: ssl.SSLContext | bool, deadline: float) -> None:
        context = httpx.create_ssl_context(verify=verify, trust_env=False)
        super().__init__(verify=context, trust_env=False)
        self._pool = httpcore.ConnectionPool(ssl_context=context, network_backend=_DeadlineBackend(deadline))


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's socket backend, each operation's timeout cut to what is left until ``deadline``
    (``time.monotonic``); past it, the operation fails at once with httpcore's timeout error."""

    def __init__(self, deadline: float) -> None:
        self._inner = httpcore.SyncBackend()
        self.deadline = deadline

    def left(self, timeout: float | None, error: type[httpcore.TimeoutException]) -> float:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise error("the deadline has passed")
        return remaining if timeout is None else min(timeout, remaining)

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = self.left(timeout, httpcore.ConnectTimeout)
        stream = self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream, self)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("outbound HTTP does not use unix sockets")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, backend: _DeadlineBackend) -> None:
        self._inner = inner
        self._backend = backend

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._backend.left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # In chunks: the inner stream gives each send() the whole timeout it is handed.
        for start in range(0, len(buffer), WRITE_CHUNK):
            chunk = buffer[start : start + WRITE_CHUNK]
            self._inner.write(chunk, self._backend.left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        timeout = self._backend.left(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, timeout), self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)
