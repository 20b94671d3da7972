"""The client address of a request: the one place ``X-Forwarded-For`` is read (docs/deploy.md,
"Client addresses").

Everything keyed by a client's address reads the ASGI scope's ``client`` — Django's
``REMOTE_ADDR`` (allauth's failed-login, sign-up and password-reset limits, the admin's login),
Starlette's ``request.client`` (OAuth registration and metadata-document authorizations) — and
``ClientAddress``, the outermost wrapper of the application, sets it:

- A request whose TCP peer is not in ``settings.MMW_TRUSTED_PROXIES`` (default: none) comes from
  its peer; an ``X-Forwarded-For`` it carries is ignored, whatever it says.
- From a trusted peer, the ``X-Forwarded-For`` headers (comma-joined, in order) are read from the
  right: each proxy appends the address it received the request from, so trusted addresses are
  our own proxies and are skipped, and the first untrusted one is the client. What a client wrote
  in the header itself sits further left and is never reached. When every address is trusted,
  the left-most is the client (a request from inside). An entry that is not an IP address (with
  or without a port) ends the walk: the client is then the last hop we could believe, so a
  garbled header never names an address a client chose.

uvicorn has its own ``X-Forwarded-For`` handling, on by default and trusting 127.0.0.1: it must be
off (``--no-proxy-headers``), as in every command line the repository ships. A request whose
``client`` already has port 0 and an ``X-Forwarded-For`` looks rewritten by such a server;
that is logged once, as an error, because the address it carries cannot be trusted.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from typing import Any

from django.conf import settings

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

FORWARDED_FOR = b"x-forwarded-for"
REWRITTEN_TEXT = (
    "the client address arrived already rewritten from X-Forwarded-For (port 0): run uvicorn with "
    "--no-proxy-headers; MMW_TRUSTED_PROXIES decides whom to believe"
)

logger = logging.getLogger(__name__)


def parse_entry(entry: str) -> Address | None:
    """One ``X-Forwarded-For`` entry as an address: ``203.0.113.7``, ``203.0.113.7:4711``,
    ``2001:db8::1``, ``[2001:db8::1]`` or ``[2001:db8::1]:4711`` (``::ffff:203.0.113.7`` is
    203.0.113.7); ``None`` for anything else (``unknown``, a host name, an obfuscated identifier)."""
    text = entry.strip()
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else ""
    elif text.count(":") == 1:
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # a dual-stack socket's view of an IPv4 peer
    return address


def is_trusted(address: Address, trusted: Sequence[Network]) -> bool:
    return any(address.version == net.version and address in net for net in trusted)


def client_address(peer: str, forwarded_for: Iterable[str], trusted: Sequence[Network]) -> str:
    """The client of a request whose TCP peer is ``peer`` and whose ``X-Forwarded-For`` headers
    are ``forwarded_for`` (the module's contract)."""
    believed = parse_entry(peer)
    if believed is None or not is_trusted(believed, trusted):
        return peer
    entries = [e for header in forwarded_for for e in header.split(",")]
    for entry in reversed(entries):
        address = parse_entry(entry)
        if address is None:
            break
        believed = address
        if not is_trusted(address, trusted):
            break
    return str(believed)


class ClientAddress:
    """ASGI wrapper: replaces ``scope["client"]`` with the client address (port 0) for HTTP and
    WebSocket requests that came through a trusted proxy; other requests pass unchanged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._reported = False  # one error per process (one application per process)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        peer = scope.get("client")
        if scope["type"] in ("http", "websocket") and peer:
            forwarded = [v.decode("latin-1") for k, v in scope.get("headers", ()) if k == FORWARDED_FOR]
            if forwarded:
                self._notice_rewritten(peer)
                trusted: Sequence[Network] = settings.MMW_TRUSTED_PROXIES
                client = client_address(peer[0], forwarded, trusted) if trusted else peer[0]
                if client != peer[0]:
                    scope = dict(scope, client=(client, 0))
        await self.app(scope, receive, send)

    def _notice_rewritten(self, peer: Sequence[Any]) -> None:
        if peer[1] == 0 and not self._reported:
            self._reported = True
            logger.error(REWRITTEN_TEXT)
