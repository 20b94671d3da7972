"""ASGI entry point: Django for everything, the MCP endpoint mounted at ``/mcp``."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mmw.settings.base")
django_application = get_asgi_application()

from mmw.routing import build_application  # noqa: E402  (needs Django set up first)

application = build_application(django_application)
