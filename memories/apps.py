from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _


class MemoriesConfig(AppConfig):
    name = "memories"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = _("Memories")

    def ready(self) -> None:
        post_migrate.connect(_ensure_vector_index, sender=self)


def _ensure_vector_index(using: str = "default", **kwargs: Any) -> None:
    """After migrations, make sure the configured model's HNSW index exists (unless the memory
    table itself is gone, e.g. after ``migrate memories zero``)."""
    from django.db import connections

    from memories import vectors
    from memories.vector_index import ensure_vector_index

    if "memories_memory" not in connections[using].introspection.table_names():
        return
    backend = vectors.current()
    ensure_vector_index(backend.model_id, backend.dim, using=using)
