"""Session search on LoCoMo as sessions: contextual indexing against plain turns.

Each LoCoMo dev conversation goes into a project of its own; each of its sessions is uploaded as
a session (``client`` "locomo", its date as every turn's ``occurred_at``), each dialogue turn a
turn ``"<speaker>: <text>"`` (position = its place in the session). Every question except
category 5 is asked with ``search_sessions`` (limit 10, context 2) in its conversation's project.

Two scores per variant, over the top 10 (R@1/5/10, MRR):
- ``hit``: the hit turn itself is an evidence turn;
- ``hit+context``: the hit turn or one of the context turns returned with it is one.

Variants: plain turns; the previous turn's words in the keyword index at ``CONTEXT_WEIGHT``;
embeddings of "previous turn's tail + turn"; both. The uploads and the queries call the same
services and selectors the REST routes call (``transcripts``), in this process, so the bench
can switch the ranking's context weight between runs; vectors are computed by
``transcripts.indexing.embed_pending`` (the background task's code) with the backend given.

    .venv/bin/python -m bench.sessions [--backend use] [--conversations N] [--weights 0.15 0.3 0.5]

Every question is asked as ``search_sessions`` is asked by default (``diversify`` on: its hits
spread over sessions) and, with ``--diversify both``, also with ``diversify: false`` (the fused
order of turns), in the same run. ``--shipped`` measures the shipped indexing only (contextual
vectors, the given weights); ``--reuse`` keeps the sessions and vectors a previous ``--shipped``
run left in the data directory (no upload, no embedding: a ranking change is measured in a
minute); ``--variant module.CONSTANT=value,...`` sets module constants for the run (A/B).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import common
from bench.common import log

LIMIT = 10
CONTEXT = 2
_EVIDENCE = re.compile(r"D\d+:\d+")


@dataclass(frozen=True)
class Question:
    qid: str
    conversation: str
    text: str
    evidence: frozenset[str]
    category: str


@dataclass
class Loaded:
    principals: dict[str, Any]  # conversation -> Principal
    keys: dict[tuple[str, str, int], str]  # (conversation, session id, position) -> "conv:D1:3"
    questions: list[Question]
    turns: int
    sessions: int


def session_date(raw: str) -> dt.datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" as a UTC time."""
    return dt.datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=dt.UTC)


def load(path: Path, conversations: int | None, upload: bool = True) -> Loaded:
    from accounts.keys import principal_for
    from accounts.models import ALL_SCOPES, Project, User
    from transcripts import services

    samples = json.loads(path.read_text())[:conversations]
    principals: dict[str, Any] = {}
    keys: dict[tuple[str, str, int], str] = {}
    questions: list[Question] = []
    turn_count = session_count = 0
    for sample in samples:
        sid = sample["sample_id"]
        tenant = common.bench_tenant(f"sessions-{sid}")
        project = Project.objects.get(pk=tenant.project_id)
        user = User.objects.get(email=common.BENCH_EMAIL)
        principal = principal_for(user=user, project=project, api_key=None, scopes=frozenset(ALL_SCOPES))
        assert principal is not None
        principals[sid] = principal
        conv = sample["conversation"]
        for name, turns in conv.items():
            match = re.fullmatch(r"session_(\d+)", name)
            if not match or not isinstance(turns, list):
                continue
            when = session_date(conv[f"{name}_date_time"])
            session_id = f"{sid}-{name}"
            turn_count += len(turns)
            session_count += 1
            for position, turn in enumerate(turns):
                keys[(sid, session_id, position)] = f"{sid}:{turn['dia_id']}"
            if not upload:
                continue
            services.session_upsert(
                principal=principal,
                client="locomo",
                session_id=session_id,
                payload={"title": f"{sid} {name}", "started_at": when.isoformat()},
            )
            items = []
            for position, turn in enumerate(turns):
                text = str(turn.get("text", "")).strip()
                items.append(
                    {
                        "position": position,
                        "role": str(turn["speaker"]),
                        "content": f"{turn['speaker']}: {text}",
                        "occurred_at": when.isoformat(),
                    }
                )
            for start in range(0, len(items), 500):
                answer = services.session_add_turns(
                    principal=principal,
                    client="locomo",
                    session_id=session_id,
                    payload={"turns": items[start : start + 500]},
                )
                assert answer["errors"] == 0, answer
        for i, qa in enumerate(sample["qa"]):
            if qa.get("category") == 5:
                continue
            evidence = {f"{sid}:{e}" for item in qa.get("evidence", []) for e in _EVIDENCE.findall(str(item))}
            questions.append(Question(f"{sid}#{i}", sid, str(qa["question"]), frozenset(evidence), str(qa["category"])))
    return Loaded(principals, keys, questions, turn_count, session_count)


