"""The REST API's OpenAPI description: response bodies, every error status, security, and the
request bodies and query parameters taken from ``memories.inputs`` (the one parameter table).

Views decorate themselves with ``operation(...)``; the bearer scheme is declared once by an
authentication extension (so every operation behind ``ApiKeyAuthentication`` carries it);
``add_healthz`` (a drf-spectacular post-processing hook) documents ``/healthz`` without security.
Errors always have the body ``{"error": {"code": string, "message": string}}``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from memories import inputs

JSON = dict[str, Any]
Schema = dict[str, Any]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(kind: str) -> Schema:
    return {"type": [kind, "null"]}


_STRING_LIST: Schema = {"type": "array", "items": {"type": "string"}}

ERROR: Schema = {
    "type": "object",
    "description": 'Every error: a stable machine code and the exact human message, e.g. {"error": '
    '{"code": "invalid_input", "message": "content must not be empty"}}.',
    "properties": {
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            "required": ["code", "message"],
        }
    },
    "required": ["error"],
}

ENVELOPE_FIELDS: Schema = {
    "api_version": {"type": "string"},
    "tenant_id": {"type": "string"},
    "project_id": {"type": "string", "format": "uuid"},
    "workspace": {"type": "string", "description": 'The workspace answered for ("*" for all of them).'},
    "notice": {"type": "string", "description": "A billing notice (grace period, suspension), while there is one."},
}
ENVELOPE_REQUIRED = ["api_version", "tenant_id", "project_id", "workspace"]

AUTHOR: Schema = {
    "type": "object",
    "properties": {
        "user": _nullable("string"),
        "device_label": _nullable("string"),
        "api_key": {**_nullable("string"), "description": "The key's public prefix, never the secret."},
    },
    "required": ["user", "device_label", "api_key"],
}

# explain's traces (memories/explain.py): their inner shape is documented in docs/search.md.
EXPLAIN_ROW: Schema = {"type": "object", "description": "Why a result ranked (docs/search.md)."}
EXPLAIN: Schema = {"type": "object", "description": "With explain: true: what ranked and what the floor cut."}
TIME_WINDOW: Schema = {
    "type": ["object", "null"],
    "description": "The time the query's words point to, read against now; null when none.",
    "properties": {
        "start": {"type": "string", "format": "date-time"},
        "end": {"type": "string", "format": "date-time"},
        "phrase": {"type": "string"},
    },
    "required": ["start", "end", "phrase"],
}
PENDING_VECTORS: Schema = {
    "type": "integer",
    "minimum": 0,
    "maximum": 1000,
    "description": "Records (or turns) of the searched scope stored but not embedded yet: found by keywords only "
    "until the worker computes their vectors, so a miss may be temporary. Counted up to 1000.",
}
QUEUED_FOR_VECTORS: Schema = {
    "type": "integer",
    "minimum": 0,
    "description": "How many were queued for the worker to embed: found by keywords now, by meaning once embedded.",
}
ELSEWHERE: Schema = {
    "type": "array",
    "description": "When one workspace came back short: the caller's other workspaces with matches.",
    "items": {
        "type": "object",
        "properties": {"workspace": {"type": "string"}, "matches": {"type": "integer", "minimum": 1}},
        "required": ["workspace", "matches"],
    },
}

MEMORY: Schema = {
    "type": "object",
    "description": "One live record as search, get, history and recall_context present it.",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "content": {"type": "string"},
        "score": {
            **_nullable("number"),
            "description": "How likely it answers the query, below the score before it (search, recall_context); "
            "null elsewhere.",
        },
        "status": {"type": "string", "enum": ["unverified", "stale", "conflict"]},
        "status_reason": {
            **_nullable("string"),
            "description": "Why the record is stale or in conflict; null when unverified.",
        },
        "workspace": {"type": "string"},
        "scope": {"type": "string"},
        "source": {"type": "string"},
        "source_id": _nullable("string"),
        "source_hash": _nullable("string"),
        "source_revision": _nullable("string"),
        "fact_key": _nullable("string"),
        "version": {"type": "integer", "minimum": 1},
        "is_latest": {"type": "boolean"},
        "conflicts_with": {"type": "array", "items": {"type": "string", "format": "uuid"}},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "importance": {"type": "number", "minimum": 0, "maximum": 1},
        "derived_from": {"type": "array", "items": {"type": "string", "format": "uuid"}},
        "tags": _STRING_LIST,
        "visibility": {"type": "string", "enum": ["author", "department", "project", "org"]},
        "graph_relations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "format": "uuid"},
                    "relation": {"type": "string"},
                    "score": {"type": "number"},
                },
                "required": ["id", "relation", "score"],
            },
        },
        "reason": _nullable("string"),
        "expires_at": {**_nullable("string"), "format": "date-time"},
        "occurred_at": {
            "type": "string",
            "format": "date-time",
            "description": "When the fact happened (the write time unless given).",
        },
        "position": {**_nullable("integer"), "description": "Order within its source_id, if given."},
        "created_at": {"type": "string", "format": "date-time"},
        "author": ref("Author"),
        "explain": {**EXPLAIN_ROW, "description": "With explain: true: why it ranked."},
    },
    "required": [
        "id",
        "content",
        "score",
        "status",
        "status_reason",
        "workspace",
        "scope",
        "source",
        "fact_key",
        "version",
        "is_latest",
        "conflicts_with",
        "confidence",
        "derived_from",
        "tags",
        "visibility",
        "graph_relations",
        "created_at",
        "author",
    ],
}

FORGOTTEN_VERSION: Schema = {
    "type": "object",
    "description": "A forgotten version in a history: its number, time, author and reason, no content.",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "version": {"type": "integer"},
        "forgotten": {"const": True},
        "forgotten_at": {**_nullable("string"), "format": "date-time"},
        "reason": _nullable("string"),
        "created_at": {"type": "string", "format": "date-time"},
        "author": ref("Author"),
    },
    "required": ["id", "version", "forgotten", "created_at", "author"],
}


def _answer(description: str, fields: Schema, required: Iterable[str]) -> Schema:
    """An answer: the envelope every response carries plus the operation's own fields."""
    return {
        "type": "object",
        "description": description,
        "properties": {**ENVELOPE_FIELDS, **fields},
        "required": [*ENVELOPE_REQUIRED, *required],
    }


