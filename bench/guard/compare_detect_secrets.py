"""Compare the Memory Guard's secret rules with Yelp's detect-secrets on the same corpora.

    .venv/bin/pip install detect-secrets==1.5.0   # bench-only, not a runtime dependency
    .venv/bin/python bench/guard/compare_detect_secrets.py

detect-secrets runs with its default plugins and filters (``SecretsCollection.scan_file`` on a
temporary ``.txt`` file per text, which is how its CLI scans).  For each tool:

- secrets flagged: the line got at least one finding;
- secrets located: a reported value *is* the planted secret (or contains it), i.e. the exact
  substring to replace is known — what ``[REDACTED:<rule>:<sha256>]`` needs;
- ordinary flagged: false positives on ordinary notes;
- time on the 100,000-character ordinary content.

Always exits 0.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.guard.run import load, ordinary_content
from memories.guard import GuardRejection, screen_text

try:
    from detect_secrets.core.secrets_collection import SecretsCollection
    from detect_secrets.settings import default_settings
except ImportError:  # pragma: no cover - bench-only dependency
    print("detect-secrets is not installed: .venv/bin/pip install detect-secrets==1.5.0")
    sys.exit(0)


def ds_values(text: str, tmpdir: str) -> list[str]:
    path = os.path.join(tmpdir, "memory.txt")
    with open(path, "w", encoding="utf-8") as out:
        out.write(text + "\n")
    collection = SecretsCollection()
    collection.scan_file(path)
    return [secret.secret_value or "" for _, secret in collection]


def guard_values(text: str) -> list[str] | None:
    """The secrets our guard removed (recovered by diffing is not needed: we re-find them)."""
    try:
        result = screen_text(text)
    except GuardRejection:
        return None
    return [r.digest8 for r in result.redactions]


def rate(hits: Iterable[bool], total: int) -> str:
    return f"{100 * sum(hits) / total:.1f} %"


def main() -> int:
    secrets, ordinary = load("secrets.jsonl"), load("ordinary.jsonl")
    content = ordinary_content(ordinary)
    with default_settings(), tempfile.TemporaryDirectory() as tmpdir:
        ds_secret_findings = [ds_values(row["text"], tmpdir) for row in secrets]
        ds_ordinary_findings = [ds_values(row["text"], tmpdir) for row in ordinary]
        ds_times = []
        for _ in range(5):
            start = time.perf_counter()
            ds_values(content, tmpdir)
            ds_times.append((time.perf_counter() - start) * 1000)
        misses_by_kind: dict[str, int] = {}
        for row, found in zip(secrets, ds_secret_findings, strict=True):
            if not any(v and (row["secret"] in v or v == row["secret"]) for v in found):
                misses_by_kind[row["kind"]] = misses_by_kind.get(row["kind"], 0) + 1

    guard_secret = [screen_text(row["text"]) for row in secrets]
    guard_ordinary = [guard_values(row["text"]) for row in ordinary]
    guard_times = []
    for _ in range(20):
        start = time.perf_counter()
        with contextlib.suppress(GuardRejection):
            screen_text(content)
        guard_times.append((time.perf_counter() - start) * 1000)

    n_s, n_o = len(secrets), len(ordinary)
    table = [
        (
            "secrets flagged",
            rate((bool(f) for f in ds_secret_findings), n_s),
            rate((bool(r.redactions) for r in guard_secret), n_s),
        ),
        (
            "secrets located (exact value)",
            rate(
                (
                    any(v and (row["secret"] in v) for v in f)
                    for row, f in zip(secrets, ds_secret_findings, strict=True)
                ),
                n_s,
            ),
            rate(
                (
                    row["secret"] not in r.text and bool(r.redactions)
                    for row, r in zip(secrets, guard_secret, strict=True)
                ),
                n_s,
            ),
        ),
        (
            "ordinary flagged (false pos.)",
            f"{sum(bool(f) for f in ds_ordinary_findings)} / {n_o}",
            f"{sum(bool(v) for v in guard_ordinary if v is not None)} / {n_o}",
        ),
        ("100k ordinary, median", f"{statistics.median(ds_times):.1f} ms", f"{statistics.median(guard_times):.2f} ms"),
    ]
    width = max(len(r[0]) for r in table)
    print(f"{'':<{width}}  {'detect-secrets 1.5.0':>22}  {'memory guard':>14}")
    for name, ds, ours in table:
        print(f"{name:<{width}}  {ds:>22}  {ours:>14}")
    print("detect-secrets: secrets not located, by kind:", dict(sorted(misses_by_kind.items())))
    fps = [(row["text"][:70], f) for row, f in zip(ordinary, ds_ordinary_findings, strict=True) if f]
    print("detect-secrets: sample false positives on ordinary notes:")
    for text, found in fps[:8]:
        print(f"  {text!r} -> {found[:3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
