"""Streaming answers shared by the data export and the ledger's CSV (ground floor: no app).

``as_async`` serves a synchronous generator chunk by chunk under ASGI (Django would otherwise read
all of it into a list first); ``csv_chunks`` renders rows as CSV bytes a few hundred rows at a
time."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Iterable, Iterator

from asgiref.sync import sync_to_async

CSV_ROWS_PER_CHUNK = 500


async def as_async(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """Each step runs in the request's thread (``thread_sensitive``), which holds the cursor."""
    sentinel = b""
    step = sync_to_async(lambda: next(chunks, sentinel), thread_sensitive=True)
    while chunk := await step():
        yield chunk


def csv_chunks(rows: Iterable[list[str]]) -> Iterator[bytes]:
    """``rows`` as UTF-8 CSV (RFC 4180 quoting, CRLF line ends), in chunks of rows. Cells are
    written as given: escaping them for spreadsheets is the presenter's job."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for n, row in enumerate(rows, start=1):
        writer.writerow(row)
        if n % CSV_ROWS_PER_CHUNK == 0:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode("utf-8")
