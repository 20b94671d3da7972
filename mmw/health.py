"""Dependency checks for ``/healthz``, each bounded by a deadline.

Each check runs in a small thread pool of its own, never on the event loop, and at most one of
each kind runs at a time (single flight): a database that hangs (SIGSTOP, network black hole)
holds one thread, not one per health probe, and every probe still answers by its deadline.
The database check borrows a pooled connection like any request (no new connection per call
when the pool has one) and gives it back.

With read replicas (``DATABASE_REPLICA_URLS``) the body also says what each replica said of itself
(``replicas``: ``mmw.replicas.describe``), from the state the router already keeps: a replica is
asked again only when that state is older than ``MMW_REPLICA_CHECK_SECONDS`` (a failed one:
``MMW_REPLICA_RETRY_SECONDS``), as a read would ask it, so probes add no query beyond that
cadence. A replica down never makes ``/healthz`` a 503: reads then go to the primary.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import redis
from django.conf import settings
from django.db import close_old_connections, connection

from mmw import replicas

DEADLINE_SECONDS = 0.8
OK, DOWN = "ok", "unreachable"

_EXECUTOR = ThreadPoolExecutor(max_workers=4, thread_name_prefix="healthz")
_LOCK = threading.Lock()
_IN_FLIGHT: dict[str, Future[None]] = {}
_REDIS: dict[str, redis.Redis] = {}


def check_database() -> None:
    """Raise unless the database answers ``SELECT 1``."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    finally:
        close_old_connections()  # back to the pool (CONN_MAX_AGE is 0 with the pool)


def check_broker() -> None:
    """Raise unless the Celery broker is reachable (Redis: PING; filesystem: its folder)."""
    url = settings.CELERY_BROKER_URL
    scheme = urlsplit(url).scheme
    if scheme in ("redis", "rediss", "unix", "redis+socket"):
        _redis_client(url).ping()
    elif scheme == "filesystem":
        options: dict[str, Any] = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", {})
        folder = options.get("data_folder_in", "")
        if not folder or not os.access(folder, os.W_OK):
            raise OSError(f"broker folder {folder!r} is not writable")
    # Other transports (amqp, ...) are not checked here.


def _redis_client(url: str) -> redis.Redis:
    """One client per URL (it keeps its own connection pool), with short socket timeouts."""
    client = _REDIS.get(url)
    if client is None:
        # kombu spells a Unix socket redis+socket:///path (the embedded broker); redis-py unix:///path
        plain = "unix://" + url.removeprefix("redis+socket://") if url.startswith("redis+socket://") else url
        client = redis.Redis.from_url(plain, socket_timeout=DEADLINE_SECONDS, socket_connect_timeout=DEADLINE_SECONDS)
        _REDIS[url] = client
    return client


def refresh_replicas() -> None:
    """Ask each replica whose known state is older than the router's cadence (``replicas.state``)."""
    try:
        for alias in replicas.aliases():
            replicas.state(alias)
    finally:
        close_old_connections()


CHECKS: dict[str, Callable[[], None]] = {"database": check_database, "broker": check_broker}
# Run like a check (single flight, the same deadline) but never decide the status.
_INFORMATIVE: dict[str, Callable[[], None]] = {"replicas": refresh_replicas}


def _start(name: str) -> Future[None]:
    """The running check ``name``, started now unless one is already in flight."""
    with _LOCK:
        future = _IN_FLIGHT.get(name)
        if future is None or future.done():
            future = _EXECUTOR.submit(CHECKS.get(name) or _INFORMATIVE[name])
            _IN_FLIGHT[name] = future
        return future


async def _outcome(name: str, deadline: float) -> str:
    try:
        await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(_start(name))), deadline)
    except Exception:  # noqa: BLE001 - any failure or timeout means "unreachable"
        return DOWN
    return OK


async def report(deadline: float = DEADLINE_SECONDS) -> dict[str, Any]:
    """``{"status": "ok"|"unavailable", "database": "ok"|"unreachable", "broker": ...}`` within
    ``deadline``, and ``replicas`` (each alias's ``replicas.describe``) when replicas are configured."""
    names = list(CHECKS)
    standbys = replicas.aliases()
    extra = ["replicas"] if standbys else []
    outcomes = await asyncio.gather(*(_outcome(name, deadline) for name in names + extra))
    body: dict[str, Any] = dict(zip(names, outcomes[: len(names)], strict=True))
    status = "ok" if all(o == OK for o in outcomes[: len(names)]) else "unavailable"
    if standbys:
        body["replicas"] = {alias: replicas.describe(replicas.peek(alias)) for alias in standbys}
    return {"status": status, **body}
