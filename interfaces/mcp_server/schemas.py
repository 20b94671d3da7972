"""The MCP tools' ``outputSchema``: generated from the answer ``TypedDict``s the services and
selectors are annotated with (``memories.presenters``, ``transcripts.presenters``,
``ledger.presenters``), so the advertised shape is the one mypy holds every answer to.

Two renderings of one definition:

- ``answer_schema``: the whole JSON Schema of an answer, every nested field. The contract tests
  validate real answers against it *closed* (``closed``), so a presenter that grows or loses a
  field without its ``TypedDict`` fails.
- ``output_schema``: what a tool advertises — the answer's top-level fields with their JSON types
  and which are always present; a nested object or list is typed but not spelled out. Every
  ``tools/list`` carries it, so it is kept small (``interfaces.mcp_server.budget``); the fields inside a
  record, a session hit or a ledger entry are on each tool's reference page (``mmw://docs/<tool>``).
  MCP asks that ``structuredContent`` conform to a declared ``outputSchema`` (clients validate
  it): every answer that conforms to ``answer_schema`` conforms to this one.

An answer that is one of several shapes (``forget``: by id or by source) becomes an ``anyOf``
under an object root: MCP requires ``type: "object"`` at the root of an ``outputSchema``.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

_DEFS = "#/$defs/"


def answer_schema(answer: Any) -> dict[str, Any]:
    """The whole JSON Schema of ``answer`` (a ``TypedDict`` or a union of them), object-rooted."""
    schema = TypeAdapter(answer).json_schema(mode="serialization")
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS):  # a bare reference at the root: inline it
        definitions = schema["$defs"]
        schema = {**definitions[ref.removeprefix(_DEFS)], "$defs": definitions}
    if "anyOf" in schema:
        schema = {"type": "object", **schema}
    return schema


def output_schema(answer: Any) -> dict[str, Any]:
    """The compact ``outputSchema`` of ``answer``: its top-level fields, typed."""
    full = answer_schema(answer)
    definitions: dict[str, Any] = full.get("$defs", {})
    compact = _shape(full, definitions, depth=1)
    if "anyOf" in compact:
        compact = {"type": "object", **compact}
    return compact


def _resolved(schema: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS):
        resolved: dict[str, Any] = definitions[ref.removeprefix(_DEFS)]
        return resolved
    return schema


def _shape(schema: dict[str, Any], definitions: dict[str, Any], depth: int) -> dict[str, Any]:
    """``schema`` reduced to types: an object's properties only while ``depth`` lasts, a list's
    items by their type, a union of plain types as a list of types."""
    schema = _resolved(schema, definitions)
    if "anyOf" in schema:
        options = [_shape(option, definitions, depth) for option in schema["anyOf"]]
        if any(set(option) != {"type"} for option in options):
            # an untyped option (anything goes) makes the union anything; spelled-out objects stay apart
            return {} if any(not option for option in options) else {"anyOf": options}
        types: list[str] = []
        for option in options:
            kind = option["type"]
            types += kind if isinstance(kind, list) else [kind]
        unique = list(dict.fromkeys(types))
        return {"type": unique[0] if len(unique) == 1 else unique}
    kind = schema.get("type")
    shape: dict[str, Any] = {"type": kind} if kind is not None else {}
    if kind == "object" and depth > 0 and "properties" in schema:
        shape["properties"] = {
            name: _shape(field, definitions, depth - 1) for name, field in schema["properties"].items()
        }
        if schema.get("required"):
            shape["required"] = list(schema["required"])
    elif kind == "array" and "items" in schema:
        items = _shape(schema["items"], definitions, 0)
        if isinstance(items.get("type"), str):
            shape["items"] = {"type": items["type"]}
    return shape


def closed(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object that lists its properties:
    what the contract tests validate real answers with, so a key an answer carries but its
    ``TypedDict`` does not declare fails too. (The advertised schema stays open: adding a field
    to an answer is a compatible change for clients.)"""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: closed(value) for key, value in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema:
        out["additionalProperties"] = False
    return out
