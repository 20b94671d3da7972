"""Background work on sessions: turns get their vectors in batches after the upload commits.

Like the archivist (memories.tasks), the database is the outbox: an upload enqueues
``embed_session_turns`` on commit, and ``sweep_unembedded_turns`` (beat, every minute) re-sends
sessions whose turns still lack a vector, so a lost message only delays dense search for them
(keyword search covers them from the moment the upload returns)."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from memories import vectors
from memories.tasks import durable_task, publish
from transcripts import indexing
from transcripts.models import Turn

logger = logging.getLogger(__name__)

SWEEP_MIN_AGE = timedelta(seconds=30)
SWEEP_SESSIONS = 200


@durable_task
def embed_session_turns(session_id: str) -> int:
    """Embed the session's turns that lack the current model's vector. Idempotent."""
    done = indexing.embed_pending(uuid.UUID(session_id))
    logger.info("embedded %d turns of session %s", done, session_id)
    return done


def enqueue_embedding(session_id: uuid.UUID) -> bool:
    """Call from ``transaction.on_commit``; False when the broker is away (the sweep covers it)."""
    return publish(embed_session_turns, str(session_id))


@shared_task
def sweep_unembedded_turns(limit: int = SWEEP_SESSIONS) -> int:
    """Enqueue sessions of live turns left without the current model's vector for a while."""
    cutoff = timezone.now() - SWEEP_MIN_AGE
    sessions = list(
        Turn.objects.filter(session__forgotten_at__isnull=True, is_stub=False, created_at__lte=cutoff)
        .exclude(embedding_model=vectors.current().model_id)
        .values_list("session_id", flat=True)
        .distinct()[:limit]
    )
    for session_id in sessions:
        embed_session_turns.delay(str(session_id))
    return len(sessions)
