"""Where the Memory Guard's time goes on 100,000 ordinary characters: each shared view and the
phrase rules' pre-pass (their anchor words, found at once), then each rule (on views already
computed, so a rule is charged only for its own scans), CPU time.

    .venv/bin/python bench/guard/profile_rules.py [--runs 30] [--against REV] [--pure]

``--against REV`` also times ``screen_text`` of the guard as it was at git revision ``REV``
(exported to a temporary package), interleaved with today's in the same run, on the first
1,000 and 10,000 characters and on the whole 100,000, and prints the ratios: on a shared, noisy
machine only a same-run ratio means anything.  ``--pure`` does the same against this revision's
guard without Hyperscan (the pure-Python sets a machine without its wheel uses;
``MMW_GUARD_HYPERSCAN=0`` profiles that way).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.guard.run import load, ordinary_content  # noqa: E402
from memories.guard import phrases  # noqa: E402
from memories.guard.lexicon import LEXICON  # noqa: E402
from memories.guard.rules import RULES  # noqa: E402
from memories.guard.screen import screen_text  # noqa: E402
from memories.guard.textviews import Views  # noqa: E402
from memories.guard.types import Rule  # noqa: E402

PREPASS = "pre-pass (anchor words)"
VIEWS = (
    "encoded",
    "has_unmapped",
    "normalized",
    "lower",
    "fold",
    "words",
    "vocab",
    "prefixes",
    "letter_spaced",
    "letters",
    PREPASS,
)


def _compute(views: Views, name: str) -> None:
    if name == PREPASS:
        phrases._prefetch(views)
    else:
        getattr(views, name)


def cpu_ms(func: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.thread_time()
        func()
        times.append((time.thread_time() - start) * 1000)
    return statistics.median(times)


def warm_views(text: str) -> Views:
    views = Views(text)
    for name in VIEWS:
        _compute(views, name)
    return views


def view_costs(text: str, runs: int) -> list[tuple[str, float]]:
    """Cumulative cost of the views in dependency order, reported as increments."""
    out, previous = [], 0.0
    for i, name in enumerate(VIEWS):

        def upto(i: int = i) -> None:
            views = Views(text)
            for view in VIEWS[: i + 1]:
                _compute(views, view)

        total = cpu_ms(upto, runs)
        out.append((f"view {name}", max(0.0, total - previous)))
        previous = total
    return out


def rule_costs(text: str, runs: int) -> list[tuple[str, float]]:
    out = []
    for rule in RULES:
        prepared = iter([warm_views(text) for _ in range(runs)])

        def once(rule: Rule = rule, prepared: Iterator[Views] = prepared) -> None:
            list(rule.find(next(prepared)))

        out.append((f"rule {rule.id}", cpu_ms(once, runs)))
    return out


def guard_at(rev: str) -> Callable[..., object]:
    """``screen_text`` of ``memories/guard`` at ``rev``, as a package named ``guard_at_rev``."""
    target = Path(tempfile.mkdtemp(prefix="guard-rev-")) / "guard_at_rev"
    target.mkdir()
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{rev}:memories/guard"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.split()
    for name in names:
        source = subprocess.run(
            ["git", "show", f"{rev}:memories/guard/{name}"], cwd=ROOT, check=True, capture_output=True, text=True
        ).stdout
        (target / name).write_text(source.replace("memories.guard", "guard_at_rev"), encoding="utf-8")
    sys.path.insert(0, str(target.parent))
    return importlib.import_module("guard_at_rev.screen").screen_text  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--against", help="a git revision to compare screen_text with, in the same run")
    parser.add_argument("--pure", action="store_true", help="also compare with the guard's pure-Python lexicon")
    args = parser.parse_args()
    text = ordinary_content(load("ordinary.jsonl"))
    rows = view_costs(text, args.runs) + rule_costs(text, args.runs)
    total = cpu_ms(lambda: screen_text(text), args.runs)
    print(f"{'part':28} {'CPU ms':>8} {'share':>7}")
    for name, ms in sorted(rows, key=lambda row: -row[1]):
        print(f"{name:28} {ms:8.2f} {100 * ms / total:6.1f}%")
    print(f"{'sum of parts':28} {sum(ms for _, ms in rows):8.2f}")
    print(f"{'screen_text (100k chars)':28} {total:8.2f}")
    if args.against:
        compare(text, args.runs, args.against, guard_at(args.against), screen_text)
    if args.pure:
        compare(text, args.runs, "pure Python", _screen_with_lexicon(False), _screen_with_lexicon(True))


def _screen_with_lexicon(hyperscan: bool) -> Callable[[str], object]:
    def screen(text: str) -> object:
        with LEXICON.accelerated_as(hyperscan):
            return screen_text(text)

    return screen


def compare(text: str, runs: int, label: str, before: Callable[[str], object], now: Callable[[str], object]) -> None:
    """``now`` against ``before`` on the first 1,000 and 10,000 characters and on all of
    ``text``, interleaved so both see the same load; prints the medians and their ratio."""
    for size in (1_000, 10_000, len(text)):
        part = text[:size]
        for _ in range(3):
            before(part), now(part)
        now_ms, then_ms = [], []
        for _ in range(runs * 10 if size < len(text) else runs):  # small texts: more runs
            then_ms.append(cpu_ms(functools.partial(before, part), 1))
            now_ms.append(cpu_ms(functools.partial(now, part), 1))
        then_median, now_median = statistics.median(then_ms), statistics.median(now_ms)
        print(
            f"screen_text on {size:,} chars, {label}: {then_median:.3f} ms, now {now_median:.3f} ms, "
            f"ratio now/then {now_median / then_median:.2f} (load average {os.getloadavg()[0]:.1f})"
        )


if __name__ == "__main__":
    main()