_BRIEF: Schema = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "fact_key": _nullable("string"),
        "source_hash": _nullable("string"),
        "version": {"type": "integer"},
    },
    "required": ["id", "fact_key", "source_hash", "version"],
}

ANSWERS: dict[str, Schema] = {
    "RememberAnswer": _answer(
        "The stored record (status unverified); replayed unchanged for the same X-Idempotency-Key.",
        {
            "id": {"type": "string", "format": "uuid"},
            "scope": {"type": "string"},
            "status": {"const": "unverified"},
            "source_id": _nullable("string"),
            "source_hash": {**_nullable("string"), "description": "After secret redaction."},
            "derived_from": {"type": "array", "items": {"type": "string", "format": "uuid"}},
            "fact_key": _nullable("string"),
            "version": {"type": "integer", "minimum": 1},
            "visibility": {"type": "string"},
            "expires_at": {**_nullable("string"), "format": "date-time"},
            "redactions": {
                "type": "array",
                "description": "Secrets the guard replaced before storing.",
                "items": {
                    "type": "object",
                    "properties": {"field": {"type": "string"}, "rule": {"type": "string"}},
                    "required": ["field", "rule"],
                },
            },
            "occurred_at": {"type": "string", "format": "date-time"},
            "position": _nullable("integer"),
            "created_at": {"type": "string", "format": "date-time"},
        },
        ["id", "scope", "status", "source_id", "source_hash", "derived_from", "fact_key", "version", "created_at"],
    ),
    "BatchAnswer": _answer(
        'One result per record, in the order sent (the envelope\'s workspace is "*").',
        {
            "results": {
                "type": "array",
                "items": {"oneOf": [ref("RememberAnswer"), ref("Error")]},
                "description": "The remember answer of each record, or {error: {code, message}} for that record alone.",
            },
            "queued_for_vectors": QUEUED_FOR_VECTORS,
        },
        ["results", "queued_for_vectors"],
    ),
    "MemoryAnswer": _answer("One record.", {"memory": ref("Memory")}, ["memory"]),
    "SearchAnswer": _answer(
        "Records found by meaning and keywords, best first.",
        {
            "query": {"type": "string"},
            "results": {"type": "array", "items": ref("Memory")},
            "other_workspaces": ELSEWHERE,
            "time_window": TIME_WINDOW,
            "pending_vectors": PENDING_VECTORS,
            "explain": EXPLAIN,
        },
        ["results", "other_workspaces", "time_window", "pending_vectors"],
    ),
    "HistoryAnswer": _answer(
        "Every version of a fact_key, oldest first (the record alone when it has no fact_key).",
        {
            "fact_key": _nullable("string"),
            "versions": {"type": "array", "items": {"anyOf": [ref("Memory"), ref("ForgottenVersion")]}},
        },
        ["fact_key", "versions"],
    ),
    "ForgetAnswer": {
        "oneOf": [
            _answer(
                "Forgotten by id (forgotten is false when there was no such live record).",
                {
                    "id": {"type": "string"},
                    "forgotten": {"type": "boolean"},
                    "at": {"type": "string", "format": "date-time"},
                },
                ["id", "forgotten", "at"],
            ),
            _answer(
                "Forgotten by source: how many records of that source the caller could read.",
                {
                    "source_id": {"type": "string"},
                    "forgotten_count": {"type": "integer", "minimum": 0},
                    "at": {"type": "string", "format": "date-time"},
                },
                ["source_id", "forgotten_count", "at"],
            ),
        ]
    },
    "ValidateAnswer": _answer(
        "Which live records of the source are stale against the current hash. Changes nothing.",
        {
            "source_id": {"type": "string"},
            "current_source_hash": {"type": "string"},
            "stale_count": {"type": "integer", "minimum": 0},
            "fresh_count": {"type": "integer", "minimum": 0},
            "stale": {"type": "array", "items": _BRIEF},
            "fresh": {"type": "array", "items": _BRIEF},
        },
        ["source_id", "current_source_hash", "stale_count", "fresh_count", "stale", "fresh"],
    ),
    "RecallAnswer": _answer(
        "A context pack: the most useful records for the task, cut to the token budget.",
        {
            "task": {"type": "string"},
            "token_budget": {"type": "integer"},
            "used_tokens": {"type": "integer", "minimum": 0},
            "items": {"type": "array", "items": ref("Memory")},
            "omitted": {"type": "integer", "minimum": 0},
            "other_workspaces": ELSEWHERE,
            "time_window": TIME_WINDOW,
            "pending_vectors": PENDING_VECTORS,
            "explain": EXPLAIN,
        },
        [
            "task",
            "token_budget",
            "used_tokens",
            "items",
            "omitted",
            "other_workspaces",
            "time_window",
            "pending_vectors",
        ],
    ),
    "WorkspaceList": _answer(
        "The project's live workspaces with the number of records the caller can read, how many of them wait "
        "for their vector, and the readable session turns that do.",
        {
            "workspaces": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "format": "uuid"},
                        "name": {"type": "string"},
                        "memory_count": {"type": "integer", "minimum": 0},
                        "pending_vectors": {
                            **PENDING_VECTORS,
                            "description": "Of memory_count, the records not embedded yet (found by keywords only "
                            "until then). Counted up to 1000.",
                        },
                        "created_at": {"type": "string", "format": "date-time"},
                    },
                    "required": ["id", "name", "memory_count", "pending_vectors", "created_at"],
                },
            },
            "pending_turns": {
                **PENDING_VECTORS,
                "description": "Session turns the caller can read that are not embedded yet (sessions belong "
                "to the project, not to a workspace). Counted up to 1000.",
            },
        },
        ["workspaces", "pending_turns"],
    ),
}

