"""What the payment rules (iban, card_cvv, card_number) add to screen_text on 100,000 characters,
this thread's CPU time, best of 21; with ``--against REV`` the same for the guard at git revision
``REV``, in the same run:

PYTHONPATH=. .venv/bin/python bench/guard/payments_cost.py [--against REV]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from types import ModuleType

from memories.guard import screen as sc

SIZE = 100_000
PAYMENT_RULES = ("card_number", "card_cvv", "iban")


def _texts() -> dict[str, str]:
    rng = random.Random(1)
    texts = {}
    for name in ("BENCHMARKS.md", "docs/ledger.md", "docs/search.md"):
        text = Path(name).read_text()
        texts[name] = (text * (SIZE // len(text) + 1))[:SIZE]
    line = "The deploy on 2024-03-15 used order 1234567890123452 and called +44 20 7946 0958. "
    texts["prose with numbers"] = (line * (SIZE // len(line) + 1))[:SIZE]
    texts["random digits"] = "".join(rng.choice("0123456789 -") for _ in range(SIZE))
    return texts


def best_ms(screen: ModuleType, text: str) -> float:
    times = []
    for _ in range(21):
        start = time.thread_time()  # CPU time: a shared machine's waits for a core do not count
        screen.screen_text(text)
        times.append(time.thread_time() - start)
    return min(times) * 1000


def cost(screen: ModuleType, text: str) -> tuple[float, float]:
    """(ms without the payment rules, ms with them) for the guard whose ``screen`` module is given."""
    full = screen.REDACT_RULES  # the module-level table screen_text reads
    setattr(screen, "REDACT_RULES", tuple(r for r in full if r.id not in PAYMENT_RULES))  # noqa: B010
    try:
        before = best_ms(screen, text)
    finally:
        setattr(screen, "REDACT_RULES", full)  # noqa: B010
    return before, best_ms(screen, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", help="a git revision whose payment rules are timed in the same run")
    args = parser.parse_args()
    then: ModuleType | None = None
    if args.against:
        from bench.guard.profile_rules import guard_at

        guard_at(args.against)
        then = sys.modules["guard_at_rev.screen"]
    for name, text in _texts().items():
        before, after = cost(sc, text)
        line = f"{name}: {before:.1f} ms without, {after:.1f} ms with the payment rules"
        if then is not None:
            then_before, then_after = cost(then, text)
            line += f"; at {args.against}: {then_before:.1f} ms without, {then_after:.1f} ms with"
        print(line)


if __name__ == "__main__":
    main()
