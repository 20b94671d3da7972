"""A burst of concurrent mixed calls against a served MMW: half REST, half MCP, all at once.

Usage::

    .venv/bin/python bench/burst.py --calls 500        # serves its own MMW (var/bench-burst)
    .venv/bin/python bench/burst.py --url http://127.0.0.1:8000 --key mmw_... --calls 500

With no ``--url`` it starts ``manage.py serve --no-worker`` (pool on, max 8) on a free loopback
port over a private data directory, with a key on an unlimited plan (the Free plan's 60 calls a
minute would answer most of a burst with 429, which is not what is measured here).

Each call is one of remember / search / get, over REST (``/api/v1/...``) or MCP (a plain
JSON-RPC ``tools/call`` POST to ``/mcp``, stateless JSON mode, as the official client sends it).
Prints one JSON object: counts by outcome (``rest 201``, ``mcp 200``, ``mcp 200 isError``,
``rest 503 retry-after`` ...), latency p50 / p95 / max in ms, and the first body of each
failing outcome. Bounded: ``--calls`` ≤ 2,000, every call times out after ``--timeout`` s, and
only loopback URLs are accepted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = ROOT / "var" / "bench-burst"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.burst import run_burst  # noqa: E402  (the client, shared with tests/mmw/test_overload.py)


def served_burst(data_dir: Path, calls: int, timeout: float) -> dict[str, Any]:
    """Start a private MMW (bench.common.Server), give it an unlimited key, and burst it."""
    from bench import common

    common.setup_django(data_dir)
    tenant = common.bench_tenant("burst")
    with common.Server(data_dir, "use", "burst") as server:
        return asyncio.run(run_burst(server.url, tenant.api_key, calls, timeout)).summary()


def main() -> None:
    from bench import common

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running MMW on loopback (default: serve one)")
    parser.add_argument("--key", help="an API key for --url")
    common.add_data_dir(parser, DEFAULT_DATA_DIR)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()
    if args.url:
        if not args.key:
            parser.error("--url needs --key")
        result = asyncio.run(run_burst(args.url, args.key, args.calls, args.timeout)).summary()
    else:
        result = served_burst(args.data_dir, args.calls, args.timeout)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
