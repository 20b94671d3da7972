"""Running the sync ORM code of services off the event loop, on the MCP endpoint's own threads."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

from mmw.boundary import ServiceOverloaded

P = ParamSpec("P")
T = TypeVar("T")

# Not the event loop's default executor (cpu_count + 4 threads): Django itself needs that one for
# log_response and response_for_exception, and MCP calls waiting there for a pooled connection
# starved it (docs/reliability.md "Overload and errors"). Twice the pool: enough to keep every
# connection busy while others wait for theirs, few enough that a burst queues here, bounded.
THREADS = max(4, 2 * (settings.DB_POOL_MAX_SIZE or 4))
_EXECUTOR = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="mcp-call")
# A call that waited this long for a thread is shed (503 + Retry-After) instead of started late.
QUEUE_BUDGET_SECONDS = 2 * settings.DB_POOL_TIMEOUT


async def run_sync(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn`` in one of the endpoint's worker threads, never on the event loop.

    ``thread_sensitive=False`` lets calls run in parallel (services hold no thread-bound state;
    each opens its own transactions). MCP requests bypass Django's ``request_started`` /
    ``request_finished`` signals, which is where Django normally retires stale or expired
    connections, so that is done here, in the worker thread, around every call: a pooled
    connection never outlives the call that borrowed it. Raises ``ServiceOverloaded`` when the
    call could not start within ``QUEUE_BUDGET_SECONDS``.
    """
    queued_at = time.monotonic()

    def call() -> T:
        if time.monotonic() - queued_at > QUEUE_BUDGET_SECONDS:
            raise ServiceOverloaded(f"no worker thread free within {QUEUE_BUDGET_SECONDS:.1f} s")
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return await sync_to_async(call, thread_sensitive=False, executor=_EXECUTOR)()
