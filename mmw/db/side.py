"""A short-lived connection of its own, in autocommit, for a fact that must be seen by others
while the caller's own connection is inside a long transaction — an import's progress, written
while the import's rows are still uncommitted.

Contract: ``execute(sql, params)`` opens a connection configured as Django's (same server,
database, user, adapters), runs one statement in autocommit, and closes it; it never joins the
caller's transaction and holds no lock after it returns. It is for rare writes (at most about one
a second), not for hot paths. Errors are swallowed and logged once per call: a progress figure
that could not be written must never fail the work it describes. Rows the caller's transaction
has not committed are invisible to it (an ``UPDATE`` of one changes nothing)."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections

logger = logging.getLogger(__name__)


def execute(sql: str, params: list[Any], alias: str = DEFAULT_DB_ALIAS) -> int:
    """Run one statement on a connection of its own; the number of rows it changed, or -1 when
    the database could not be reached (logged)."""
    wrapper = connections[alias]
    settings = {k: v for k, v in wrapper.get_connection_params().items() if k != "cursor_factory"}
    try:
        with psycopg.connect(**settings, autocommit=True) as conn:
            return conn.execute(sql, params).rowcount
    except psycopg.Error as exc:
        logger.warning("side statement failed: %s", exc.__class__.__name__)
        return -1
