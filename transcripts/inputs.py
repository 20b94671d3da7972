"""The parameters of the session operations, declared once with ``memories.inputs.Param`` and
parsed by ``memories.inputs.parse`` (the same shape, bounds and texts as every memory operation).

``OPERATIONS`` holds the MCP tools (``search_sessions``, ``forget_session``); the REST-only routes
(upsert, turns, list, read) declare their bodies and query strings here too, so
docs/reference/sessions.md and the OpenAPI schema come from one place. A turn item is an object,
which the generic table has no kind for: ``turn_item`` checks it with the same texts.

Integer bounds are the table's too: ``parse_bounded`` refuses an integer outside its declared
``minimum`` … ``maximum`` (``position must be between 0 and 2147483647``), so a value the
declaration refuses never reaches PostgreSQL (a position past the column's range was a 500).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from memories.inputs import CONTENT_CHARS, EXPLAIN, MAX_INT, NOW, QUERY_CHARS, Param, check_bounds, parse
from mmw import text, times
from mmw.errors import InvalidInput

CLIENT_CHARS = 100
SESSION_ID_CHARS = 200
LABEL_CHARS = 1_000  # title, working_directory
DEVICE_CHARS = 200
ROLE_CHARS = 50
TIME_CHARS = 64
MAX_TURNS = 500  # turns per call
MAX_CONTEXT = 10  # context turns on each side of a hit
MAX_PAGE = 500  # turns per page of a read
EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)

CLIENT = Param(
    "client",
    "string",
    'The client it comes from, e.g. "claude-code".',
    details="1-100 printable characters.",
    required=True,
    nullable=False,
    max_length=CLIENT_CHARS,
    min_length=1,
)
SESSION_ID = Param(
    "session_id",
    "string",
    "The client's own id of the session.",
    details="1-200 printable characters.",
    required=True,
    nullable=False,
    max_length=SESSION_ID_CHARS,
    min_length=1,
)
SINCE = Param("since", "string", "Turns said at or after this RFC 3339 time.", max_length=TIME_CHARS)
UNTIL = Param("until", "string", "Turns said before this RFC 3339 time.", max_length=TIME_CHARS)

UPSERT: tuple[Param, ...] = (
    Param("title", "string", "The session's title (at most 1,000 characters).", max_length=LABEL_CHARS),
    Param(
        "working_directory",
        "string",
        "A label of the folder the session ran in (shown, never read by MMW).",
        max_length=LABEL_CHARS,
    ),
    Param("device", "string", "The machine it ran on (default: the key's device label).", max_length=DEVICE_CHARS),
    Param("started_at", "string", "When the session started (RFC 3339).", max_length=TIME_CHARS),
    Param("ended_at", "string", "When the session ended (RFC 3339).", max_length=TIME_CHARS),
)

TURN_ITEM: tuple[Param, ...] = (
    Param(
        "position",
        "integer",
        "The turn's place in the session (0, 1, 2, ...); a replay of a position is a no-op.",
        required=True,
        nullable=False,
        minimum=0,
        maximum=MAX_INT,
    ),
    Param(
        "role",
        "string",
        'Who spoke: "user", "assistant", "tool", "system", ...',
        required=True,
        nullable=False,
        max_length=ROLE_CHARS,
        min_length=1,
    ),
    Param(
        "content",
        "string",
        "The turn's text (at most 100,000 characters; may be empty).",
        required=True,
        nullable=False,
        max_length=CONTENT_CHARS,
    ),
    Param("occurred_at", "string", "When it was said (RFC 3339; default: the upload time).", max_length=TIME_CHARS),
)

LIST: tuple[Param, ...] = (
    Param("client", "string", "Only sessions of this client.", max_length=CLIENT_CHARS),
    Param(
        "limit", "integer", "How many sessions (1-100, default 50).", default=50, nullable=False, minimum=1, maximum=100
    ),
    Param("offset", "integer", "Skip this many (for paging).", default=0, nullable=False, minimum=0, maximum=MAX_INT),
)

READ: tuple[Param, ...] = (
    Param(
        "after",
        "integer",
        "Only turns after this position (for paging; default: from the first).",
        minimum=-1,
        maximum=MAX_INT,
    ),
    Param(
        "limit",
        "integer",
        "How many turns (1-500, default 100).",
        default=100,
        nullable=False,
        minimum=1,
        maximum=MAX_PAGE,
    ),
)

SEARCH_SESSIONS: tuple[Param, ...] = (
    Param(
        "query",
        "string",
        "What you are looking for, in any language.",
        required=True,
        nullable=False,
        max_length=QUERY_CHARS,
        min_length=1,
    ),
    Param("limit", "integer", "How many hits.", default=10, nullable=False, minimum=1, maximum=100, named=True),
    Param("client", "string", "Only sessions of this client.", max_length=CLIENT_CHARS),
    Param("session_id", "string", "Only this session (the client's id).", max_length=SESSION_ID_CHARS),
    SINCE,
    UNTIL,
    Param(
        "context",
        "integer",
        "Turns to return before and after each hit.",
        default=2,
        nullable=False,
        minimum=0,
        maximum=MAX_CONTEXT,
    ),
    NOW,
    EXPLAIN,
    Param(
        "diversify",
        "boolean",
        "Spread hits over sessions.",
        details="Every session's best turn before any session's second, unless that second is clearly better.",
        default=True,
        nullable=False,
        named=True,
    ),
)

FORGET_SESSION: tuple[Param, ...] = (CLIENT, SESSION_ID)

# The MCP tools of sessions, by name (merged with memories.inputs.OPERATIONS by the reference).
OPERATIONS: dict[str, tuple[Param, ...]] = {
    "search_sessions": SEARCH_SESSIONS,
    "forget_session": FORGET_SESSION,
}


@dataclass(frozen=True)
class SessionKey:
    client: str
    session_id: str


def session_key(client: Any, session_id: Any) -> SessionKey:
    """The (client, session id) pair of a route or tool call, checked: printable, bounded."""
    values = parse(FORGET_SESSION, {"client": client, "session_id": session_id})
    for param in FORGET_SESSION:
        text.check_name(param.name, values[param.name], param.max_length or 0, wildcard_ok=True)
        if not values[param.name].strip():
            raise InvalidInput(f"{param.name} must not be empty")
    return SessionKey(values["client"], values["session_id"])


def parse_time(field: str, value: str | None, *, now: datetime) -> datetime | None:
    """An RFC 3339 time with an offset (or ``Z``), between 1900 and one day ahead, in UTC."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{field} must be an RFC 3339 time") from None
    if parsed.tzinfo is None:
        raise InvalidInput(f"{field} must include a time zone offset (e.g. Z or +02:00)")
    if parsed < EARLIEST or parsed > now + timedelta(days=1):
        raise InvalidInput(f"{field} must lie between 1900 and one day from now")
    return times.to_utc(field, parsed)


