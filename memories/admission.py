"""The one seam between the memory core and what meters and bills it (docs/billing.md).

Every memory operation asks ``admit(principal)`` once, at its start, for an ``Admission``: the
answer for that one call — is the quota reached, the rate exceeded, may the account write, what
notice do reads carry. The memory core never imports billing: billing installs its gatekeeper
here when its app is ready (``billing.apps``), so the dependency points one way (billing reads
memories; memories knows only this protocol). Without billing installed — a deployment or a test
that leaves it out — every call is admitted and carries no notice.

The admission object holds whatever the gatekeeper read for the call (e.g. the account's billing
state, read once), so every check of one call sees the same state; nothing rides on the frozen
``Principal``.
"""

from __future__ import annotations

from typing import Protocol

from accounts.keys import Principal
from mmw.errors import Forbidden


class Admission(Protocol):
    """What may happen in one call. Each ``check_*`` / ``ensure_*`` raises an ``MMWError`` with
    the documented text (``RateLimited``, ``Forbidden``, ``BillingNotice``) or returns."""

    def check_rate(self) -> None:
        """Count this call against the per-minute limits (every read and write of an API client;
        the gatekeeper decides from ``Principal.via`` whether the caller is one)."""

    def check_quota(self, pending: int = 0) -> None:
        """Refuse a new record past the plan's records-per-project limit (inside the write's
        transaction), counting ``pending`` records this call has accepted but not yet inserted
        (a batch: each record is checked against the quota)."""

    def hold_quota(self) -> None:
        """Take what ``check_quota`` needs (a lock, the count) now, for the rest of the call's
        transaction: a batch calls it once, outside its records' savepoints, so each record's
        ``check_quota`` is then answered without a query (and no savepoint rollback can release
        the lock)."""

    def turn_room(self, wanted: int) -> int:
        """How many of ``wanted`` new session turns the plan's turns-per-project limit still
        admits (0..wanted), counted under a lock inside the upload's transaction."""

    def check_ledger_quota(self, pending: int = 0) -> None:
        """Refuse one new ledger entry past the plan's ledger-entries-per-project limit, counted
        under a lock inside the write's transaction (``project ledger entry limit exceeded``),
        with ``pending`` entries this call is adding besides it (an import's batch)."""

    def ensure_may_write(self) -> None:
        """Refuse a write while the account is in its grace period, suspended or without a subscription."""

    def notice(self) -> str | None:
        """The ``[MMW Notice]: …`` that read answers carry now, if any."""


class Gatekeeper(Protocol):
    def admit(self, principal: Principal) -> Admission: ...


class OpenAdmission:
    """Everything allowed, no notice: the core's behaviour when nothing meters it."""

    def check_rate(self) -> None:
        return None

    def check_quota(self, pending: int = 0) -> None:
        return None

    def hold_quota(self) -> None:
        return None

    def turn_room(self, wanted: int) -> int:
        return wanted

    def check_ledger_quota(self, pending: int = 0) -> None:
        return None

    def ensure_may_write(self) -> None:
        return None

    def notice(self) -> str | None:
        return None


class OpenGatekeeper:
    def admit(self, principal: Principal) -> Admission:
        return OpenAdmission()


_gatekeeper: Gatekeeper = OpenGatekeeper()


def install(gatekeeper: Gatekeeper) -> None:
    """Make ``gatekeeper`` decide every call from now on (billing does this in ``ready()``)."""
    global _gatekeeper
    _gatekeeper = gatekeeper


def admit(principal: Principal) -> Admission:
    """The admission of one call by ``principal``; ask once per call and pass it along."""
    return _gatekeeper.admit(principal)


def admit_read(principal: Principal, scope: str) -> Admission:
    """The admission of one read call: the rate (an API call counts; a person in the dashboard
    does not, ``Principal.via``), then the key's ``scope`` (``403 Forbidden: key lacks <scope>``)."""
    admitted = admit(principal)
    admitted.check_rate()
    if scope not in principal.scopes:
        raise Forbidden(f"403 Forbidden: key lacks {scope}")
    return admitted


def admit_write(principal: Principal, scope: str) -> Admission:
    """The admission of one write call, with the checks every write makes in ``remember``'s
    order: the rate, the key's ``scope`` (``403 Forbidden: key lacks <scope>``), the member's right
    to write, the account's billing state. A write with checks of its own between these (forget's
    workspace state) makes them itself."""
    admitted = admit(principal)
    admitted.check_rate()
    if scope not in principal.scopes:
        raise Forbidden(f"403 Forbidden: key lacks {scope}")
    if not principal.membership.may_write:
        raise Forbidden("membership may not write in this organization")
    admitted.ensure_may_write()
    return admitted
