"""Celery entry points of webhooks (beat: ``webhooks-scan``, every 10 s; docs/background.md)."""

from __future__ import annotations

from celery import shared_task

from webhooks import delivery, services


@shared_task(acks_late=True)
def scan_webhook_events() -> int:
    """Turn new events into deliveries, then send what is due (beat, every 10 s): one loop of
    ``webhooks.delivery``, which skips the accounts another loop is sending for."""
    created = services.scan()
    delivery.deliver_due()
    return created


@shared_task(acks_late=True)
def deliver_webhooks() -> int:
    """Send due deliveries now (a test event asks for it): its account's lane is free unless a
    running loop holds it, and that loop takes the new delivery within ``delivery.POLL``."""
    return delivery.deliver_due()
