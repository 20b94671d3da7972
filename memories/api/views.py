"""REST views: parse the request, call a service or selector, format. No business rule lives here.

Bodies go to the services *raw*, so REST and MCP validate identically (memories.inputs)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import services as account_services
from accounts.keys import Principal
from memories import inputs, presenters, selectors, services
from memories.api import schema
from memories.api.schema import operation, query_parameter
from mmw.errors import InvalidInput
from transcripts import selectors as session_selectors

IDEMPOTENCY_HEADER = "X-Idempotency-Key"
IDEMPOTENCY = OpenApiParameter(
    IDEMPOTENCY_HEADER,
    {"type": "string", "minLength": 1, "maxLength": 256, "pattern": "^[\\x20-\\x7e]+$"},
    OpenApiParameter.HEADER,
    description="1-256 printable ASCII characters. The same key with the same input replays the first answer; "
    "with other input it is a 409.",
)


def _param(params: tuple[inputs.Param, ...], name: str) -> inputs.Param:
    return next(p for p in params if p.name == name)


class ApiView(APIView):
    """An MMW REST view: query-string parameters other than the operation's own are refused, as
    unknown body parameters are (``memories.inputs.parse``): nothing is silently ignored."""

    query_parameters: dict[str, frozenset[str]] = {}  # method → the names it reads

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        allowed = self.query_parameters.get(request.method or "", frozenset())
        unknown = sorted(k for k in request.query_params if k not in allowed)
        if unknown:
            raise InvalidInput(f"unknown parameter(s): {', '.join(unknown)}")


def principal_of(request: Request) -> Principal:
    assert isinstance(request.auth, Principal)
    return request.auth


def body(request: Request) -> Any:
    """The JSON body as sent (an empty body is an empty object)."""
    return request.data if request.body else {}


class MemoryCollectionView(ApiView):
    @operation(
        "remember",
        "remember: store a new memory record",
        answer="RememberAnswer",
        status=201,
        errors=(409,),
        body=inputs.json_schema(inputs.REMEMBER),
        parameters=[IDEMPOTENCY],
    )
    def post(self, request: Request) -> Response:
        key = request.headers.get(IDEMPOTENCY_HEADER)
        answer = services.memory_remember(principal=principal_of(request), payload=body(request), idempotency_key=key)
        return Response(answer, status=status.HTTP_201_CREATED)


class MemoryBatchView(ApiView):
    @operation(
        "remember_batch",
        "remember many: up to 500 records in one call, one result per record in order",
        answer="BatchAnswer",
        status=200,
        errors=(409,),
        body=schema.batch_body(),
        description="Each record is a remember payload with its own optional idempotency_key, checked "
        "and stored exactly as one remember would be; a record's error is its own result. The call counts "
        "once against the rate limit; each record counts against the quotas. Records are keyword-searchable "
        "when the call returns; their vectors follow in the background. Bodies up to 16 MB.",
    )
    def post(self, request: Request) -> Response:
        answer = services.memory_remember_batch(principal=principal_of(request), payload=body(request))
        return Response(answer, status=status.HTTP_200_OK)


class MemoryDetailView(ApiView):
    query_parameters = {"DELETE": frozenset({"workspace"})}

    @operation("memory_get", "get one memory record", answer="MemoryAnswer", errors=(404,), by_id=schema.MEMORY_ID)
    def get(self, request: Request, memory_id: str) -> Response:
        return Response(selectors.memory_get(principal=principal_of(request), memory_id=memory_id))

    @operation(
        "memory_forget_by_id",
        "forget one memory record (in any workspace of the project unless ?workspace= names one)",
        answer="ForgetAnswer",
        errors=(405, 409),
        by_id=schema.ANY_MEMORY_ID,
        parameters=[query_parameter(inputs.WORKSPACE, description='The record\'s workspace (default "*": any).')],
    )
    def delete(self, request: Request, memory_id: str) -> Response:
        payload = {"memory_id": memory_id, "workspace": request.query_params.get("workspace", "*")}
        return Response(services.memory_forget(principal=principal_of(request), payload=payload))


class MemoryHistoryView(ApiView):
    @operation(
        "memory_history_by_id",
        "memory_history: every version of a record's fact_key",
        answer="HistoryAnswer",
        errors=(404,),
        by_id=schema.MEMORY_ID,
    )
    def get(self, request: Request, memory_id: str) -> Response:
        payload = {"memory_id": memory_id}
        return Response(selectors.memory_history(principal=principal_of(request), payload=payload))


class FactKeyHistoryView(ApiView):
    query_parameters = {"GET": frozenset({"fact_key", "workspace", "memory_id"})}

    @operation(
        "memory_history_by_fact_key",
        "memory_history by fact_key",
        answer="HistoryAnswer",
        errors=(409,),
        parameters=[
            query_parameter(_param(inputs.HISTORY, "fact_key"), required=True),
            query_parameter(inputs.WORKSPACE),
        ],
    )
    def get(self, request: Request) -> Response:
        payload = dict(request.query_params.items())
        return Response(selectors.memory_history(principal=principal_of(request), payload=payload))


class SearchView(ApiView):
    @operation(
        "search",
        "search: find memories by meaning and keywords",
        answer="SearchAnswer",
        errors=(409,),
        body=inputs.json_schema(inputs.SEARCH),
    )
    def post(self, request: Request) -> Response:
        return Response(selectors.memory_search(principal=principal_of(request), payload=body(request)))


class ForgetView(ApiView):
    @operation(
        "forget",
        "forget: soft-delete by memory_id or by source_id",
        answer="ForgetAnswer",
        errors=(409,),
        body=schema.forget_body(),
    )
    def post(self, request: Request) -> Response:
        return Response(services.memory_forget(principal=principal_of(request), payload=body(request)))


class ValidateView(ApiView):
    @operation(
        "validate_memory",
        "validate_memory: which records of a source are stale",
        answer="ValidateAnswer",
        errors=(409,),
        body=inputs.json_schema(inputs.VALIDATE),
    )
    def post(self, request: Request) -> Response:
        return Response(selectors.memory_validate(principal=principal_of(request), payload=body(request)))


class RecallContextView(ApiView):
    @operation(
        "recall_context",
        "recall_context: a token-bounded context pack for a task",
        answer="RecallAnswer",
        errors=(409,),
        body=inputs.json_schema(inputs.RECALL),
    )
    def post(self, request: Request) -> Response:
        return Response(selectors.recall_context(principal=principal_of(request), payload=body(request)))


class WorkspaceListView(ApiView):
    @operation("list_workspaces", "list_workspaces", answer="WorkspaceList")
    def get(self, request: Request) -> Response:
        return Response(session_selectors.workspaces_and_turns(principal=principal_of(request)))


class AgentConsentView(ApiView):
    """The local agent records its user's upload consent (or its revocation) in the audit log, and
    reads what a consent covers (account and project by name) to show it before asking."""

    @operation(
        "agent_consent_scope",
        "what mmw-agent's upload consent with this key would cover: account and project by name",
        answer="AgentConsentScope",
    )
    def get(self, request: Request) -> Response:
        principal = principal_of(request)
        account = principal.account
        answer = {
            "api_version": presenters.API_VERSION,
            "tenant_id": account.tenant_id,
            "project_id": str(principal.project.pk),
            "account": "Personal" if account.kind == account.Kind.PERSONAL else account.name,
            "project": principal.project.name,
            "user": principal.user.email,
        }
        return Response(answer)

    @operation(
        "agent_consent",
        "record mmw-agent's upload consent (or its revocation) in the account's audit log",
        answer="AgentConsentAnswer",
        status=201,
        body=schema.AGENT_CONSENT_BODY,
    )
    def post(self, request: Request) -> Response:
        principal = principal_of(request)
        consent = account_services.agent_consent_record(principal=principal, payload=body(request))
        answer = {
            "api_version": presenters.API_VERSION,
            "tenant_id": principal.account.tenant_id,
            "project_id": str(principal.project.pk),
            "given": consent.given,
            "sources": consent.sources,
            "recorded_at": consent.recorded_at,
        }
        return Response(answer, status=status.HTTP_201_CREATED)