def embed_all(backend_name: str, *, contextual: bool) -> float:
    """(Re-)embed every turn with plain or contextual texts; returns the seconds it took."""
    from memories.embeddings import get_backend
    from transcripts import indexing
    from transcripts.models import Session, Turn

    backend = get_backend(backend_name)
    Turn.objects.update(embedding=None, embedding_model=None)
    indexing.CONTEXTUAL_EMBEDDING = contextual
    started = time.perf_counter()
    for session_id in Session.objects.filter(client="locomo").values_list("pk", flat=True):
        indexing.embed_pending(session_id, backend=backend, batch=128)
    return time.perf_counter() - started


def ask_all(data: Loaded, weight: float, diversify: bool | None = None) -> dict[str, dict[str, float]]:
    """Every question through ``search_sessions``; the scores of hits alone and with context.
    ``diversify`` None: not sent (the default)."""
    from transcripts import indexing, selectors

    indexing.CONTEXT_WEIGHT = weight
    alone: list[int | None] = []
    with_context: list[int | None] = []
    for q in data.questions:
        payload: dict[str, Any] = {"query": q.text, "limit": LIMIT, "context": CONTEXT}
        if diversify is not None:
            payload["diversify"] = diversify
        answer = selectors.session_search(principal=data.principals[q.conversation], payload=payload)
        hit_keys: list[str] = []
        window_keys: list[set[str]] = []
        for result in answer["results"]:
            sid = result["session"]["session_id"]

            def key(turn: Mapping[str, Any], sid: str = sid, conversation: str = q.conversation) -> str:
                return data.keys[(conversation, sid, turn["position"])]

            hit_keys.append(key(result["turn"]))
            window_keys.append({key(t) for t in (result["turn"], *result["context_before"], *result["context_after"])})
        alone.append(common.rank_of(hit_keys, set(q.evidence)))
        rank = next((i for i, window in enumerate(window_keys, start=1) if window & q.evidence), None)
        with_context.append(rank)
    return {"hit": common.recall_scores(alone), "hit+context": common.recall_scores(with_context)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common.add_data_dir(parser)
    parser.add_argument("--backend", default="use", help="embedding backend (default: the deployment default)")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--weights", type=float, nargs="+", default=[0.3], help="context weights to try")
    parser.add_argument("--shipped", action="store_true", help="contextual vectors and the given weights only")
    parser.add_argument("--reuse", action="store_true", help="keep what a previous --shipped run loaded")
    parser.add_argument("--diversify", choices=["default", "both"], default="default",
                        help="both: also ask with diversify false")  # fmt: skip
    parser.add_argument("--variant", default="", help="module.CONSTANT=value,... set for this run (A/B)")
    args = parser.parse_args()

    common.setup_django(args.data_dir)
    from django.db import connection

    from bench.lme_retrieval import apply_variant
    from transcripts.models import Session

    variant = apply_variant(args.variant)
    reuse = args.reuse and Session.objects.filter(client="locomo").exists()
    if not reuse:
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE transcripts_turn, transcripts_session CASCADE")
    started = time.perf_counter()
    data = load(common.LOCOMO_PATH, args.conversations, upload=not reuse)
    done = "reused" if reuse else "uploaded"
    log(f"{done} {data.sessions} sessions, {data.turns} turns in {time.perf_counter() - started:.1f}s")
    figures: dict[str, Any] = {"turns": data.turns, "sessions": data.sessions, "questions": len(data.questions),
                               "variant": variant}  # fmt: skip
    modes: list[tuple[str, bool | None]] = [("", None)]
    if args.diversify == "both":
        modes.append((", diversify false", False))
    for contextual in (True,) if args.shipped or reuse else (False, True):
        if not reuse:
            seconds = embed_all(args.backend, contextual=contextual)
            log(f"embedded ({'contextual' if contextual else 'plain'}) in {seconds:.1f}s")
        for weight in (*(() if args.shipped or reuse else (0.0,)), *args.weights):
            for label, diversify in modes:
                name = f"embedding {'prev+turn' if contextual else 'turn'}, keyword context weight {weight}{label}"
                figures[name] = ask_all(data, weight, diversify)
                log(f"{name}: {figures[name]}")
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = common.OUT_DIR / "sessions.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    log(f"figures written to {out}")


if __name__ == "__main__":
    main()
