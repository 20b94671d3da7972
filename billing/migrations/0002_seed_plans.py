"""Seed the Free, Pro and Team plans (a frozen copy of billing/seeds.py at the time of writing),
and give every existing account its subscription row on the Free plan."""

from django.db import migrations

PLANS = [
    {"code": "free", "name": "Free", "monthly_price_cents": 0, "records_per_project": 1000,
     "projects_per_account": 3, "calls_per_minute_per_key": 60, "calls_per_minute_per_project": 120,
     "organization_features": False, "is_default": True, "sort_order": 0},
    {"code": "pro", "name": "Pro", "monthly_price_cents": 1900, "records_per_project": 50000,
     "projects_per_account": 20, "calls_per_minute_per_key": 300, "calls_per_minute_per_project": 600,
     "organization_features": False, "is_default": False, "sort_order": 10},
    {"code": "team", "name": "Team", "monthly_price_cents": 9900, "records_per_project": 500000,
     "projects_per_account": 100, "calls_per_minute_per_key": 600, "calls_per_minute_per_project": 3000,
     "organization_features": True, "is_default": False, "sort_order": 20},
]


def seed(apps, schema_editor):
    Plan = apps.get_model("billing", "Plan")
    Subscription = apps.get_model("billing", "Subscription")
    Account = apps.get_model("accounts", "Account")
    db = schema_editor.connection.alias
    for row in PLANS:
        Plan.objects.using(db).get_or_create(code=row["code"], defaults=row)
    free = Plan.objects.using(db).get(code="free")
    for account in Account.objects.using(db).filter(subscription__isnull=True):
        Subscription.objects.using(db).create(account=account, plan=free, state="active")


def unseed(apps, schema_editor):
    apps.get_model("billing", "Subscription").objects.using(schema_editor.connection.alias).all().delete()
    apps.get_model("billing", "Plan").objects.using(schema_editor.connection.alias).filter(
        code__in=[row["code"] for row in PLANS]
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("billing", "0001_initial")]

    operations = [migrations.RunPython(seed, unseed)]
