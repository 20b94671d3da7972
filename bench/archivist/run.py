"""Relation quality of the archivist's classifier on the labelled pairs in ``labelled.json``.

    .venv/bin/python bench/archivist/run.py [--split dev|heldout|all] [--embeddings NAME] [-v]

Prints the confusion matrix and precision / recall of ``contradicts`` and ``refines`` (and of
``related`` as "any relation" vs ``unrelated``). ``--embeddings use`` adds the cosine of that
embedding backend, as the archivist does when both records carry same-model vectors. A benchmark,
not a test: it never fails on a figure. No database is needed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
LABELS = ("contradicts", "refines", "related", "unrelated")


def _django() -> None:
    """Just enough Django to import the models the archivist module names (no connection)."""
    sys.path.insert(0, str(ROOT))
    import django
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            INSTALLED_APPS=[
                "django.contrib.contenttypes",
                "django.contrib.auth",
                "django.contrib.postgres",
                "accounts",
                "orgs",
                "memories",
                "billing",
            ],
            AUTH_USER_MODEL="accounts.User",
            DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "unused"}},
            USE_TZ=True,
        )
    django.setup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="all", choices=["dev", "heldout", "all"])
    parser.add_argument("--embeddings", default=None, help="an embedding backend name (memories.embeddings)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the misclassified pairs")
    args = parser.parse_args()
    _django()
    from memories import archivist

    data = json.loads((Path(__file__).parent / "labelled.json").read_text())
    pairs = [p for p in data["pairs"] if args.split == "all" or p["split"] == args.split]
    cosines = _cosines(pairs, args.embeddings)
    confusion: Counter[tuple[str, str]] = Counter()
    misses: list[tuple[dict[str, Any], str, str]] = []
    for i, pair in enumerate(pairs):
        verdict = archivist.classify(
            archivist.features(pair["newer"]),
            archivist.features(pair["older"]),
            same_fact_key=bool(pair.get("same_fact_key")),
            vector_cosine=cosines[i],
        )
        predicted = str(verdict.relation)
        confusion[(pair["label"], predicted)] += 1
        if predicted != pair["label"]:
            misses.append((pair, predicted, verdict.why))
    _report(pairs, confusion, args)
    if args.verbose:
        print("\nmisclassified:")
        for pair, predicted, why in misses:
            print(f"  {pair['id']:7} {pair['lang']} {pair['label']:>11} -> {predicted:<11} {why}")
            print(f"          older: {pair['older']}\n          newer: {pair['newer']}")


def _cosines(pairs: list[dict[str, Any]], backend_name: str | None) -> list[float | None]:
    if backend_name is None:
        return [None] * len(pairs)
    from memories import archivist
    from memories.embeddings import get_backend

    backend = get_backend(backend_name)
    older = backend.embed_documents([p["older"] for p in pairs])
    newer = backend.embed_documents([p["newer"] for p in pairs])
    return [archivist.cosine(a, b) for a, b in zip(older, newer, strict=True)]


def _report(pairs: list[dict[str, Any]], confusion: Counter[tuple[str, str]], args: argparse.Namespace) -> None:
    langs = Counter(p["lang"] for p in pairs)
    print(f"archivist relation quality: {len(pairs)} pairs ({args.split}; {dict(langs)})")
    print(f"embeddings: {args.embeddings or 'none (keywords only)'}\n")
    print("label \\ predicted " + "".join(f"{label:>13}" for label in LABELS))
    for label in LABELS:
        print(f"{label:<18}" + "".join(f"{confusion[(label, p)]:>13}" for p in LABELS))
    print()
    for label in ("contradicts", "refines"):
        tp = confusion[(label, label)]
        predicted = sum(confusion[(x, label)] for x in LABELS)
        actual = sum(confusion[(label, x)] for x in LABELS)
        print(f"{label:<12} precision {_ratio(tp, predicted)}  recall {_ratio(tp, actual)}  (n={actual})")
    linked = [x for x in LABELS if x != "unrelated"]
    tp = sum(confusion[(a, p)] for a in linked for p in linked)
    predicted = sum(confusion[(a, p)] for a in LABELS for p in linked)
    actual = sum(confusion[(a, p)] for a in linked for p in LABELS)
    print(f"{'any edge':<12} precision {_ratio(tp, predicted)}  recall {_ratio(tp, actual)}  (n={actual})")
    exact = sum(confusion[(x, x)] for x in LABELS)
    print(f"exact label  {exact}/{len(pairs)}")


def _ratio(num: int, den: int) -> str:
    return f"{num / den:.2f} ({num}/{den})" if den else "n/a     "


if __name__ == "__main__":
    main()
