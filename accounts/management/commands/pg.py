"""``manage.py pg status|start|stop``: the embedded PostgreSQL under ``$MMW_DATA_DIR/pg``.

``status`` only reports (it never starts a server: loading the settings does not either);
``start`` starts it if needed; ``stop`` stops it cleanly (``manage.py serve`` would start it again).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from mmw import embedded_pg


class Command(BaseCommand):
    help = "Show, start or stop the embedded PostgreSQL (unused when DATABASE_URL is set)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "start", "stop"])

    def handle(self, *args: Any, **options: Any) -> None:
        pgdata = settings.DATA_DIR / "pg"
        if settings.DATABASE_URL:
            self.stdout.write("DATABASE_URL is set: no embedded PostgreSQL is used")
            return
        if options["action"] == "stop":
            stopped = embedded_pg.stop(pgdata)
            self.stdout.write("stopped" if stopped else "not running")
        elif options["action"] == "start":
            embedded_pg.ensure_running(pgdata)
            self.stdout.write(f"running (pid {embedded_pg.postmaster_pid(pgdata)}, {pgdata})")
        else:
            pid = embedded_pg.postmaster_pid(pgdata)
            self.stdout.write(f"running (pid {pid}, {pgdata})" if pid else f"stopped ({pgdata})")
