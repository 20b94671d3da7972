"""The Celery application; tasks live in each app's ``tasks.py``.

Beat (started by ``manage.py serve``) runs the jobs that keep nothing lost and nothing kept too
long: the archivist's outbox sweep, ``expires_at`` expiry, idempotency-record cleanup, the sweep
of abandoned OAuth clients, and the billing jobs of ``billing.tasks`` (quota checks, grace-period
expiry, usage snapshots). See docs/background.md.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from celery import Celery
from celery.signals import worker_init

from mmw.env import env_int

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mmw.settings.base")

app = Celery("mmw")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

MINUTE = 60.0


def _beat_schedule() -> dict[str, dict[str, Any]]:
    # Messages of periodic jobs expire before the next run, so a stopped worker never comes back
    # to a pile of identical jobs.
    schedule = {
        "archivist-sweep": _every("memories.tasks.sweep_unarchived", MINUTE),
        "expire-memories": _every("memories.tasks.expire_memories", 5 * MINUTE),
        "cleanup-idempotency-records": _every("memories.tasks.cleanup_idempotency_records", 60 * MINUTE),
        "embed-session-turns-sweep": _every("transcripts.tasks.sweep_unembedded_turns", MINUTE),
        "datarights-retention": _every("datarights.tasks.enforce_retention", 60 * MINUTE),
        "webhooks-scan": _every("webhooks.tasks.scan_webhook_events", 10.0),
        "datarights-import-sweep": _every("datarights.tasks.sweep_import_jobs", MINUTE),
        "ledger-due-reminders": _every("ledger.tasks.send_due_reminders", 5 * MINUTE),
        "oauth-sweep-abandoned-clients": _every("oauth.tasks.sweep_abandoned_clients", 60 * MINUTE),
    }
    if importlib.util.find_spec("billing.tasks") is not None:  # the intervals billing.tasks documents
        schedule |= {
            "billing-expire-grace": _every("billing.tasks.expire_grace_periods", 10 * MINUTE),
            "billing-check-quotas": _every("billing.tasks.check_quotas", 60 * MINUTE),
            "billing-usage-snapshot": _every("billing.tasks.snapshot_usage", 6 * 60 * MINUTE),
            "billing-purge-counters": _every("billing.tasks.purge_rate_counters", 10 * MINUTE),
        }
    return schedule


def _every(task: str, seconds: float) -> dict[str, Any]:
    return {"task": task, "schedule": seconds, "options": {"expires": seconds - 5}}


@app.on_after_configure.connect
def _add_beat_schedule(sender: Celery, source: Any, **kwargs: Any) -> None:
    """Merge these jobs into the configured schedule (``CELERY_BEAT_SCHEDULE`` wins a name clash),
    once the settings are loaded: importing this module must not load Django settings."""
    source.beat_schedule = {**_beat_schedule(), **dict(source.beat_schedule or {})}


# A worker computes vectors (seconds of CPU per hundred records) beside the web process on the same
# cores: at normal priority it took the CPU a search or /healthz was waiting for (issue #37: /healthz
# 11 ms p50 while the worker embedded). Niced, it runs on what the web process leaves; its work is
# background work, and nothing waits on it but the vectors. ``MMW_WORKER_NICE=0`` keeps the priority.
WORKER_NICE_DEFAULT = 10


@worker_init.connect
def lower_worker_priority(**kwargs: Any) -> int:
    """Raise this worker's nice value by ``MMW_WORKER_NICE`` (default 10) before its pool forks
    (the children inherit it). Returns the increment applied (0: none)."""
    increment = env_int("MMW_WORKER_NICE", WORKER_NICE_DEFAULT, minimum=0)
    if increment:
        os.nice(increment)
    return increment
