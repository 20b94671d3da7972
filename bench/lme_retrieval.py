"""Retrieval on LongMemEval-S dev (``/work/shared/data/lme_s_dev.json.gz``), by question type,
through both paths MMW offers, beside BM25 in the same run.

    MMW_DATA_DIR=$PWD/var/bench-lme .venv/bin/python -m bench.lme_retrieval [--questions N] [--variant X=V] [--misses]

Each question's haystack (~48 sessions, ~490 turns) is loaded once into the bench database (kept
in ``--data-dir`` between runs; a question already loaded is not loaded again), in process, through
the services the REST routes call:

- **sessions path**: every haystack session uploaded as a session (client ``lme-<question id>``,
  its date as every turn's ``occurred_at``), asked with ``search_sessions`` (limit 50, no context)
  filtered to the question's client; sessions ranked by their best turn;
- **records path**: every user turn with the assistant's answer after it as one record
  (workspace = the question id, ``source_id`` = the session, ``occurred_at`` its date, ``position``
  its place), asked with ``search`` (limit 50, the default floor) in the question's workspace;
  sessions ranked by their best record; and again with ``diversify: true`` (as ``recall_context``
  asks), sessions in the order of their first record.

Vectors: the shipped backend (USE), computed here once (``transcripts.indexing.embed_pending`` and
``retrieval.fill_vectors``). Scores over the 82 questions with evidence (abstention questions, id
ending ``_abs``, are left out): ``R_any@5`` (an evidence session among the first 5 sessions) and
``R_all@5`` (every evidence session among them), overall and per question type, for MMW's two paths
and BM25 over sessions (each session one document) and over records; and, for the sessions path,
the same over the sessions of its first 10 turns (``MMW sessions 10 turns``: what a limit-10
``search_sessions`` shows an agent, where spreading turns over sessions counts). The question's date is sent
as ``now`` (where the code takes it) so questions about time are asked when they were asked.

``--variant`` sets module constants for the run, for A/B on the same loaded data (e.g.
``--variant memories.search.SOURCE_SUPPORT=0``); ``--misses`` prints, per question an MMW path
misses, the place of each evidence session (the same ``explain`` numbers are one
``search_sessions`` call away).

A benchmark, not a test: it prints figures and never fails on one.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import collections
import datetime as dt
import gzip
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.common import log, markdown_table

DATA = Path("/work/shared/data/lme_s_dev.json.gz")
PROJECT = "lme"
LIMIT = 50
K = 5


@dataclass(frozen=True)
class Question:
    qid: str
    kind: str
    text: str
    asked_at: dt.datetime
    evidence: frozenset[str]
    sessions: tuple[tuple[str, dt.datetime, list[dict[str, str]]], ...]


def lme_date(raw: str) -> dt.datetime:
    """LongMemEval's "2023/07/15 (Sat) 04:55" as UTC."""
    return dt.datetime.strptime(raw.split(" (")[0] + " " + raw.split(") ")[1], "%Y/%m/%d %H:%M").replace(tzinfo=dt.UTC)


def questions(limit: int | None = None) -> list[Question]:
    raw = json.loads(gzip.decompress(DATA.read_bytes()))
    out = []
    for q in raw[:limit]:
        sessions = tuple(
            (sid, lme_date(date), turns)
            for sid, date, turns in zip(
                q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"], strict=True
            )
        )
        out.append(Question(q["question_id"], q["question_type"], q["question"], lme_date(q["question_date"]),
                            frozenset(q["answer_session_ids"]), sessions))  # fmt: skip
    return out


def pairs(turns: list[dict[str, str]]) -> list[str]:
    """A session's records: each user turn with the assistant's answer after it."""
    out: list[str] = []
    for i, turn in enumerate(turns):
        if turn["role"] != "user":
            continue
        answer = turns[i + 1]["content"] if i + 1 < len(turns) and turns[i + 1]["role"] == "assistant" else ""
        out.append(f"user: {turn['content']}\nassistant: {answer}".strip())
    return out


def principal(project_name: str = PROJECT) -> Any:
    """The bench user's principal on project ``project_name`` of the bench account, every scope."""
    from accounts.keys import principal_for
    from accounts.models import ALL_SCOPES, Project, User

    tenant = common.bench_tenant(project_name)
    project = Project.objects.get(pk=tenant.project_id)
    user = User.objects.get(email=common.BENCH_EMAIL)
    found = principal_for(user=user, project=project, api_key=None, scopes=frozenset(ALL_SCOPES))
    assert found is not None
    return found


