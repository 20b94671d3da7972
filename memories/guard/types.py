"""The guard's public value types and the shape of a rule."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from memories.guard.textviews import Views

RuleKind = Literal["redact", "refuse"]
Span = tuple[int, int]
NO_DIGEST = "00000000"
"""The digest in the marker of a secret whose rule is not ``hashed``."""


class GuardRejection(Exception):
    """A write the guard refuses.  ``reason`` is the short named reason shown to the writer
    ("instruction override aimed at the agent"); ``rule_id`` and ``field`` are for logs."""

    def __init__(self, reason: str, *, rule_id: str, field: str = "content") -> None:
        super().__init__(reason)
        self.reason = reason
        self.rule_id = rule_id
        self.field = field


@dataclass(frozen=True)
class Redaction:
    """One secret (or one quoted attack payload) replaced in ``field``; ``digest8`` is the first
    8 hex digits of the SHA-256 of exactly the removed substring, the same value that appears in
    the ``[REDACTED:<rule_id>:<digest8>]`` marker."""

    rule_id: str
    digest8: str
    field: str


@dataclass(frozen=True)
class ScreenResult:
    text: str
    redactions: tuple[Redaction, ...]


@dataclass(frozen=True)
class Rule:
    """One row of the rule table.

    ``redact`` rules yield spans of the *raw* text to replace; ``refuse`` rules yield at least one
    span (in some view's coordinates, only its existence matters) when the text must be refused.

    Either ``pattern`` (a compiled ``str`` regex run on the raw text; the named group ``secret``,
    or the whole match, is the span) with an optional ``accept`` check on the matched secret, or
    ``func`` (free-form detector over the shared :class:`Views`).  ``gate`` is a cheap necessary
    condition (word-set lookups): when it is false the rule is skipped without scanning the text.
    ``hashed=False`` marks a redaction rule whose secrets are too short to hash (a three-digit card
    security code has 1,000 values: its digest would give it away); its markers carry
    :data:`NO_DIGEST`.
    """

    id: str
    kind: RuleKind
    reason: str
    pattern: re.Pattern[str] | None = None
    func: Callable[[Views], Iterable[Span]] | None = None
    accept: Callable[[str], bool] | None = None
    gate: Callable[[Views], bool] | None = None
    hashed: bool = True

    def __post_init__(self) -> None:
        if (self.pattern is None) == (self.func is None):
            raise ValueError(f"rule {self.id}: exactly one of pattern or func")

    def find(self, views: Views) -> Iterable[Span]:
        """Spans this rule flags in ``views.text``."""
        if self.gate is not None and not self.gate(views):
            return ()
        if self.func is not None:
            return self.func(views)
        assert self.pattern is not None
        return self._pattern_spans(views.text, self.pattern)

    def _pattern_spans(self, text: str, pattern: re.Pattern[str]) -> Iterable[Span]:
        group = "secret" if "secret" in pattern.groupindex else 0
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if self.accept is None or self.accept(text[start:end]):
                yield start, end
