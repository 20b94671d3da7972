"""``bench/archive/search_parts.py`` with the dense ranker off and no ``migrate``: where the keyword
side of a search goes (term statistics, the recency window, the keyword statement) on a loaded
database whose HNSW index is missing or being built (issue #43: the keyword path at 3M records
while the 3M HNSW build ran):

    .venv/bin/python bench/keyword_parts.py --data-dir var/bench-3m --size 1000000 --calls 100

The query is never embedded (``vectors.embed_query`` answers None, as with no model), so
``dense`` parts read 0 and ``total`` is the keyword side alone. ``migrate`` is skipped because its
post-migrate hook would start a second HNSW build (``bench.bulk_load.setup``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.archive import search_parts
from bench.bulk_load import setup


def main() -> None:
    common.setup_django = setup  # no migrate (see the docstring)
    setup(Path(sys.argv[sys.argv.index("--data-dir") + 1]).resolve())
    from memories import vectors

    vectors.embed_query = lambda query: None  # type: ignore[assignment]  # keyword side only
    search_parts.main()


if __name__ == "__main__":
    main()
