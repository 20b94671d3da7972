"""Read replicas: reads on streaming hot standbys, read-your-writes, a replica skipped when down.

Why (docs/scale.md): search is most of the traffic, and one PostgreSQL serves it all. With
``DATABASE_REPLICA_URLS`` (none by default: nothing here runs, nothing is routed) each URL is a
database alias (``replica1``, ``replica2``, ...) and the read paths run on one of them.

Contract:
- **Only marked reads move.** A selector marked ``@reads`` (search, recall_context, list, get,
  history, workspaces, session search and reads, the ledger's reads, the dashboard's charts)
  picks an alias once, at its entrance, and its queries run there: the ORM's through
  ``ReplicaRouter`` (``db_for_read``), raw SQL through ``current()``. Everything else — every
  write, every read of a service (read-modify-write), key resolution, billing, the cache table,
  the session middleware — stays on the primary, as without replicas. ``db_for_write`` is always
  the primary, even for a row loaded from a replica.
- **Never inside a transaction.** While the primary's connection is in an ``atomic`` block (a
  read inside a write, any test wrapped in a transaction), reads stay on the primary: a replica
  would not see the transaction's own rows. Checked at the entrance and again at each query.
- **Read-your-writes.** A write service marked ``@writes`` records, after its commit, the
  primary's WAL insert position (``pg_current_wal_insert_lsn()``) under its caller (account and
  user: every key and dashboard session of one person in one account) in the shared cache for
  ``MMW_REPLICA_LSN_SECONDS``. A read by that caller uses a replica only once the replica's
  ``pg_last_wal_replay_lsn()`` has passed that position; else the primary. Other callers read
  what the replica has (at most ``MMW_REPLICA_MAX_LAG`` seconds old).
- **A replica that cannot serve is skipped, never a 5xx.** Each replica's state (in recovery,
  replay position, lag) is read at most every ``MMW_REPLICA_CHECK_SECONDS`` per process; one
  that refuses, times out (``connect_timeout`` 2 s) or lags more than ``MMW_REPLICA_MAX_LAG``
  is left out, and one that failed is not tried again for ``MMW_REPLICA_RETRY_SECONDS``. A
  database error raised by a marked read running on a replica runs the read once more on the
  primary; if the replica no longer answers (stopped mid-call), it is marked failed too. An error
  of the primary's then comes from that second run, as without replicas.
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import psycopg
from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, InterfaceError, OperationalError, connections, transaction

logger = logging.getLogger(__name__)

PREFIX = "replica"
# Apps whose reads a marked selector may send to a replica; any other model (billing's state,
# Django's cache table, sessions, OAuth) is read on the primary even inside a marked read.
ROUTED_APPS = frozenset({"memories", "transcripts", "ledger", "accounts", "orgs"})
_CACHE_KEY = "mmw:ryw:{}"

P = ParamSpec("P")
R = TypeVar("R")

_chosen: ContextVar[str | None] = ContextVar("mmw_read_alias", default=None)


def replica_databases(primary: dict[str, Any], urls: list[str], *, pooled: bool) -> dict[str, dict[str, Any]]:
    """Django database settings for each replica URL (``replica1``, ...): Django's own PostgreSQL
    engine (the primary's breaker is for the primary alone), the primary's connection age and
    health checks, ``connect_timeout`` 2 s, a pool like the primary's when it has one, and
    ``TEST["MIRROR"]`` so a test run reads the test database there."""
    import dj_database_url

    found: dict[str, dict[str, Any]] = {}
    for n, url in enumerate(urls, start=1):
        conf: dict[str, Any] = dict(dj_database_url.parse(url, engine="django.db.backends.postgresql"))
        conf["CONN_MAX_AGE"] = primary.get("CONN_MAX_AGE", 0)
        conf["CONN_HEALTH_CHECKS"] = True
        options = dict(conf.get("OPTIONS") or {})
        options.setdefault("connect_timeout", 2)
        pool = (primary.get("OPTIONS") or {}).get("pool")
        if pooled and isinstance(pool, dict):
            options["pool"] = {k: v for k, v in pool.items() if k != "connection_class"}
        conf["OPTIONS"] = options
        conf["TEST"] = {"MIRROR": DEFAULT_DB_ALIAS}
        found[f"{PREFIX}{n}"] = conf
    return found


def aliases() -> list[str]:
    """The configured replicas' aliases, in order (empty without ``DATABASE_REPLICA_URLS``)."""
    return [alias for alias in settings.DATABASES if alias.startswith(PREFIX)]


def current() -> str:
    """The alias a read runs on now: the marked read's replica, else the primary (also whenever
    the primary's connection is inside a transaction)."""
    chosen = _chosen.get()
    if chosen is None or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    return chosen


class ReplicaRouter:
    """``DATABASE_ROUTERS`` when replicas are configured: reads of ``ROUTED_APPS`` inside a marked
    read go to its replica; every write, and every other read, to the primary."""

    def db_for_read(self, model: Any, **hints: Any) -> str:
        if model._meta.app_label not in ROUTED_APPS:
            return DEFAULT_DB_ALIAS
        return current()

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # one database, copied: a replica's row and the primary's are the same row

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS


# --- who called: read-your-writes is kept per caller ------------------------------------------


def caller_key(account_id: Any, user_id: Any) -> str:
    """The caller whose writes its reads must see: the person (user) in the account."""
    return f"{account_id}:{user_id}"


def caller_of(principal: Any) -> str:
    return caller_key(principal.account.pk, principal.user.pk)


def _principal_caller(kwargs: dict[str, Any]) -> str | None:
    principal = kwargs.get("principal")
    return caller_of(principal) if principal is not None else None


def primary_position() -> int:
    """The primary's WAL insert position now, in bytes (``pg_current_wal_insert_lsn()``)."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint")
        row = cursor.fetchone()
    return int(row[0]) if row is not None else 0


def note_write(caller: str) -> None:
    """Remember the primary's position after ``caller``'s write: at the commit of the enclosing
    transaction, or now when none is open (the write has committed)."""

    def note() -> None:
        try:
            position = primary_position()
            cache.set(_CACHE_KEY.format(caller), position, timeout=settings.MMW_REPLICA_LSN_SECONDS)
        except Exception:
            logger.warning("could not note the write position of %s; its reads may lag", caller, exc_info=True)

    if connections[DEFAULT_DB_ALIAS].in_atomic_block:
        transaction.on_commit(note, using=DEFAULT_DB_ALIAS)
    else:
        note()


def written_position(caller: str | None) -> int | None:
    """The position ``caller``'s last write (within ``MMW_REPLICA_LSN_SECONDS``) must be read at."""
    if caller is None:
        return None
    value = cache.get(_CACHE_KEY.format(caller))
    return int(value) if value is not None else None


# --- replica health ----------------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """What a replica said when last asked (``at``: ``time.monotonic()``)."""

    at: float
    serving: bool  # answered, and is a standby
    replayed: int = 0  # pg_last_wal_replay_lsn(), bytes
    lag: float = 0.0  # seconds behind (0 when it has replayed all it received)


_STATE_SQL = (
    "SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint,"
    " CASE WHEN pg_last_wal_receive_lsn() IS NULL OR pg_last_wal_receive_lsn() <= pg_last_wal_replay_lsn()"
    " THEN 0 ELSE COALESCE(EXTRACT(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()), 0) END"
)

_states: dict[str, State] = {}
_states_lock = threading.Lock()
_turn = itertools.count()


def _ask(alias: str) -> State:
    """The replica's state now, on this thread's connection to it (which the read then uses)."""
    now = time.monotonic()
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute(_STATE_SQL)
            row = cursor.fetchone()
    except (OperationalError, InterfaceError, psycopg.Error) as exc:
        logger.warning("replica %s is not serving: %s", alias, exc.__class__.__name__)
        _close(alias)
        return State(now, serving=False)
    if row is None or not row[0] or row[1] is None:
        logger.warning("replica %s is not a standby in recovery: not used", alias)
        return State(now, serving=False)
    return State(now, serving=True, replayed=int(row[1]), lag=float(row[2]))


def state(alias: str, *, fresh: bool = False) -> State:
    """``alias``'s state, asked again when older than ``MMW_REPLICA_CHECK_SECONDS`` (a failed one:
    ``MMW_REPLICA_RETRY_SECONDS``) or when ``fresh``."""
    with _states_lock:
        known = _states.get(alias)
    if known is not None and not fresh:
        age = time.monotonic() - known.at
        if age < (settings.MMW_REPLICA_CHECK_SECONDS if known.serving else settings.MMW_REPLICA_RETRY_SECONDS):
            return known
    if fresh and known is not None and not known.serving:
        return known  # a failed replica waits out its retry time, however fresh the question
    asked = _ask(alias)
    with _states_lock:
        _states[alias] = asked
    return asked


def peek(alias: str) -> State | None:
    """What ``alias`` said when last asked, without asking (None: never asked in this process)."""
    with _states_lock:
        return _states.get(alias)


def describe(seen: State | None) -> dict[str, Any]:
    """A replica's state as ``/healthz`` shows it: ``ok`` (read from), ``lagging`` (serving but
    further behind than ``MMW_REPLICA_MAX_LAG``: skipped), ``unreachable`` (down, or not a standby:
    skipped until ``MMW_REPLICA_RETRY_SECONDS`` pass), ``unknown`` (not asked yet); the lag in
    seconds and how long ago it was asked."""
    if seen is None:
        return {"state": "unknown"}
    age = round(max(0.0, time.monotonic() - seen.at), 1)
    if not seen.serving:
        return {"state": "unreachable", "checked_seconds_ago": age}
    lagging = seen.lag > settings.MMW_REPLICA_MAX_LAG
    return {"state": "lagging" if lagging else "ok", "lag_seconds": round(seen.lag, 1), "checked_seconds_ago": age}


def mark_failed(alias: str) -> None:
    with _states_lock:
        _states[alias] = State(time.monotonic(), serving=False)
    _close(alias)


def forget_states() -> None:
    """Ask every replica again at its next use (tests)."""
    with _states_lock:
        _states.clear()


def _close(alias: str) -> None:
    try:
        connections[alias].close()
    except Exception:
        logger.debug("closing %s failed", alias, exc_info=True)


def choose(caller: str | None) -> str:
    """The alias a marked read by ``caller`` runs on: a serving replica within the lag bound that
    has replayed ``caller``'s last write, taking turns among several; else the primary."""
    names = aliases()
    if not names or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    needed = written_position(caller)
    start = next(_turn) % len(names)
    for alias in names[start:] + names[:start]:
        seen = state(alias)
        if not seen.serving or seen.lag > settings.MMW_REPLICA_MAX_LAG:
            continue
        if needed is not None and seen.replayed < needed:
            seen = state(alias, fresh=True)  # the cached position is older than the write: ask now
            if not seen.serving or seen.lag > settings.MMW_REPLICA_MAX_LAG or seen.replayed < needed:
                continue
        return alias
    return DEFAULT_DB_ALIAS


# --- the marks -----------------------------------------------------------------------------------


def reads(func: Callable[P, R]) -> Callable[P, R]:
    """Mark a selector (keyword ``principal``, or none: any caller) as a read a replica may serve."""

    @functools.wraps(func)
    def marked(*args: P.args, **kwargs: P.kwargs) -> R:
        if _chosen.get() is not None or not aliases():
            return func(*args, **kwargs)  # no replicas, or inside a marked read already
        alias = choose(_principal_caller(kwargs))
        if alias == DEFAULT_DB_ALIAS:
            return func(*args, **kwargs)
        token = _chosen.set(alias)
        try:
            return func(*args, **kwargs)
        except (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError) as exc:
            if current() != alias:
                raise  # raised inside a transaction the read opened: on the primary
            _close(alias)
            if _ask(alias).serving:  # e.g. a query cancelled by a conflict with recovery (40001)
                logger.warning("a read failed on replica %s (%s); reading on the primary", alias, type(exc).__name__)
            else:
                logger.warning("replica %s failed in a read (%s); reading on the primary", alias, type(exc).__name__)
                mark_failed(alias)
        finally:
            _chosen.reset(token)
        return func(*args, **kwargs)  # once more, on the primary

    return marked


def writes(func: Callable[P, R]) -> Callable[P, R]:
    """Mark a write service (keyword ``principal``) whose caller's next reads must see it."""

    @functools.wraps(func)
    def marked(*args: P.args, **kwargs: P.kwargs) -> R:
        if not aliases():
            return func(*args, **kwargs)
        caller = _principal_caller(kwargs)
        try:
            return func(*args, **kwargs)
        finally:  # a refused call may have written part of a batch
            if caller is not None:
                note_write(caller)

    return marked
