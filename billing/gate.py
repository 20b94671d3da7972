"""What billing and limits allow. The memory core asks through ``memories.admission`` (one
``CallAdmission`` per call, installed by ``billing.apps``), at the points docs/reference/ orders:

- ``check_quota``: the plan's records-per-project limit, counted under a transaction-scoped
  advisory lock on the project, so two racing writes cannot both take the last slot (called
  inside the write's transaction, as ``memory_remember`` does).
- ``turn_room``: the plan's session-turns-per-project limit, under a lock like ``check_quota``.
- ``check_ledger_quota``: the plan's ledger-entries-per-project limit, under a lock likewise.
- ``check_rate``: one API call (REST, MCP; not a person in the dashboard) counted per key and per
  project in fixed one-minute windows
  (``billing.counters``: Redis ``INCR`` or a PostgreSQL upsert), refused past the plan's limits
  with ``Retry-After`` = the seconds left in the window; allowed calls also feed monthly usage.
- ``ensure_may_write`` / ``notice``: the ``[MMW Notice]: …`` of an account in a grace period,
  suspended, or without a subscription — raised for writes and forget, attached to reads.

``check_project_limit`` and ``ensure_organization_features`` are asked by account and
organisation management.
"""

from __future__ import annotations

import datetime as dt

from accounts.keys import Principal
from accounts.models import Account
from billing import counters, selectors
from mmw.errors import BillingNotice, Forbidden, RateLimited
from mmw.locks import advisory_xact_lock

WINDOW_SECONDS = 60
MONTHLY_TTL_SECONDS = 40 * 24 * 3600  # a month's call count outlives the month for the snapshot job
_QUOTA_LOCK_NAMESPACE = "billing-project-quota"
_TURN_QUOTA_LOCK_NAMESPACE = "billing-project-turn-quota"
_LEDGER_QUOTA_LOCK_NAMESPACE = "billing-project-ledger-quota"
LEDGER_LIMIT_TEXT = "project ledger entry limit exceeded"


