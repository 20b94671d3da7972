"""The seam through which account management asks what the plan allows, without importing billing.

``accounts`` sits below ``billing`` (docs/architecture.md); billing installs its check here when
its app is ready, as it does for the memory core's ``memories.admission``. Without billing, no
limit applies.
"""

from __future__ import annotations

from collections.abc import Callable

from accounts.models import Account

ProjectLimitCheck = Callable[[Account], None]


def _no_limit(account: Account) -> None:
    return None


_check_project_limit: ProjectLimitCheck = _no_limit


def install(*, check_project_limit: ProjectLimitCheck) -> None:
    """Make ``check_project_limit`` (raises ``MMWError`` past the plan's number) decide from now on."""
    global _check_project_limit
    _check_project_limit = check_project_limit


def check_project_limit(account: Account) -> None:
    """Raise when ``account``'s plan allows no more projects."""
    _check_project_limit(account)