AGENT_CONSENT_BODY: Schema = {
    "type": "object",
    "properties": {
        "given": {"type": "boolean", "description": "true: consent given; false: revoked."},
        "sources": {
            "type": "array",
            "maxItems": 10,
            "items": {"type": "string", "minLength": 1, "maxLength": 100},
            "description": "The session sources consented to (claude-code, codex).",
        },
    },
    "required": ["given"],
    "additionalProperties": False,
}

ANSWERS["AgentConsentAnswer"] = {
    "type": "object",
    "description": "The consent decision as recorded in the account's audit log.",
    "properties": {
        "api_version": {"type": "string"},
        "tenant_id": {"type": "string"},
        "project_id": {"type": "string", "format": "uuid"},
        "given": {"type": "boolean"},
        "sources": _STRING_LIST,
        "recorded_at": {"type": "string", "format": "date-time"},
    },
    "required": ["api_version", "tenant_id", "project_id", "given", "sources", "recorded_at"],
}

ANSWERS["AgentConsentScope"] = {
    "type": "object",
    "description": "What a consent given with this key covers: its account and project, by name.",
    "properties": {
        "api_version": {"type": "string"},
        "tenant_id": {"type": "string"},
        "project_id": {"type": "string", "format": "uuid"},
        "account": {"type": "string", "description": "The account's name ('Personal' for a personal account)."},
        "project": {"type": "string", "description": "The project's name."},
        "user": {"type": "string", "description": "The key holder's e-mail: uploaded sessions are theirs."},
    },
    "required": ["api_version", "tenant_id", "project_id", "account", "project", "user"],
}

