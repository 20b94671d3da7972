"""Time to searchable through the worker's own code: LongMemEval-S turns and records in the bench
database, embedded by the functions the embedding tasks call, per wall-second and per CPU-second.

    MMW_DATA_DIR=$PWD/var/bench-lme nice -n 15 .venv/bin/python -m bench.lme_embed_worker \
        [--questions 2] [--rounds 2] [--processes 2]

The first ``--questions`` haystacks of LongMemEval-S dev are loaded as ``bench.lme_retrieval``
loads them (kept in the data directory between runs; the two benches share it). Each round clears
their vectors and embeds them again with ``transcripts.indexing.embed_pending`` (one call per
session, batches of ``EMBED_BATCH``: the ``embed_session_turns`` task) and
``memories.vectors.embed_records`` (``EMBED_BATCH`` records per call: the ``embed_memories`` task),
in this process with one BLAS thread; with ``--processes N``, the turns also shared out by session
among N forked worker processes running at once (items per wall-second of them all, first start
to last end). USE is measured two ways in the same run: ``package`` (the package's own ``encode``,
as before issue #37's change) and ``shipped`` (``memories.embeddings.use_forward``, its word cache
emptied before each round). Wall time includes the database (reads of the texts, the vectors'
``UPDATE``) and other jobs' load; CPU time is the bench processes' (``time.process_time``), and
separately the bench database's PostgreSQL processes' (``/proc``, best round, background work
included).
Best of ``--rounds``. A benchmark, not a test.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, lme_retrieval
from bench.common import log, markdown_table

CORES = 2
MODES = ("package", "shipped")


def clear(who: Any, qids: list[str]) -> None:
    from memories.models import Memory
    from transcripts.models import Turn

    clients = [f"lme-{q}" for q in qids]
    Turn.objects.filter(session__project=who.project, session__client__in=clients).update(
        embedding=None, embedding_model=None
    )
    Memory.objects.filter(project=who.project, workspace__name__in=qids).update(embedding=None, embedding_model=None)


def embed_turns(who: Any, qids: list[str]) -> int:
    from transcripts import indexing
    from transcripts.models import Session

    sessions = Session.objects.filter(project=who.project, client__in=[f"lme-{q}" for q in qids])
    return sum(indexing.embed_pending(pk) for pk in sessions.values_list("pk", flat=True))


def embed_records(who: Any, qids: list[str]) -> int:
    from memories import tasks, vectors
    from memories.models import Memory

    ids = [
        str(i)
        for i in Memory.objects.filter(project=who.project, workspace__name__in=qids).values_list("id", flat=True)
    ]
    return sum(vectors.embed_records(ids[i : i + tasks.EMBED_BATCH]) for i in range(0, len(ids), tasks.EMBED_BATCH))


def postgres_cpu() -> float:
    """CPU seconds spent so far by the bench database's PostgreSQL processes (``MMW_DATA_DIR``'s)."""
    from django.conf import settings

    return sum(common.cpu_by_pid(common.postgres_pids(Path(settings.DATA_DIR))).values())


def measure(who: Any, qids: list[str], rounds: int) -> list[list[str]]:
    """Both paths, alternating round by round so that a change in load hits both alike."""
    from memories import vectors

    backend: Any = vectors.current()
    backend.embed_documents(["warm up"])
    fast = getattr(backend, "_fast", None)
    modes = MODES if fast is not None else ("package",)  # (a tree without use_forward)
    rows = []
    for what, run in (("turns", embed_turns), ("records", embed_records)):
        best = {mode: (float("inf"), float("inf"), float("inf")) for mode in modes}
        count = 0
        for _ in range(rounds):
            for mode in modes:
                clear(who, qids)
                if fast is not None:
                    fast._words.clear()
                    backend._fast = None if mode == "package" else fast
                wall, cpu, pg = time.perf_counter(), time.process_time(), postgres_cpu()
                count = run(who, qids)
                wall, cpu, pg = time.perf_counter() - wall, time.process_time() - cpu, postgres_cpu() - pg
                best[mode] = (min(best[mode][0], wall), min(best[mode][1], cpu), min(best[mode][2], pg))
                if fast is not None:
                    backend._fast = fast
        for mode in modes:
            wall, cpu, pg = best[mode]
            log(f"{mode} {what}: {count} in {wall:.2f} s wall, {cpu:.2f} s CPU, PostgreSQL {pg:.2f} s CPU")
            rows.append([what, mode, str(count), f"{count / wall:.0f}", f"{count / cpu:.0f}",
                         f"{CORES * count / cpu:.0f}", f"{1000 * pg / count:.2f}",
                         f"{CORES * count / (cpu + pg):.0f}"])  # fmt: skip
    return rows


def _child(mode: str, session_ids: list[Any], barrier: Any, results: Any, release: Any) -> None:
    """One worker process (forked with the model loaded): its share of the sessions' turns. It keeps
    its database connection (and so its PostgreSQL backend, whose CPU is counted) until released."""
    from memories import vectors
    from transcripts import indexing

    backend: Any = vectors.current()
    fast = getattr(backend, "_fast", None)
    if fast is not None:
        fast._words.clear()
        backend._fast = None if mode == "package" else fast
    barrier.wait()
    wall, cpu = time.perf_counter(), time.process_time()
    count = sum(indexing.embed_pending(pk) for pk in session_ids)
    results.put((count, wall, time.perf_counter(), time.process_time() - cpu))
    release.wait()


def in_processes(who: Any, qids: list[str], processes: int, rounds: int) -> list[list[str]]:
    """The turns again, shared out by session among ``processes`` forked workers running at once:
    items per wall-second of them all (first start to last end)."""
    import multiprocessing

    from django.db import connections

    from memories import vectors
    from transcripts.models import Session

    vectors.current().embed_documents(["warm up"])  # loaded before the fork, as a warmed worker
    ids = sorted(
        Session.objects.filter(project=who.project, client__in=[f"lme-{q}" for q in qids]).values_list("pk", flat=True)
    )
    fork = multiprocessing.get_context("fork")
    modes = MODES if getattr(vectors.current(), "_fast", None) is not None else ("package",)
    rows = []
    for mode in modes:
        best, count, cpu_total, pg_total = 0.0, 0, 0.0, 0.0
        for _ in range(rounds):
            clear(who, qids)
            connections.close_all()  # each child opens its own
            barrier, results, release = fork.Barrier(processes), fork.Queue(), fork.Event()
            args = [(mode, ids[k::processes], barrier, results, release) for k in range(processes)]
            children = [fork.Process(target=_child, args=a) for a in args]
            time.sleep(0.5)  # this process's backend, just closed, has ended (its CPU would be lost)
            pg = postgres_cpu()
            for child in children:
                child.start()
            done = [results.get() for _ in children]
            pg = postgres_cpu() - pg  # the children's backends, started in the window, count whole
            release.set()
            for child in children:
                child.join()
            count = sum(d[0] for d in done)
            rate = count / (max(d[2] for d in done) - min(d[1] for d in done))
            if rate > best:
                best, cpu_total, pg_total = rate, sum(d[3] for d in done), pg
        log(f"{mode} turns in {processes} processes: {best:.0f} per wall-second")
        rows.append([f"turns, {processes} processes at once", mode, str(count), f"{best:.0f}",
                     f"{count / cpu_total:.0f}", "", f"{1000 * pg_total / count:.2f}",
                     f"{CORES * count / (cpu_total + pg_total):.0f}"])  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--processes", type=int, default=0, help="also: the turns in N worker processes at once")
    common.add_data_dir(parser, "var/bench-lme")
    args = parser.parse_args()
    common.setup_django(args.data_dir.resolve())
    from memories import vectors

    if vectors.current().model_id != "use-multilingual-v3@512":
        raise SystemExit("this bench measures the shipped backend, use")
    qs = lme_retrieval.questions(args.questions)
    who = lme_retrieval.principal()
    lme_retrieval.load(who, qs)
    qids = [q.qid for q in qs]
    log(f"load average {os.getloadavg()[0]:.1f}")
    rows = measure(who, qids, args.rounds)
    if args.processes:
        rows += in_processes(who, qids, args.processes, args.rounds)
    log(f"load average {os.getloadavg()[0]:.1f}")
    print(markdown_table(["items", "USE path", "embedded", "per wall-second", "per CPU-second",
                          f"CPU ceiling on {CORES} cores", "PostgreSQL CPU ms per item",
                          f"ceiling on {CORES} cores with PostgreSQL's CPU"], rows))  # fmt: skip


if __name__ == "__main__":
    main()
