"""The API's outer exception boundary, as an ASGI wrapper around ``/api/`` and ``/mcp``.

Contract (docs/reliability.md): no answer on these surfaces is an HTML page or a bare
500. Before the app sees a request, the body is bounded (``MAX_BODY_BYTES``, ``BULK_BODY_BYTES``
on the bulk routes: JSON 413, whether announced by Content-Length or streamed) and JSON nesting
is bounded (``MAX_JSON_DEPTH``: 400).
After, any error answer that is not JSON (Django's HTML 404/500, the SDK's plain-text 500, ...)
is replaced by a JSON one with the same status; an exception that escapes the app becomes
JSON 500 ``internal error (request <id>)`` (logged once, with the id and the traceback), or
503 with ``Retry-After`` when the database is unavailable. On ``/mcp`` a tool that met an
unavailable database marks the request (``RequestState.unavailable``), and its JSON-RPC answer
(one buffered body per POST, JSON mode) is replaced by HTTP 503.

Every request on these surfaces carries a short random id: in the scope (``request_state``),
in the ``X-Request-Id`` response header, and in any error text and log line about it.

Why one module of this length: the one ASGI boundary around ``/api/`` and ``/mcp``; its contract
(above) is only checkable when read whole.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from django.db import InterfaceError, OperationalError
from psycopg_pool import PoolTimeout

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY_BYTES = 1024 * 1024
# Bulk routes (POST /api/v1/memories/batch: up to 500 records) take larger bodies and more time;
# which paths are bulk is the router's to say (``Boundary(bulk_paths=...)``).
BULK_BODY_BYTES = 16 * 1024 * 1024
BULK_DEADLINE = 60.0
MAX_JSON_DEPTH = 32
RETRY_AFTER_SECONDS = 1
SCOPE_KEY = "mmw.request"
UNAVAILABLE_MESSAGE = "service unavailable: the database is unreachable or busy, retry later"
OVERLOADED_MESSAGE = "service overloaded, retry later"
# The request deadline passed: the work may still finish (a write may commit after this answer),
# so a write is retried only with its idempotency key (docs/reference/rest.md, "Retries").
DEADLINE_MESSAGE = (
    "no answer within the request deadline: the request may still complete; retry a read, "
    "and a write only with its idempotency key"
)
TOO_LARGE_MESSAGE = "request body exceeds 1 MB"
TOO_LARGE_BULK_MESSAGE = "request body exceeds 16 MB"
TOO_DEEP_MESSAGE = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"

logger = logging.getLogger(__name__)


class ServiceOverloaded(Exception):
    """Raised when a call waited too long for a worker thread: shed with 503, like a pool timeout."""


@dataclass
class RequestState:
    """Per-request facts shared by the boundary and the code it wraps (same object, any scope copy)."""

    request_id: str
    unavailable: bool = False


def new_request_id() -> str:
    return secrets.token_hex(6)


def request_state(scope: Any) -> RequestState | None:
    """The state the boundary attached to this ASGI scope, if any."""
    state = scope.get(SCOPE_KEY) if isinstance(scope, MutableMapping) else None
    return state if isinstance(state, RequestState) else None


def is_unavailable(exc: BaseException) -> bool:
    """True for "the database cannot serve now": connect failures, pool timeouts, shed load."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OperationalError | InterfaceError | PoolTimeout | ServiceOverloaded):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


