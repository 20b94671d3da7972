"""Transaction-scoped PostgreSQL advisory locks, named by strings."""

from __future__ import annotations

import zlib

from django.db import connection


def advisory_xact_lock(namespace: str, key: str) -> None:
    """Take ``pg_advisory_xact_lock`` on (``namespace``, ``key``) until the transaction ends.

    Both names are hashed to 32 bits (CRC-32), so unrelated keys may share a lock now and then:
    that only serialises them, it never lets two holders of one key in together."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(%s, %s)",
            [zlib.crc32(namespace.encode()) & 0x7FFFFFFF, _signed32(zlib.crc32(key.encode()))],
        )


def _signed32(value: int) -> int:
    return value - (1 << 32) if value >= (1 << 31) else value


def try_advisory_xact_lock(namespace: str, key: str) -> bool:
    """``pg_try_advisory_xact_lock`` on (``namespace``, ``key``): True when taken (held until the
    transaction ends), False at once when another transaction holds it."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(%s, %s)",
            [zlib.crc32(namespace.encode()) & 0x7FFFFFFF, _signed32(zlib.crc32(key.encode()))],
        )
        row = cursor.fetchone()
    return bool(row and row[0])