COMPONENT_SCHEMAS: dict[str, Schema] = {
    "Error": ERROR,
    "Author": AUTHOR,
    "Memory": MEMORY,
    "ForgottenVersion": FORGOTTEN_VERSION,
    "BatchRecord": inputs.json_schema(inputs.BATCH_ITEM),
    **ANSWERS,
}

# --- errors ------------------------------------------------------------------------------------

# status: description
ERRORS: dict[int, str] = {
    400: "Invalid input: a parameter's type, bound or characters (the message names the parameter).",
    401: "Missing, malformed, unknown or revoked API key.",
    402: "[MMW Notice]: no subscription, grace period (read-only) or suspended account.",
    403: "The key lacks the scope, the workspace belongs to another project, or the membership may not write.",
    404: "No live record with that id that the caller can read.",
    405: "The path is another operation's (memory_id search, forget, validate or history), which takes no DELETE.",
    409: "A conflict: a deleted workspace's name, an idempotency key reused, or a version conflict.",
    413: "The request body or a value is too large.",
    415: "The body is not JSON (Content-Type must be application/json).",
    429: "A rate limit (per key or per project): retry after Retry-After seconds.",
    500: "An unexpected fault: internal error (request <id>), the id in the server's log.",
    503: "Overloaded, or the database is unreachable: retry after Retry-After seconds.",
}
ALWAYS = (400, 401, 402, 403, 429, 500, 503)  # any operation: input, key, billing, scopes, limits, faults
BODY = (413, 415)  # an operation with a JSON body
RESPONSE_HEADERS = [
    OpenApiParameter(
        "Retry-After",
        {"type": "integer", "minimum": 0},
        OpenApiParameter.HEADER,
        description="Seconds to wait before retrying.",
        response=[429, 503],
    ),
    OpenApiParameter(
        "WWW-Authenticate",
        str,
        OpenApiParameter.HEADER,
        description="The scheme to authenticate with (Bearer).",
        response=[401],
    ),
]


def _error_response(status: int) -> OpenApiResponse:
    return OpenApiResponse(response=ref("Error"), description=ERRORS[status])


# --- operations --------------------------------------------------------------------------------


def _strip_null(schema: Schema) -> Schema:
    """A parameter's JSON schema without the ``null`` alternative (a query string has no null)."""
    for alternative in schema.get("anyOf", []):
        if alternative != {"type": "null"}:
            rest = {k: v for k, v in schema.items() if k != "anyOf"}
            return {**alternative, **rest}
    return schema


def query_parameter(param: inputs.Param, *, required: bool | None = None, description: str | None = None) -> Any:
    """A query parameter documented from the parameter table (type, bounds, default)."""
    schema = _strip_null(inputs.json_schema((param,))["properties"][param.name])
    text = description or schema.pop("description", param.description)
    schema.pop("description", None)
    return OpenApiParameter(
        param.name,
        schema,  # a raw schema
        OpenApiParameter.QUERY,
        required=param.required if required is None else required,
        description=text,
    )


MEMORY_ID = OpenApiParameter(
    "memory_id",
    {"type": "string", "format": "uuid"},
    OpenApiParameter.PATH,
    description="Id of a record (any other value is the same 404 as an unknown id).",
)
# forget never reports a missing record as an error: any id that is no live record answers
# forgotten: false, so any string is a valid input here.
ANY_MEMORY_ID = OpenApiParameter(
    "memory_id",
    # ".../memories/search" and its siblings are other operations' paths, never a record's.
    {"type": "string", "not": {"enum": ["search", "forget", "validate", "history"]}},
    OpenApiParameter.PATH,
    description="Id of the record; one that names no live record answers forgotten: false.",
)


