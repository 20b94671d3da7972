"""The served OpenAPI schema is valid OpenAPI 3.1 and honest: unique operation ids, a bearer
scheme on every operation, every error status with the error body, answers described, and
request bodies taken from the one parameter table (memories.inputs)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from openapi_spec_validator import validate

from memories import inputs

pytestmark = pytest.mark.django_db
METHODS = {"get", "post", "put", "patch", "delete"}
ERROR_REF = {"$ref": "#/components/schemas/Error"}


@pytest.fixture
def schema(client: Client) -> dict[str, Any]:
    response = client.get("/api/v1/schema/", headers={"Accept": "application/vnd.oai.openapi+json"})
    assert response.status_code == 200
    served: dict[str, Any] = response.json()
    return served


def operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, m, op) for path, item in schema["paths"].items() for m, op in item.items() if m in METHODS]


def api_operations(schema: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [o for o in operations(schema) if o[0].startswith("/api/")]


def test_the_schema_is_valid_openapi(schema: dict[str, Any]) -> None:
    assert schema["openapi"].startswith("3.1")
    validate(schema)


def test_operation_ids_are_unique_and_name_the_tools(schema: dict[str, Any]) -> None:
    ids = [op["operationId"] for _, _, op in operations(schema)]
    assert len(ids) == len(set(ids))
    assert {"remember", "search", "forget", "validate_memory", "recall_context", "list_workspaces"} <= set(ids)
    assert {"memory_get", "memory_forget_by_id", "memory_history_by_id", "memory_history_by_fact_key"} <= set(ids)


def test_every_api_operation_needs_the_bearer_key_and_healthz_none(schema: dict[str, Any]) -> None:
    assert schema["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    for path, method, op in api_operations(schema):
        assert op["security"] == [{"bearerAuth": []}], (method, path)
    assert schema["paths"]["/healthz"]["get"]["security"] == []


def test_every_api_operation_documents_its_errors_with_the_error_body(schema: dict[str, Any]) -> None:
    error = schema["components"]["schemas"]["Error"]
    assert error["properties"]["error"]["required"] == ["code", "message"]
    for path, method, op in api_operations(schema):
        codes = set(op["responses"])
        expected = {"400", "401", "402", "403", "429", "500", "503"}
        if "requestBody" in op:
            expected |= {"413", "415"}
        assert expected <= codes, (method, path, expected - codes)
        for code in codes - {"200", "201"}:
            assert op["responses"][code]["content"]["application/json"]["schema"] == ERROR_REF, (method, path, code)
        for code in ("429", "503"):
            assert "Retry-After" in op["responses"][code]["headers"], (method, path, code)
    by_id = {op["operationId"]: op for _, _, op in api_operations(schema)}
    assert "404" in by_id["memory_get"]["responses"]
    assert "409" in by_id["remember"]["responses"]


def test_answers_are_described(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    for _, _, op in api_operations(schema):
        success = op["responses"].get("200") or op["responses"]["201"]
        target = success["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
        assert target in components
    search = components["SearchAnswer"]
    assert {"api_version", "tenant_id", "project_id", "workspace", "results"} <= set(search["required"])
    memory = components["Memory"]
    for name in ("id", "content", "score", "status", "fact_key", "version", "tags", "graph_relations", "author"):
        assert name in memory["properties"], name


def test_request_bodies_come_from_the_parameter_table(schema: dict[str, Any]) -> None:
    by_id = {op["operationId"]: op for _, _, op in api_operations(schema)}
    for operation_id, params in (
        ("remember", inputs.REMEMBER),
        ("search", inputs.SEARCH),
        ("validate_memory", inputs.VALIDATE),
        ("recall_context", inputs.RECALL),
    ):
        body = by_id[operation_id]["requestBody"]["content"]["application/json"]["schema"]
        assert body == inputs.json_schema(params), operation_id
    forget = by_id["forget"]["requestBody"]["content"]["application/json"]["schema"]
    assert [alternative["required"] for alternative in forget["oneOf"]] == [["memory_id"], ["source_id"]]
    assert "exactly one" in forget["description"]
    idempotency = next(p for p in by_id["remember"]["parameters"] if p["name"] == "X-Idempotency-Key")
    assert idempotency["schema"]["maxLength"] == 256


def test_each_list_parameter_advertises_its_own_item_bound(schema: dict[str, Any]) -> None:
    """derived_from's ids are at most 100 characters, tags at most 200: generating one schema must
    not change another's (nor the MCP tools' schemas, generated after)."""
    body = next(op for _, _, op in api_operations(schema) if op["operationId"] == "remember")
    properties = body["requestBody"]["content"]["application/json"]["schema"]["properties"]
    items = {name: properties[name]["anyOf"][0]["items"] for name in ("derived_from", "tags")}
    assert items == {"derived_from": {"type": "string", "maxLength": 100}, "tags": {"type": "string", "maxLength": 200}}
    assert inputs.tool_schema(inputs.REMEMBER)["properties"]["tags"]["items"] == {"type": "string"}


def test_query_parameters_carry_the_table_constraints(schema: dict[str, Any]) -> None:
    history = schema["paths"]["/api/v1/memories/history"]["get"]
    params = {p["name"]: p for p in history["parameters"] if p["in"] == "query"}
    assert params["fact_key"]["required"] is True
    table = inputs.json_schema((inputs.WORKSPACE,))["properties"]["workspace"]
    for bound in ("maxLength", "minLength", "pattern"):
        if bound in table:
            assert params["workspace"]["schema"][bound] == table[bound], bound


def test_unknown_query_parameters_are_refused(client: Client, tenancy: Any) -> None:
    response = client.get("/api/v1/workspaces?colour=blue", headers={"Authorization": f"Bearer {tenancy.alice.key}"})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "unknown parameter(s): colour"
