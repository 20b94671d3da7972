"""Streamed downloads, shared by the data export, the memory browser's export, the audit log's
CSV and the ledger's CSV (ground floor: no app).

``download`` is the one way a surface answers with a file: text lines, batched into UTF-8 chunks,
served through ``as_async`` — under ASGI Django reads a synchronous iterator whole into memory
before sending it (``StreamingHttpResponse`` "must consume synchronous iterators"), so every
download goes through the asynchronous one; ``Content-Disposition`` names the file and
``Cache-Control: no-store`` keeps it out of shared caches."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator

from asgiref.sync import sync_to_async
from django.http import StreamingHttpResponse

LINES_PER_CHUNK = 500


async def as_async(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """Each step runs in the request's thread (``thread_sensitive``), which holds the cursor."""
    sentinel = b""
    step = sync_to_async(lambda: next(chunks, sentinel), thread_sensitive=True)
    while chunk := await step():
        yield chunk


def encoded(lines: Iterable[str], per_chunk: int = LINES_PER_CHUNK) -> Iterator[bytes]:
    """``lines`` as UTF-8, ``per_chunk`` lines to a chunk (never an empty chunk: it would end
    ``as_async``)."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= per_chunk:
            yield "".join(batch).encode("utf-8")
            batch = []
    if batch and (text := "".join(batch)):
        yield text.encode("utf-8")


def download(chunks: Iterator[bytes], *, content_type: str, filename: str) -> StreamingHttpResponse:
    """``chunks`` (non-empty bytes) as a streamed attachment named ``filename``, not cached."""
    response = StreamingHttpResponse(as_async(chunks), content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response
