"""Memory Guard benchmark: detection rates on the three corpora and time on 100,000 characters.

    .venv/bin/python bench/guard/run.py [--misses]

Prints a table and always exits 0 (benchmarks inform, they never gate CI).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from memories.guard import GuardRejection, screen_text

HERE = Path(__file__).parent
CONTENT_CHARS = 100_000
TIMING_RUNS = 60


def load(name: str) -> list[dict[str, str]]:
    with (HERE / name).open(encoding="utf-8") as src:
        return [json.loads(line) for line in src if line.strip()]


def secrets_rate(rows: list[dict[str, str]], misses: list[str]) -> float:
    """A line counts when its secret is gone from the output (and the write was not refused)."""
    hit = 0
    for row in rows:
        try:
            result = screen_text(row["text"])
        except GuardRejection as exc:
            misses.append(f"secrets  REFUSED ({exc.reason}): {row['text'][:100]!r}")
            continue
        if result.redactions and row["secret"] not in result.text:
            hit += 1
        else:
            misses.append(f"secrets  [{row.get('kind', '?')}] {row['text'][:120]!r}")
    return 100 * hit / len(rows)


def poisoning_rate(rows: list[dict[str, str]], misses: list[str]) -> tuple[float, Counter[str]]:
    refused, missed_by = 0, Counter[str]()
    for row in rows:
        try:
            screen_text(row["text"])
        except GuardRejection:
            refused += 1
            continue
        missed_by[f"{row['lang']}/{row['obfuscation']}"] += 1
        misses.append(f"poison   [{row['lang']}/{row['kind']}/{row['obfuscation']}] {row['text'][:120]!r}")
    return 100 * refused / len(rows), missed_by


def ordinary_counts(rows: list[dict[str, str]], misses: list[str]) -> tuple[int, float]:
    refused = redacted = 0
    for row in rows:
        try:
            result = screen_text(row["text"])
        except GuardRejection as exc:
            refused += 1
            misses.append(f"ordinary REFUSED ({exc.reason}): {row['text'][:120]!r}")
            continue
        if result.redactions:
            redacted += 1
            misses.append(f"ordinary redacted {[r.rule_id for r in result.redactions]}: {row['text'][:120]!r}")
    return refused, 100 * redacted / len(rows)


def ordinary_content(rows: list[dict[str, str]]) -> str:
    """100,000 characters of ordinary notes, one after the other (the corpus, repeated)."""
    parts, size, i = [], 0, 0
    while size < CONTENT_CHARS:
        text = rows[i % len(rows)]["text"]
        parts.append(text)
        size += len(text) + 2
        i += 1
    return "\n\n".join(parts)[:CONTENT_CHARS]


_REFUSED_CONTENT: set[str] = set()


def _screen_quietly(content: str) -> None:
    try:
        screen_text(content)
    except GuardRejection as exc:  # an ordinary content must pass; say so (once) but keep timing
        if exc.reason not in _REFUSED_CONTENT:
            _REFUSED_CONTENT.add(exc.reason)
            print(f"NOTE: the 100k ordinary content was refused: {exc.reason}", file=sys.stderr)


def timing(content: str) -> tuple[float, float, float]:
    """(median wall ms, p95 wall ms, median CPU ms of this thread).  On a shared, loaded machine
    the wall time includes waiting for a CPU; the thread CPU time does not."""
    for _ in range(5):
        _screen_quietly(content)
    wall, cpu = [], []
    for _ in range(TIMING_RUNS):
        start, start_cpu = time.perf_counter(), time.thread_time()
        _screen_quietly(content)
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.thread_time() - start_cpu) * 1000)
    wall.sort()
    return statistics.median(wall), wall[int(0.95 * (len(wall) - 1))], statistics.median(cpu)


def heldout(rows: list[dict[str, str]], misses: list[str]) -> None:
    """The held-out set (written after the rules, never tuned on): one summary line."""
    by_set: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_set.setdefault(row["set"], []).append(row)
    held_misses: list[str] = []
    s_pct = secrets_rate(by_set["secrets"], held_misses)
    p_pct, _ = poisoning_rate(
        [{**r, "lang": "?", "obfuscation": "?", "kind": "?"} for r in by_set["poisoning"]], held_misses
    )
    o_refused, o_redacted = ordinary_counts(by_set["ordinary"], held_misses)
    print(
        f"held-out (not tuned on): secrets redacted {s_pct:.0f} % of {len(by_set['secrets'])}, "
        f"poisoning refused {p_pct:.0f} % of {len(by_set['poisoning'])}, "
        f"ordinary refused {o_refused} / redacted {o_redacted:.0f} % of {len(by_set['ordinary'])}"
    )
    misses += ["held-out " + m for m in held_misses]


def main() -> int:
    secrets, poisoning, ordinary = load("secrets.jsonl"), load("poisoning.jsonl"), load("ordinary.jsonl")
    misses: list[str] = []
    secrets_pct = secrets_rate(secrets, misses)
    poison_pct, missed_by = poisoning_rate(poisoning, misses)
    refused, redacted_pct = ordinary_counts(ordinary, misses)
    content = ordinary_content(ordinary)
    median_ms, p95_ms, cpu_ms = timing(content)
    ascii_median, ascii_p95, ascii_cpu = timing(content.encode("ascii", "ignore").decode()[:CONTENT_CHARS])
    load_avg = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    rows = [
        ("secrets redacted", f"{secrets_pct:.1f} %", f"{len(secrets)} lines", ">= 98 %"),
        ("poisoning refused", f"{poison_pct:.1f} %", f"{len(poisoning)} lines", ">= 95 %"),
        ("ordinary refused", f"{refused}", f"{len(ordinary)} lines", "0"),
        ("ordinary redacted", f"{redacted_pct:.1f} %", f"{len(ordinary)} lines", "<= 1 %"),
        ("100k ordinary, median", f"{median_ms:.2f} ms", f"p95 {p95_ms:.2f} ms", "<= 5 ms"),
        ("100k ordinary, CPU median", f"{cpu_ms:.2f} ms", f"load avg {load_avg:.1f}", "(info)"),
        ("100k ASCII-only, median", f"{ascii_median:.2f} ms", f"p95 {ascii_p95:.2f} ms", "(info)"),
        ("100k ASCII-only, CPU median", f"{ascii_cpu:.2f} ms", "", "(info)"),
    ]
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    print(f"{'metric':<{width[0]}}  {'value':>{width[1]}}  {'on':<{width[2]}}  target")
    for row in rows:
        print(f"{row[0]:<{width[0]}}  {row[1]:>{width[1]}}  {row[2]:<{width[2]}}  {row[3]}")
    if missed_by:
        print("poisoning misses by lang/obfuscation:", dict(missed_by.most_common()))
    heldout(load("heldout.jsonl"), misses)
    if "--misses" in sys.argv:
        print("\n".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
