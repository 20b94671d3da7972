"""``manage.py support_group [--add EMAIL…]``: create the Support group, optionally adding staff."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import User
from dashboard.support import ensure_support_group


class Command(BaseCommand):
    help = "Create or update the 'Support' admin group; --add makes the given users staff members of it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--add", nargs="*", default=[], metavar="EMAIL")

    def handle(self, *args: Any, **options: Any) -> None:
        group = ensure_support_group()
        for email in options["add"]:
            user = User.objects.filter(email=email.strip().lower()).first()
            if user is None:
                raise CommandError(f"no user with e-mail {email}")
            user.is_staff = True
            user.save(update_fields=["is_staff"])
            user.groups.add(group)
        self.stdout.write(f"group {group.name}: {group.permissions.count()} permissions")
