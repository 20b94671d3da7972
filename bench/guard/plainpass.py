"""The Guard on passwords stated in plain language: recall on the labelled corpus
``plainpass.jsonl`` and false positives on every clean corpus, for this tree and (``--against
REV``) the guard at a git revision, in one run.

    .venv/bin/python bench/guard/plainpass.py [--against REV] [--realworld] [--misses]

- positives (label ``password``): a line counts when the write is kept and its password is gone
  from the text, by language and by shape, dev and held-out apart;
- false positives: lines with any redaction, and lines refused, among the corpus's hard negatives,
  ``ordinary.jsonl``, the held-out ordinary notes (``heldout.jsonl``) and the payment corpus's
  hard negatives (``financial.jsonl``);
- ``--realworld``: the spans of ``password_phrase`` and ``password_assignment`` over every text
  file of site-packages (as ``realworld.py``), and with two guards the spans only one finds.

Prints a table and always exits 0.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.guard.financial import Guard, false_positives, guards, pct, realworld_texts, row  # noqa: E402
from bench.guard.run import load  # noqa: E402

RULES = ("password_phrase", "password_assignment")


def recall(guard: Guard, rows: list[dict[str, Any]], misses: list[str]) -> tuple[Counter[str], Counter[str]]:
    """(caught, total) per language and per shape."""
    caught, total = Counter[str](), Counter[str]()
    for line in rows:
        verdict, text, _rules = guard.outcome(line["text"])
        ok = verdict == "kept" and not any(secret in text for secret in line["secrets"])
        for key in (line["lang"], line["kind"], "all"):
            total[key] += 1
            caught[key] += ok
        if not ok:
            misses.append(f"{guard.label} MISSED [{line['lang']}/{line['kind']}] {line['text']!r} -> {text!r}")
    return caught, total


def spans_of(guard: Guard, text: str) -> set[tuple[int, int, str]]:
    views = guard.screen._views(text)
    return {span for span in guard.screen._secret_spans(views) if span[2] in RULES}


def realworld(measured: list[Guard], misses: list[str]) -> None:
    counts: list[Counter[str]] = [Counter() for _ in measured]
    only = [0 for _ in measured]
    n = 0
    for text in realworld_texts():
        n += 1
        found = [spans_of(guard, text) for guard in measured]
        for counter, these in zip(counts, found, strict=True):
            counter.update(rule for _s, _e, rule in these)
        for guard, these in zip(measured, found, strict=True):
            misses.extend(
                f"{guard.label} site-packages [{rule}] {text[max(0, s - 60) : e + 20]!r}"
                for s, e, rule in these
                if rule == "password_phrase"
            )
        if len(found) == 2:
            only[0] += len(found[0] - found[1])
            only[1] += len(found[1] - found[0])
    for rule in RULES:
        row(f"site-packages ({n} files): {rule}", [str(c[rule]) for c in counts])
    if len(measured) == 2:
        row("  spans only this guard finds", [str(k) for k in only])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", help="a git revision whose guard is measured in the same run")
    parser.add_argument("--realworld", action="store_true", help="also every text file of site-packages")
    parser.add_argument("--misses", action="store_true", help="print every miss and false positive")
    args = parser.parse_args()
    corpus = load("plainpass.jsonl")
    sets = ("dev", "heldout")
    positives = {s: [r for r in corpus if r["label"] == "password" and r["set"] == s] for s in sets}
    clean: dict[str, list[tuple[str, str]]] = {
        "plainpass hard negatives": [(r["kind"], r["text"]) for r in corpus if r["label"] == "negative"],
        "ordinary.jsonl": [("ordinary", r["text"]) for r in load("ordinary.jsonl")],
        "heldout.jsonl ordinary": [("heldout", r["text"]) for r in load("heldout.jsonl") if r["set"] == "ordinary"],
        "financial hard negatives": [
            (r["kind"], r["text"]) for r in load("financial.jsonl") if r["label"] == "negative"
        ],
    }
    measured = guards(args.against)
    misses: list[str] = []
    row("", [g.label for g in measured])
    results = {s: [recall(g, rows, misses) for g in measured] for s, rows in positives.items()}
    for s in sets:
        row(f"passwords removed ({s})", [pct(c, t, "all") for c, t in results[s]])
        for lang in ("en", "ru", "fr"):
            row(f"  {lang}", [pct(c, t, lang) for c, t in results[s]])
    for s in sets:
        for kind in sorted({r["kind"] for r in positives[s]}):
            row(f"  {s} {kind}", [pct(c, t, kind) for c, t in results[s]])
    for name, texts in clean.items():
        counted = [false_positives(g, texts, misses) for g in measured]
        row(f"{name} ({len(texts)}): redacted", [str(red) for red, _, _ in counted])
        row("  refused", [str(ref) for _, ref, _ in counted])
        row("  by rule", [",".join(f"{k}:{v}" for k, v in sorted(rules.items())) or "-" for _, _, rules in counted])
    if args.realworld:
        realworld(measured, misses)
    if args.misses:
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
