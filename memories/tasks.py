"""Background work on memories: the archivist, and the beat jobs that keep nothing lost.

The database is the outbox. ``remember`` commits the record with ``archived_at`` NULL and, after
the commit, ``enqueue_archive`` tries to publish ``archive_memory``; when the broker is away the
publish fails fast (never more than about a second, measured in tests/memories/test_background.py)
and the write still succeeds. ``sweep_unarchived`` (beat, every minute) re-enqueues every live
record left unarchived for more than ``SWEEP_MIN_AGE`` seconds, so each one is analysed once the
broker is back. Every task takes ids, re-reads the state and tolerates deleted objects; running
one twice changes nothing.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

from celery import shared_task
from django.db import OperationalError
from django.utils import timezone
from kombu import pools

from memories import archivist, vectors
from memories.models import IdempotencyRecord, Memory
from mmw.celery import app

logger = logging.getLogger(__name__)

SWEEP_MIN_AGE = 30.0  # seconds a record may wait for its on-commit message before the sweep sends another
SWEEP_BATCH = 500
EXPIRE_BATCH = 1000
IDEMPOTENCY_TTL = timedelta(hours=24)
CLEANUP_BATCH = 5000
# Records per embedding message and per model call: large enough for the model's batch call to
# pay off, small enough that two workers share a 500-record batch (bench/ingest.py measures it).
EMBED_BATCH = 100
# The Redis transport polls priority 0 first and 9 last: a batch's archivist runs (seconds of CPU
# per hundred records) wait behind every queued embedding, so the vectors of later batches are
# not held up by the analysis of earlier ones (measured: bench/ingest.py). Other tasks keep 0.
BATCH_ARCHIVE_PRIORITY = 9

# Idempotent tasks that must survive a killed worker and a database blip: acknowledged only after
# they ran (a lost worker's message is redelivered) and retried with backoff on OperationalError.
durable_task = shared_task(
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError,),
    retry_backoff=2,
    retry_backoff_max=60,
    max_retries=8,
)

# Publishing from a request: tight socket timeouts and one retry, so a dead or hung broker costs a
# write at most ~2 x PUBLISH_TIMEOUT; after a failure, writes skip the broker for BREAKER_SECONDS
# (the sweep covers them) instead of each paying that price again.
PUBLISH_TIMEOUT = 0.3
PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1}
BREAKER_SECONDS = 5.0


@durable_task
def archive_memory(memory_id: str) -> str:
    """Relate one record to its neighbours (see ``memories.archivist``). Idempotent.

    A record stored without the current model's vector (a remote embedding backend, or a model
    change) is embedded first, so the outbox sweep covers embedding too."""
    vectors.ensure_embedded(memory_id)
    outcome = archivist.archive(memory_id)
    logger.info("archivist %s: %s", memory_id, outcome)
    return outcome


class _Breaker:
    """Open for a few seconds after a failed publish; thread-safe enough (a race only costs one
    extra attempt)."""

    def __init__(self) -> None:
        self._open_until = 0.0
        self._lock = threading.Lock()

    def is_open(self) -> bool:
        return time.monotonic() < self._open_until

    def trip(self) -> None:
        with self._lock:
            self._open_until = time.monotonic() + BREAKER_SECONDS

    def reset(self) -> None:
        with self._lock:
            self._open_until = 0.0


publish_breaker = _Breaker()


@durable_task
def embed_memories(memory_ids: list[str]) -> int:
    """Embed a batch's records with one call of the model's batch API, then queue their
    archivist runs (which find the vectors there). Idempotent: records that already carry the
    current model's vector, or are forgotten or gone, are skipped. A lost message costs only
    time: the sweep queues ``archive_memory`` for every unarchived record, which embeds it."""
    written = 0
    for start in range(0, len(memory_ids), EMBED_BATCH):
        written += vectors.embed_records(memory_ids[start : start + EMBED_BATCH])
    for memory_id in memory_ids:
        archive_memory.apply_async((memory_id,), priority=BATCH_ARCHIVE_PRIORITY)
    logger.info("embedded %d of %d records", written, len(memory_ids))
    return written


def enqueue_archive(memory_id: uuid.UUID | str) -> bool:
    """Ask a worker to archive ``memory_id``; False (logged, never raised) when the broker is away.

    Call it from ``transaction.on_commit``: the record is already committed with ``archived_at``
    NULL, so a lost message only delays the analysis until the next sweep."""
    return _publish(archive_memory, (str(memory_id),), str(memory_id))


def enqueue_embedding(memory_ids: list[uuid.UUID]) -> bool:
    """Ask workers to embed (then archive) a batch's records, ``EMBED_BATCH`` per message so
    several workers share a big batch; False (logged) when the broker is away — the sweep covers
    those records as it covers a lost ``enqueue_archive``."""
    ids = [str(i) for i in memory_ids]
    sent = True
    for start in range(0, len(ids), EMBED_BATCH):
        chunk = ids[start : start + EMBED_BATCH]
        sent = _publish(embed_memories, (chunk,), f"{len(chunk)} records") and sent
    return sent


def publish(task: Any, object_id: str) -> bool:
    """Send ``task(object_id)`` with the request's tight timeouts and the shared breaker; False
    (logged, never raised) when the broker is away: the caller's sweep covers the object."""
    return _publish(task, (object_id,), object_id)


