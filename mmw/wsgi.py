"""WSGI entry point (the admin and dashboard work here; MCP needs the ASGI app)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mmw.settings.base")
application = get_wsgi_application()
