"""``manage.py archivist_rescore [--batch N]``: judge the stored relations again with today's rules.

Every ``related`` / ``refines`` / ``contradicts`` edge gets the score the archivist would give its
pair now, changes kind or goes, and every record is brought back within the per-kind cap
(``memories.archivist.rescore``). Migration 0015 runs it once; run it again after changing the
archivist's rules. Idempotent and safe to interrupt.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memories.archivist.rescore import BATCH, rescore_relations


class Command(BaseCommand):
    help = "Judge every stored relation again with the archivist's current rules and apply the caps."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch", type=int, default=BATCH)

    def handle(self, *args: Any, **options: Any) -> None:
        done = rescore_relations(batch=options["batch"], progress=lambda line: self.stdout.write(line))
        changed = ", ".join(f"{k} {v}" for k, v in sorted(done.changed.items())) or "none"
        self.stdout.write(
            f"judged {done.judged}: kept {done.kept} (re-scored), changed kind {changed}, "
            f"removed {done.removed}, over the cap {done.capped}"
        )
