"""Running the sync ORM code of services off the event loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections

P = ParamSpec("P")
T = TypeVar("T")


async def run_sync(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn`` in a worker thread, never on the event loop.

    ``thread_sensitive=False`` lets calls run in parallel (services hold no thread-bound state;
    each opens its own transactions). MCP requests bypass Django's ``request_started`` /
    ``request_finished`` signals, which is where Django normally retires stale or expired
    connections, so that is done here, in the worker thread, around every call.
    """

    def call() -> T:
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        finally:
            close_old_connections()

    return await sync_to_async(call, thread_sensitive=False)()
