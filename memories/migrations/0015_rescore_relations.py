"""Judge the stored relations again with the archivist's rules of issue #36 (``manage.py
archivist_rescore`` does the same on demand).

Statuses now read ``contradicts`` edges: a record with one towards another live record is in
``conflict``. Edges written by the earlier rules — every pair of template notes that differed in
an identifier was a "contradiction" with score 1.0 — would put consistent records in conflict, so
they are judged again here: re-scored, changed in kind or removed, and each record brought back
within the per-kind cap. A database without edges does nothing.
"""

from typing import Any

from django.db import migrations


def rescore(apps: Any, schema_editor: Any) -> None:
    # The rules live in code (memories.archivist); the statements read and write only columns
    # this migration's state has (ids, contents, keys, versions, vectors, edges).
    from memories.archivist.rescore import rescore_relations

    rescore_relations()


class Migration(migrations.Migration):
    dependencies = [("memories", "0014_vectorsum")]

    operations = [migrations.RunPython(rescore, migrations.RunPython.noop)]