def _publish(task: Any, args: tuple[Any, ...], what: str) -> bool:
    if publish_breaker.is_open():
        return False
    try:
        with pools.producers[_publish_connection()].acquire(block=True, timeout=PUBLISH_TIMEOUT) as producer:
            task.apply_async(args, producer=producer, retry=True, retry_policy=PUBLISH_RETRY_POLICY)
    except Exception as exc:  # noqa: BLE001 - the write has committed; whatever the broker did, the sweep covers it
        publish_breaker.trip()
        logger.warning("broker unavailable, %s left for the sweep: %s", what, exc)
        return False
    return True


def _publish_connection() -> Any:
    """A connection like the app's, with socket timeouts a request can afford (Redis only)."""
    options: dict[str, Any] = dict(app.conf.broker_transport_options or {})
    if str(app.conf.broker_write_url or "").startswith(("redis://", "rediss://", "redis+socket://")):
        options.update(socket_timeout=PUBLISH_TIMEOUT, socket_connect_timeout=PUBLISH_TIMEOUT)
    return app.connection_for_write(transport_options=options)


@shared_task(autoretry_for=(OperationalError,), retry_backoff=5, retry_backoff_max=20, max_retries=3)
def sweep_unarchived(min_age_seconds: float = SWEEP_MIN_AGE, limit: int = SWEEP_BATCH) -> int:
    """Enqueue live records still unarchived after ``min_age_seconds`` (oldest first); returns how many.

    Skips a round while the queue already holds ``limit`` messages (workers are behind: the pending
    records are not lost, and re-sending them would only pile up duplicates). A database blip
    (the first query after a PostgreSQL restart) retries the round within seconds instead of
    losing it until the next beat tick."""
    backlog = _queue_backlog()
    if backlog is not None and backlog >= limit:
        logger.info("archivist sweep skipped: %d messages already queued", backlog)
        return 0
    cutoff = timezone.now() - timedelta(seconds=min_age_seconds)
    pending = list(
        Memory.objects.live()
        .filter(archived_at__isnull=True, created_at__lte=cutoff)
        .order_by("created_at")
        .values_list("id", flat=True)[:limit]
    )
    for memory_id in pending:
        archive_memory.delay(str(memory_id))
    if pending:
        logger.info("archivist sweep enqueued %d records", len(pending))
    return len(pending)


def _queue_backlog() -> int | None:
    """Messages waiting in the default queue, or None when the transport cannot tell."""
    try:
        with app.connection_for_write() as conn:
            channel: Any = conn.default_channel
            declared = channel.queue_declare(queue=app.conf.task_default_queue, passive=True)
            return int(declared.message_count)
    except Exception:  # noqa: BLE001 - only an optimisation; sweep anyway
        return None


@shared_task
def expire_memories(limit: int = EXPIRE_BATCH) -> int:
    """Soft-forget records past ``expires_at`` (``services.memory_expire_due``); returns how many."""
    from memories import services  # services imports this module (to enqueue the archivist)

    count = services.memory_expire_due(limit=limit)
    logger.info("expired %d memories", count)
    return count


@shared_task
def cleanup_idempotency_records(max_age_hours: float = IDEMPOTENCY_TTL.total_seconds() / 3600) -> int:
    """Delete stored ``X-Idempotency-Key`` answers older than ``max_age_hours``; returns how many."""
    cutoff = timezone.now() - timedelta(hours=max_age_hours)
    total = 0
    while True:
        batch = list(
            IdempotencyRecord.objects.filter(created_at__lt=cutoff).values_list("pk", flat=True)[:CLEANUP_BATCH]
        )
        if not batch:
            return total
        total += IdempotencyRecord.objects.filter(pk__in=batch).delete()[0]