def json_too_deep(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when ``raw`` (JSON text, valid or not) opens more than ``limit`` nested arrays/objects.

    Strings are skipped first (brackets inside them do not count), so this is linear in the body
    and never recurses — a check that cannot itself be made to overflow.
    """
    if b"[" not in raw and b"{" not in raw:
        return False
    depth = 0
    for match in _BRACKET.finditer(_STRING.sub(b"", raw)):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth > limit:
                return True
        else:
            depth = max(0, depth - 1)
    return False


def error_body(surface: str, code: str, message: str, rpc_id: Any = None) -> bytes:
    """The JSON error body of ``surface``: REST's ``{"error": {...}}`` or a JSON-RPC error."""
    if surface == "mcp":
        rpc_code = -32000 if code == "service_unavailable" else -32600 if code != "internal_error" else -32603
        payload: dict[str, Any] = {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": rpc_code, "message": message}}
    else:
        payload = {"error": {"code": code, "message": message}}
    return json.dumps(payload).encode()


_CODES = {
    400: ("bad_request", "bad request"),
    401: ("not_authenticated", "authentication required"),
    403: ("forbidden", "forbidden"),
    404: ("not_found", "no such endpoint"),
    405: ("method_not_allowed", "method not allowed"),
    406: ("not_acceptable", "not acceptable"),
    413: ("payload_too_large", TOO_LARGE_MESSAGE),
    415: ("unsupported_media_type", "unsupported media type"),
    503: ("service_unavailable", UNAVAILABLE_MESSAGE),
}


def _code_for(status: int, request_id: str) -> tuple[str, str]:
    if status in _CODES:
        return _CODES[status]
    if status >= 500:
        return "internal_error", f"internal error (request {request_id})"
    return "error", f"request failed with HTTP {status}"


_KEPT_HEADERS = frozenset({b"allow", b"www-authenticate", b"retry-after"})


class _Reply:
    """Sends one complete JSON answer (with the request id header)."""

    def __init__(self, send: Send, request_id: str) -> None:
        self._send = send
        self._request_id = request_id
        self.sent = False

    async def __call__(self, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"x-request-id", self._request_id.encode()),
            *(extra or []),
        ]
        await self._send({"type": "http.response.start", "status": status, "headers": headers})
        await self._send({"type": "http.response.body", "body": body, "more_body": False})
        self.sent = True


class Boundary:
    """ASGI wrapper applying the contract above to requests whose path ``surface_of`` names.

    ``surface_of(path)`` returns "api", "mcp" or None (None: passed through untouched).

    Admission: at most ``max_in_flight`` requests are inside the app at once; the others wait
    (a coroutine, no thread, no connection) up to ``admission_wait`` seconds and are then shed
    with 503 + ``Retry-After``. Work in progress is what costs: bounded, it keeps every admitted
    request fast, and the time anyone waits bounded too (docs/reliability.md). An admitted
    request with no answer after ``deadline`` seconds (a database that hangs instead of failing)
    gets 503 + ``Retry-After``; whatever the app sends later is dropped.
    """

    def __init__(
        self,
        app: ASGIApp,
        surface_of: Callable[[str], str | None],
        *,
        max_in_flight: int,
        admission_wait: float,
        deadline: float,
        bulk_paths: frozenset[str] = frozenset(),
    ) -> None:
        self._app = app
        self._bulk_paths = bulk_paths
        self._surface_of = surface_of
        self._max_in_flight = max_in_flight
        self._admission_wait = admission_wait
        self._deadline = deadline
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        surface = self._surface_of(scope["path"]) if scope["type"] == "http" else None
        if surface is None:
            await self._app(scope, receive, send)
            return
        state = RequestState(new_request_id())
        scope[SCOPE_KEY] = state
        reply = _Reply(send, state.request_id)
        bulk = scope["path"] in self._bulk_paths
        try:
            body = await _read_body(scope, receive, BULK_BODY_BYTES if bulk else MAX_BODY_BYTES)
        except _ClientGone:
            return
        if body is None:
            message = TOO_LARGE_BULK_MESSAGE if bulk else TOO_LARGE_MESSAGE
            await reply(413, error_body(surface, "payload_too_large", message))
            return
        if _is_json(scope, surface) and json_too_deep(body):
            await reply(400, error_body(surface, "invalid_input", TOO_DEEP_MESSAGE, _rpc_id(surface, b"")))
            return
        gate = self._gate()
        try:
            await asyncio.wait_for(gate.acquire(), self._admission_wait)
        except TimeoutError:
            logger.warning("overloaded (request %s): no slot within %.1f s", state.request_id, self._admission_wait)
            extra = [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())]
            await reply(
                503, error_body(surface, "service_unavailable", OVERLOADED_MESSAGE, _rpc_id(surface, body)), extra
            )
            return
        exchange = _Exchange(self._app, scope, surface, state, body, reply)
        deadline = max(self._deadline, BULK_DEADLINE) if bulk else self._deadline
        task = asyncio.ensure_future(exchange.run(receive, send))
        # The slot is held until the call really ends, whatever happens to this coroutine.
        task.add_done_callback(lambda _: gate.release())
        try:
            await asyncio.wait_for(asyncio.shield(task), deadline)
        except TimeoutError:
            if exchange.started:
                # The answer is on its way (a streamed export): the deadline is for the first
                # byte, so let it finish — returning now would cut the response short.
                await task
                return
            # A hung database (no error, no answer): answer now; the stuck call keeps its slot
            # (at most one per pooled connection can be stuck like this).
            await exchange.give_up(deadline)

    def _gate(self) -> asyncio.Semaphore:
        """This event loop's admission semaphore (a served app may be run by several loops in turn)."""
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = asyncio.Semaphore(self._max_in_flight)
        return gate


