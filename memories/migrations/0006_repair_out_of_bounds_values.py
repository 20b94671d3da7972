"""Repair values stored before the input bounds existed, so every row reads back.

- ``expires_at`` beyond 100 years after the record's creation — including times past year 9999
  in UTC, which PostgreSQL stores but psycopg cannot load (one such row made every read of its
  workspace fail) — becomes ``created_at + 100 years``: the latest expiry a write may ask for now.
  Done in SQL: Python cannot read those rows to fix them.
- Workspace names a write may no longer create (``*``, which reads take as "every workspace";
  control, bidi and other non-printable characters) are renamed: each such character becomes
  ``_``, and ``-<first 8 hex of the workspace id>`` is added when that name is taken or empty.
  The records stay in their workspace; the id (``list_workspaces``) does not change.

Self-contained on purpose: a migration must not change meaning when application code does.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

MAX_NAME = 200


def _clean(name: str) -> str:
    return "".join("_" if ch == "*" or not ch.isprintable() else ch for ch in name)


def repair_workspace_names(apps: Any, schema_editor: Any) -> None:
    Workspace = apps.get_model("accounts", "Workspace")
    for workspace in Workspace.objects.all().only("id", "project_id", "name", "public_id").iterator():
        if "*" not in workspace.name and workspace.name.isprintable():
            continue
        candidate = _clean(workspace.name).strip()
        taken = Workspace.objects.filter(project_id=workspace.project_id, name=candidate).exclude(id=workspace.id)
        if not candidate or taken.exists():
            suffix = f"-{workspace.public_id.hex[:8]}"
            candidate = f"{candidate[: MAX_NAME - len(suffix)]}{suffix}"
        Workspace.objects.filter(id=workspace.id).update(name=candidate)


REPAIR_EXPIRY = """
UPDATE memories_memory
   SET expires_at = created_at + interval '100 years'
 WHERE expires_at > created_at + interval '100 years'
"""


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0005_termstat"),
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(REPAIR_EXPIRY, reverse_sql=migrations.RunSQL.noop),
        migrations.RunPython(repair_workspace_names, reverse_code=migrations.RunPython.noop),
    ]
