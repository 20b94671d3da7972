"""``manage.py import FILE --account T``: an export into this server (docs/export-format.md,
"Importing"). All or nothing; a second run adds nothing; a collision is refused with a report."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from datarights import export, restore
from datarights.restore import reader
from mmw.errors import MMWError


class Command(BaseCommand):
    help = "Import an MMW export (gzip or plain JSON Lines) into an account, keeping ids, versions and times."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file")
        parser.add_argument("--account", required=True, help="tenant id, or the e-mail of a personal account's owner")
        default = reader.Limits()
        parser.add_argument(
            "--max-mb", type=int, default=default.max_bytes // reader.MiB, help="decompressed size bound (MB)"
        )
        parser.add_argument("--max-lines", type=int, default=default.max_lines, help="line count bound")

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()

        def progress(report: restore.ImportReport) -> None:
            seconds = time.monotonic() - started
            self.stderr.write(f"\r{report.lines:,} lines read ({report.lines / max(seconds, 1e-9):,.0f}/s)", ending="")

        try:
            account = export.account_for_operator(options["account"])
            with open(options["file"], "rb") as stream:
                limits = reader.Limits(max_bytes=options["max_mb"] * reader.MiB, max_lines=options["max_lines"])
                report = restore.import_for_operator(stream=stream, account=account, progress=progress, limits=limits)
        except (restore.Collisions, restore.InvalidLines) as exc:
            raise CommandError(
                "\n  ".join([f"import refused, nothing was written ({exc.total}):", *exc.report])
            ) from exc
        except MMWError as exc:
            raise CommandError(exc.message) from exc
        except OSError as exc:
            raise CommandError(str(exc)) from exc
        seconds = time.monotonic() - started
        self.stderr.write(
            f"\rimported {report.lines:,} lines in {seconds:.1f} s ({report.lines / max(seconds, 1e-9):,.0f}/s)"
        )
        self.stdout.write(
            "created: "
            + (", ".join(f"{n} {k}" for k, n in sorted(report.created.items())) or "nothing")
            + "; unchanged: "
            + (", ".join(f"{n} {k}" for k, n in sorted(report.unchanged.items())) or "nothing")
        )