def bounded(params: tuple[Param, ...], values: dict[str, Any]) -> dict[str, Any]:
    """``values`` checked against ``params``' declared ranges (``memories.inputs.check_bounds``),
    for values that did not come through ``parse`` (a route's path or query string)."""
    check_bounds(params, values)
    return values


def parse_bounded(params: tuple[Param, ...], payload: Mapping[str, Any] | None) -> dict[str, Any]:
    """``memories.inputs.parse``: shape, lengths, unknown names and every declared range."""
    return parse(params, payload)


def turn_item(index: int, item: Any) -> dict[str, Any]:
    """One turn of a ``POST …/turns`` body, checked like any parameter object."""
    if not isinstance(item, Mapping):
        raise InvalidInput(f"turns[{index}] must be an object")
    values = parse(TURN_ITEM, item)
    if not values["role"].strip():
        raise InvalidInput("role must not be empty")
    return values


def turns_list(payload: Any) -> list[Any]:
    """The ``turns`` list of a ``POST …/turns`` body (1-500 items); items are checked one by one."""
    if not isinstance(payload, Mapping):
        raise InvalidInput("the request body must be a JSON object")
    unknown = sorted(k for k in payload if k != "turns")
    if unknown:
        raise InvalidInput(f"unknown parameter(s): {', '.join(unknown)}")
    turns = payload.get("turns")
    if turns is None:
        raise InvalidInput("turns is required")
    if not isinstance(turns, list):
        raise InvalidInput("turns must be a list of objects")
    if not turns:
        raise InvalidInput("turns must not be empty")
    if len(turns) > MAX_TURNS:
        raise InvalidInput(f"turns accepts at most {MAX_TURNS} items")
    return turns
