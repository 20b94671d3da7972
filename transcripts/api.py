"""REST views of uploaded sessions (docs/reference/sessions.md): parse, call, format.

Bodies and query strings go to ``transcripts`` raw, so REST and MCP validate identically."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from interfaces.rest import ApiView, body, principal_of
from interfaces.schema import (
    EXPLAIN,
    EXPLAIN_ROW,
    PENDING_VECTORS,
    QUEUED_FOR_VECTORS,
    TIME_WINDOW,
    Schema,
    operation,
    query_parameter,
    ref,
    register_components,
)
from memories.inputs import json_schema
from mmw.errors import InvalidInput
from transcripts import inputs, selectors, services


def _path(param: Any, name: str) -> OpenApiParameter:
    return OpenApiParameter(
        name, {"type": "string", "minLength": 1, "maxLength": param.max_length}, OpenApiParameter.PATH
    )


CLIENT_PATH = _path(inputs.CLIENT, "client")
SESSION_ID_PATH = _path(inputs.SESSION_ID, "session_id")

_NULLABLE_STRING: Schema = {"type": ["string", "null"]}
_ENVELOPE: Schema = {
    "api_version": {"type": "string"},
    "tenant_id": {"type": "string"},
    "project_id": {"type": "string", "format": "uuid"},
    "notice": {"type": "string"},
}
_ENVELOPE_REQUIRED = ["api_version", "tenant_id", "project_id"]
SESSION: Schema = {
    "type": "object",
    "description": "An uploaded session (its metadata; turns come with GET and search_sessions).",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "client": {"type": "string"},
        "session_id": {"type": "string"},
        "title": {"type": "string"},
        "working_directory": {"type": "string"},
        "device": {"type": "string"},
        "started_at": {**_NULLABLE_STRING, "format": "date-time"},
        "ended_at": {**_NULLABLE_STRING, "format": "date-time"},
        "shared_with_project": {"type": "boolean"},
        "turn_count": {"type": "integer"},
        "author": _NULLABLE_STRING,
        "created_at": {"type": "string", "format": "date-time"},
        "updated_at": {"type": "string", "format": "date-time"},
    },
    "required": ["id", "client", "session_id", "shared_with_project", "turn_count", "created_at"],
}
TURN: Schema = {
    "type": "object",
    "properties": {
        "position": {"type": "integer"},
        "role": {"type": "string"},
        "occurred_at": {"type": "string", "format": "date-time"},
        "content": {"type": "string", "description": "After Memory Guard; a withheld turn's stub."},
        "withheld": {**_NULLABLE_STRING, "description": "The Guard's reason when the turn is a stub."},
    },
    "required": ["position", "role", "occurred_at", "content", "withheld"],
}


def _answer(description: str, fields: Schema, required: list[str]) -> Schema:
    return {
        "type": "object",
        "description": description,
        "properties": {**_ENVELOPE, **fields},
        "required": [*_ENVELOPE_REQUIRED, *required],
    }


_ITEM_RESULT: Schema = {
    "type": "object",
    "description": "One turn's outcome, in the order sent: a status, or an error for that turn alone.",
    "properties": {
        "index": {"type": "integer"},
        "position": {"type": ["integer", "null"]},
        "status": {"type": "string", "enum": ["created", "unchanged"]},
        "withheld": _NULLABLE_STRING,
        "redactions": {"type": "array", "items": {"type": "string"}},
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            "required": ["code", "message"],
        },
    },
    "required": ["index", "position"],
}

SESSION_SCHEMAS: dict[str, Schema] = {
    "Session": SESSION,
    "Turn": TURN,
    "SessionAnswer": _answer("The session as stored.", {"session": ref("Session")}, ["session"]),
    "TurnsAnswer": _answer(
        "One result per turn sent, in order, with counts.",
        {
            "session": ref("Session"),
            "created": {"type": "integer"},
            "unchanged": {"type": "integer"},
            "errors": {"type": "integer"},
            "queued_for_vectors": {
                **QUEUED_FOR_VECTORS,
                "maximum": 1000,
                "description": "The session's turns waiting for their vector after this call (new turns, a turn "
                "whose predecessor changed, earlier ones not embedded yet): found by keywords now, by meaning "
                "once embedded. Counted up to 1000.",
            },
            "results": {"type": "array", "items": _ITEM_RESULT},
        },
        ["session", "created", "unchanged", "errors", "queued_for_vectors", "results"],
    ),
    "SessionList": _answer(
        "Sessions the caller can read, newest first.",
        {"total": {"type": "integer"}, "sessions": {"type": "array", "items": ref("Session")}},
        ["total", "sessions"],
    ),
    "SessionRead": _answer(
        "A session with a page of its turns in order.",
        {
            "session": ref("Session"),
            "turns": {"type": "array", "items": ref("Turn")},
            "next_after": {"type": ["integer", "null"], "description": "Pass as ?after= for the next page."},
        },
        ["session", "turns", "next_after"],
    ),
    "SessionSearchAnswer": _answer(
        "Turns found by meaning and keywords, best first, each with its neighbours.",
        {
            "query": {"type": "string"},
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "score": {"type": "number"},
                        "session": ref("Session"),
                        "turn": ref("Turn"),
                        "context_before": {"type": "array", "items": ref("Turn")},
                        "context_after": {"type": "array", "items": ref("Turn")},
                        "explain": EXPLAIN_ROW,
                    },
                    "required": ["score", "session", "turn", "context_before", "context_after"],
                },
            },
            "time_window": TIME_WINDOW,
            "pending_vectors": PENDING_VECTORS,
            "explain": EXPLAIN,
        },
        ["query", "results", "time_window", "pending_vectors"],
    ),
    "SessionForgetAnswer": _answer(
        "Whether a live session was forgotten (false when none was).",
        {
            "client": {"type": "string"},
            "session_id": {"type": "string"},
            "forgotten": {"type": "boolean"},
            "at": {"type": "string", "format": "date-time"},
        },
        ["client", "session_id", "forgotten", "at"],
    ),
}
register_components(lambda: SESSION_SCHEMAS)

TURNS_BODY: Schema = {
    "type": "object",
    "properties": {
        "turns": {
            "type": "array",
            "minItems": 1,
            "maxItems": inputs.MAX_TURNS,
            "items": json_schema(inputs.TURN_ITEM),
        }
    },
    "required": ["turns"],
    "additionalProperties": False,
}


class SessionListView(ApiView):
    query_parameters = {"GET": frozenset(p.name for p in inputs.LIST)}

    @operation(
        "list_sessions",
        "list the uploaded sessions the caller can read",
        answer="SessionList",
        parameters=[query_parameter(p) for p in inputs.LIST],
    )
    def get(self, request: Request) -> Response:
        payload = _query(request, inputs.LIST)
        return Response(selectors.session_list(principal=principal_of(request), payload=payload))


class SessionDetailView(ApiView):
    query_parameters = {"GET": frozenset(p.name for p in inputs.READ)}

    @operation(
        "upsert_session",
        "create or update a session's metadata (201 when created)",
        answer="SessionAnswer",
        status=201,
        also=[(200, "Updated: the session existed.")],
        errors=(409,),
        body=json_schema(inputs.UPSERT),
        parameters=[CLIENT_PATH, SESSION_ID_PATH],
    )
    def put(self, request: Request, client: str, session_id: str) -> Response:
        answer, created = services.session_upsert(
            principal=principal_of(request), client=client, session_id=session_id, payload=body(request)
        )
        return Response(answer, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @operation(
        "get_session",
        "read a session with a page of its turns",
        answer="SessionRead",
        errors=(404,),
        parameters=[CLIENT_PATH, SESSION_ID_PATH, *(query_parameter(p) for p in inputs.READ)],
    )
    def get(self, request: Request, client: str, session_id: str) -> Response:
        payload = _query(request, inputs.READ)
        return Response(
            selectors.session_read(
                principal=principal_of(request), client=client, session_id=session_id, payload=payload
            )
        )

    @operation(
        "forget_session_by_path",
        "forget_session: soft-delete a session (audited)",
        answer="SessionForgetAnswer",
        parameters=[CLIENT_PATH, SESSION_ID_PATH],
    )
    def delete(self, request: Request, client: str, session_id: str) -> Response:
        payload = {"client": client, "session_id": session_id}
        return Response(services.session_forget(principal=principal_of(request), payload=payload))


class SessionTurnsView(ApiView):
    @operation(
        "add_session_turns",
        "add up to 500 turns, idempotent by position (one result per turn)",
        answer="TurnsAnswer",
        errors=(404, 409),
        body=TURNS_BODY,
        parameters=[CLIENT_PATH, SESSION_ID_PATH],
    )
    def post(self, request: Request, client: str, session_id: str) -> Response:
        answer = services.session_add_turns(
            principal=principal_of(request), client=client, session_id=session_id, payload=body(request)
        )
        return Response(answer)


class SessionSearchView(ApiView):
    @operation(
        "search_sessions",
        "search_sessions: find turns by meaning and keywords, with their context",
        answer="SessionSearchAnswer",
        body=json_schema(inputs.SEARCH_SESSIONS),
    )
    def post(self, request: Request) -> Response:
        return Response(selectors.session_search(principal=principal_of(request), payload=body(request)))


def _query(request: Request, params: tuple[Any, ...]) -> dict[str, Any]:
    """The query string as typed values: integers parsed here (a query string has only text)."""
    payload: dict[str, Any] = {}
    for param in params:
        raw = request.query_params.get(param.name)
        if raw is None:
            continue
        if param.kind == "integer":
            try:
                payload[param.name] = int(raw)
            except ValueError:
                raise InvalidInput(f"{param.name} must be an integer") from None
        else:
            payload[param.name] = raw
    return payload
