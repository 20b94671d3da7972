"""Relation quality of the archivist's classifier on the labelled pairs of ``bench/data/relations.json``.

    .venv/bin/python bench/archivist/run.py [--split dev|heldout|all|both] [--embeddings NAME] [-v]

For each split: the confusion matrix, precision and recall of every relation the archivist
stores (``contradicts``, ``refines``, ``related``) and of "any edge" against ``unrelated``, and
what each kind of pair (template, paraphrase, contradiction, update, …) was classified as. Then
the issue #36 example: 30 notes "Module mN owns /api/mN", every pair classified, and the number
of ``contradicts`` among the 435 pairs.

``--embeddings use`` adds the cosine of that embedding backend, as the archivist does when both
records carry same-model vectors. A benchmark, not a test: it never fails on a figure, and it
needs no database. Rules are tuned on ``dev`` only; ``heldout`` is for reporting.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "relations.json"
LABELS = ("contradicts", "refines", "related", "unrelated")
KINDS = ("contradiction", "update", "template", "paraphrase", "refinement", "related", "unrelated")
TEMPLATE_NOTES = 30


def _django() -> None:
    """The project's settings without a database connection (the classifier reads none); a
    private data directory and a throwaway secret unless the environment names its own."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mmw.settings.base")
    os.environ.setdefault("MMW_SECRET_KEY", "bench-archivist")
    os.environ.setdefault("MMW_DATA_DIR", str(ROOT / "var" / "bench"))
    import django

    django.setup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="both", choices=["dev", "heldout", "all", "both"])
    parser.add_argument("--embeddings", default=None, help="an embedding backend name (memories.embeddings)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the misclassified pairs")
    args = parser.parse_args()
    _django()
    data = json.loads(DATA.read_text())
    splits = ["dev", "heldout"] if args.split == "both" else [args.split]
    print(f"embeddings: {args.embeddings or 'none (keywords only)'}")
    for split in splits:
        pairs = [p for p in data["pairs"] if split == "all" or p["split"] == split]
        evaluate(pairs, split, args.embeddings, verbose=args.verbose)
    template_example()


def evaluate(pairs: list[dict[str, Any]], split: str, embeddings: str | None, *, verbose: bool) -> None:
    from memories import archivist

    cosines = _cosines(pairs, embeddings)
    confusion: Counter[tuple[str, str]] = Counter()
    by_kind: Counter[tuple[str, str]] = Counter()
    misses: list[tuple[dict[str, Any], str, str, float]] = []
    for pair, cos in zip(pairs, cosines, strict=True):
        verdict = archivist.classify(
            archivist.features(pair["newer"]), archivist.features(pair["older"]), vector_cosine=cos
        )
        guess = str(verdict.relation)
        confusion[(pair["label"], guess)] += 1
        by_kind[(pair["kind"], guess)] += 1
        if guess != pair["label"]:
            misses.append((pair, guess, verdict.why, verdict.score))
    langs = Counter(p["lang"] for p in pairs)
    print(f"\n=== {split}: {len(pairs)} pairs ({', '.join(f'{k} {v}' for k, v in sorted(langs.items()))})\n")
    print("label \\ predicted " + "".join(f"{label:>13}" for label in LABELS))
    for label in LABELS:
        print(f"{label:<18}" + "".join(f"{confusion[(label, p)]:>13}" for p in LABELS))
    print()
    for label in LABELS[:3]:
        tp = confusion[(label, label)]
        predicted = sum(confusion[(x, label)] for x in LABELS)
        actual = sum(confusion[(label, x)] for x in LABELS)
        print(f"{label:<12} precision {_ratio(tp, predicted)}  recall {_ratio(tp, actual)}  (n={actual})")
    linked = LABELS[:3]
    tp = sum(confusion[(a, p)] for a in linked for p in linked)
    predicted = sum(confusion[(a, p)] for a in LABELS for p in linked)
    actual = sum(confusion[(a, p)] for a in linked for p in LABELS)
    print(f"{'any edge':<12} precision {_ratio(tp, predicted)}  recall {_ratio(tp, actual)}  (n={actual})")
    exact = sum(confusion[(x, x)] for x in LABELS)
    print(f"exact label  {exact}/{len(pairs)}\n")
    print("kind \\ predicted  " + "".join(f"{label:>13}" for label in LABELS))
    for kind in KINDS:
        if any(by_kind[(kind, p)] for p in LABELS):
            print(f"{kind:<18}" + "".join(f"{by_kind[(kind, p)]:>13}" for p in LABELS))
    if verbose:
        print("\nmisclassified:")
        for pair, guess, why, score in misses:
            print(f"  {pair['id']:14} {pair['kind']:>13}: {pair['label']:>11} -> {guess:<11} {score:.2f} {why}")
            print(f"          older: {pair['older']}\n          newer: {pair['newer']}")


def template_example() -> None:
    """Issue #36: 30 notes of one template that differ only in their module's identifier."""
    from memories import archivist

    notes = [f"Module m{i} owns /api/m{i}" for i in range(1, TEMPLATE_NOTES + 1)]
    found: Counter[str] = Counter()
    scores: list[float] = []
    for j, newer in enumerate(notes):
        for older in notes[:j]:
            verdict = archivist.classify(archivist.features(newer), archivist.features(older))
            found[str(verdict.relation)] += 1
            scores.append(verdict.score)
    pairs = sum(found.values())
    print(f"\n=== {TEMPLATE_NOTES} notes 'Module mN owns /api/mN': {pairs} pairs")
    print("  " + ", ".join(f"{label} {found[label]}" for label in LABELS))
    if scores:
        print(f"  scores {min(scores):.2f}..{max(scores):.2f}")


def _cosines(pairs: list[dict[str, Any]], backend_name: str | None) -> list[float | None]:
    if backend_name is None:
        return [None] * len(pairs)
    from memories import archivist
    from memories.embeddings import get_backend

    backend = get_backend(backend_name)
    older = backend.embed_documents([p["older"] for p in pairs])
    newer = backend.embed_documents([p["newer"] for p in pairs])
    return [archivist.cosine(a, b) for a, b in zip(older, newer, strict=True)]


def _ratio(num: int, den: int) -> str:
    return f"{num / den:.2f} ({num}/{den})" if den else "n/a     "


if __name__ == "__main__":
    main()
