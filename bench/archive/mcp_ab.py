"""Issue #19's MCP goal, before and after, in one run: calls/s and CPU per call of each side.

    MMW_DATA_DIR=$PWD/var/bench .venv/bin/python bench/archive/mcp_ab.py --before /tmp/before \
        [--seconds 15] [--rounds 2]

``--before`` is another checkout (``git archive <rev> | tar -x -C /tmp/before``, with a ``.venv``
link), as for ``bench/goals_ab.py``. Each round serves ``bench/goals.py``'s 100k project with the
before code, then with this checkout's (``manage.py serve --no-worker``, one at a time), and
runs ``bench.goals.measure_mcp`` against it: 8 official SDK clients in this process, each looping
over search, get_memory, list_workspaces and remember. Besides calls/s it reads the CPU seconds
the server's uvicorn process, the bench cluster's PostgreSQL processes and this process (the
clients) used during the load (``common.CpuMeter``), per call: the two cores are shared by all
three. A benchmark, not a test.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import common, goals
from bench.common import log, markdown_table


def one_side(root: Path, data_dir: Path, tenant: common.Tenant, ids: list[str], seconds: float) -> dict[str, Any]:
    with (
        common.Server(data_dir, "use", "mcp-ab", root=root) as server,
        common.CpuMeter(server.uvicorn_pid(), data_dir) as cpu,
    ):
        result = asyncio.run(goals.measure_mcp(server.url, tenant.api_key, ids, 8, seconds))
    used = cpu.per_call_ms(result["calls"])
    return {**result, "server_ms": used["server"], "postgres_ms": used["postgres"], "client_ms": used["generator"]}


def main() -> None:
    parser = goals.ab_parser(__doc__ or "")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    data_dir = args.data_dir.resolve()
    tenant, ids = goals.loaded_project(data_dir, args.size)
    load = os.getloadavg()[0]
    rows = []
    for round_ in range(1, args.rounds + 1):
        for name, root in (("before", args.before.resolve()), ("after", common.ROOT)):
            side = one_side(root, data_dir, tenant, ids, args.seconds)
            log(f"round {round_} {name}: {side['calls_per_s']} calls/s")
            rows.append(
                [
                    round_,
                    name,
                    f"{side['calls_per_s']} ({side['errors']} errors)",
                    f"{side['server_ms']:.1f}",
                    f"{side['postgres_ms']:.1f}",
                    f"{side['client_ms']:.1f}",
                ]
            )
    print(
        f"`bench/archive/mcp_ab.py --before {args.before} --seconds {args.seconds} --rounds {args.rounds}`, "
        f"{len(ids)} ids of goals-{args.size}, load average {load:.2f}–{os.getloadavg()[0]:.2f}, "
        f"after = git {common.machine_notes()['git']}"
    )
    header = ["round", "code", "calls/s", "server CPU ms/call", "PostgreSQL CPU ms/call", "clients CPU ms/call"]
    print(markdown_table(header, rows))


if __name__ == "__main__":
    main()
