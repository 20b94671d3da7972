"""Plans get a limit of their own for uploaded session turns (docs/sessions.md); the seeded
plans get the values of billing/seeds.py at the time of writing (a frozen copy, as 0002 keeps)."""

from django.db import migrations, models

TURNS = {"free": 10_000, "pro": 1_000_000, "team": 10_000_000}


def seed(apps, schema_editor):
    Plan = apps.get_model("billing", "Plan")
    db = schema_editor.connection.alias
    for code, turns in TURNS.items():
        Plan.objects.using(db).filter(code=code, turns_per_project__isnull=True).update(turns_per_project=turns)


class Migration(migrations.Migration):
    dependencies = [("billing", "0002_seed_plans")]

    operations = [
        migrations.AddField(
            model_name="plan",
            name="turns_per_project",
            field=models.PositiveIntegerField(
                blank=True,
                help_text="Uploaded session turns per project (docs/sessions.md). Empty: unlimited.",
                null=True,
            ),
        ),
        migrations.RunPython(seed, migrations.RunPython.noop),
    ]
