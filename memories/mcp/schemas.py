"""The MCP tools' ``outputSchema``: JSON Schema generated from the answer ``TypedDict``s the
services and selectors are annotated with (``memories.presenters``, ``transcripts.presenters``),
so the advertised shape is the one mypy holds every answer to and cannot drift from it.

An answer that is one of several shapes (``forget``: by id or by source) becomes an ``anyOf``
under an object root: MCP requires ``type: "object"`` at the root of an ``outputSchema``.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

_DEFS = "#/$defs/"


def output_schema(answer: Any) -> dict[str, Any]:
    """The JSON Schema of ``answer`` (a ``TypedDict`` or a union of them), object-rooted."""
    schema = TypeAdapter(answer).json_schema(mode="serialization")
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_DEFS):  # a bare reference at the root: inline it
        definitions = schema["$defs"]
        schema = {**definitions[ref.removeprefix(_DEFS)], "$defs": definitions}
    if "anyOf" in schema:
        schema = {"type": "object", **schema}
    return schema


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
