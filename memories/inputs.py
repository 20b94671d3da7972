"""The parameters of every memory operation, declared once.

REST views and MCP tools both hand the caller's raw JSON object to ``parse``; the OpenAPI request
bodies (``json_schema``), the MCP tools' input schemas (``tool_schema``) and the reference pages'
tables (``interfaces.reference``) are generated from the same table. So a parameter, its default,
its type, its bounds and its error texts exist in exactly one place.

``parse`` checks every declared bound (docs/reliability.md, "Input bounds"): types; NUL and
unpaired surrogates in any string; lengths (never truncating); list sizes; finite numbers; names a
write would create; emptiness where declared; ranges and allowed values — one text per kind of
bound. Product rules that are not bounds (a hash without its source, an expiry in the past, ...)
stay in the services, after it, so both surfaces report them identically.

Why one module of this length: it is the one parameter table (each operation's parameters, bounds,
defaults and texts) with ``parse`` and the two schema generators that read it; the table is meant to
be read in one place.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mmw import text
from mmw.errors import InvalidInput, PayloadTooLarge

Kind = Literal["string", "number", "integer", "boolean", "string[]"]
_MISSING: Any = object()


# Column limits (docs/reliability.md, "Input bounds"); the models use the same numbers.
NAME_CHARS = 200  # workspace, scope, source, each tag
KEY_CHARS = 1_000  # fact_key, source_id, source_hash, source_revision
REASON_CHARS = 10_000
CONTENT_CHARS = 100_000
QUERY_CHARS = 10_000  # a search query; only its first 2,000 characters are embedded
TASK_CHARS = 100_000  # a recall task may paste a whole issue
ID_CHARS = 100  # a record id (a UUID in any of its spellings)
MAX_TAGS = 64
MAX_DERIVED_FROM = 50
MAX_INT = 2**31 - 1
MAX_POSITION = 1_000_000_000
TIME_CHARS = 64  # an RFC 3339 time
MAX_BATCH = 500  # records per POST /api/v1/memories/batch


@dataclass(frozen=True)
class Param:
    """One parameter: its JSON type and default, and the bounds ``parse`` enforces.

    ``max_length`` bounds a string (or each string of a list), ``max_items`` a list; ``minimum`` and
    ``maximum`` a number (``range_text``), ``enum`` its allowed values, ``blank`` the text of an
    empty value (``min_length`` is advertised only); ``new_name`` marks a name a write creates
    (printable, no ``*``, control or bidi characters).
    ``too_long`` / ``too_many`` replace the generic texts where the product words them itself.

    ``description`` is the one line an agent reads in a tool's input schema (every ``tools/list``
    carries it, so it stays short and leaves bounds to the schema's keywords); ``details`` adds
    what only the reference and the OpenAPI schema need (formats, edge cases)."""

    name: str
    kind: Kind
    description: str
    default: Any = None
    required: bool = False
    nullable: bool = True
    max_length: int | None = None
    min_length: int | None = None
    max_items: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    enum: tuple[str, ...] | None = None
    new_name: bool = False
    too_long: str | None = None
    too_many: str | None = None
    details: str = ""
    # The name, type and default say it all: an MCP tool's schema leaves the description out (every
    # ``tools/list`` carries it); the reference pages and OpenAPI still show it.
    named: bool = False
    # The text when the value is empty or whitespace only (``parse`` checks it after every shape
    # and before every range: the order remember documents); None: an empty value is allowed.
    blank: str | None = None

    @property
    def meaning(self) -> str:
        """The whole text: ``description``, then ``details``."""
        return f"{self.description} {self.details}" if self.details else self.description


WORKSPACE = Param(
    "workspace",
    "string",
    "Workspace name.",
    default="default",
    nullable=False,
    max_length=NAME_CHARS,
    named=True,
)

REMEMBER: tuple[Param, ...] = (
    Param(
        "content",
        "string",
        "The fact itself, standing on its own.",
        required=True,
        nullable=False,
        max_length=CONTENT_CHARS,
        min_length=1,
        too_long="content exceeds maximum allowed length",
        blank="content must not be empty",
    ),
    Param(
        "workspace",
        "string",
        "Workspace name (created on first write) or id.",
        details='A new name is printable text without "*", control or bidi characters; ids come from list_workspaces.',
        default="default",
        nullable=False,
        max_length=NAME_CHARS,
        new_name=True,
        blank="workspace and scope must not be empty",
    ),
    Param(
        "scope",
        "string",
        "A filter label (not access control).",
        default="shared",
        nullable=False,
        max_length=NAME_CHARS,
        blank="workspace and scope must not be empty",
    ),
    Param(
        "source",
        "string",
        'Who writes it: "owner", "agent", ...',
        default="owner",
        nullable=False,
        max_length=NAME_CHARS,
    ),
    Param(
        "source_id",
        "string",
        "Where the fact comes from: a file path, URL or session id.",
        max_length=KEY_CHARS,
    ),
    Param(
        "source_hash",
        "string",
        "Hash of the source as read (needs source_id).",
        details="When the source's hash changes, the record comes back stale.",
        max_length=KEY_CHARS,
    ),
    Param("source_revision", "string", "The source's revision (commit, tag).", max_length=KEY_CHARS),
    Param(
        "fact_key",
        "string",
        'Topic key, e.g. "deploy-staging": the same key again adds a version.',
        details='Differing live versions of one key are shown as "conflict".',
        max_length=KEY_CHARS,
    ),
    Param(
        "confidence",
        "number",
        "How sure you are.",
        default=0.5,
        nullable=False,
        minimum=0.0,
        maximum=1.0,
    ),
    Param(
        "derived_from",
        "string[]",
        "Ids of the records this one summarises; it inherits their status.",
        details="A summary is stale or in conflict when one of its sources is.",
        max_items=MAX_DERIVED_FROM,
        max_length=ID_CHARS,
        too_many="derived_from accepts at most 50 memory ids",
    ),
    Param(
        "tags",
        "string[]",
        "Free tags; kind:pinned|incident|decision|preference|learning|fact|session-checkpoint sets importance.",
        details="Importance orders recall_context's pack and filters search (min_importance).",
        max_items=MAX_TAGS,
        max_length=NAME_CHARS,
    ),
    Param(
        "expires_at",
        "string",
        'When it expires: an RFC 3339 time or a duration ("30m", "72h", "7d").',
        details="A time carries its offset; either lies in the future, at most 100 years ahead.",
        max_length=64,
    ),
    Param(
        "reason",
        "string",
        "Why this is written (shown by memory_history).",
        max_length=REASON_CHARS,
    ),
    Param(
        "expected_version",
        "integer",
        "Write only if fact_key's newest version is still this one.",
        details="Optimistic concurrency: such a write supersedes every earlier version.",
        minimum=1,
        maximum=MAX_INT,
    ),
    Param(
        "visibility",
        "string",
        'Who may see it ("author": only you, a draft).',
        default="project",
        nullable=False,
        enum=("author", "department", "project", "org"),
    ),
    Param(
        "occurred_at",
        "string",
        "When it happened or was said (RFC 3339; default: now).",
        details="With an offset, from the year 1900 to one day ahead; since/until filter on it, recall and "
        "history order by it.",
        max_length=TIME_CHARS,
    ),
    Param(
        "position",
        "integer",
        "Its order within its source_id, e.g. a turn number.",
        details="Such a record is also found by the words of the one before it.",
        minimum=0,
        maximum=MAX_POSITION,
    ),
)

# One item of POST /api/v1/memories/batch: a remember payload plus its own idempotency key.
IDEMPOTENCY_KEY = Param(
    "idempotency_key",
    "string",
    "This item's idempotency key (as X-Idempotency-Key for one remember): 1-256 printable ASCII characters.",
    max_length=256,
)
BATCH_ITEM: tuple[Param, ...] = (*REMEMBER, IDEMPOTENCY_KEY)

SINCE = Param(
    "since",
    "string",
    "Occurred at or after this RFC 3339 time.",
    max_length=TIME_CHARS,
)
UNTIL = Param(
    "until",
    "string",
    "Occurred at or before this RFC 3339 time.",
    max_length=TIME_CHARS,
)

MIN_SCORE = Param(
    "min_score",
    "number",
    "Minimum score (default: calibrated floor; 0: all).",
    details="The floor leaves out what merely shares a common word or a vague meaning with the query.",
    minimum=0.0,
    maximum=1.0,
)

NOW = Param(
    "now",
    "string",
    "When it is asked (RFC 3339).",
    details='Default: now. Relative times in the query ("last week", "в мае", "le mois dernier") are read from it '
    "into the answer's time_window, a soft preference.",
    max_length=TIME_CHARS,
)
EXPLAIN = Param(
    "explain",
    "boolean",
    "Say why each result ranked.",
    details="Each result's signals and their numbers, and what the floor cut and why.",
    default=False,
    nullable=False,
    named=True,
)
DIVERSIFY = Param(
    "diversify",
    "boolean",
    "Spread results over sources.",
    details="Each source_id's best result before any source's second, unless that second is clearly better.",
    default=False,
    nullable=False,
    named=True,
)
RERANK = Param(
    "rerank",
    "boolean",
    "Rerank the top 20 (English; ~0.25 s).",
    details="A cross-encoder reorders the first 20 results; the answer's rerank says whether it ran.",
    default=False,
    nullable=False,
    named=True,
)

SEARCH: tuple[Param, ...] = (
    Param(
        "query",
        "string",
        "What you are looking for, in any language.",
        details="Matched by meaning and by keywords.",
        required=True,
        nullable=False,
        max_length=QUERY_CHARS,
        min_length=1,
    ),
    Param(
        "workspace",
        "string",
        'Workspace name; "*" searches them all.',
        default="default",
        nullable=False,
        max_length=NAME_CHARS,
    ),
    Param("limit", "integer", "How many results.", default=10, nullable=False, minimum=1, maximum=100, named=True),
    Param("scope", "string", "Only this scope label.", max_length=NAME_CHARS, named=True),
    Param("fact_key", "string", "Only this topic key.", max_length=KEY_CHARS),
    Param("source_id", "string", "Only this source.", max_length=KEY_CHARS, named=True),
    Param(
        "tags",
        "string[]",
        "Only records with all these tags.",
        max_items=MAX_TAGS,
        max_length=NAME_CHARS,
    ),
    Param(
        "min_confidence",
        "number",
        "Only records at least this confident.",
        minimum=0.0,
        maximum=1.0,
    ),
    Param(
        "min_importance",
        "number",
        "Only records at least this important (kind: tags).",
        minimum=0.0,
        maximum=1.0,
    ),
    Param(
        "current_source_hash",
        "string",
        "With source_id: its current hash (others come back stale).",
        max_length=KEY_CHARS,
    ),
    Param(
        "latest_only",
        "boolean",
        "Only the newest version of each fact_key.",
        default=False,
        nullable=False,
    ),
    SINCE,
    UNTIL,
    MIN_SCORE,
    NOW,
    EXPLAIN,
    DIVERSIFY,
    RERANK,
)

# A listing without a query (the dashboard's record browser): search's workspace and filters,
# without what only ranking uses. Not a tool of its own, so not in ``OPERATIONS``.
LIST: tuple[Param, ...] = tuple(
    p
    for p in SEARCH
    if p.name not in {"query", "limit", "current_source_hash", "min_score", "now", "explain", "diversify", "rerank"}
)

FORGET: tuple[Param, ...] = (
    Param(
        "memory_id",
        "string",
        "The record to forget (or give source_id).",
        max_length=ID_CHARS,
    ),
    Param(
        "source_id",
        "string",
        "Or: every record of this source you can read.",
        max_length=KEY_CHARS,
    ),
    Param(
        "workspace",
        "string",
        'Where the records lie; "*" (with memory_id): any.',
        default="default",
        nullable=False,
        max_length=NAME_CHARS,
    ),
)

VALIDATE: tuple[Param, ...] = (
    Param("source_id", "string", "The source to check.", required=True, nullable=False, max_length=KEY_CHARS),
    Param(
        "current_source_hash",
        "string",
        "Its current hash.",
        required=True,
        nullable=False,
        max_length=KEY_CHARS,
    ),
    WORKSPACE,
)

HISTORY: tuple[Param, ...] = (
    Param("fact_key", "string", "Topic key whose versions to list.", max_length=KEY_CHARS),
    Param(
        "memory_id",
        "string",
        "Or a record id (its fact_key's versions).",
        details="A record without a fact_key is listed alone.",
        max_length=ID_CHARS,
    ),
    WORKSPACE,
)

RECALL: tuple[Param, ...] = (
    Param(
        "task",
        "string",
        "What you are about to do.",
        details="The pack is chosen for it.",
        required=True,
        nullable=False,
        max_length=TASK_CHARS,
        min_length=1,
    ),
    WORKSPACE,
    Param(
        "token_budget",
        "integer",
        "Pack size in tokens (~4 characters each).",
        default=2000,
        nullable=False,
        minimum=100,
        maximum=32_000,
    ),
    SINCE,
    UNTIL,
    MIN_SCORE,
    NOW,
    EXPLAIN,
)

GET: tuple[Param, ...] = (
    Param("memory_id", "string", "Id of the record.", required=True, nullable=False, max_length=ID_CHARS),
)

LIST_WORKSPACES: tuple[Param, ...] = ()

# Every operation's parameter table, by its MCP tool name (the reference pages and tests walk it).
OPERATIONS: dict[str, tuple[Param, ...]] = {
    "remember": REMEMBER,
    "search": SEARCH,
    "forget": FORGET,
    "validate_memory": VALIDATE,
    "memory_history": HISTORY,
    "recall_context": RECALL,
    "list_workspaces": LIST_WORKSPACES,
    "get_memory": GET,
}

_CHECKS: dict[Kind, tuple[str, Any]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "number": ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    "integer": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "string[]": ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v)),
}


def parse(params: tuple[Param, ...], payload: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check every declared bound and apply defaults: unknown parameters are refused (never
    silently dropped), then each value's type, NUL and surrogates, length and list size, and
    last its range and allowed values (``check_bounds``: the one place a range is worded). The
    product rules that are not bounds (empty content, a hash without its source, …) stay in the
    services, after these."""
    if payload is None:
        payload = {}
    if not isinstance(payload, Mapping):
        raise InvalidInput("the request body must be a JSON object")
    known = {p.name for p in params}
    unknown = sorted(k for k in payload if k not in known)
    if unknown:
        raise InvalidInput(f"unknown parameter(s): {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for param in params:
        value = payload.get(param.name, _MISSING)
        if value is _MISSING or (value is None and param.nullable):
            if param.required:
                raise InvalidInput(f"{param.name} is required")
            values[param.name] = param.default
            continue
        label, check = _CHECKS[param.kind]
        if value is None or not check(value):
            raise InvalidInput(f"{param.name} must be {label}")
        values[param.name] = _bounded(param, value)
    for param in params:  # then emptiness, in the table's order, before any range
        if param.blank is not None and isinstance(values[param.name], str) and not values[param.name].strip():
            raise InvalidInput(param.blank)
    check_bounds(params, values)
    return values


def check_bounds(params: tuple[Param, ...], values: Mapping[str, Any]) -> None:
    """Refuse a parsed value outside its declared ``minimum``/``maximum`` (``range_text``) or
    ``enum``; the last step of ``parse``."""
    for param in params:
        value = values.get(param.name)
        if value is None:
            continue
        if param.enum is not None and value not in param.enum:
            raise InvalidInput(f"{param.name} must be one of {', '.join(param.enum)}")
        if param.kind in ("number", "integer") and (
            (param.minimum is not None and value < param.minimum)
            or (param.maximum is not None and value > param.maximum)
        ):
            raise InvalidInput(range_text(param))


def range_text(param: Param) -> str:
    """``<name> must be between <min> and <max>`` (or "at least" / "at most" with one bound)."""
    low, high = param.minimum, param.maximum
    if low is not None and high is not None:
        return f"{param.name} must be between {_number(low)} and {_number(high)}"
    return (
        f"{param.name} must be at least {_number(low)}"
        if low is not None
        else f"{param.name} must be at most {_number(high)}"
    )


def _number(bound: float | None) -> str:
    assert bound is not None
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def _bounded(param: Param, value: Any) -> Any:
    """``value`` if it is within ``param``'s bounds (docs/reliability.md, "Input bounds"); never altered."""
    if param.kind == "number":
        number = float(value)
        if not math.isfinite(number):
            raise InvalidInput(f"{param.name} must be a finite number")
        return number
    if param.kind == "string":
        _check_string(param, param.name, value)
    elif param.kind == "string[]":
        if param.max_items is not None and len(value) > param.max_items:
            raise InvalidInput(param.too_many or f"{param.name} accepts at most {param.max_items} items")
        for index, item in enumerate(value):
            _check_string(param, f"{param.name}[{index}]", item)
    return value


def _check_string(param: Param, field: str, value: str) -> None:
    if param.too_long is not None and param.max_length is not None and len(value) > param.max_length:
        text.check_text(field, value)  # NUL and surrogates are named before the length
        raise PayloadTooLarge(param.too_long)
    if param.new_name and value.strip():
        text.check_name(field, value, param.max_length or NAME_CHARS)
    else:
        text.check_text(field, value, param.max_length)


_JSON_TYPES: dict[Kind, dict[str, Any]] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "string[]": {"type": "array", "items": {"type": "string"}},
}


