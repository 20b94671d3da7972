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

from typing import TYPE_CHECKING, Any

from django.db.models.signals import m2m_changed, post_delete, post_save

from mmw.ttl_cache import TtlCache

if TYPE_CHECKING:
    from accounts.keys import Principal  # noqa: F401 - named in a string: keys imports this module


class PrincipalCache(TtlCache["Principal"]):
    """digest -> principal, for ``MMW_KEY_CACHE_SECONDS``."""

    setting = "MMW_KEY_CACHE_SECONDS"


CACHE = PrincipalCache()


def invalidate() -> None:
    """Forget every cached principal now and again at the commit (a call that re-read the old rows
    before the commit). Signals call it on save/delete; a service that changes these rows with a
    queryset ``update()`` (no signal) calls it itself."""
    CACHE.invalidate()


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
