"""The seam through which account and organisation management ask what the plan allows, without
importing billing.

``accounts`` sits below ``billing`` (docs/architecture.md); billing installs its check here when
its app is ready, as it does for the memory core's ``memories.admission``. Without billing, no
limit applies.
"""

from __future__ import annotations

from collections.abc import Callable

from accounts.models import Account

AccountCheck = Callable[[Account], None]


def _no_limit(account: Account) -> None:
    return None


_check_project_limit: AccountCheck = _no_limit
_ensure_organization_features: AccountCheck = _no_limit


def install(*, check_project_limit: AccountCheck, ensure_organization_features: AccountCheck) -> None:
    """Make billing's checks decide from now on; each raises ``MMWError`` when the plan says no."""
    global _check_project_limit, _ensure_organization_features
    _check_project_limit = check_project_limit
    _ensure_organization_features = ensure_organization_features


def check_project_limit(account: Account) -> None:
    """Raise when ``account``'s plan allows no more projects."""
    _check_project_limit(account)


def ensure_organization_features(account: Account) -> None:
    """Raise when ``account``'s plan does not include organisation features (members, roles,
    departments, project access). Asked by every ``orgs`` service that grows or widens an
    organisation; never by those that shrink it (removing, revoking, deactivating), so an
    account that moved to a smaller plan can always tidy up."""
    _ensure_organization_features(account)
