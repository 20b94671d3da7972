"""What the payment rules (iban, card_cvv, card_number) add to screen_text on 100,000 characters, best of 9:

PYTHONPATH=. .venv/bin/python bench/guard/payments_cost.py
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from memories.guard import rules
from memories.guard import screen as sc

SIZE = 100_000


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


def best_ms(text: str) -> float:
    times = []
    for _ in range(9):
        start = time.perf_counter()
        sc.screen_text(text)
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> None:
    full = rules.REDACT_RULES
    without = tuple(r for r in full if r.id not in ("card_number", "card_cvv", "iban"))
    for name, text in _texts().items():
        sc.REDACT_RULES = without  # type: ignore[attr-defined]  # the module-level table screen_text reads
        before = best_ms(text)
        sc.REDACT_RULES = full  # type: ignore[attr-defined]
        after = best_ms(text)
        print(f"{name}: {before:.1f} ms without, {after:.1f} ms with the payment rules")


if __name__ == "__main__":
    main()
