"""Does the Memory Guard at this tree detect exactly what it detected at git revision REV?

    .venv/bin/python bench/guard/compare_rev.py --against REV [--realworld]

For every line of the bench corpora (secrets, poisoning, ordinary, held-out, financial), every case of the
rule-table tests and the 100k ordinary text, compares (1) each rule's spans, ``rule.find`` on
fresh views, and (2) ``screen_text``'s outcome: the output text and redactions, or the refusal's
rule and reason.  ``--realworld`` adds every text file of the installed packages (as
``realworld.py``; ~100 M characters, a few minutes).  Prints the differences and their count;
exits 1 when there is any.  A speed change must print ``0 differences``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench.guard.profile_rules import guard_at  # noqa: E402
from bench.guard.run import load, ordinary_content  # noqa: E402
from memories.guard import screen as screen_now  # noqa: E402
from memories.guard.rules import RULES  # noqa: E402
from memories.guard.textviews import Views  # noqa: E402
from memories.guard.types import GuardRejection  # noqa: E402


def outcome(screen_text: Callable[..., object], rejection: type[Exception], text: str) -> object:
    try:
        result = screen_text(text)
    except rejection as exc:  # each version has its own GuardRejection class
        return ("refused", getattr(exc, "rule_id", None), str(exc))
    return ("kept", result.text, [(r.rule_id, r.digest8, r.field) for r in result.redactions])  # type: ignore[attr-defined]


def rule_spans(rules: tuple[object, ...], views_type: type, text: str) -> list[object]:
    views = views_type(text)
    return [(rule.id, list(rule.find(views))) for rule in rules]  # type: ignore[attr-defined]


def texts(realworld: bool) -> Iterator[tuple[str, str]]:
    for name in ("secrets.jsonl", "poisoning.jsonl", "ordinary.jsonl", "heldout.jsonl", "financial.jsonl"):
        for i, row in enumerate(load(name)):
            yield f"{name}:{i + 1}", row["text"]
    yield "ordinary 100k", ordinary_content(load("ordinary.jsonl"))
    from tests.memories.guard.test_rules import CASES

    for rule_id, (positive, negative) in CASES.items():
        for i, text in enumerate(positive + negative):
            yield f"case {rule_id}:{i}", text
    if realworld:
        from bench.guard.realworld import files

        for path in files():
            try:
                yield path, Path(path).read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", required=True, help="the git revision to compare with")
    parser.add_argument("--realworld", action="store_true", help="also every text file of site-packages")
    args = parser.parse_args()
    then_screen = guard_at(args.against)
    then: ModuleType = sys.modules["guard_at_rev.rules"]
    then_views: type = sys.modules["guard_at_rev.textviews"].Views
    n = differences = 0
    for name, text in texts(args.realworld):
        n += 1
        now_spans, then_spans = rule_spans(RULES, Views, text), rule_spans(then.RULES, then_views, text)
        if now_spans != then_spans:
            differences += 1
            changed = [(a, b) for a, b in zip(now_spans, then_spans, strict=True) if a != b]
            print(f"DIFF rule spans {name}: now/then {changed[:3]}")
        now_out = outcome(screen_now.screen_text, GuardRejection, text)
        then_out = outcome(then_screen, sys.modules["guard_at_rev.types"].GuardRejection, text)
        if now_out != then_out:
            differences += 1
            print(f"DIFF screen_text {name}: now {str(now_out)[:200]} / then {str(then_out)[:200]}")
    print(f"{n} texts compared with {args.against}: {differences} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
