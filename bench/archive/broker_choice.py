"""Measure embedded-broker candidates for ``manage.py serve`` (docs/reliability.md).

For each redis-compatible server binary: start time (exec to first PING answer on a Unix
socket, AOF on), Celery publish and publish+consume throughput with a real prefork worker,
a burst of concurrent publishers while the worker consumes, and whether queued messages survive
a SIGKILL of the server (AOF ``appendfsync everysec``). ``filesystem`` runs the same burst on
kombu's filesystem transport (the previous default) for comparison.

    .venv/bin/python bench/archive/broker_choice.py NAME=/path/to/redis-server ... [filesystem]

The worker imports this module (``-A bench.archive.broker_choice``); BENCH_BROKER_URL and
BENCH_COUNTER_URL tell it where to consume and where to count.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis
from celery import Celery

ROOT = Path(__file__).resolve().parents[2]
N_TASKS = 2000
BURST_THREADS = 200
BURST_PER_THREAD = 5
STARTED: list[subprocess.Popen[bytes]] = []

app = Celery("bench_broker")
app.conf["broker_url"] = os.environ.get("BENCH_BROKER_URL", "memory://")  # the stubs make the attribute read-only
app.conf.task_acks_late = True
app.conf.worker_prefetch_multiplier = 1
app.conf.task_ignore_result = True
if os.environ.get("BENCH_FS_DIR"):
    _fs = os.environ["BENCH_FS_DIR"]
    app.conf.broker_transport_options = {
        "data_folder_in": _fs + "/q",
        "data_folder_out": _fs + "/q",
        "processed_folder": _fs + "/p",
        "control_folder": _fs + "/c",
        "store_processed": False,
    }


@app.task(name="bench.incr")
def incr() -> None:
    """Count one delivery in the counter server."""
    redis.Redis.from_url(os.environ["BENCH_COUNTER_URL"]).incr("done")


def start_server(binary: str, data: Path) -> tuple[subprocess.Popen[bytes], float]:
    data.mkdir(parents=True, exist_ok=True)
    sock = data / "redis.sock"
    started = time.monotonic()
    proc = subprocess.Popen(
        [binary, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700", "--dir", str(data),
         "--appendonly", "yes", "--appendfsync", "everysec", "--save", ""],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    STARTED.append(proc)
    client = redis.Redis(unix_socket_path=str(sock))
    while True:
        try:
            client.ping()
            return proc, time.monotonic() - started
        except (redis.ConnectionError, FileNotFoundError):
            time.sleep(0.002)


def worker(broker: str, counter: str, extra_env: dict[str, str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "BENCH_BROKER_URL": broker, "BENCH_COUNTER_URL": counter, **extra_env}
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "bench.archive.broker_choice", "worker", "--loglevel=WARNING",
         "--concurrency=2", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=env, stderr=subprocess.PIPE,
    )  # fmt: skip
    STARTED.append(proc)
    return proc


def wait_count(counter: redis.Redis, n: int, timeout: float, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if int(counter.get("done") or 0) >= n:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def burst(n_threads: int, per_thread: int) -> None:
    def one() -> None:
        for _ in range(per_thread):
            incr.apply_async()

    threads = [threading.Thread(target=one) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def measure(name: str, binary: str | None, tmp: Path) -> None:
    try:
        _measure(name, binary, tmp)
    finally:  # never leave a server behind
        for proc in STARTED:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _measure(name: str, binary: str | None, tmp: Path) -> None:
    counter_proc, _ = start_server(binary or shutil.which("redis-server") or "redis-server", tmp / "counter")
    counter = redis.Redis(unix_socket_path=str(tmp / "counter" / "redis.sock"))
    counter_url = f"unix://{tmp / 'counter' / 'redis.sock'}"
    extra: dict[str, str] = {}
    server = None
    if binary is None:
        fs = tmp / "fs"
        for sub in ("q", "p", "c"):
            (fs / sub).mkdir(parents=True, exist_ok=True)
        extra = {"BENCH_FS_DIR": str(fs)}
        os.environ["BENCH_FS_DIR"] = str(fs)
        broker = "filesystem://"
        app.conf.broker_transport_options = {
            "data_folder_in": f"{fs}/q", "data_folder_out": f"{fs}/q",
            "processed_folder": f"{fs}/p", "control_folder": f"{fs}/c", "store_processed": False,
        }  # fmt: skip
        start = 0.0
    else:
        server, start = start_server(binary, tmp / name)
        broker = f"redis+socket://{tmp / name / 'redis.sock'}"
    app.conf["broker_url"] = broker
    line = f"{name}: start {start * 1000:.0f} ms"
    if binary is not None:
        t0 = time.monotonic()
        for _ in range(N_TASKS):
            incr.apply_async()
        publish = time.monotonic() - t0
        w = worker(broker, counter_url, extra)
        t1 = time.monotonic()
        ok = wait_count(counter, N_TASKS, 120, w)
        consume = time.monotonic() - t1
        line += f"; publish {N_TASKS / publish:.0f}/s; consume {N_TASKS / consume:.0f}/s ({'all' if ok else 'NOT all'})"
        counter.set("done", 0)
    else:
        w = worker(broker, counter_url, extra)
        time.sleep(3)
    total = BURST_THREADS * BURST_PER_THREAD
    t2 = time.monotonic()
    burst(BURST_THREADS, BURST_PER_THREAD)
    ok = wait_count(counter, total, 120, w)
    got = int(counter.get("done") or 0)
    line += f"; burst {BURST_THREADS}x{BURST_PER_THREAD}: {got}/{total} done in {time.monotonic() - t2:.1f} s"
    line += f", worker {'alive' if w.poll() is None else f'DIED ({w.returncode})'}"
    w.send_signal(signal.SIGTERM)
    try:
        err = w.communicate(timeout=20)[1].decode()
    except subprocess.TimeoutExpired:
        w.kill()
        err = w.communicate()[1].decode()
    if not ok and "Error" in err:
        line += " — " + [x for x in err.splitlines() if "Error" in x][-1][:160]
    if server is not None and binary is not None:
        client = redis.Redis(unix_socket_path=str(tmp / name / "redis.sock"))
        client.delete("celery")
        for _ in range(100):
            incr.apply_async()
        time.sleep(1.5)  # everysec: the AOF is fsynced within a second
        server.kill()
        server.wait()
        server, again = start_server(binary, tmp / name)
        kept = client.llen("celery")
        line += f"; SIGKILL+restart: {kept}/100 queued kept, restart {again * 1000:.0f} ms"
        server.terminate()
        server.wait()
    counter_proc.terminate()
    counter_proc.wait()
    print(line, flush=True)


def main() -> None:
    """Each candidate in a fresh interpreter (a Celery app binds its broker at first use)."""
    if sys.argv[1] == "--one":
        name, _, binary = sys.argv[2].partition("=")
        with tempfile.TemporaryDirectory(prefix="mmw-broker-") as tmp:
            measure(name, binary or None, Path(tmp))
        return
    for arg in sys.argv[1:]:
        subprocess.run([sys.executable, __file__, "--one", arg], cwd=ROOT, check=False, timeout=600)


if __name__ == "__main__":
    main()
