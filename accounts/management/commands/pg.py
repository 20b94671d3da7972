"""``manage.py pg status|stop``: manage the embedded PostgreSQL under ``$MMW_DATA_DIR/pg``."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from mmw import embedded_pg


class Command(BaseCommand):
    help = "Show or stop the embedded PostgreSQL (unused when DATABASE_URL is set)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["status", "stop"])

    def handle(self, *args: Any, **options: Any) -> None:
        pgdata = settings.DATA_DIR / "pg"
        if settings.DATABASE_URL:
            self.stdout.write("DATABASE_URL is set: no embedded PostgreSQL is used")
            return
        if options["action"] == "stop":
            stopped = embedded_pg.stop(pgdata)
            self.stdout.write("stopped" if stopped else "not running")
        else:
            running = (pgdata / "postmaster.pid").exists()
            self.stdout.write(f"{'running' if running else 'stopped'} ({pgdata})")
