"""A short-lived, per-process cache of resolved keys: key digest -> ``Principal``.

Why (issue #19, docs/latency.md): resolving a key costs three SQL statements (key with its
project, account and user; the membership; its departments) on every REST and MCP call.

Contract:
- ``accounts.keys.resolve_key`` asks here first; a live key's principal is kept for
  ``settings.MMW_KEY_CACHE_SECONDS`` (default 1 s; 0 turns the cache off). Refusals are never
  kept, so a key works as soon as it exists.
- Within this process a change that can end or change a principal — a key, project, user,
  account, membership, department or project access saved or deleted, a department's or a
  project access's members changed — empties the cache at once and again when its transaction
  commits (``connect_invalidation``, run when this module is first imported — by
  ``accounts.keys``, before any entry can exist).
- Other processes, and writes that bypass signals (``QuerySet.update``), are bounded by the
  lifetime: a revoked key or a deactivated member stops within ``MMW_KEY_CACHE_SECONDS``.
- The cached ``Principal`` (and the model instances in it) is shared by the calls that hit it:
  callers read it, never change it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

if TYPE_CHECKING:
    from accounts.keys import Principal

MAX_ENTRIES = 10_000


class PrincipalCache:
    """digest -> (principal, expiry); thread-safe, bounded, emptied whole on any change."""

    def __init__(self, ttl: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[Principal, float]] = {}

    @property
    def ttl(self) -> float:
        return self._ttl if self._ttl is not None else float(settings.MMW_KEY_CACHE_SECONDS)

    def get(self, digest: str) -> Principal | None:
        entry = self._entries.get(digest)
        if entry is None:
            return None
        principal, expires = entry
        if self._clock() >= expires:
            with self._lock:
                self._entries.pop(digest, None)
            return None
        return principal

    def put(self, digest: str, principal: Principal) -> None:
        ttl = self.ttl
        if ttl <= 0:
            return
        with self._lock:
            if len(self._entries) >= MAX_ENTRIES:
                self._entries.clear()
            self._entries[digest] = (principal, self._clock() + ttl)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


CACHE = PrincipalCache()


def invalidate() -> None:
    """Forget every cached principal now and again at the commit (a call that re-read the old rows
    before the commit). Signals call it on save/delete; a service that changes these rows with a
    queryset ``update()`` (no signal) calls it itself."""
    CACHE.clear()
    transaction.on_commit(CACHE.clear)


def _invalidate(**_: Any) -> None:
    invalidate()


def connect_invalidation() -> None:
    """Empty the cache whenever a row a ``Principal`` is built from changes (in this process)."""
    from accounts.models import Account, ApiKey, Project, User
    from orgs.models import Department, Membership, ProjectAccess

    for model in (ApiKey, Project, User, Account, Membership, Department, ProjectAccess):
        post_save.connect(_invalidate, sender=model, dispatch_uid=f"key-cache-save-{model.__name__}")
        post_delete.connect(_invalidate, sender=model, dispatch_uid=f"key-cache-delete-{model.__name__}")
    for through in (Department.members.through, ProjectAccess.members.through):
        m2m_changed.connect(_invalidate, sender=through, dispatch_uid=f"key-cache-m2m-{through.__name__}")


connect_invalidation()
