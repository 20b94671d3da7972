"""pgvector and the immutable SQL functions the memory table's generated column needs.

The embedded PostgreSQL ships no ``unaccent`` or ``pg_trgm`` (only plpgsql and vector), so
accents are folded with ``translate()`` (immutable, built in) over the Latin letters of the
languages MMW serves, plus Russian ё. The document uses the ``simple`` configuration (no
stemmer, no stop words), so it behaves the same for every language.
"""

from django.db import migrations
from pgvector.django import VectorExtension

FUNCTIONS = r"""
CREATE OR REPLACE FUNCTION mmw_unaccent(text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    AS $$ SELECT translate(lower($1),
        'àáâãäåāăąçćčďèéêëēėęěìíîïīįłñńňòóôõöøōőœŕřśšşťùúûüūůűųýÿžźżё',
        'aaaaaaaaacccdeeeeeeeeiiiiiilnnnooooooooorrssstuuuuuuuuyyzzzе') $$;

CREATE OR REPLACE FUNCTION mmw_search_document(content text, fact_key text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
        SELECT setweight(to_tsvector('simple'::regconfig, mmw_unaccent(lower(coalesce(fact_key, '')))), 'A')
            || setweight(to_tsvector('simple'::regconfig, mmw_unaccent(lower(coalesce(content, '')))), 'B')
    $$;
"""

DROP = """
DROP FUNCTION IF EXISTS mmw_search_document(text, text);
DROP FUNCTION IF EXISTS mmw_unaccent(text);
"""


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [
        VectorExtension(),
        migrations.RunSQL(FUNCTIONS, DROP),
    ]
