"""``manage.py i18n compile`` (make run, make test) and ``manage.py i18n extract`` (after marking
a string): the catalogues in locale/, without system gettext (mmw.catalogues, docs/i18n.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from mmw import catalogues


class Command(BaseCommand):
    help = "Compile the translation catalogues (compile) or merge the code's marked strings into them (extract)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["compile", "extract"])
        parser.add_argument("--force", action="store_true", help="compile every catalogue, even an unchanged one")

    def handle(self, *args: Any, action: str, force: bool, **options: Any) -> None:
        if action == "extract":
            for language, (total, untranslated) in catalogues.extract_into_catalogues().items():
                where = catalogues.po_path(language).relative_to(catalogues.ROOT)
                self.stdout.write(f"{where}: {total} messages, {untranslated} to translate")
            catalogues.compile_catalogues()
            return
        written = catalogues.compile_catalogues(force=force)
        self.stdout.write(f"compiled {len(written)} catalogue(s)" if written else "catalogues up to date")