class _Exchange:
    """One request through the wrapped app, with its answer watched and, on error, replaced."""

    def __init__(
        self, app: ASGIApp, scope: Scope, surface: str, state: RequestState, body: bytes, reply: _Reply
    ) -> None:
        self.app, self.scope, self.surface, self.state, self.body, self.reply = app, scope, surface, state, body, reply
        self.started = False  # the app's answer is being forwarded
        self.held: int | None = None  # status of an answer being swallowed, to be replaced
        self.kept: list[tuple[bytes, bytes]] = []  # its headers worth keeping (Allow, WWW-Authenticate)
        self.abandoned = False  # answered by give_up(): the app's own answer is dropped

    async def run(self, receive: Receive, send: Send) -> None:
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": self.body, "more_body": False}

        async def watch(message: Message) -> None:
            await self._watch(message, send)

        try:
            await self.app(self.scope, replay, watch)
        except Exception as exc:  # noqa: BLE001 - the boundary: nothing may escape as a bare 500
            await self._failed(exc)
            return
        if self.held is not None and not self.reply.sent:
            await self._replace(self.held)

    async def give_up(self, deadline: float) -> None:
        """Answer 503 for an app that has not answered within ``deadline``; drop what it sends later."""
        if self.started or self.reply.sent:
            return  # an answer is already on its way: let it finish
        self.abandoned = True
        logger.warning(
            "no answer within %.1f s (request %s) on %s", deadline, self.state.request_id, self.scope["path"]
        )
        await self._replace(503, DEADLINE_MESSAGE)

    async def _watch(self, message: Message, send: Send) -> None:
        if self.abandoned:
            return
        if message["type"] == "http.response.start":
            status = int(message["status"])
            if self.state.unavailable or (status >= 400 and not _json_answer(message)):
                self.held = 503 if self.state.unavailable else status
                self.kept = [(n, v) for n, v in message.get("headers", []) if n.lower() in _KEPT_HEADERS]
                return
            self.started = True
            message = {
                **message,
                "headers": [*message.get("headers", []), (b"x-request-id", self.state.request_id.encode())],
            }
            await send(message)
            return
        if self.held is None:
            await send(message)
        # else: swallowed; replaced once the app has returned or raised (it may raise after a 500)

    async def _replace(self, status: int, text: str | None = None) -> None:
        if self.reply.sent:
            return
        code, message = _code_for(status, self.state.request_id)
        message = text or message
        extra = [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())] if status == 503 else self.kept
        await self.reply(status, error_body(self.surface, code, message, _rpc_id(self.surface, self.body)), extra)

    async def _failed(self, exc: Exception) -> None:
        rid = self.state.request_id
        if is_unavailable(exc):
            logger.warning("database unavailable (request %s) on %s: %r", rid, self.scope["path"], exc)
            status = 503
        else:
            logger.error("internal error (request %s) on %s", rid, self.scope["path"], exc_info=exc)
            status = 500
        if self.started:
            return  # the answer is already on the wire; nothing better can be sent
        await self._replace(status)


class _ClientGone(Exception):
    """The client disconnected before its request body was complete: nothing to answer."""


async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None as soon as it is known to exceed ``limit`` bytes."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                if int(value) > limit:
                    return None
            except ValueError:
                pass
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _is_json(scope: Scope, surface: str) -> bool:
    if surface == "mcp":
        return True
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            return b"json" in value.lower()
    return True  # no content type: DRF may still be asked to parse it


def _json_answer(message: Message) -> bool:
    for name, value in message.get("headers", []):
        if name.lower() == b"content-type":
            return bytes(value).lower().startswith(b"application/json")
    return False


def _rpc_id(surface: str, body: bytes) -> Any:
    """The JSON-RPC id of a single MCP request, so its error answer can be matched (else null)."""
    if surface != "mcp" or not body or json_too_deep(body):
        return None
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    value = parsed.get("id") if isinstance(parsed, dict) else None
    return value if isinstance(value, str | int) else None


# Pages (the dashboard, the admin, sign-in) take form posts and one file upload (an import, at most
# BULK_BODY_BYTES); Django would spool any body to disk whole before a view could look at it.
PAGE_BODY_BYTES = BULK_BODY_BYTES + 256 * 1024


def bounded_pages(app: ASGIApp, limit: int = PAGE_BODY_BYTES) -> ASGIApp:
    """``app`` with every request body bounded to ``limit`` bytes while it is read: an announced
    larger body is answered 413 at once (plain text: a browser shows it); a streamed one that
    grows past it is cut (the app sees the client gone and answers nothing)."""

    async def bounded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                body = f"request body exceeds {limit // (1024 * 1024)} MB\n".encode()
                headers = [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                ]
                await send({"type": "http.response.start", "status": 413, "headers": headers})
                await send({"type": "http.response.body", "body": body, "more_body": False})
                return
        size = 0

        async def counted() -> Message:
            nonlocal size
            message = await receive()
            if message["type"] == "http.request":
                size += len(message.get("body", b""))
                if size > limit:
                    return {"type": "http.disconnect"}
            return message

        await app(scope, counted, send)

    return bounded
