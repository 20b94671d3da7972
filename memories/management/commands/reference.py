"""``manage.py reference [--check]``: refresh the generated parameter tables in docs/reference/."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from interfaces import reference


class Command(BaseCommand):
    help = "Rewrite the parameter tables of docs/reference/*.md from memories.inputs (--check: only report)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="exit 1 if a page is out of date; change nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        folder = settings.BASE_DIR / "docs" / "reference"
        stale = reference.stale_pages(folder, write=not options["check"])
        verb = "out of date" if options["check"] else "rewrote"
        for page in stale:
            self.stdout.write(f"{verb}: {page.relative_to(settings.BASE_DIR)}")
        if options["check"] and stale:
            raise CommandError("run `manage.py reference` to refresh the generated tables")
