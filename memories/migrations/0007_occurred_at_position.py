"""``occurred_at`` (when the fact happened; time filters and ordering use it) and ``position``
(a record's order within its ``source_id``) on memory records.

``occurred_at`` of existing rows is their ``created_at`` (what a write without it gets). Cheap on
a big table: the column is added nullable (no rewrite), filled by one SQL ``UPDATE``, then made
NOT NULL through a ``CHECK ... NOT VALID`` + ``VALIDATE`` (PostgreSQL then sets NOT NULL without
a second scan under an exclusive lock: ``VALIDATE`` holds only a SHARE UPDATE EXCLUSIVE lock).
The index is built after the fill, once. Self-contained SQL: no application code.
"""

from django.db import migrations, models

FILL = """
UPDATE memories_memory SET occurred_at = created_at WHERE occurred_at IS NULL;
ALTER TABLE memories_memory ADD CONSTRAINT memory_occurred_at_not_null CHECK (occurred_at IS NOT NULL) NOT VALID;
ALTER TABLE memories_memory VALIDATE CONSTRAINT memory_occurred_at_not_null;
ALTER TABLE memories_memory ALTER COLUMN occurred_at SET NOT NULL;
ALTER TABLE memories_memory DROP CONSTRAINT memory_occurred_at_not_null;
"""
UNFILL = "ALTER TABLE memories_memory ALTER COLUMN occurred_at DROP NOT NULL;"


class Migration(migrations.Migration):
    dependencies = [("memories", "0006_repair_out_of_bounds_values")]

    operations = [
        migrations.AddField(model_name="memory", name="occurred_at", field=models.DateTimeField(null=True)),
        migrations.AddField(
            model_name="memory", name="position", field=models.PositiveIntegerField(blank=True, null=True)
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FILL, UNFILL)],
            state_operations=[
                migrations.AlterField(model_name="memory", name="occurred_at", field=models.DateTimeField())
            ],
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.CheckConstraint(
                condition=models.Q(("position__isnull", True), ("position__lte", 1_000_000_000), _connector="OR"),
                name="memory_position_bounded",
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=models.Index(
                condition=models.Q(("forgotten_at__isnull", True)),
                fields=["workspace", "occurred_at"],
                name="memory_ws_occurred",
            ),
        ),
    ]
