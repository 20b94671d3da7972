"""Recency inside the keyword index (``memories.recency``, issue #19).

- ``mmw_recency_document(created_at)``: a record's creation time as one lexeme per level of
  nested time buckets, ``#<level>.<index>`` (an hour, then each level 8 times the last, six
  levels); ``recency_document`` stores it (a generated column: adding it rewrites the table).
- The keyword GIN indexes take it as a second column, so a word's posting list is cut to a time
  window inside the index (``memory_keyword_gin`` replaces ``memory_search_document_gin``,
  ``memory_context_gin`` replaces ``memory_context_document_gin``; a GIN index over two columns
  serves a condition on either alone).
- ``mmw_term_stats`` counts the bucket lexemes per project like words (the window is sized from
  them), and the existing records' buckets are counted once here.

The widths are written out (3600 × 8^level seconds): a later change of ``memories.recency``'s
constants needs a migration of its own; ``tests/memories/test_recency.py`` keeps both equal.
"""

import django.contrib.postgres.indexes
import django.contrib.postgres.search
from django.db import migrations, models

RECENCY = """
CREATE OR REPLACE FUNCTION mmw_recency_document(created timestamptz) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    AS $$
        SELECT array_to_tsvector(ARRAY[
            '#0.' || floor(s / 3600), '#1.' || floor(s / 28800), '#2.' || floor(s / 230400),
            '#3.' || floor(s / 1843200), '#4.' || floor(s / 14745600), '#5.' || floor(s / 117964800)])
        FROM (SELECT floor(extract(epoch FROM created)) AS s) AS t
    $$;
"""
DROP_RECENCY = "DROP FUNCTION IF EXISTS mmw_recency_document(timestamptz);"

_SHARED = "forgotten_at IS NULL AND visibility IN ('project', 'org')"


def _rows(table: str, sign: int, documents: str) -> str:
    """One row per (record, lexeme of ``documents``) of a transition table, plus the record
    itself under ''."""
    return (
        f"SELECT project_id, lexeme AS term, {sign} AS d FROM {table},"
        f" unnest(tsvector_to_array({documents})) AS lexeme WHERE {_SHARED}"
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


def _term_stats(documents: str) -> str:
    """``mmw_term_stats`` (migration 0005's statement trigger) over the lexemes of ``documents``."""
    return f"""
CREATE OR REPLACE FUNCTION mmw_term_stats() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM memories_termstat;
    ELSIF TG_OP = 'INSERT' THEN {_upsert(_rows("new_rows", 1, documents))}
    ELSIF TG_OP = 'UPDATE' THEN {_upsert(_rows("new_rows", 1, documents) + " UNION ALL " + _rows("old_rows", -1, documents))}
    ELSE {_upsert(_rows("old_rows", -1, documents))}
        DELETE FROM memories_termstat
        WHERE docs = 0 AND project_id IN (SELECT DISTINCT project_id FROM old_rows);
    END IF;
    RETURN NULL;
END $$;
"""


BOTH = "search_document || recency_document"
COUNT_BUCKETS = f"""
{_term_stats(BOTH)}
INSERT INTO memories_termstat AS s (project_id, term, docs)
SELECT project_id, lexeme, count(*) FROM memories_memory, unnest(tsvector_to_array(recency_document)) AS lexeme
WHERE {_SHARED}
GROUP BY project_id, lexeme
ORDER BY project_id, lexeme
ON CONFLICT (project_id, term) DO UPDATE SET docs = s.docs + EXCLUDED.docs;
"""
UNCOUNT_BUCKETS = f"""
{_term_stats("search_document")}
DELETE FROM memories_termstat WHERE term LIKE '#%';
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0011_verbose_names")]

    operations = [
        migrations.RunSQL(RECENCY, DROP_RECENCY),
        migrations.RemoveIndex(model_name="memory", name="memory_search_document_gin"),
        migrations.RemoveIndex(model_name="memory", name="memory_context_document_gin"),
        migrations.AddField(
            model_name="memory",
            name="recency_document",
            field=models.GeneratedField(
                db_persist=True,
                expression=models.Func(
                    models.F("created_at"),
                    function="mmw_recency_document",
                    output_field=django.contrib.postgres.search.SearchVectorField(),
                ),
                output_field=django.contrib.postgres.search.SearchVectorField(),
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                fields=["search_document", "recency_document"], name="memory_keyword_gin"
            ),
        ),
        migrations.AddIndex(
            model_name="memory",
            index=django.contrib.postgres.indexes.GinIndex(
                condition=models.Q(("context_document__isnull", False)),
                fields=["context_document", "recency_document"],
                name="memory_context_gin",
            ),
        ),
        migrations.RunSQL(COUNT_BUCKETS, UNCOUNT_BUCKETS),
    ]
