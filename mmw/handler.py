"""Django's ASGI handler, with database connections given back as soon as a view returns.

Why (docs/reliability.md "Overload and errors"): Django returns a request's connection to the
pool only at ``request_finished``, after the response has travelled back through the async
middleware chain and been sent. On the way, for every answer >= 400, Django awaits
``log_response`` on the event loop's *default executor* (``thread_sensitive=False``), a pool of
``cpu_count + 4`` threads. Under a burst those threads were all busy waiting for a pooled
connection, while every connection was held by a finished view parked behind them: a cycle that
only the pool's timeout broke, ten seconds at a time. Giving the connection back in the view's
own thread, the moment the view returns, means no request holds a connection while it waits.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.core.handlers.asgi import ASGIHandler
from django.db import connections


def release_connections() -> None:
    """Return this thread's connections that Django would retire at ``request_finished``.

    Same rule as ``close_old_connections`` (connections past ``CONN_MAX_AGE``, which is 0 with the
    pool, so a pooled connection goes back to the pool); never inside a transaction.
    """
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close_if_unusable_or_obsolete()


class PooledASGIHandler(ASGIHandler):
    """``ASGIHandler`` whose synchronous views release their connections in their own thread."""

    def make_view_atomic(self, view: Callable[..., Any]) -> Callable[..., Any]:
        view = super().make_view_atomic(view)
        if iscoroutinefunction(view):
            return view

        @functools.wraps(view)
        def releasing(request: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return view(request, *args, **kwargs)
            finally:
                release_connections()

        return releasing
