"""mmw-client's typed shapes and operations match the served OpenAPI schema: every operation has
a method (sync and async), every answer's fields and required fields are the schema's, every
request's parameters are the schema's. A field added to the server without the client fails here."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from django.test import Client
from mmw_client import AsyncMMWClient, MMWClient
from mmw_client import types as t

OPERATIONS = {  # operationId → the client's method
    "remember": "remember",
    "remember_batch": "remember_batch",
    "memory_get": "get_memory",
    "memory_forget_by_id": "forget_by_id",
    "forget": "forget",
    "memory_history_by_id": "history",
    "memory_history_by_fact_key": "history_by_fact_key",
    "search": "search",
    "validate_memory": "validate",
    "recall_context": "recall",
    "list_workspaces": "workspaces",
    "list_sessions": "list_sessions",
    "get_session": "get_session",
    "upsert_session": "upsert_session",
    "forget_session_by_path": "forget_session",
    "add_session_turns": "add_turns",
    "search_sessions": "search_sessions",
    "ledger_record": "ledger_record",
    "ledger_list": "ledger_list",
    "ledger_balance": "ledger_balance",
    "ledger_reverse": "ledger_reverse",
    "ledger_upcoming": "ledger_upcoming",
    "ledger_complete": "ledger_complete",
    "agent_consent": "agent_consent",
    "agent_consent_scope": "agent_consent_scope",
    "healthz": "healthz",
}
ANSWERS: dict[str, Any] = {  # component → the client's TypedDict
    "Author": t.Author,
    "Memory": t.Memory,
    "ForgottenVersion": t.ForgottenVersion,
    "BatchRecord": t.BatchRecord,
    "RememberAnswer": t.RememberAnswer,
    "BatchAnswer": t.BatchAnswer,
    "MemoryAnswer": t.MemoryAnswer,
    "SearchAnswer": t.SearchAnswer,
    "HistoryAnswer": t.HistoryAnswer,
    "ForgetAnswer": t.ForgetAnswer,
    "ValidateAnswer": t.ValidateAnswer,
    "RecallAnswer": t.RecallAnswer,
    "WorkspaceList": t.WorkspaceList,
    "AgentConsentAnswer": t.AgentConsentAnswer,
    "AgentConsentScope": t.AgentConsentScope,
    "Session": t.Session,
    "Turn": t.Turn,
    "SessionAnswer": t.SessionAnswer,
    "TurnsAnswer": t.TurnsAnswer,
    "SessionList": t.SessionList,
    "SessionRead": t.SessionRead,
    "SessionSearchAnswer": t.SessionSearchAnswer,
    "SessionForgetAnswer": t.SessionForgetAnswer,
    "EntryShape": t.Entry,
    "LedgerRecorded": t.LedgerRecorded,
    "LedgerListed": t.LedgerListed,
    "BalanceLine": t.BalanceLine,
    "LedgerBalances": t.LedgerBalances,
    "Occurrence": t.Occurrence,
    "LedgerUpcoming": t.LedgerUpcoming,
}
BODIES: dict[str, tuple[Any, tuple[str, ...]]] = {  # operationId → (params TypedDict, positional fields)
    "remember": (t.RememberParams, ("content",)),
    "search": (t.SearchParams, ("query",)),
    "recall_context": (t.RecallParams, ("task",)),
    "upsert_session": (t.SessionFields, ()),
    "search_sessions": (t.SessionSearchParams, ("query",)),
    "ledger_record": (t.LedgerRecordParams, ("kind", "amount", "currency")),
    "ledger_list": (t.LedgerListParams, ()),
    "ledger_balance": (t.LedgerBalanceParams, ()),
    "ledger_complete": (t.LedgerCompleteParams, ("entry_id",)),
}


@pytest.fixture(scope="module")
def schema(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        response = Client().get("/api/v1/schema/", headers={"Accept": "application/vnd.oai.openapi+json"})
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def _operations(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {op["operationId"]: op for item in schema["paths"].values() for op in item.values() if "operationId" in op}


def _body(op: dict[str, Any]) -> dict[str, Any]:
    return op["requestBody"]["content"]["application/json"]["schema"]  # type: ignore[no-any-return]


def test_every_operation_of_the_schema_has_a_sync_and_an_async_method(schema: dict[str, Any]) -> None:
    assert set(_operations(schema)) == set(OPERATIONS)
    for name in OPERATIONS.values():
        assert inspect.iscoroutinefunction(getattr(AsyncMMWClient, name)), name
        assert not inspect.iscoroutinefunction(getattr(MMWClient, name)), name


@pytest.mark.parametrize("component", sorted(ANSWERS))
def test_each_answer_has_the_schemas_fields(schema: dict[str, Any], component: str) -> None:
    shape = schema["components"]["schemas"][component]
    branches = shape.get("oneOf", [shape])
    fields = set().union(*(b["properties"] for b in branches))
    required = set.intersection(*(set(b.get("required", ())) for b in branches))
    typed = ANSWERS[component]
    assert set(typed.__annotations__) == fields
    assert set(typed.__required_keys__) == required


@pytest.mark.parametrize("operation", sorted(BODIES))
def test_each_request_takes_the_schemas_parameters(schema: dict[str, Any], operation: str) -> None:
    params, positional = BODIES[operation]
    body = _body(_operations(schema)[operation])
    assert set(params.__annotations__) | set(positional) == set(body["properties"])
    assert set(body.get("required", ())) <= set(positional)


def test_the_explicit_arguments_are_the_schemas_parameters(schema: dict[str, Any]) -> None:
    ops = _operations(schema)
    for operation, method in (
        ("validate_memory", "validate"),
        ("forget", "forget"),
        ("ledger_reverse", "ledger_reverse"),
        ("ledger_upcoming", "ledger_upcoming"),
        ("agent_consent", "agent_consent"),
    ):
        names = set(inspect.signature(getattr(MMWClient, method)).parameters) - {"self"}
        assert names == set(_body(ops[operation])["properties"]), operation
    turn = _body(ops["add_session_turns"])["properties"]["turns"]["items"]
    assert set(t.TurnInput.__annotations__) == set(turn["properties"])
    assert set(t.TurnInput.__required_keys__) == set(turn["required"])
    for operation, method in (("list_sessions", "list_sessions"), ("get_session", "get_session")):
        names = set(inspect.signature(getattr(MMWClient, method)).parameters) - {"self"}
        assert names == {p["name"] for p in ops[operation]["parameters"]}, operation
