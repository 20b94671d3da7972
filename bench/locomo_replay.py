"""LoCoMo dev asked again, in process, of the records the last ``bench/run.py --only retrieval``
stored: an A/B of a ranking change in seconds instead of a REST load of 2,760 records.

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python -m bench.locomo_replay [--variant X=V] [--misses]

Reads the newest project ``retrieval-locomo-<backend>-*`` of the bench account (each retrieval
run stores into a fresh one), maps each stored record back to its LoCoMo turn by workspace,
``source_id`` and ``position``, and asks every question with ``memories.selectors.memory_search``
(limit 10, the default floor, as the REST run asks). Its figures are those of the REST run of the
same code (check: the ``NOW`` line matches ``bench/out``'s); they are a development tool, the
published figures come from ``bench/run.py``. ``--variant``: as ``bench.lme_retrieval``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, retrieval
from bench.lme_retrieval import apply_variant


def main() -> None:
    parser = argparse.ArgumentParser()
    common.add_data_dir(parser, common.ROOT / "var" / "bench")
    parser.add_argument("--backend", default="use")
    parser.add_argument("--variant", default="", help="module.CONSTANT=value,... set for this run (A/B)")
    parser.add_argument("--misses", action="store_true", help="print each question missed at 5")
    parser.add_argument("--rerank", action="store_true", help="ask with rerank: true")
    args = parser.parse_args()
    common.setup_django(Path(args.data_dir))
    variant = apply_variant(args.variant)

    from accounts.keys import principal_for
    from accounts.models import ALL_SCOPES, Project, User
    from memories import selectors
    from memories.models import Memory

    user = User.objects.get(email=common.BENCH_EMAIL)
    project = (
        Project.objects.filter(name__startswith=f"retrieval-locomo-{args.backend}-").order_by("-created_at").first()
    )
    if project is None:
        raise SystemExit("no LoCoMo run stored: run bench/run.py --only retrieval first")
    who = principal_for(user=user, project=project, api_key=None, scopes=frozenset(ALL_SCOPES))
    assert who is not None
    data = retrieval.locomo()
    key_of: dict[tuple[str, str | None, int | None], str] = {
        (d.workspace, d.source_id, d.position): d.key for d in data.docs
    }
    ids: dict[str, str] = {}
    for rid, workspace, source, position in Memory.objects.filter(project=project).values_list(
        "id", "workspace__name", "source_id", "position"
    ):
        ids[str(rid)] = key_of.get((workspace, source, position), "?")
    rankings: dict[str, list[str]] = {}
    for q in data.queries:
        answer: Any = selectors.memory_search(
            principal=who,
            payload={"query": q.text, "workspace": q.workspace, "limit": retrieval.LIMIT, "rerank": args.rerank},
        )
        rankings[q.qid] = [ids.get(r["id"], "?") for r in answer["results"]]
        if args.misses and not set(rankings[q.qid][:5]) & q.relevant:
            print(f"  miss {q.qid} [{q.group['category']}] {q.text[:100]}")
    result = retrieval.breakdown(data, rankings)
    print(f"project {project.name}, variant {variant or 'none'}")
    for group, scores in result.items():
        print(f"  {group}: {scores}")


if __name__ == "__main__":
    main()