def json_schema(params: tuple[Param, ...]) -> dict[str, Any]:
    """The whole JSON schema of an operation's input, every bound spelled out (the OpenAPI schema)."""
    properties: dict[str, Any] = {}
    for param in params:
        schema = _bounds_schema(param, copy.deepcopy(_JSON_TYPES[param.kind]))
        if param.nullable and not param.required:
            schema = {"anyOf": [schema, {"type": "null"}]}
        schema["description"] = param.meaning
        if param.default is not None:
            schema["default"] = param.default
        properties[param.name] = schema
    return {
        "type": "object",
        "properties": properties,
        "required": [p.name for p in params if p.required],
        "additionalProperties": False,
    }


def tool_schema(params: tuple[Param, ...]) -> dict[str, Any]:
    """The input schema an MCP tool advertises: each parameter's type, one-line description,
    default, allowed values and numeric range, which are required, and that no other is taken.

    Every ``tools/list`` carries it (``interfaces.mcp_server.budget``), so lengths, list sizes and
    character rules are left to the reference page (``mmw://docs/<tool>``) and to ``parse``,
    which refuses a value past them with a text naming the bound; and ``null`` (taken for an
    absent optional parameter) is not advertised: leave the parameter out."""
    properties: dict[str, Any] = {}
    for param in params:
        schema = copy.deepcopy(_JSON_TYPES[param.kind])
        if param.enum is not None:
            schema["enum"] = list(param.enum)
        if param.minimum is not None:
            schema["minimum"] = param.minimum
        if param.maximum is not None and param.maximum < MAX_INT:  # a column's limit is no range to advertise
            schema["maximum"] = param.maximum
        if param.default is not None:
            schema["default"] = param.default
        if not param.named:
            schema["description"] = param.description
        properties[param.name] = schema
    required = [p.name for p in params if p.required]
    return {
        "type": "object",
        "properties": properties,
        **({"required": required} if required else {}),
        "additionalProperties": False,
    }


def _bounds_schema(param: Param, schema: dict[str, Any]) -> dict[str, Any]:
    """The JSON-schema keywords of ``param``'s bounds (lengths in characters, as JSON Schema counts)."""
    strings = schema if param.kind == "string" else schema.get("items", {})
    if param.max_length is not None and param.kind in ("string", "string[]"):
        strings["maxLength"] = param.max_length
    if param.min_length is not None and param.kind == "string":
        strings["minLength"] = param.min_length
    if param.enum is not None:
        strings["enum"] = list(param.enum)
    if param.max_items is not None:
        schema["maxItems"] = param.max_items
    if param.minimum is not None:
        schema["minimum"] = param.minimum
    if param.maximum is not None:
        schema["maximum"] = param.maximum
    return schema
