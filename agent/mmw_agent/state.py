"""The agent's durable state: one SQLite file in the state dir.

- ``queue``: writes (``remember``, ``forget``) made while the server was unreachable, in order,
  each with its idempotency key. A row is committed before the tool answers, so a killed agent
  loses none; it is replayed (oldest first) once the server answers again.
- ``files``: per session file, how far the upload got (byte offset of the last complete line
  sent, the next turn position, a fingerprint of the file's head to notice a rewrite).
- ``kv``: consent, last contact, last error, counters.

Every call opens its own connection (WAL, ``synchronous=FULL``), so threads and processes (the
stdio server's background sync, a ``mmw-agent sync`` in a terminal) can share the file.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmw_agent import config

SCHEMA = """
CREATE TABLE IF NOT EXISTS queue (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    created_at REAL NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    result TEXT,
    done_at REAL
);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY,
    client TEXT NOT NULL,
    session_id TEXT NOT NULL,
    offset INTEGER NOT NULL DEFAULT 0,
    next_position INTEGER NOT NULL DEFAULT 0,
    head TEXT NOT NULL DEFAULT '',
    session_put INTEGER NOT NULL DEFAULT 0,
    turns_uploaded INTEGER NOT NULL DEFAULT 0,
    turns_failed INTEGER NOT NULL DEFAULT 0,
    unknown_lines INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    updated_at REAL
);
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def db_path() -> Path:
    return config.state_dir() / "state.sqlite3"


@contextmanager
def connect() -> Iterator[sqlite3.Connection]:
    """One transaction: committed on success, rolled back on error, closed after."""
    path = db_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.executescript(SCHEMA)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    finally:
        conn.close()


# --- key/value -----------------------------------------------------------------------------


def get(key: str, default: Any = None) -> Any:
    with connect() as conn:
        row = conn.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
    return json.loads(row["value"]) if row is not None else default


def put(key: str, value: Any) -> None:
    with connect() as conn:
        conn.execute(
            "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )


def note_contact(*, ok: bool, error: str | None = None) -> None:
    """Record whether the server answered just now (and the error if it did not). An answer clears
    the last error when it was about reaching the server (unreachable, the key refused): it no
    longer holds. An error about data (a refused write, a failed upload) stays until replaced."""
    now = time.time()
    with connect() as conn:
        values: list[tuple[str, Any]] = [("reachable", ok)]
        if ok:
            values.append(("last_contact", now))
            conn.execute("DELETE FROM kv WHERE key = 'last_error' AND json_extract(value, '$.kind') = 'contact'")
        else:
            values.append(("last_error", {"at": now, "message": error or "unreachable", "kind": "contact"}))
        for key, value in values:
            conn.execute(
                "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, json.dumps(value)),
            )


def note_error(message: str) -> None:
    put("last_error", {"at": time.time(), "message": message, "kind": "data"})


# --- the write queue -----------------------------------------------------------------------


@dataclass(frozen=True)
class QueuedWrite:
    id: int
    tool: str
    arguments: dict[str, Any]
    idempotency_key: str
    created_at: float
    attempts: int


def new_idempotency_key() -> str:
    return f"mmw-agent-{uuid.uuid4()}"


def enqueue(tool: str, arguments: dict[str, Any], idempotency_key: str) -> int:
    """Store one write; returns its local id. Committed (fsync'd) when this returns."""
    with connect() as conn:
        cur = conn.execute(
            "INSERT INTO queue (tool, arguments, idempotency_key, created_at) VALUES (?, ?, ?, ?)",
            (tool, json.dumps(arguments), idempotency_key, time.time()),
        )
        return int(cur.lastrowid or 0)


def pending_writes() -> list[QueuedWrite]:
    with connect() as conn:
        rows = conn.execute("SELECT * FROM queue WHERE state = 'pending' ORDER BY id").fetchall()
    return [
        QueuedWrite(
            id=row["id"],
            tool=row["tool"],
            arguments=json.loads(row["arguments"]),
            idempotency_key=row["idempotency_key"],
            created_at=row["created_at"],
            attempts=row["attempts"],
        )
        for row in rows
    ]


def finish_write(write_id: int, *, state: str, result: str) -> None:
    """Mark a queued write replayed (``done``) or answered with an error by the server (``failed``)."""
    with connect() as conn:
        conn.execute(
            "UPDATE queue SET state = ?, result = ?, done_at = ?, attempts = attempts + 1 WHERE id = ?",
            (state, result, time.time(), write_id),
        )


def retry_later(write_id: int, error: str) -> None:
    with connect() as conn:
        conn.execute("UPDATE queue SET attempts = attempts + 1, last_error = ? WHERE id = ?", (error, write_id))


def queue_counts() -> dict[str, int]:
    with connect() as conn:
        rows = conn.execute("SELECT state, count(*) AS n FROM queue GROUP BY state").fetchall()
    counts = {"pending": 0, "done": 0, "failed": 0}
    counts.update({row["state"]: row["n"] for row in rows})
    return counts


def failed_writes(limit: int = 5) -> list[dict[str, Any]]:
    with connect() as conn:
        rows = conn.execute(
            "SELECT id, tool, result FROM queue WHERE state = 'failed' ORDER BY id DESC LIMIT ?", (limit,)
        ).fetchall()
    return [{"local_id": row["id"], "tool": row["tool"], "error": row["result"]} for row in rows]


# --- per-file upload progress --------------------------------------------------------------


def file_progress(path: str) -> dict[str, Any] | None:
    with connect() as conn:
        row = conn.execute("SELECT * FROM files WHERE path = ?", (path,)).fetchone()
    return dict(row) if row is not None else None


def save_progress(path: str, **fields: Any) -> None:
    fields["updated_at"] = time.time()
    with connect() as conn:
        exists = conn.execute("SELECT 1 FROM files WHERE path = ?", (path,)).fetchone()
        if exists is None:
            conn.execute("INSERT INTO files (path, client, session_id) VALUES (?, ?, ?)", (path, "", ""))
        assignments = ", ".join(f"{name} = ?" for name in fields)
        conn.execute(f"UPDATE files SET {assignments} WHERE path = ?", (*fields.values(), path))  # noqa: S608


def all_progress() -> list[dict[str, Any]]:
    with connect() as conn:
        return [dict(row) for row in conn.execute("SELECT * FROM files ORDER BY path").fetchall()]
