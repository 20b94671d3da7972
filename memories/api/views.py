"""REST views: parse the request, call a service or selector, format. No business rule lives here.

Bodies go to the services *raw*, so REST and MCP validate identically (memories.inputs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.keys import Principal
from memories import inputs, selectors, services

IDEMPOTENCY_HEADER = "X-Idempotency-Key"


def principal_of(request: Request) -> Principal:
    assert isinstance(request.auth, Principal)
    return request.auth


def body(request: Request) -> Any:
    """The JSON body as sent (an empty body is an empty object)."""
    return request.data if request.body else {}


def _schema(params: tuple[inputs.Param, ...], summary: str) -> Callable[[Any], Any]:
    return extend_schema(
        summary=summary, request={"application/json": inputs.json_schema(params)}, responses={200: dict}
    )


class MemoryCollectionView(APIView):
    @extend_schema(
        summary="remember: store a new memory record",
        request={"application/json": inputs.json_schema(inputs.REMEMBER)},
        responses={201: dict},
        parameters=[OpenApiParameter(IDEMPOTENCY_HEADER, str, OpenApiParameter.HEADER, required=False)],
    )
    def post(self, request: Request) -> Response:
        key = request.headers.get(IDEMPOTENCY_HEADER)
        answer = services.memory_remember(principal=principal_of(request), payload=body(request), idempotency_key=key)
        return Response(answer, status=status.HTTP_201_CREATED)


class MemoryDetailView(APIView):
    @extend_schema(summary="get one memory record", responses={200: dict})
    def get(self, request: Request, memory_id: str) -> Response:
        return Response(selectors.memory_get(principal=principal_of(request), memory_id=memory_id))

    @extend_schema(
        summary="forget one memory record (in any workspace of the project unless ?workspace= names one)",
        parameters=[OpenApiParameter("workspace", str, OpenApiParameter.QUERY, required=False)],
        responses={200: dict},
    )
    def delete(self, request: Request, memory_id: str) -> Response:
        payload = {"memory_id": memory_id, "workspace": request.query_params.get("workspace", "*")}
        return Response(services.memory_forget(principal=principal_of(request), payload=payload))


class MemoryHistoryView(APIView):
    @extend_schema(summary="memory_history: every version of a record's fact_key", responses={200: dict})
    def get(self, request: Request, memory_id: str) -> Response:
        payload = {"memory_id": memory_id}
        return Response(selectors.memory_history(principal=principal_of(request), payload=payload))


class FactKeyHistoryView(APIView):
    @extend_schema(
        summary="memory_history by fact_key",
        parameters=[
            OpenApiParameter("fact_key", str, OpenApiParameter.QUERY, required=True),
            OpenApiParameter("workspace", str, OpenApiParameter.QUERY, required=False),
        ],
        responses={200: dict},
    )
    def get(self, request: Request) -> Response:
        payload = {k: v for k, v in request.query_params.items() if k in {"fact_key", "workspace", "memory_id"}}
        return Response(selectors.memory_history(principal=principal_of(request), payload=payload))


class SearchView(APIView):
    @_schema(inputs.SEARCH, "search: find memories by meaning and keywords")
    def post(self, request: Request) -> Response:
        return Response(selectors.memory_search(principal=principal_of(request), payload=body(request)))


class ForgetView(APIView):
    @_schema(inputs.FORGET, "forget: soft-delete by memory_id or by source_id")
    def post(self, request: Request) -> Response:
        return Response(services.memory_forget(principal=principal_of(request), payload=body(request)))


class ValidateView(APIView):
    @_schema(inputs.VALIDATE, "validate_memory: which records of a source are stale")
    def post(self, request: Request) -> Response:
        return Response(selectors.memory_validate(principal=principal_of(request), payload=body(request)))


class RecallContextView(APIView):
    @_schema(inputs.RECALL, "recall_context: a token-bounded context pack for a task")
    def post(self, request: Request) -> Response:
        return Response(selectors.recall_context(principal=principal_of(request), payload=body(request)))


class WorkspaceListView(APIView):
    @extend_schema(summary="list_workspaces", responses={200: dict})
    def get(self, request: Request) -> Response:
        return Response(selectors.workspace_list(principal=principal_of(request)))
