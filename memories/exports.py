"""The memory browser's download of its current filter, as JSON Lines or CSV: one presented
record (``presenters.Record``) per line or row, rendered lazily so the response streams.

CSV cells that a spreadsheet would read as a formula (starting with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return) are prefixed with ``'`` (OWASP's CSV-injection advice): an agent
wrote the content, and opening the file must not run it."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator

from memories.presenters import Record

FORMATS = {"jsonl": "application/x-ndjson; charset=utf-8", "csv": "text/csv; charset=utf-8"}
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
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


def csv_cell(value: object) -> str:
    """A value as one CSV cell's text, formula-escaped."""
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, list):
        text = ",".join(str(v) for v in value)
    else:
        text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _csv_values(record: Record) -> list[str]:
    author = record["author"]
    flat: dict[str, object] = {
        **record,
        "author": author.get("user"),
        "device": author.get("device_label"),
    }
    return [csv_cell(flat.get(name)) for name in CSV_COLUMNS]


def csv_lines(records: Iterable[Record]) -> Iterator[str]:
    """The header row, then one row per record (RFC 4180 quoting, CRLF line ends)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(CSV_COLUMNS)
    yield flush()
    for record in records:
        writer.writerow(_csv_values(record))
        yield flush()


def jsonl_lines(records: Iterable[Record]) -> Iterator[str]:
    """One JSON object per line: the record exactly as search and get present it."""
    for record in records:
        yield json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


def lines(fmt: str, records: Iterable[Record]) -> Iterator[str]:
    """The download's lines in ``fmt`` (a key of ``FORMATS``)."""
    return csv_lines(records) if fmt == "csv" else jsonl_lines(records)
