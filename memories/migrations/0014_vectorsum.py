"""Each workspace's background direction for the relevance floor (``VectorSum``, issue #17).

``memories_vectorsum`` holds, per (workspace, embedding model), the sum of the vectors of the
live shared records (visibility project/org, not forgotten, with a vector): what ``TermStat``
counts, so it reveals nothing a caller could not read. ``mmw_vector_sums`` keeps it in the
writer's transaction, as ``mmw_term_stats`` keeps ``TermStat``: an insert adds the new rows'
vectors, a delete subtracts the old rows', an update subtracts then adds only the rows whose
vector, model, workspace, visibility or forgetting changed (a vector arriving after the insert,
a forget, a move to another workspace), so the many updates that touch none of them (access
times, statuses) write nothing. The rows of one statement's (workspace, model) groups are taken
in sorted order within each phase; an update subtracts, then adds, so two updates moving records
between the same groups in opposite directions can deadlock (docs/search.md). A group that
reaches 0 records is dropped. Existing records are summed once here (one scan of the table).
"""

import pgvector.django
from django.db import migrations, models

_COUNTED = (
    "forgotten_at IS NULL AND visibility IN ('project', 'org')"
    " AND embedding IS NOT NULL AND embedding_model IS NOT NULL"
)
_TRACKED = "(workspace_id, embedding_model, visibility, forgotten_at IS NULL, embedding)"


def _groups(rows: str) -> str:
    return (
        f"SELECT workspace_id, embedding_model AS model, sum(embedding) AS total, count(*) AS docs"
        f" FROM {rows} WHERE {_COUNTED} GROUP BY workspace_id, embedding_model"
    )


def _add(rows: str) -> str:
    return f"""
        INSERT INTO memories_vectorsum AS s (workspace_id, model, total, docs)
        SELECT workspace_id, model, total, docs FROM ({_groups(rows)}) AS g ORDER BY workspace_id, model
        ON CONFLICT (workspace_id, model) DO UPDATE SET total = s.total + EXCLUDED.total, docs = s.docs + EXCLUDED.docs;"""


def _subtract(rows: str) -> str:
    return f"""
        WITH g AS ({_groups(rows)}),
        locked AS (
            SELECT s.id FROM memories_vectorsum s JOIN g USING (workspace_id, model)
            ORDER BY s.workspace_id, s.model FOR UPDATE OF s
        )
        UPDATE memories_vectorsum s SET total = s.total - g.total, docs = s.docs - g.docs
        FROM g WHERE s.id IN (SELECT id FROM locked) AND s.workspace_id = g.workspace_id AND s.model = g.model;
        DELETE FROM memories_vectorsum WHERE docs <= 0 AND workspace_id IN (SELECT workspace_id FROM {rows});"""


# An update's rows that changed what the sums count: the old and the new version of each.
_CHANGED_OLD = (
    f"(SELECT o.* FROM old_rows o JOIN new_rows n USING (id)"
    f" WHERE ROW{_TRACKED.replace('(', '(o.', 1).replace(', ', ', o.')} IS DISTINCT FROM"
    f" ROW{_TRACKED.replace('(', '(n.', 1).replace(', ', ', n.')}) AS changed_old"
)
_CHANGED_NEW = _CHANGED_OLD.replace("SELECT o.*", "SELECT n.*").replace("AS changed_old", "AS changed_new")

VECTOR_SUMS = f"""
CREATE FUNCTION mmw_vector_sums() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM memories_vectorsum;
    ELSIF TG_OP = 'INSERT' THEN {_add("new_rows")}
    ELSIF TG_OP = 'UPDATE' THEN {_subtract(_CHANGED_OLD)} {_add(_CHANGED_NEW)}
    ELSE {_subtract("old_rows")}
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER mmw_vector_sums_insert AFTER INSERT ON memories_memory
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mmw_vector_sums();
CREATE TRIGGER mmw_vector_sums_update AFTER UPDATE ON memories_memory
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mmw_vector_sums();
CREATE TRIGGER mmw_vector_sums_delete AFTER DELETE ON memories_memory
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION mmw_vector_sums();
CREATE TRIGGER mmw_vector_sums_truncate AFTER TRUNCATE ON memories_memory
    FOR EACH STATEMENT EXECUTE FUNCTION mmw_vector_sums();

INSERT INTO memories_vectorsum (workspace_id, model, total, docs)
SELECT workspace_id, model, total, docs FROM ({_groups("memories_memory")}) AS existing;
"""
DROP = """
DROP TRIGGER IF EXISTS mmw_vector_sums_insert ON memories_memory;
DROP TRIGGER IF EXISTS mmw_vector_sums_update ON memories_memory;
DROP TRIGGER IF EXISTS mmw_vector_sums_delete ON memories_memory;
DROP TRIGGER IF EXISTS mmw_vector_sums_truncate ON memories_memory;
DROP FUNCTION IF EXISTS mmw_vector_sums();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("memories", "0013_termstat_unshared_lexemes"),
    ]

    operations = [
        migrations.CreateModel(
            name="VectorSum",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("model", models.CharField(max_length=128)),
                ("total", pgvector.django.VectorField()),
                ("docs", models.BigIntegerField(default=0)),
                (
                    "workspace",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=models.deletion.DO_NOTHING,
                        related_name="+",
                        to="accounts.workspace",
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("workspace", "model"), name="vectorsum_unique")],
            },
        ),
        migrations.RunSQL(VECTOR_SUMS, DROP),
    ]
