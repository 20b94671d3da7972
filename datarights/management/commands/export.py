"""``manage.py export --account T [--project P] [--output FILE]``: the operator's export
(everything of the project or account, whoever wrote it) as gzipped JSON Lines."""

from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from datarights import export
from mmw.errors import MMWError


class Command(BaseCommand):
    help = "Export a project or a whole account as gzipped JSON Lines (docs/export-format.md)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, help="tenant id, or the e-mail of a personal account's owner")
        parser.add_argument("--project", help="project id or name (default: the whole account)")
        parser.add_argument("--output", "-o", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            account = export.account_for_operator(options["account"])
            project = export.project_for_operator(account, options["project"]) if options["project"] else None
        except MMWError as exc:
            raise CommandError(exc.message) from exc
        scope = export.scope_for_operator(account=account, project=project)
        now = timezone.now()
        started, lines = time.monotonic(), 0

        def counted() -> Any:
            nonlocal lines
            for line in export.export_lines(scope, now=now):
                lines += 1
                yield line

        out = open(options["output"], "wb") if options["output"] else sys.stdout.buffer  # noqa: SIM115
        try:
            for chunk in export.gzip_chunks(counted()):
                out.write(chunk)
        finally:
            if options["output"]:
                out.close()
            else:
                out.flush()
        seconds = time.monotonic() - started
        self.stderr.write(f"exported {lines} lines in {seconds:.1f} s ({lines / max(seconds, 1e-9):,.0f} lines/s)")
