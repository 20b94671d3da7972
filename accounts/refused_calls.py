"""Refused calls with one of our keys, counted for support without a write per call.

The 401 path must stay cheap under a flood of bad keys, and storage must not grow with it:

- Only a refusal that names one of our keys is counted (``accounts.keys`` calls ``note`` with the
  key: revoked, expired, its account pending deletion, its project deleted, its holder without
  access, or its prefix with the wrong secret). A key that is no key of ours leaves nothing.
- ``note`` adds to a counter in this process's memory; at most every
  ``MMW_REFUSED_CALLS_FLUSH_SECONDS`` (default 10) — or when ``MAX_PENDING`` distinct pairs are
  waiting — one statement adds the counts to ``RefusedCall`` (one row per key and reason, upserted),
  so a flood costs one write per process per interval, and the table holds at most
  keys × reasons rows.
- A failed write is logged and its counts are dropped (a 401 never becomes a 500); counts not yet
  written when a process stops are lost. These are support's figures, not an audit trail.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone

from accounts.models import ApiKey, RefusedCall
from accounts.refusals import Refusal

logger = logging.getLogger(__name__)

MAX_PENDING = 1_000


@dataclass
class _Count:
    count: int
    first: dt.datetime
    last: dt.datetime


_lock = threading.Lock()
_pending: dict[tuple[int, int, str], _Count] = {}  # (key id, account id, reason) -> count
_flushed_at = time.monotonic()


def _interval() -> float:
    return float(settings.MMW_REFUSED_CALLS_FLUSH_SECONDS)


def note(key: ApiKey, refusal: Refusal) -> None:
    """Count one refused call of ``key``; write the counts when the interval has passed."""
    now = timezone.now()
    with _lock:
        entry = _pending.setdefault((key.pk, key.account_id, refusal.value), _Count(0, now, now))
        entry.count += 1
        entry.last = now
        due = time.monotonic() - _flushed_at >= _interval() or len(_pending) >= MAX_PENDING
    if due:
        flush()


def flush() -> int:
    """Write every waiting count in one statement; return how many (key, reason) pairs."""
    global _flushed_at
    with _lock:
        batch = list(_pending.items())
        _pending.clear()
        _flushed_at = time.monotonic()
    if not batch:
        return 0
    rows: list[int | str | dt.datetime] = []
    for (key_id, account_id, reason), counted in batch:
        rows += [key_id, account_id, reason, counted.count, counted.first, counted.last]
    values = ", ".join(["(%s::bigint, %s::bigint, %s, %s::bigint, %s::timestamptz, %s::timestamptz)"] * len(batch))
    table = RefusedCall._meta.db_table
    sql = (
        f"INSERT INTO {table} (api_key_id, account_id, reason, count, first_at, last_at) "  # noqa: S608 - our names
        f"SELECT v.key, v.account, v.reason, v.n, v.first_at, v.last_at "
        f"FROM (VALUES {values}) AS v(key, account, reason, n, first_at, last_at) "
        f"JOIN {ApiKey._meta.db_table} k ON k.id = v.key "  # a key deleted meanwhile is skipped
        f"ON CONFLICT (api_key_id, reason) DO UPDATE SET count = {table}.count + EXCLUDED.count, "
        f"last_at = GREATEST({table}.last_at, EXCLUDED.last_at)"
    )
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql, rows)
    except DatabaseError:
        logger.warning("refused-call counts not written (%d pairs dropped)", len(batch), exc_info=True)
    return len(batch)
