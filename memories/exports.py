"""The memory browser's download of its current filter, as JSON Lines or CSV: one presented
record (``presenters.Record``) per line or row, rendered lazily so the response streams.
CSV cells are formula-escaped by ``mmw.csv_safe``: an agent wrote the content, and opening the
file must not run it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from memories.presenters import Record
from mmw import csv_safe

FORMATS = {"jsonl": "application/x-ndjson; charset=utf-8", "csv": "text/csv; charset=utf-8"}
CSV_COLUMNS = (
    "id",
    "created_at",
    "occurred_at",
    "workspace",
    "scope",
    "visibility",
    "status",
    "fact_key",
    "version",
    "is_latest",
    "source",
    "source_id",
    "confidence",
    "importance",
    "tags",
    "author",
    "device",
    "expires_at",
    "content",
)


def _csv_values(record: Record) -> list[object]:
    flat: dict[str, object] = {
        **record,
        "author": record["author"].get("user"),
        "device": record["author"].get("device_label"),
    }
    return [flat.get(name) for name in CSV_COLUMNS]


def csv_lines(records: Iterable[Record]) -> Iterator[str]:
    """The header row, then one row per record, formula-escaped (``mmw.csv_safe``)."""
    return csv_safe.lines(CSV_COLUMNS, (_csv_values(r) for r in records))


def jsonl_lines(records: Iterable[Record]) -> Iterator[str]:
    """One JSON object per line: the record exactly as search and get present it."""
    for record in records:
        yield json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


def lines(fmt: str, records: Iterable[Record]) -> Iterator[str]:
    """The download's lines in ``fmt`` (a key of ``FORMATS``)."""
    return csv_lines(records) if fmt == "csv" else jsonl_lines(records)
