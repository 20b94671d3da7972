"""The REST interfaces' OpenAPI kit: ``operation(...)`` (a view's answer, every error status it can
give, its body), query parameters documented from a parameter table (``memories.inputs.Param``),
the error body, the bearer scheme (an authentication extension, so every operation behind
``ApiKeyAuthentication`` carries it) and ``/healthz``.

Each app's REST module registers its own component schemas (``register_components``); the
post-processing hook ``add_components_and_healthz`` (named in ``SPECTACULAR_SETTINGS``) adds
them all, so no app imports another's interface to describe its answers.
Errors always have the body ``{"error": {"code": string, "message": string}}``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema

from memories import inputs

JSON = dict[str, Any]
Schema = dict[str, Any]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


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

# Shapes more than one app's answers use (memories' and sessions' search).
# explain's traces (memories/explain.py): their inner shape is documented in docs/search.md.
EXPLAIN_ROW: Schema = {"type": "object", "description": "Why a result ranked (docs/search.md)."}
EXPLAIN: Schema = {"type": "object", "description": "With explain: true: what ranked and what the floor cut."}
RERANKED: Schema = {
    "type": "object",
    "description": "With rerank: true: whether the cross-encoder reordered the results (docs/search.md).",
    "properties": {
        "applied": {"type": "boolean"},
        "reason": {"type": ["string", "null"], "description": "Why not: not English, busy, unavailable…"},
        "candidates": {"type": "integer"},
        "model": {"type": "string"},
    },
    "required": ["applied", "reason", "candidates", "model"],
}
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
        "replicas": {
            "type": "object",
            "description": "Only with read replicas configured (DATABASE_REPLICA_URLS): what each said "
            "when last asked (never more often than MMW_REPLICA_CHECK_SECONDS). A replica down or "
            "lagging is skipped (reads go to the primary) and never makes this a 503.",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "state": {"type": "string", "enum": ["ok", "lagging", "unreachable", "unknown"]},
                    "lag_seconds": {"type": "number"},
                    "checked_seconds_ago": {"type": "number"},
                },
                "required": ["state"],
            },
        },
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


# --- components: one registry, every app's REST module adds its own ------------------------------

_COMPONENTS: list[Callable[[], Mapping[str, Schema]]] = []


def register_components(components: Callable[[], Mapping[str, Schema]]) -> None:
    """Add an app's component schemas to the OpenAPI description (called when its REST module is
    imported, which the URL map does before any schema is generated)."""
    _COMPONENTS.append(components)


def add_components_and_healthz(result: JSON, generator: Any, request: Any, public: bool) -> JSON:
    """drf-spectacular post-processing hook: the shared schemas, the paths as the reference writes them
    (the routes take an optional trailing slash; drf-spectacular renders it as required), and
    ``/healthz`` (not a DRF view)."""
    schemas: dict[str, Schema] = {"Error": ERROR}
    for components in _COMPONENTS:
        schemas.update(components())
    result.setdefault("components", {}).setdefault("schemas", {}).update(schemas)
    paths = {path.rstrip("/") if path != "/" else path: item for path, item in result.get("paths", {}).items()}
    result["paths"] = {**paths, "/healthz": HEALTHZ}
    return result
