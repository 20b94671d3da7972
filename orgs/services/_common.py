"""Helpers shared by the org services."""

from __future__ import annotations

import hashlib

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from accounts.models import Account
from mmw.errors import InvalidInput


def require_organization(account: Account, message: str) -> None:
    if account.kind != Account.Kind.ORGANIZATION:
        raise InvalidInput(message, code="personal_account")


def lock_account(account_id: int) -> None:
    """Lock the account row: membership changes of one account run one after another (see
    ``orgs.services``)."""
    Account.objects.select_for_update().filter(pk=account_id).values_list("pk", flat=True).get()


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def clean_email(email: str) -> str:
    normalized = email.strip().lower()
    try:
        validate_email(normalized)
    except ValidationError:
        raise InvalidInput(f"invalid e-mail address: {email!r}") from None
    return normalized
