"""The Guard on payment data: recall on the labelled corpus ``financial.jsonl`` and false positives
on every clean corpus, for this tree and (``--against REV``) the guard at a git revision, in one run.

    .venv/bin/python bench/guard/financial.py [--against REV] [--realworld] [--misses]

- positives (``financial.jsonl``, label ``card``/``cvv``/``iban``): a line counts when the write is
  kept and none of its ``secrets`` is left in the text (markers removed, each secret looked for as a
  number standing alone), by label and by shape, dev and held-out apart;
- false positives: lines with any redaction among the corpus's hard negatives, ``ordinary.jsonl``
  and the held-out ordinary notes (``heldout.jsonl``), and lines refused;
- ``--realworld``: the payment rules' spans over every text file of site-packages (as
  ``realworld.py``; ~100 M characters), and with two guards the spans only one of them finds.

Prints a table and always exits 0.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.guard.run import load  # noqa: E402
from memories.guard import screen as screen_now  # noqa: E402
from memories.guard.types import GuardRejection  # noqa: E402

MARKER = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}:[0-9a-f]{8}\]")
PAYMENT_RULES = ("card_number", "card_cvv", "iban")


class Guard:
    """One version of the guard: its ``screen_text``, rejection class and span finder."""

    def __init__(self, label: str, screen_module: Any, rejection: type[Exception]) -> None:
        self.label = label
        self.screen = screen_module
        self.rejection = rejection

    def outcome(self, text: str) -> tuple[str, str, list[str]]:
        """("kept", text, rule ids) or ("refused", reason, [])."""
        try:
            result = self.screen.screen_text(text)
        except self.rejection as exc:
            return "refused", str(exc), []
        return "kept", result.text, [r.rule_id for r in result.redactions]

    def payment_spans(self, text: str) -> set[tuple[int, int, str]]:
        """(start, end, rule) of every span a payment rule redacts in ``text``."""
        views = self.screen._views(text)
        return {span for span in self.screen._secret_spans(views) if span[2] in PAYMENT_RULES}


def left_in(text: str, secret: str) -> bool:
    """``secret`` still in ``text`` (markers removed), standing alone: not inside a longer number."""
    bare = MARKER.sub(" ", text)
    return re.search(r"(?<![0-9０-９])" + re.escape(secret) + r"(?![0-9０-９])", bare) is not None


def recall(guard: Guard, rows: list[dict[str, Any]], misses: list[str]) -> tuple[Counter[str], Counter[str]]:
    """(caught, total) per label and per kind."""
    caught, total = Counter[str](), Counter[str]()
    for row in rows:
        verdict, text, _rules = guard.outcome(row["text"])
        ok = verdict == "kept" and not any(left_in(text, s) for s in row["secrets"])
        for key in (row["label"], row["kind"]):
            total[key] += 1
            caught[key] += ok
        if not ok:
            misses.append(f"{guard.label} MISSED [{row['kind']}] {row['text']!r} -> {text!r}")
    return caught, total


def false_positives(guard: Guard, texts: list[tuple[str, str]], misses: list[str]) -> tuple[int, int, Counter[str]]:
    """(lines redacted, lines refused, redactions per rule) over ``(kind, text)`` pairs."""
    redacted = refused = 0
    rules = Counter[str]()
    for kind, text in texts:
        verdict, out, found = guard.outcome(text)
        if verdict == "refused":
            refused += 1
            misses.append(f"{guard.label} REFUSED clean [{kind}] {text[:100]!r}")
        elif found:
            redacted += 1
            rules.update(found)
            misses.append(f"{guard.label} FLAGGED clean [{kind}] {found} {text[:100]!r} -> {out[:120]!r}")
    return redacted, refused, rules


def realworld_texts() -> Iterator[str]:
    from bench.guard.realworld import files

    for path in files():
        try:
            yield Path(path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue


def realworld(measured: list[Guard]) -> None:
    """Payment spans per rule over site-packages, and (two guards) the spans only one finds."""
    spans: list[Counter[str]] = [Counter() for _ in measured]
    only: list[int] = [0 for _ in measured]
    n = 0
    for text in realworld_texts():
        n += 1
        found = [guard.payment_spans(text) for guard in measured]
        for counter, these in zip(spans, found, strict=True):
            counter.update(rule for _s, _e, rule in these)
        if len(found) == 2:
            only[0] += len(found[0] - found[1])
            only[1] += len(found[1] - found[0])
    for rule in PAYMENT_RULES:
        row(f"site-packages ({n} files): {rule}", [str(c[rule]) for c in spans])
    if len(measured) == 2:
        row("  spans only this guard finds", [str(k) for k in only])


def guards(against: str | None) -> list[Guard]:
    found = []
    if against:
        from bench.guard.profile_rules import guard_at

        guard_at(against)
        then = sys.modules["guard_at_rev.screen"]
        found.append(Guard(against, then, sys.modules["guard_at_rev.types"].GuardRejection))
    found.append(Guard("now", screen_now, GuardRejection))
    return found


def row(name: str, cells: list[str]) -> None:
    print(f"{name:<38}" + "".join(f"{cell:>16}" for cell in cells))


def pct(caught: Counter[str], total: Counter[str], key: str) -> str:
    return f"{100 * caught[key] / total[key]:.1f} % of {total[key]}" if total[key] else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", help="a git revision whose guard is measured in the same run")
    parser.add_argument("--realworld", action="store_true", help="also every text file of site-packages")
    parser.add_argument("--misses", action="store_true", help="print every miss and false positive")
    args = parser.parse_args()
    corpus = load("financial.jsonl")
    sets = ("dev", "heldout", "handwritten")
    positives = {s: [r for r in corpus if r["label"] != "negative" and r["set"] == s] for s in sets}
    clean: dict[str, list[tuple[str, str]]] = {
        "financial hard negatives": [(r["kind"], r["text"]) for r in corpus if r["label"] == "negative"],
        "ordinary.jsonl": [("ordinary", r["text"]) for r in load("ordinary.jsonl")],
        "heldout.jsonl ordinary": [("heldout", r["text"]) for r in load("heldout.jsonl") if r["set"] == "ordinary"],
    }
    measured = guards(args.against)
    misses: list[str] = []
    row("", [g.label for g in measured])
    results = {s: [recall(g, rows, misses) for g in measured] for s, rows in positives.items()}
    for label in ("card", "cvv", "iban"):
        for s in sets:
            row(f"{label} removed ({s})", [pct(c, t, label) for c, t in results[s]])
    kinds = sorted({r["kind"] for r in positives["dev"]})
    for kind in kinds:
        row(f"  {kind}", [pct(c, t, kind) for c, t in results["dev"]])
    for name, texts in clean.items():
        counted = [false_positives(g, texts, misses) for g in measured]
        row(f"{name} ({len(texts)}): redacted", [str(red) for red, _, _ in counted])
        row("  refused", [str(ref) for _, ref, _ in counted])
        row("  by rule", [",".join(f"{k}:{v}" for k, v in sorted(rules.items())) or "-" for _, _, rules in counted])
    if args.realworld:
        realworld(measured)
    if args.misses:
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
