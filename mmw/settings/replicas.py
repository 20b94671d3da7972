"""Read replicas (docs/scale.md), imported by ``mmw.settings.base`` once ``DATABASES`` is set.

``DATABASE_REPLICA_URLS`` (comma-separated PostgreSQL URLs of streaming hot standbys of the
primary; none by default) adds the aliases ``replica1``, ``replica2``, ... and ``mmw.replicas``'
router; without it ``DATABASE_ROUTERS`` stays empty and every query goes to the primary."""

from __future__ import annotations

from mmw import replicas
from mmw.env import env_float, env_list
from mmw.settings.base import DATABASES

DATABASE_REPLICA_URLS = env_list("DATABASE_REPLICA_URLS", [])
_POOLED = "pool" in DATABASES["default"].get("OPTIONS", {})  # the web process pools its replicas' connections too
DATABASES.update(replicas.replica_databases(DATABASES["default"], DATABASE_REPLICA_URLS, pooled=_POOLED))
DATABASE_ROUTERS = ["mmw.replicas.ReplicaRouter"] if DATABASE_REPLICA_URLS else []
# A replica more than this many seconds behind the primary is not read from.
MMW_REPLICA_MAX_LAG = env_float("MMW_REPLICA_MAX_LAG", 5.0, minimum=0.0)
# Seconds a process reuses what a replica said of itself (serving, replay position, lag).
MMW_REPLICA_CHECK_SECONDS = env_float("MMW_REPLICA_CHECK_SECONDS", 1.0, minimum=0.0)
# Seconds a replica that failed (refused, timed out, broke mid-read) is left out before it is asked again.
MMW_REPLICA_RETRY_SECONDS = env_float("MMW_REPLICA_RETRY_SECONDS", 5.0, minimum=0.0)
# Seconds a caller's last write position is kept (read-your-writes): longer than any lag a
# replica is read at, so a write older than this is on every replica in use.
MMW_REPLICA_LSN_SECONDS = env_float("MMW_REPLICA_LSN_SECONDS", 60.0, minimum=1.0)
