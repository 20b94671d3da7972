"""What a ``tools/list`` answer costs the agent that reads it, and the budget it must keep.

Every session of a coding agent pays for the tool list before its first question, so a default
key's listing is held to ``BUDGET`` (issue #36): the part a model reads (names, descriptions and
input schemas) at most 10,000 bytes, the whole answer at most 24,000, no description over 1,200
characters. The long reference (every bound, every error) is in docs/reference, which each tool
names as an MCP resource (``mmw://docs/<tool>``).

Bytes are counted the same way for every server measured (``bench/tool_budget.py`` puts a peer
beside MMW): the answer as the client parsed it, written out by Python's ``json.dumps`` with its
defaults (``", "`` and ``": "`` separators, non-ASCII escaped) — the count issue #36's figures
were taken with. What a server actually sends is compact JSON, somewhat smaller (``wire``).
Tokens are estimated as bytes / 4, a rule of thumb for English JSON (no tokenizer is run).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BYTES_PER_TOKEN = 4


@dataclass(frozen=True)
class Budget:
    model_reads: int  # bytes of names, descriptions and input schemas
    whole: int  # bytes of the whole answer
    description_chars: int  # characters of the longest description


BUDGET = Budget(model_reads=10_000, whole=24_000, description_chars=1_200)


@dataclass(frozen=True)
class Sizes:
    tools: int
    model_reads: int
    output_schemas: int
    whole: int
    wire: int
    longest_description: int

    @property
    def model_reads_tokens(self) -> int:
        return round(self.model_reads / BYTES_PER_TOKEN)

    @property
    def whole_tokens(self) -> int:
        return round(self.whole / BYTES_PER_TOKEN)

    def over(self, budget: Budget = BUDGET) -> list[str]:
        """What exceeds ``budget``, in words (empty when within it)."""
        checks = [
            ("names, descriptions and input schemas", self.model_reads, budget.model_reads, "bytes"),
            ("the whole answer", self.whole, budget.whole, "bytes"),
            ("the longest description", self.longest_description, budget.description_chars, "characters"),
        ]
        return [f"{what}: {value:,} {unit} > {limit:,}" for what, value, limit, unit in checks if value > limit]


def _bytes(value: Any) -> int:
    return len(json.dumps(value).encode())


def measure(answer: Mapping[str, Any]) -> Sizes:
    """The sizes of a ``tools/list`` result, given as JSON (``ListToolsResult.model_dump(mode="json",
    by_alias=True, exclude_none=True)``)."""
    tools: Sequence[Mapping[str, Any]] = answer["tools"]
    read = [{"name": t["name"], "description": t.get("description"), "inputSchema": t["inputSchema"]} for t in tools]
    return Sizes(
        tools=len(tools),
        model_reads=sum(_bytes(entry) for entry in read),
        output_schemas=sum(_bytes(t["outputSchema"]) for t in tools if "outputSchema" in t),
        whole=_bytes(answer),
        wire=len(json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode()),
        longest_description=max((len(t.get("description") or "") for t in tools), default=0),
    )