def load(who: Any, qs: Sequence[Question]) -> None:
    """Upload every question's haystack not loaded yet, both paths, and embed what lacks a vector."""
    from memories.remember import memory_remember_batch
    from transcripts import services
    from transcripts.models import Session

    started = time.perf_counter()
    for n, q in enumerate(qs, start=1):
        client = f"lme-{q.qid}"
        if Session.objects.filter(project=who.project, client=client).exists():
            continue
        records: list[dict[str, Any]] = []
        for sid, when, turns in q.sessions:
            services.session_upsert(principal=who, client=client, session_id=sid,
                                    payload={"title": sid, "started_at": when.isoformat()})  # fmt: skip
            items = [{"position": i, "role": t["role"], "content": t["content"][:100_000] or ".",
                      "occurred_at": when.isoformat()} for i, t in enumerate(turns)]  # fmt: skip
            for start in range(0, len(items), 500):
                services.session_add_turns(principal=who, client=client, session_id=sid,
                                           payload={"turns": items[start : start + 500]})  # fmt: skip
            records += [{"content": text[:100_000], "workspace": q.qid, "source_id": sid, "position": i,
                         "occurred_at": when.isoformat()} for i, text in enumerate(pairs(turns))]  # fmt: skip
        for start in range(0, len(records), 500):
            memory_remember_batch(principal=who, payload={"records": records[start : start + 500]})
        embed(who, client, q.qid)
        log(f"loaded {n}/{len(qs)} ({time.perf_counter() - started:.0f} s)")


def embed(who: Any, client: str, workspace: str) -> None:
    """The shipped backend's vectors for one question's records and turns (what the worker does)."""
    from bench import retrieval
    from memories.embeddings import get_backend
    from memories.models import Memory
    from transcripts import indexing
    from transcripts.models import Session

    backend = get_backend("use")
    pending = Memory.objects.filter(project=who.project, workspace__name=workspace).exclude(
        embedding_model=backend.model_id
    )
    ids = [str(i) for i in pending.values_list("id", flat=True)]
    if ids:
        retrieval.fill_vectors(ids, backend)
    for session_id in Session.objects.filter(project=who.project, client=client).values_list("pk", flat=True):
        indexing.embed_pending(session_id, backend=backend, batch=128)


def ranked_sessions(ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ids))


Asker = Callable[[Any, Question], list[str]]


TURNS = 10
_turns: dict[str, list[str]] = {}  # question id -> the session of each turn by_sessions got


def by_sessions(who: Any, q: Question) -> list[str]:
    from transcripts import selectors

    payload = {"query": q.text, "limit": LIMIT, "context": 0, "client": f"lme-{q.qid}", "now": q.asked_at.isoformat()}
    answer = selectors.session_search(principal=who, payload=payload)
    _turns[q.qid] = [r["session"]["session_id"] for r in answer["results"]]
    return ranked_sessions(_turns[q.qid])


def by_session_turns(who: Any, q: Question) -> list[str]:
    """The sessions of the first ``TURNS`` turns ``by_sessions`` got (what a ``search_sessions``
    of limit 10 shows an agent), scored over all of them (``TURNS`` places)."""
    return ranked_sessions(_turns[q.qid][:TURNS])


def by_records(who: Any, q: Question, diversify: bool = False, rerank: bool = False) -> list[str]:
    from memories import selectors

    payload = {"query": q.text, "workspace": q.qid, "limit": LIMIT, "now": q.asked_at.isoformat(),
               "diversify": diversify, "rerank": rerank}  # fmt: skip
    answer = selectors.memory_search(principal=who, payload=payload)
    return ranked_sessions([str(r["source_id"]) for r in answer["results"]])


def by_records_spread(who: Any, q: Question) -> list[str]:
    """The records path with ``diversify: true`` (what ``recall_context`` always does)."""
    return by_records(who, q, diversify=True)


def by_records_reranked(who: Any, q: Question) -> list[str]:
    """The records path with ``rerank: true`` (the cross-encoder's second stage)."""
    return by_records(who, q, rerank=True)


def by_records_spread_reranked(who: Any, q: Question) -> list[str]:
    return by_records(who, q, diversify=True, rerank=True)


