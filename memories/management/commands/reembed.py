"""``manage.py reembed [--backend NAME] [--batch N]``: move every live record to a model's vectors.

Set ``MMW_EMBEDDING_BACKEND`` to the new model, run this, restart the processes. Records are
picked by "not yet on the target model", so an interrupted run resumes where it stopped. Until
it finishes, keyword search still covers every record and vector search covers those done.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from memories import vectors
from memories.embeddings import get_backend
from memories.models import Memory
from memories.vector_index import ensure_vector_index

BAR_WIDTH = 30


class Command(BaseCommand):
    help = "Re-embed live records with the configured (or given) embedding model; resumable."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--backend", default=None, help="backend name (default: MMW_EMBEDDING_BACKEND)")
        parser.add_argument("--batch", type=int, default=64)

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["backend"] or settings.MMW_EMBEDDING_BACKEND
        backend = (
            get_backend(name, **dict(settings.MMW_EMBEDDING_OPTIONS))
            if options["backend"] is None
            else get_backend(name)
        )
        todo = Memory.objects.filter(forgotten_at__isnull=True).exclude(embedding_model=backend.model_id).count()
        self.stdout.write(f"re-embedding {todo} records with {backend.model_id}")
        done, started = 0, time.monotonic()
        while True:
            count = vectors.reembed_batch(backend, options["batch"])
            if count == 0:
                break
            done += count
            self._progress(done, todo, started)
        sys.stderr.write("\n")
        index = ensure_vector_index(backend.model_id, backend.dim)
        self.stdout.write(f"done: {done} records on {backend.model_id} (index {index})")

    def _progress(self, done: int, todo: int, started: float) -> None:
        share = min(1.0, done / todo) if todo else 1.0
        filled = int(share * BAR_WIDTH)
        rate = done / max(time.monotonic() - started, 1e-6)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{todo} ({rate:.0f}/s)")
        sys.stderr.flush()
