"""``manage.py default_plan [CODE] [--move-accounts]``: the plan new accounts start on.

On a server that takes no payments this is how the operator decides what everyone gets, e.g.
``default_plan team --move-accounts`` for organisations with members, roles and departments
(docs/billing.md, "Self-hosted servers")."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import Count

from billing import services
from billing.models import Plan


class Command(BaseCommand):
    help = "Show the plans, or make one the default plan (optionally moving the accounts on the old one)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("code", nargs="?", help="the plan's code (free, pro, team, …); omit to list the plans")
        parser.add_argument(
            "--move-accounts",
            action="store_true",
            help="also move every account on the previous default plan (or on none) that pays nothing through Stripe",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        code = options["code"]
        if not code:
            self.stdout.write(_table())
            return
        plan = Plan.objects.filter(code=code).first()
        if plan is None:
            known = ", ".join(Plan.objects.values_list("code", flat=True))
            raise CommandError(f"no plan with the code {code!r} (plans: {known})")
        moved = services.plan_make_default(plan=plan, move_accounts=options["move_accounts"])
        features = "with" if plan.organization_features else "without"
        self.stdout.write(f"New accounts now start on {plan.name} ({features} organisation features).")
        if options["move_accounts"]:
            self.stdout.write(f"{moved} account(s) moved to {plan.name}.")
        else:
            self.stdout.write("Existing accounts keep their plan (--move-accounts moves those on the old default).")


def _table() -> str:
    rows = [("code", "name", "default", "organisation features", "accounts")]
    for plan in Plan.objects.annotate(accounts=Count("subscriptions")).order_by("sort_order", "id"):
        rows.append(
            (
                plan.code,
                plan.name + ("" if plan.is_active else " (inactive)"),
                "yes" if plan.is_default else "",
                "yes" if plan.organization_features else "no",
                str(plan.accounts),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) for row in rows)
    return "\n".join(line.rstrip() for line in lines)
