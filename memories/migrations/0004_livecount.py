"""Live-record counters per workspace, project and account, kept by statement triggers."""

from django.db import migrations, models

def _upsert(deltas: str) -> str:
    """Add the live-record deltas of one statement to the three scopes' rows, in scope order."""
    return f"""
        WITH deltas AS ({deltas})
        INSERT INTO memories_livecount AS c (scope, records)
        SELECT scope, sum(d) FROM (
            SELECT 'w:' || workspace_id AS scope, d FROM deltas
            UNION ALL SELECT 'p:' || project_id, d FROM deltas
            UNION ALL SELECT 'a:' || account_id, d FROM deltas
        ) s
        GROUP BY scope HAVING sum(d) <> 0
        ORDER BY scope
        ON CONFLICT (scope) DO UPDATE SET records = c.records + EXCLUDED.records;"""


_ADDED = "SELECT workspace_id, project_id, account_id, 1 AS d FROM new_rows WHERE forgotten_at IS NULL"
_REMOVED = "SELECT workspace_id, project_id, account_id, -1 AS d FROM old_rows WHERE forgotten_at IS NULL"

# Each branch names only the transition tables its operation has (plpgsql plans a statement
# when it first runs it, so the others are never parsed).
APPLY = f"""
CREATE FUNCTION mmw_live_counts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        DELETE FROM memories_livecount;
    ELSIF TG_OP = 'INSERT' THEN {_upsert(_ADDED)}
    ELSIF TG_OP = 'UPDATE' THEN {_upsert(_ADDED + " UNION ALL " + _REMOVED)}
    ELSE {_upsert(_REMOVED)}
    END IF;
    RETURN NULL;
END $$;
"""
TRIGGERS = r"""
CREATE TRIGGER mmw_live_counts_insert AFTER INSERT ON memories_memory
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mmw_live_counts();
CREATE TRIGGER mmw_live_counts_update AFTER UPDATE ON memories_memory
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION mmw_live_counts();
CREATE TRIGGER mmw_live_counts_delete AFTER DELETE ON memories_memory
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION mmw_live_counts();
CREATE TRIGGER mmw_live_counts_truncate AFTER TRUNCATE ON memories_memory
    FOR EACH STATEMENT EXECUTE FUNCTION mmw_live_counts();
"""
BACKFILL = r"""
INSERT INTO memories_livecount (scope, records)
SELECT 'w:' || workspace_id, count(*) FROM memories_memory WHERE forgotten_at IS NULL GROUP BY workspace_id
UNION ALL
SELECT 'p:' || project_id, count(*) FROM memories_memory WHERE forgotten_at IS NULL GROUP BY project_id
UNION ALL
SELECT 'a:' || account_id, count(*) FROM memories_memory WHERE forgotten_at IS NULL GROUP BY account_id;
"""
DROP = r"""
DROP TRIGGER IF EXISTS mmw_live_counts_insert ON memories_memory;
DROP TRIGGER IF EXISTS mmw_live_counts_update ON memories_memory;
DROP TRIGGER IF EXISTS mmw_live_counts_delete ON memories_memory;
DROP TRIGGER IF EXISTS mmw_live_counts_truncate ON memories_memory;
DROP FUNCTION IF EXISTS mmw_live_counts();
"""


class Migration(migrations.Migration):
    dependencies = [("memories", "0003_expiry_index")]

    operations = [
        migrations.CreateModel(
            name="LiveCount",
            fields=[
                ("scope", models.CharField(max_length=64, primary_key=True, serialize=False)),
                ("records", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunSQL(APPLY + TRIGGERS + BACKFILL, DROP),
    ]
