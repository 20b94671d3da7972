"""Plans get a limit of their own for ledger entries (docs/ledger.md); the seeded plans get the
values of billing/seeds.py at the time of writing (a frozen copy, as 0002 and 0003 keep)."""

from django.db import migrations, models

ENTRIES = {"free": 1_000, "pro": 100_000, "team": 1_000_000}


def seed(apps, schema_editor):
    Plan = apps.get_model("billing", "Plan")
    db = schema_editor.connection.alias
    for code, entries in ENTRIES.items():
        Plan.objects.using(db).filter(code=code, ledger_entries_per_project__isnull=True).update(
            ledger_entries_per_project=entries
        )


class Migration(migrations.Migration):
    dependencies = [("billing", "0003_plan_turns_per_project")]

    operations = [
        migrations.AddField(
            model_name="plan",
            name="ledger_entries_per_project",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Ledger entries per project (docs/ledger.md). Empty: unlimited.",
                null=True,
            ),
        ),
        migrations.RunPython(seed, migrations.RunPython.noop),
    ]
