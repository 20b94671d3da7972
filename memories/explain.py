"""Why a search returned what it returned: the trace ``search.fuse`` fills when a caller asks
``explain: true`` (``search``, ``search_sessions``, ``recall_context``; REST and MCP alike).

The trace holds the numbers that ranked, not a recomputation: per result, each ranking it was
in (its place, its raw score, the z-score the fusion summed, the reciprocal-rank tie-break and the
weight), what the floor read (keyword coverage, vector relevance and evidence), the fused score,
and how the shown score was made (``memories.confidence``); for the whole query, the floor's
decision and the candidates it cut, with why. A result's fused score is the sum over its rankings
of ``weight × (z + tie_break)``, plus ``favoured`` when it got ``search.FAVOUR_BONUS`` — the tests
recompute it from the trace. Off (the default) the
search fills nothing: a ``None`` trace costs one ``if`` per candidate.

Bounded: at most ``MAX_CUT`` cut candidates are listed (the number cut is always given).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_CUT = 20


@dataclass
class Trace:
    """What ``search.fuse`` (and the search around it) records when asked to explain."""

    rankings: list[str] = field(default_factory=list)  # each ranking's name, in fusion order
    entries: dict[Any, dict[str, Any]] = field(default_factory=dict)  # row id → its signals
    floor: dict[str, Any] = field(default_factory=dict)
    cut: list[dict[str, Any]] = field(default_factory=list)
    cut_count: int = 0
    notes: dict[str, Any] = field(default_factory=dict)  # query-wide facts (terms, time window, diversify)

    def entry(self, row_id: Any) -> dict[str, Any]:
        return self.entries.setdefault(row_id, {"rankings": {}})

    def ranked(self, name: str, row_id: Any, *, rank: int, score: float, z: float, tie_break: float,
               weight: float) -> None:  # fmt: skip
        self.entry(row_id)["rankings"][name] = {
            "rank": rank + 1,
            "score": round(score, 6),
            "z": round(z, 6),
            "tie_break": round(tie_break, 6),
            "weight": weight,
        }

    def absent(self, name: str, row_id: Any, *, z: float, weight: float) -> None:
        """``row_id`` was not returned by ranking ``name``: it counts that ranking's lowest z."""
        self.entry(row_id)["rankings"][name] = {"rank": None, "z": round(z, 6), "tie_break": 0.0, "weight": weight}

    def cut_one(self, row_id: Any, reason: str, relevance: float) -> None:
        self.cut_count += 1
        if len(self.cut) < MAX_CUT:
            self.cut.append({"id": str(row_id), "relevance": round(relevance, 6), "reason": reason})

    def of(self, row_id: Any) -> dict[str, Any] | None:
        """One result's trace, as the answer shows it (None: not traced)."""
        return self.entries.get(row_id)

    def summary(self) -> dict[str, Any]:
        """The query-wide part of the answer's ``explain``."""
        return {
            **self.notes,
            "rankings": list(self.rankings),
            "floor": dict(self.floor),
            "cut": list(self.cut),
            "cut_count": self.cut_count,
        }