class CallAdmission:
    """``memories.admission.Admission`` for one call: the account's billing state is read once,
    on first need, so every check of the call sees the same state (its stored row possibly from
    ``billing.state_cache``, at most ``MMW_BILLING_CACHE_SECONDS`` old)."""

    def __init__(self, principal: Principal) -> None:
        self.principal = principal
        self._state: selectors.BillingState | None = None
        self._held: int | None = None  # the project's live records, read under the lock (hold_quota)

    @property
    def state(self) -> selectors.BillingState:
        if self._state is None:
            self._state = selectors.call_billing_state(self.principal.account)
        return self._state

    def check_quota(self, pending: int = 0) -> None:
        """Raise ``project memory limit exceeded`` when the plan's record limit is reached, with
        the call's ``pending`` records counted; the count is taken under a transaction-scoped
        advisory lock on the project. Without ``hold_quota`` both are taken at each check (a
        rolled-back savepoint would release the lock, so a count kept from before could be stale)."""
        limit = self._quota_limit()
        if limit is None:
            return
        live = self._held if self._held is not None else self._locked_count()
        if live + pending >= limit:
            raise Forbidden("project memory limit exceeded", code="limit_exceeded")

    def turn_room(self, wanted: int) -> int:
        """How many of ``wanted`` new session turns fit under the plan's turns-per-project limit,
        counted under the same kind of project lock as ``check_quota`` (docs/sessions.md)."""
        plan = self.state.plan
        limit = plan.turns_per_project if plan else None
        if limit is None:
            return wanted
        advisory_xact_lock(_TURN_QUOTA_LOCK_NAMESPACE, str(self.principal.project.pk))
        return max(0, min(wanted, limit - selectors.live_turns(self.principal.project)))

    def check_ledger_quota(self, pending: int = 0) -> None:
        """Raise ``project ledger entry limit exceeded`` when the project holds the plan's
        ledger-entries-per-project limit (every entry counts: reversals and completions too, as
        nothing is ever deleted), counted under a transaction-scoped lock on the project."""
        plan = self.state.plan
        limit = plan.ledger_entries_per_project if plan else None
        if limit is None:
            return
        advisory_xact_lock(_LEDGER_QUOTA_LOCK_NAMESPACE, str(self.principal.project.pk))
        if selectors.ledger_entries(self.principal.project) + pending >= limit:
            raise Forbidden(LEDGER_LIMIT_TEXT, code="limit_exceeded")

    def hold_quota(self) -> None:
        """Lock the project's quota and read its count once, for the rest of the transaction."""
        if self._quota_limit() is not None and self._held is None:
            self._held = self._locked_count()

    def _quota_limit(self) -> int | None:
        plan = self.state.plan
        return plan.records_per_project if plan else None

    def _locked_count(self) -> int:
        advisory_xact_lock(_QUOTA_LOCK_NAMESPACE, str(self.principal.project.pk))
        return selectors.live_records(self.principal.project)

    def check_rate(self) -> None:
        """Count one API call; raise ``RateLimited`` (per key, then per project) past the plan's
        limits. A person in the dashboard (``Principal.via``) makes no API call: neither counted
        nor limited, so browsing never uses up an agent's minute or the month's calls."""
        principal = self.principal
        if not principal.is_api_call:
            return
        per_key, per_project = selectors.rate_limits(principal.account, self.state)
        now = counters.now()
        window, retry_after = counters.fixed_window(WINDOW_SECONDS, now)
        key = principal.api_key
        month = dt.datetime.fromtimestamp(now, tz=dt.UTC).strftime("%Y%m")
        minute, project = 2 * WINDOW_SECONDS, principal.project.pk
        steps = []
        if per_key is not None and key is not None:
            steps.append(counters.Step(f"rate:key:{key.pk}:{window}", minute, per_key))
        if per_project is not None:
            steps.append(counters.Step(f"rate:project:{project}:{window}", minute, per_project))
        steps.append(counters.Step(monthly_calls_bucket(str(project), month), MONTHLY_TTL_SECONDS))
        if key is not None:  # the key's own month (the keys page's "calls this month"); no limit
            steps.append(counters.Step(monthly_key_calls_bucket(key.pk, month), MONTHLY_TTL_SECONDS))
        counts = counters.hit_chain(steps)  # one round trip; stops at the first limit passed
        refused = steps[len(counts) - 1]
        if refused.limit is not None and counts[-1] > refused.limit:
            per_key_refused = refused.bucket.startswith("rate:key:")
            text = "MCP rate limit exceeded" if per_key_refused else "project call limit exceeded"
            raise RateLimited(text, retry_after=retry_after)

    def ensure_may_write(self) -> None:
        """Raise ``BillingNotice`` (``[MMW Notice]: …``) when the account may not write now."""
        notice = self.notice()
        if notice is not None:
            raise BillingNotice(notice)

    def notice(self) -> str | None:
        """The notice read answers carry (grace period, suspended, no subscription), or None."""
        return selectors.notice_of(self.state, self.principal.account)


class BillingGatekeeper:
    """Installed into ``memories.admission`` by ``billing.apps``."""

    def admit(self, principal: Principal) -> CallAdmission:
        return CallAdmission(principal)


def monthly_calls_bucket(project_id: str, month: str) -> str:
    """The counter of a project's allowed calls in ``month`` (``YYYYMM``)."""
    return f"calls:project:{project_id}:{month}"


def monthly_key_calls_bucket(key_id: int, month: str) -> str:
    """The counter of one API key's allowed calls in ``month`` (``YYYYMM``)."""
    return f"calls:key:{key_id}:{month}"


def check_project_limit(account: Account) -> None:
    """Raise when the account's plan allows no more projects (for project creation to call)."""
    plan = selectors.billing_state(account).plan
    limit = plan.projects_per_account if plan else None
    if limit is not None and account.projects.filter(deleted_at__isnull=True).count() >= limit:
        raise Forbidden(f"the {plan} plan allows at most {limit} projects", code="limit_exceeded")


def ensure_organization_features(account: Account) -> None:
    """Raise when the account's plan does not include members, roles and departments."""
    if not selectors.organization_features_allowed(account):
        raise Forbidden("organization features are not included in this account's plan", code="plan_feature")
