"""Reads of OAuth state for the dashboard and admin."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts.models import User
from oauth.models import Client, Grant, PendingAuthorization


def grants_of(*, user: User) -> QuerySet[Grant]:
    """The person's live connections, newest first (Dashboard → Connected apps)."""
    return (
        Grant.objects.filter(user=user, revoked_at__isnull=True, project__deleted_at__isnull=True)
        .select_related("client", "project__account")
        .order_by("-created_at")
    )


def pending_authorization(*, public_id: str) -> PendingAuthorization | None:
    return PendingAuthorization.objects.select_related("client").filter(public_id=public_id).first()


def client_by_id(*, client_id: str) -> Client:
    """The client ``client_id`` names (the registration endpoint reads back what it stored)."""
    return Client.objects.get(client_id=client_id)


def client_count() -> int:
    """How many clients are registered (the cap ``MMW_OAUTH_MAX_CLIENTS`` bounds it)."""
    return Client.objects.count()