def operation(
    operation_id: str,
    summary: str,
    *,
    answer: str,
    status: int = 200,
    errors: Iterable[int] = (),
    body: Schema | None = None,
    parameters: list[Any] | None = None,
    by_id: OpenApiParameter | None = None,
    description: str | None = None,
    also: Iterable[tuple[int, str]] = (),
) -> Callable[[Any], Any]:
    """``extend_schema`` for one REST operation: its answer, every error it can give, its body.
    ``also`` lists other success statuses with the same answer (an upsert's 200 beside its 201)."""
    codes = sorted({*ALWAYS, *errors, *(BODY if body is not None else ())})
    responses: dict[int, Any] = {status: OpenApiResponse(response=ref(answer), description="Success.")}
    responses.update({code: OpenApiResponse(response=ref(answer), description=text) for code, text in also})
    responses.update({code: _error_response(code) for code in codes})
    return extend_schema(
        operation_id=operation_id,
        summary=summary,
        description=description,
        request={"application/json": body} if body is not None else None,
        responses=responses,
        parameters=[*([by_id] if by_id else []), *(parameters or []), *RESPONSE_HEADERS],
    )


def batch_body() -> Schema:
    """``POST /memories/batch``: ``{"records": [...]}``, each a remember payload plus its own key.

    The items are *not* constrained here, because the route accepts any of them: a record that
    does not fit ``BatchRecord`` gets its own error result, and the call still answers 200."""
    return {
        "type": "object",
        "properties": {
            "records": {
                "type": "array",
                "minItems": 1,
                "maxItems": inputs.MAX_BATCH,
                "items": {
                    "description": "A remember payload with an optional idempotency_key (schema BatchRecord). "
                    "A record that does not fit gets its own error result; the others are stored."
                },
            }
        },
        "required": ["records"],
        "additionalProperties": False,
    }


def forget_body() -> Schema:
    """``forget``'s body: exactly one of ``memory_id`` and ``source_id``."""
    schema = inputs.json_schema(inputs.FORGET)

    def only(name: str, other: str) -> Schema:
        return {"required": [name], "properties": {name: {"type": "string"}, other: {"type": "null"}}}

    return {
        **schema,
        "description": "Give exactly one of memory_id and source_id: both, or neither, is a 400 "
        "(a cascade over a whole source must never happen by accident).",
        "oneOf": [only("memory_id", "source_id"), only("source_id", "memory_id")],
    }


# --- security and /healthz ---------------------------------------------------------------------


class ApiKeyScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """``Authorization: Bearer mmw_…`` on every operation behind ``ApiKeyAuthentication``."""

    target_class = "accounts.authentication.ApiKeyAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> JSON:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An MMW API key: Authorization: Bearer mmw_… (the scheme in any case, "
            "then one or more spaces or tabs, then the key).",
        }


_HEALTH_BODY: Schema = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["ok", "unavailable"]},
        "database": {"type": "string"},
        "broker": {"type": "string"},
    },
    "required": ["status"],
}

HEALTHZ: Schema = {
    "get": {
        "operationId": "healthz",
        "summary": "health: 200 when every dependency answers, 503 naming the one that does not",
        "description": "Needs no key; reachable over plain HTTP even where HTTPS is enforced (load-balancer probes).",
        "security": [],
        "tags": ["health"],
        "responses": {
            "200": {"description": "Healthy.", "content": {"application/json": {"schema": _HEALTH_BODY}}},
            "503": {
                "description": "A dependency is down; the body says which.",
                "content": {"application/json": {"schema": _HEALTH_BODY}},
            },
        },
    }
}


def add_components_and_healthz(result: JSON, generator: Any, request: Any, public: bool) -> JSON:
    """drf-spectacular post-processing hook: the shared schemas, the paths as the reference writes them
    (the routes take an optional trailing slash; drf-spectacular renders it as required), and
    ``/healthz`` (not a DRF view)."""
    from ledger.api import ledger_schemas  # both import this module
    from memories.api.sessions import SESSION_SCHEMAS

    schemas = {**COMPONENT_SCHEMAS, **SESSION_SCHEMAS, **ledger_schemas()}
    result.setdefault("components", {}).setdefault("schemas", {}).update(schemas)
    paths = {path.rstrip("/") if path != "/" else path: item for path, item in result.get("paths", {}).items()}
    result["paths"] = {**paths, "/healthz": HEALTHZ}
    return result
