"""Untuned false-positive estimate: screen every text file of the installed packages.

    .venv/bin/python bench/guard/realworld.py [--show N]

Third-party code and docs (``*.py``, ``*.md``, ``*.rst``, ``*.txt`` under site-packages, files
under 400 KB) are ordinary technical text nobody wrote for this guard.  A refusal there is
almost always a false positive (or a Unicode test table full of invisible characters); a
redaction is usually a literal example password in documentation.  Prints counts per rule and
the first N findings; always exits 0.
"""

from __future__ import annotations

import collections
import glob
import os
import site
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from memories.guard import GuardRejection, screen_text
from memories.guard.screen import _secret_spans, _views


def files() -> list[str]:
    roots = [p for p in site.getsitepackages() if os.path.isdir(p)]
    found = [
        f
        for root in roots
        for ext in ("py", "md", "rst", "txt")
        for f in glob.glob(f"{root}/**/*.{ext}", recursive=True)
    ]
    return sorted(f for f in found if os.path.getsize(f) < 400_000)


def line_of(text: str, start: int, end: int) -> str:
    first = text.rfind("\n", 0, start) + 1
    last = text.find("\n", end)
    return text[first : last if last != -1 else len(text)].strip()[:120]


def main() -> int:
    show = int(sys.argv[sys.argv.index("--show") + 1]) if "--show" in sys.argv else 10
    refused: list[tuple[str, str]] = []
    spans: list[tuple[str, str, str]] = []
    n = chars = 0
    start = time.perf_counter()
    for path in files():
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        n += 1
        chars += len(text)
        try:
            screen_text(text)
        except GuardRejection as exc:
            refused.append((exc.rule_id, path))
            continue
        spans += [(rule, path, line_of(text, s, e)) for s, e, rule in _secret_spans(_views(text))]
    elapsed = time.perf_counter() - start
    with_redactions = len({p for _, p, _ in spans})
    print(f"{n} files, {chars / 1e6:.1f} M characters in {elapsed:.1f} s")
    print(f"refused: {len(refused)} files {dict(collections.Counter(r for r, _ in refused))}")
    print(
        f"redacted: {len(spans)} spans in {with_redactions} files {dict(collections.Counter(r for r, _, _ in spans))}"
    )
    for rule, path in refused[:show]:
        print(f"  REFUSED {rule}: {path.split('site-packages/')[-1]}")
    for rule, path, line in spans[:show]:
        print(f"  {rule}: {path.split('site-packages/')[-1]}: {line!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
