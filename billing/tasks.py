"""Celery beat entry points for billing. Each re-reads state and is safe to run twice.

Schedule (``CELERY_BEAT_SCHEDULE``)::

    "billing-expire-grace":   billing.tasks.expire_grace_periods  every 10 minutes
    "billing-check-quotas":   billing.tasks.check_quotas          every hour
    "billing-usage-snapshot": billing.tasks.snapshot_usage        every 6 hours
    "billing-purge-counters": billing.tasks.purge_rate_counters   every 10 minutes
"""

from __future__ import annotations

from celery import shared_task

from billing import counters, services, usage


@shared_task(name="billing.tasks.expire_grace_periods")
def expire_grace_periods() -> int:
    """Suspend accounts whose grace period ended unpaid (and e-mail them)."""
    return services.subscriptions_expire_grace()


@shared_task(name="billing.tasks.check_quotas")
def check_quotas() -> int:
    """Usage per project and account; e-mail at 80 % and 100 % of the plan's limits."""
    return usage.quotas_check()


@shared_task(name="billing.tasks.snapshot_usage")
def snapshot_usage() -> int:
    """Refresh this month's usage snapshot rows (the dashboard's charts)."""
    return usage.usage_snapshot_take()


@shared_task(name="billing.tasks.purge_rate_counters")
def purge_rate_counters() -> int:
    """Delete expired rate-limit counters kept in PostgreSQL (no-op with Redis)."""
    return counters.purge_expired()
