"""Celery entry points of data rights (beat: ``datarights-retention``, hourly, and
``datarights-import-sweep``; docs/background.md). Webhooks' are ``webhooks.tasks``."""

from __future__ import annotations

from celery import shared_task

from datarights import deletion
from datarights.restore import jobs


@shared_task(acks_late=True)
def enforce_retention() -> dict[str, int]:
    """E-mail owners of accounts about to be purged, purge those whose retention has passed, and
    purge forgotten content past its retention (in batches until none is left). Idempotent."""
    reminded = deletion.remind_due()
    purged = deletion.purge_due()
    forgotten = 0
    while batch := deletion.forgotten_purge_due():
        forgotten += batch
    return {"reminded": reminded, "accounts_purged": purged, "forgotten_purged": forgotten}


@shared_task(acks_late=True)
def run_import(job_id: str) -> str:
    """Run one queued import job (``datarights.restore.jobs``) on the ``imports`` queue
    (``CELERY_TASK_ROUTES``) and its own worker, so a long import never holds a slot of the
    worker that embeds, archives and delivers."""
    return jobs.import_job_run(job_id)


@shared_task(acks_late=True)
def sweep_import_jobs() -> int:
    """Send again the imports whose message was lost or whose worker died (beat, every minute)."""
    return jobs.import_jobs_sweep()
