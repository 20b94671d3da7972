"""Every live record's words are listed in ``TermStat``, so the keyword ranker can write a prefix
as the words it stands for (``memories.search.term_stats``, issue #19).

A prefix term (``inspir:*``) makes the GIN index collect every posting of every word it covers
into a bitmap before anything else: ~20 ms for a word in 10 % of 1M records, most of a broad
search's keyword statement. The same words written out (``'inspiring' | 'inspired' | …``) are
ordinary index entries, intersected with the recency window inside the index (7 ms instead of 33
for the statement). To write a prefix out exactly, every word a readable record may hold must be
known, and the shared counts (visibility project/org, ``search_document``) miss two kinds:

- the words of live records that are not shared (drafts, department records);
- the words of ``context_document`` (a record's previous record in its sequence).

``mmw_term_stats`` now also counts those, per project, under ``'!' || lexeme`` (``!`` sorts before
every letter, digit and ``#``, so no prefix range of words or buckets reaches them). They never
weigh anything: the IDF reads the shared counts only, so the weights still reveal nothing a
caller could not read. Existing records are counted once here.
"""

import importlib

from django.db import migrations

_previous = importlib.import_module("memories.migrations.0012_memory_recency_document")

# The words the shared counts miss: a shared record's context, an unshared one's every word.
_UNSHARED = (
    "CASE WHEN visibility IN ('project', 'org') THEN coalesce(context_document, ''::tsvector)"
    " ELSE search_document || coalesce(context_document, ''::tsvector) END"
)


def _rows(table: str, sign: int) -> str:
    """0012's rows of a transition table (shared words and buckets, the record itself under ''),
    plus the words the shared counts miss under '!' || lexeme."""
    return (
        _previous._rows(table, sign, _previous.BOTH)
        + f" UNION ALL SELECT project_id, '!' || lexeme AS term, {sign} AS d FROM {table},"
        f" unnest(tsvector_to_array({_UNSHARED})) AS lexeme WHERE forgotten_at IS NULL"
    )


_upsert = _previous._upsert

TERM_STATS = f"""
CREATE OR REPLACE FUNCTION mmw_term_stats() RETURNS trigger LANGUAGE plpgsql AS $$
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

INSERT INTO memories_termstat AS s (project_id, term, docs)
SELECT project_id, '!' || lexeme, count(*) FROM memories_memory, unnest(tsvector_to_array({_UNSHARED})) AS lexeme
WHERE forgotten_at IS NULL
GROUP BY project_id, lexeme
ORDER BY project_id, lexeme
ON CONFLICT (project_id, term) DO UPDATE SET docs = s.docs + EXCLUDED.docs;
"""
PREVIOUS_TERM_STATS = f"""
{_previous._term_stats(_previous.BOTH)}
DELETE FROM memories_termstat WHERE term LIKE '!%';
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0012_memory_recency_document")]

    operations = [migrations.RunSQL(TERM_STATS, PREVIOUS_TERM_STATS)]