def bm25(unit: str) -> Asker:
    def ask(who: Any, q: Question) -> list[str]:
        if unit == "sessions":
            docs = [(sid, " ".join(t["content"] for t in turns)) for sid, _, turns in q.sessions]
        else:
            docs = [(sid, text) for sid, _, turns in q.sessions for text in pairs(turns)]
        index = common.BM25([text for _, text in docs])
        return ranked_sessions([docs[i][0] for i in common.top_k(index.scores(q.text), LIMIT, only_positive=True)])

    return ask


def score(qs: Sequence[Question], rankings: dict[str, list[str]], k: int = K) -> dict[str, dict[str, float]]:
    """R_any@k and R_all@k overall and per question type."""
    groups: dict[str, list[tuple[bool, bool]]] = collections.defaultdict(list)
    for q in qs:
        top = set(rankings[q.qid][:k])
        hit = (bool(top & q.evidence), q.evidence <= top)
        groups["all"].append(hit)
        groups[q.kind].append(hit)
    return {g: {"n": len(v), "any": sum(a for a, _ in v) / len(v), "all": sum(b for _, b in v) / len(v)}
            for g, v in groups.items()}  # fmt: skip


def apply_variant(spec: str) -> dict[str, Any]:
    """Set each ``module.CONSTANT=value`` of ``spec`` (comma-separated; values parsed as JSON)."""
    import importlib

    applied: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, raw = item.partition("=")
        module_name, _, constant = name.rpartition(".")
        module = importlib.import_module(module_name)
        if not hasattr(module, constant):
            raise SystemExit(f"{module_name} has no {constant}")
        setattr(module, constant, json.loads(raw))
        applied[name] = json.loads(raw)
    return applied


def misses(qs: Sequence[Question], label: str, rankings: dict[str, list[str]]) -> None:
    """Each question ``label`` misses (not every evidence session in the top ``K``), with the
    place of each evidence session (None: not in the first ``LIMIT`` results)."""
    for q in qs:
        ranking = rankings[q.qid]
        if q.evidence <= set(ranking[:K]):
            continue
        places = sorted((ranking.index(s) + 1 if s in ranking else None for s in q.evidence), key=lambda p: p or 999)
        print(f"  {label} miss {q.qid} [{q.kind}] evidence at {places}: {q.text[:110]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=None, help="the first N questions only")
    common.add_data_dir(parser, common.ROOT / "var" / "bench-lme")
    parser.add_argument("--out", default=str(common.OUT_DIR / "lme_retrieval.json"))
    parser.add_argument("--variant", default="", help="module.CONSTANT=value,... set for this run (A/B)")
    parser.add_argument("--misses", action="store_true", help="print each question an MMW path misses")
    args = parser.parse_args()
    common.setup_django(Path(args.data_dir))
    variant = apply_variant(args.variant)
    who = principal()
    qs = questions(args.questions)
    load(who, qs)
    asked = [q for q in qs if q.evidence and not q.qid.endswith("_abs")]
    askers: dict[str, Asker] = {"MMW sessions": by_sessions, f"MMW sessions {TURNS} turns": by_session_turns,
                                "MMW records": by_records,
                                "MMW records diversify": by_records_spread,
                                "MMW records rerank": by_records_reranked,
                                "MMW records diversify rerank": by_records_spread_reranked,
                                "BM25 sessions": bm25("sessions"), "BM25 records": bm25("records")}  # fmt: skip
    results: dict[str, Any] = {}
    for label, ask in askers.items():
        started = time.perf_counter()
        rankings = {q.qid: ask(who, q) for q in asked}
        if args.misses and label.startswith("MMW") and not label.endswith(" turns"):
            misses(asked, label, rankings)
        results[label] = score(asked, rankings, TURNS if label.endswith(" turns") else K)
        results[label]["seconds"] = round(time.perf_counter() - started, 1)
        log(f"{label}: {results[label]['all']} ({results[label]['seconds']} s)")
    kinds = ["all", *sorted({q.kind for q in asked})]
    header = ["question type (n)", *[f"{label} any / all" for label in askers]]
    rows = [[f"{k} ({results['MMW sessions'][k]['n']})",
             *[f"{results[label][k]['any']:.3f} / {results[label][k]['all']:.3f}" for label in askers]]
            for k in kinds]  # fmt: skip
    print(markdown_table(header, rows))
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({**results, "variant": variant}, indent=2))


if __name__ == "__main__":
    main()
