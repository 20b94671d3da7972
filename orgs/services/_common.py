"""Helpers shared by the org services."""

from __future__ import annotations

from accounts import limits
from accounts.models import Account
from mmw import text
from mmw.errors import InvalidInput


def require_organization(account: Account, message: str) -> None:
    if account.kind != Account.Kind.ORGANIZATION:
        raise InvalidInput(message, code="personal_account")


def require_organization_features(account: Account) -> None:
    """Raise when the plan does not include organisation features. Every service that grows or
    widens an organisation asks (invite, accept, reactivate, roles, departments, project lists);
    those that shrink it never do, so an account on a smaller plan can still tidy up."""
    limits.ensure_organization_features(account)


def lock_account(account_id: int) -> None:
    """Lock the account row: membership changes of one account run one after another (see
    ``orgs.services``)."""
    Account.objects.select_for_update().filter(pk=account_id).values_list("pk", flat=True).get()


digest = text.sha256_hex
clean_email = text.clean_email
