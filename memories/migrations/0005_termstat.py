"""Per-project document frequencies of keyword lexemes (the keyword ranker's IDF), kept by
statement triggers on ``memories_memory``: only live records of visibility project/org count."""

from django.db import migrations, models

_SHARED = "forgotten_at IS NULL AND visibility IN ('project', 'org')"


def _rows(table: str, sign: int) -> str:
    """One row per (record, lexeme) of a transition table, plus the record itself under ''."""
    return (
        f"SELECT project_id, lexeme AS term, {sign} AS d FROM {table},"
        f" unnest(tsvector_to_array(search_document)) AS lexeme WHERE {_SHARED}"
        f" UNION ALL SELECT project_id, '' AS term, {sign} AS d FROM {table} WHERE {_SHARED}"
    )


def _upsert(deltas: str) -> str:
    return f"""
        WITH deltas AS ({deltas})
        INSERT INTO memories_termstat AS s (project_id, term, docs)
        SELECT project_id, term, sum(d) FROM deltas
        GROUP BY project_id, term HAVING sum(d) <> 0
        ORDER BY project_id, term
        ON CONFLICT (project_id, term) DO UPDATE SET docs = s.docs + EXCLUDED.docs;"""


APPLY = f"""
CREATE FUNCTION mmw_term_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM memories_termstat;
    ELSIF TG_OP = 'INSERT' THEN {_upsert(_rows("new_rows", 1))}
    ELSIF TG_OP = 'UPDATE' THEN {_upsert(_rows("new_rows", 1) + " UNION ALL " + _rows("old_rows", -1))}
    ELSE {_upsert(_rows("old_rows", -1))}
        DELETE FROM memories_termstat
        WHERE docs = 0 AND project_id IN (SELECT DISTINCT project_id FROM old_rows);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER mmw_term_stats_insert AFTER INSERT ON memories_memory
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mmw_term_stats();
CREATE TRIGGER mmw_term_stats_update AFTER UPDATE ON memories_memory
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mmw_term_stats();
CREATE TRIGGER mmw_term_stats_delete AFTER DELETE ON memories_memory
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION mmw_term_stats();
CREATE TRIGGER mmw_term_stats_truncate AFTER TRUNCATE ON memories_memory
    FOR EACH STATEMENT EXECUTE FUNCTION mmw_term_stats();

INSERT INTO memories_termstat (project_id, term, docs)
SELECT project_id, term, sum(d) FROM ({_rows("memories_memory", 1)}) AS existing
GROUP BY project_id, term;
"""
DROP = """
DROP TRIGGER IF EXISTS mmw_term_stats_insert ON memories_memory;
DROP TRIGGER IF EXISTS mmw_term_stats_update ON memories_memory;
DROP TRIGGER IF EXISTS mmw_term_stats_delete ON memories_memory;
DROP TRIGGER IF EXISTS mmw_term_stats_truncate ON memories_memory;
DROP FUNCTION IF EXISTS mmw_term_stats();
"""


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial"), ("memories", "0004_livecount")]

    operations = [
        migrations.CreateModel(
            name="TermStat",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("term", models.TextField(db_collation="C")),
                ("docs", models.BigIntegerField(default=0)),
                (
                    "project",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=models.deletion.DO_NOTHING,
                        related_name="+",
                        to="accounts.project",
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("project", "term"), name="termstat_unique")],
            },
        ),
        migrations.RunSQL(APPLY, DROP),
    ]
