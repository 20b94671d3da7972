"""The memory operations' OpenAPI description: their answers' component schemas and the request
bodies taken from ``memories.inputs`` (the one parameter table). The kit every REST module shares
(``operation``, the error statuses, the bearer scheme, ``/healthz``) is ``interfaces.schema``.

Why one module of this length: it is one declaration per memory route (its answer's component
schema, its request body, its examples), in the order of the reference; each is short and they
share the component names the generated schema links together.
"""

from __future__ import annotations

from collections.abc import Iterable

from drf_spectacular.utils import OpenApiParameter

from interfaces.schema import (
    EXPLAIN,
    EXPLAIN_ROW,
    PENDING_VECTORS,
    QUEUED_FOR_VECTORS,
    RERANKED,
    TIME_WINDOW,
    Schema,
    ref,
    register_components,
)
from memories import inputs


def _nullable(kind: str) -> Schema:
    return {"type": [kind, "null"]}


_STRING_LIST: Schema = {"type": "array", "items": {"type": "string"}}

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
            "rerank": RERANKED,
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
    "Author": AUTHOR,
    "Memory": MEMORY,
    "ForgottenVersion": FORGOTTEN_VERSION,
    "BatchRecord": inputs.json_schema(inputs.BATCH_ITEM),
    **ANSWERS,
}
register_components(lambda: COMPONENT_SCHEMAS)


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
