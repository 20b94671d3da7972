"""A new sign-up gets their personal account; every ``migrate`` keeps the Support group current."""

from __future__ import annotations

from typing import Any

from allauth.account.signals import user_signed_up
from django.apps import AppConfig, apps
from django.db.models.signals import post_migrate
from django.dispatch import receiver
from django.http import HttpRequest

from accounts.models import Account, User
from accounts.services import account_create
from dashboard.support import ensure_support_group
from orgs.models import Membership


@receiver(user_signed_up)
def give_personal_account(sender: Any, request: HttpRequest | None, user: User, **kwargs: Any) -> None:
    """Every person has one personal account, owned by them (the CLI's ``user_get_or_create`` makes
    it for users it creates; here, for those who sign up on the dashboard)."""
    owns_personal = Membership.objects.filter(
        user=user, role=Membership.Role.OWNER, account__kind=Account.Kind.PERSONAL
    ).exists()
    if not owns_personal:
        account_create(name=user.email, owner=user, kind=Account.Kind.PERSONAL)


@receiver(post_migrate)
def keep_support_group(sender: AppConfig, **kwargs: Any) -> None:
    if sender.name == "dashboard" and apps.is_installed("dashboard"):
        ensure_support_group()
