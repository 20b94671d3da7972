"""ASGI entry point: Django for everything, the MCP endpoint mounted at ``/mcp``."""

from __future__ import annotations

import os
import threading

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mmw.settings.base")
# The web process pools its database connections (settings: DB_POOL_MAX_SIZE); an explicit
# MMW_DB_POOL_MAX_SIZE=0 turns the pool off.
os.environ.setdefault("MMW_DB_POOL_MAX_SIZE", "8")
django.setup(set_prefix=False)

from django.conf import settings  # noqa: E402

from memories import vectors  # noqa: E402
from mmw.handler import PooledASGIHandler  # noqa: E402  (needs Django set up first)
from mmw.routing import build_application  # noqa: E402

django_application = PooledASGIHandler()

application = build_application(django_application)

if settings.MMW_WARM_MODELS:
    # Load the embedding model now, beside start-up, not in the first request: it takes seconds
    # (3.6 s idle, ~7 s under load here), close to the request deadline (docs/reliability.md).
    threading.Thread(target=vectors.warm_up, name="mmw-warm-models", daemon=True).start()
