"""The parameters of every memory operation, declared once.

REST views and MCP tools both hand the caller's raw JSON object to ``parse``; the MCP tools'
JSON schemas are generated from the same table (``json_schema``). So a parameter, its default,
its type check and its error text exist in exactly one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mmw.errors import InvalidInput

Kind = Literal["string", "number", "integer", "boolean", "string[]"]
_MISSING: Any = object()


@dataclass(frozen=True)
class Param:
    name: str
    kind: Kind
    description: str
    default: Any = None
    required: bool = False
    nullable: bool = True


WORKSPACE = Param(
    "workspace",
    "string",
    'Workspace name (default "default"). A workspace is created on first write.',
    default="default",
    nullable=False,
)

REMEMBER: tuple[Param, ...] = (
    Param(
        "content",
        "string",
        "The fact, decision or convention to store (1-100,000 characters).",
        required=True,
        nullable=False,
    ),
    WORKSPACE,
    Param(
        "scope",
        "string",
        'A label such as "shared" or "private" for filtering; it does not restrict access.',
        default="shared",
        nullable=False,
    ),
    Param("source", "string", 'Who writes it: "owner", "agent", ...', default="owner", nullable=False),
    Param("source_id", "string", "Where the fact comes from: a document path, file, URL or session id."),
    Param(
        "source_hash",
        "string",
        "Hash of the source's content when read (requires source_id); lets MMW tell later that the source changed.",
    ),
    Param("source_revision", "string", "Revision of the source (commit, tag, version)."),
    Param(
        "fact_key",
        "string",
        'Topic key such as "deploy-staging". Saving again with the same key adds a newer version; '
        'differing live versions are shown as "conflict".',
    ),
    Param("confidence", "number", "How sure you are, 0..1 (default 0.5).", default=0.5, nullable=False),
    Param(
        "derived_from",
        "string[]",
        "Ids of the records this one summarises (at most 50); the summary inherits their stale/conflict status.",
    ),
    Param(
        "tags",
        "string[]",
        'Free tags. "kind:pinned|incident|decision|preference|learning|fact|session-checkpoint" '
        "sets the importance used by recall_context.",
    ),
    Param(
        "expires_at", "string", 'When the record expires: an RFC 3339 time or a duration such as "72h", "30m", "7d".'
    ),
    Param("reason", "string", "Why this is written (kept with the version, shown by memory_history)."),
    Param(
        "expected_version",
        "integer",
        "Write only if the newest version of fact_key is still this number (optimistic concurrency).",
    ),
    Param(
        "visibility",
        "string",
        'Who may see it: "author" (a draft), "department", "project" (default) or "org".',
        default="project",
        nullable=False,
    ),
)

SEARCH: tuple[Param, ...] = (
    Param(
        "query",
        "string",
        "What you are looking for, in any language; matched by meaning and by keywords.",
        required=True,
        nullable=False,
    ),
    Param(
        "workspace",
        "string",
        'Workspace name (default "default"); "*" searches every workspace of the project.',
        default="default",
        nullable=False,
    ),
    Param("limit", "integer", "How many results (1-100, default 10).", default=10, nullable=False),
    Param("scope", "string", "Only records with this scope label."),
    Param("fact_key", "string", "Only records with this topic key."),
    Param("source_id", "string", "Only records from this source."),
    Param("tags", "string[]", "Only records carrying all of these tags."),
    Param("min_confidence", "number", "Only records with at least this confidence (0..1)."),
    Param("min_importance", "number", "Only records with at least this importance (0..1, from kind: tags)."),
    Param(
        "current_source_hash",
        "string",
        "With source_id: the source's current hash; records stored with another hash come back as stale.",
    ),
    Param(
        "latest_only",
        "boolean",
        "Only the newest version of each fact_key (default false).",
        default=False,
        nullable=False,
    ),
)

FORGET: tuple[Param, ...] = (
    Param("memory_id", "string", "Id of the record to forget. Give exactly one of memory_id and source_id."),
    Param("source_id", "string", "Forget every record of this source that you can read (in the workspace)."),
    Param(
        "workspace",
        "string",
        'Workspace where the record lies (default "default"); with memory_id, "*" means any workspace.',
        default="default",
        nullable=False,
    ),
)

VALIDATE: tuple[Param, ...] = (
    Param("source_id", "string", "The source to check.", required=True, nullable=False),
    Param("current_source_hash", "string", "The source's current hash.", required=True, nullable=False),
    WORKSPACE,
)

HISTORY: tuple[Param, ...] = (
    Param("fact_key", "string", "Topic key whose versions to list."),
    Param("memory_id", "string", "Or: a record id; its fact_key's versions are listed (or the record alone)."),
    WORKSPACE,
)

RECALL: tuple[Param, ...] = (
    Param("task", "string", "What you are about to do; the pack is chosen for it.", required=True, nullable=False),
    WORKSPACE,
    Param(
        "token_budget",
        "integer",
        "Upper bound of the pack's size in tokens (~4 characters each; 100-32,000, default 2,000).",
        default=2000,
        nullable=False,
    ),
)

GET: tuple[Param, ...] = (Param("memory_id", "string", "Id of the record.", required=True, nullable=False),)

LIST_WORKSPACES: tuple[Param, ...] = ()

_CHECKS: dict[Kind, tuple[str, Any]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "number": ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    "integer": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "boolean": ("true or false", lambda v: isinstance(v, bool)),
    "string[]": ("a list of strings", lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v)),
}


def parse(params: tuple[Param, ...], payload: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check types and apply defaults. Unknown parameters are refused, never silently dropped.

    Only shape is checked here; the product rules (ranges, lengths, order of checks) belong to
    the services, so both surfaces report them identically.
    """
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
        values[param.name] = float(value) if param.kind == "number" else value
    return values


_JSON_TYPES: dict[Kind, dict[str, Any]] = {
    "string": {"type": "string"},
    "number": {"type": "number"},
    "integer": {"type": "integer"},
    "boolean": {"type": "boolean"},
    "string[]": {"type": "array", "items": {"type": "string"}},
}


def json_schema(params: tuple[Param, ...]) -> dict[str, Any]:
    """The JSON schema of an operation's input, for MCP tool listings."""
    properties: dict[str, Any] = {}
    for param in params:
        schema = dict(_JSON_TYPES[param.kind])
        if param.nullable and not param.required:
            schema = {"anyOf": [schema, {"type": "null"}]}
        schema["description"] = param.description
        if param.default is not None:
            schema["default"] = param.default
        properties[param.name] = schema
    return {
        "type": "object",
        "properties": properties,
        "required": [p.name for p in params if p.required],
        "additionalProperties": False,
    }
