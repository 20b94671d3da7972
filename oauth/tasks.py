"""Celery entry points of OAuth: the hourly sweep of abandoned self-registered clients (beat)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from oauth import services


@shared_task
def sweep_abandoned_clients() -> int:
    """Delete self-registered clients nobody ever granted anything, once old enough
    (``oauth.services.clients_sweep_abandoned``); returns how many."""
    return services.clients_sweep_abandoned(now=timezone.now())
