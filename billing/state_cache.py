"""A short-lived, per-process cache of an account's subscription as the call gate reads it.

Why (issue #19, docs/latency.md "What every call pays"): every REST and MCP call read the
account's subscription and plan (one SQL statement, two ORM objects) in ``billing.gate``, although
they change only on a webhook, a staff action or a plan edit.

Contract:
- ``billing.gate.CallAdmission`` asks here (``subscription_of``); nothing else does (the dashboard
  and the billing pages read fresh). An entry is kept for ``settings.MMW_BILLING_CACHE_SECONDS``
  (default ``MMW_KEY_CACHE_SECONDS``, 1 s; 0 turns it off).
- What is kept is the stored row (plan, stored state, grace end, staff flag), never the effective
  state: ``billing.selectors.effective_state`` is applied per call, so a grace period ending while
  cached suspends the account at that instant, as without the cache.
- Within this process a ``Subscription`` or ``Plan`` saved or deleted empties the cache at once
  and again when its transaction commits. Other processes, and ``QuerySet.update()`` (no signal),
  are bounded by the lifetime: a suspension or a plan change applies everywhere within it.
- Entries are shared by the calls that hit them: callers read them, never change them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db.models.signals import post_delete, post_save

from mmw.ttl_cache import TtlCache

if TYPE_CHECKING:
    from billing.selectors import BillingState  # noqa: F401 - named in a string: selectors imports this module


class StateCache(TtlCache["BillingState"]):
    """account id -> stored billing state, for ``MMW_BILLING_CACHE_SECONDS``."""

    setting = "MMW_BILLING_CACHE_SECONDS"


CACHE = StateCache()


def invalidate() -> None:
    """Forget every kept subscription now and again at the commit (a call that re-read the old
    row before the commit)."""
    CACHE.invalidate()


def _invalidate(**_: Any) -> None:
    invalidate()


def connect_invalidation() -> None:
    """Empty the cache whenever a subscription or a plan changes (in this process)."""
    from billing.models import Plan, Subscription

    for model in (Subscription, Plan):
        post_save.connect(_invalidate, sender=model, dispatch_uid=f"billing-cache-save-{model.__name__}")
        post_delete.connect(_invalidate, sender=model, dispatch_uid=f"billing-cache-delete-{model.__name__}")
