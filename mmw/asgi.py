"""ASGI entry point: Django for everything, the MCP endpoint mounted at ``/mcp``."""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mmw.settings.base")
# The web process pools its database connections (settings: DB_POOL_MAX_SIZE); an explicit
# MMW_DB_POOL_MAX_SIZE=0 turns the pool off.
os.environ.setdefault("MMW_DB_POOL_MAX_SIZE", "8")
django.setup(set_prefix=False)

from mmw.handler import PooledASGIHandler  # noqa: E402  (needs Django set up first)
from mmw.routing import build_application  # noqa: E402

django_application = PooledASGIHandler()

application = build_application(django_application)
