# The webhook models move here from datarights (issue #39) in Django's migration state only: their
# tables were created by datarights.0001 and keep their names (Meta.db_table), so no statement
# runs against them — safe on a live database, no lock, no copy. datarights.0004 removes them from
# datarights' state after this migration adds them here. Their content types are renamed
# datarights.* -> webhooks.* so the permissions granted on them (the Support group) and the admin's
# history follow the models instead of being left on stale rows.

import django.contrib.postgres.fields
import django.db.models.deletion
import uuid
from django.conf import settings
from django.db import migrations, models

MODELS = ("webhookendpoint", "webhookdelivery")


def rename_content_types(apps, schema_editor, old="datarights", new="webhooks"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MODELS:
        # A fresh database has neither row yet (post_migrate creates them); one that already has the
        # new row keeps it and the old one is left for remove_stale_contenttypes.
        if not ContentType.objects.using(db).filter(app_label=new, model=model).exists():
            ContentType.objects.using(db).filter(app_label=old, model=model).update(app_label=new)


def restore_content_types(apps, schema_editor):
    rename_content_types(apps, schema_editor, old="webhooks", new="datarights")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("accounts", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("datarights", "0003_import_job"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="WebhookEndpoint",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("url", models.URLField(max_length=2000)),
                        ("secret", models.CharField(max_length=64)),
                        ("events", django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=32), size=None)),
                        ("include_content", models.BooleanField(default=False)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("cursor", models.DateTimeField()),
                        ("is_active", models.BooleanField(default=True)),
                        ("disabled_at", models.DateTimeField(blank=True, null=True)),
                        ("disabled_reason", models.CharField(blank=True, max_length=200)),
                        ("consecutive_failures", models.PositiveIntegerField(default=0)),
                        ("created_by", models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="+", to=settings.AUTH_USER_MODEL)),
                        ("project", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+", to="accounts.project")),
                    ],
                    options={"db_table": "datarights_webhookendpoint"},
                ),
                migrations.CreateModel(
                    name="WebhookDelivery",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("event_id", models.UUIDField(default=uuid.uuid4, unique=True)),
                        ("event_key", models.CharField(max_length=200)),
                        ("event_type", models.CharField(max_length=32)),
                        ("payload", models.JSONField()),
                        ("status", models.CharField(choices=[("pending", "pending"), ("succeeded", "succeeded"), ("gave_up", "gave up")], default="pending", max_length=16)),
                        ("attempts", models.PositiveIntegerField(default=0)),
                        ("next_attempt_at", models.DateTimeField()),
                        ("last_status_code", models.PositiveIntegerField(blank=True, null=True)),
                        ("last_error", models.CharField(blank=True, max_length=300)),
                        ("response_ms", models.PositiveIntegerField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("delivered_at", models.DateTimeField(blank=True, null=True)),
                        ("endpoint", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="deliveries", to="webhooks.webhookendpoint")),
                    ],
                    options={
                        "db_table": "datarights_webhookdelivery",
                        "indexes": [models.Index(condition=models.Q(("status", "pending")), fields=["next_attempt_at"], name="webhook_delivery_due"), models.Index(fields=["endpoint", "-created_at"], name="webhook_delivery_log")],
                        "constraints": [models.UniqueConstraint(fields=("endpoint", "event_key"), name="webhook_delivery_once")],
                    },
                ),
            ],
        ),
        migrations.RunPython(rename_content_types, restore_content_types, elidable=True),
    ]
