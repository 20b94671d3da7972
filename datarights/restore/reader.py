"""Reading an import file: its lines as JSON objects, with every cost bounded *while* reading.

A file (gzip or plain JSON Lines) is read in chunks; gzip is inflated a bounded piece at a time
(``zlib``'s ``max_length``), so a few kilobytes that inflate to gigabytes never become more than
``Limits.max_bytes`` of work. Bounded while reading, never after:

- ``max_bytes``: decompressed bytes of the whole file;
- ``max_lines``: lines, blank ones included (a gzip of newlines is work too);
- ``max_line_bytes``: one line (the longest valid line is well under it: docs/export-format.md);
- ``deadline``: a ``time.monotonic()`` instant after which reading stops;
- JSON nesting (``mmw.boundary.MAX_JSON_DEPTH``), checked on each decompressed line before it is
  parsed, so no line can make the parser recurse.

Every refusal is a domain error naming the bound (413 ``payload_too_large`` for a size or count,
400 ``invalid_input`` for a broken file): never a crash, never a half-read file taken for whole.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from mmw.boundary import MAX_JSON_DEPTH, json_too_deep
from mmw.errors import InvalidInput, MMWError, PayloadTooLarge

Line = dict[str, Any]

CHUNK = 64 * 1024
INFLATE_PIECE = 1024 * 1024  # bytes inflated per zlib call: a bomb is stopped a piece at a time
MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """What reading one file may cost (module docstring). ``deadline`` is absolute (monotonic)."""

    max_bytes: int = 256 * MiB
    max_lines: int = 1_000_000
    max_line_bytes: int = 1 * MiB
    deadline: float | None = None

    def describe(self) -> str:
        return (
            f"{self.max_bytes // MiB} MB decompressed, {self.max_lines:,} lines, "
            f"{self.max_line_bytes // MiB} MB per line"
        )


class TooLong(MMWError):
    """Reading went past the deadline (the job's time bound)."""

    code = "import_too_slow"
    http_status = 413


@dataclass
class Progress:
    """How far reading got: decompressed bytes and lines (blank ones included)."""

    bytes: int = 0
    lines: int = 0


def fits(upload: bytes, budget: int) -> bool:
    """Whether ``upload`` (gzip or plain) is at most ``budget`` bytes once decompressed; at most
    ``budget`` + one piece is inflated to tell. A broken file "fits": reading it fails fast."""
    if upload[:2] != b"\x1f\x8b":
        return len(upload) <= budget
    total = 0
    try:
        for piece in _inflated(iter([upload])):
            total += len(piece)
            if total > budget:
                return False
    except InvalidInput:
        return True
    return True


def chunks_of(stream: IO[bytes]) -> Iterator[bytes]:
    while chunk := stream.read(CHUNK):
        yield chunk


def _inflated(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The decompressed bytes of a gzip stream (every member), ``INFLATE_PIECE`` at a time."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    started = False  # the current member has been fed bytes
    try:
        for chunk in chunks:
            data = chunk
            while True:
                started = started or bool(data)
                piece = inflater.decompress(data, INFLATE_PIECE)
                if piece:
                    yield piece
                data = inflater.unconsumed_tail
                if inflater.eof:  # a member ended; what follows is the next member
                    # All of it is in unused_data; unconsumed_tail may still hold a copy of it when
                    # the output limit was reached in the same call (CPython's zlib), so it is dropped.
                    data = inflater.unused_data
                    inflater, started = zlib.decompressobj(16 + zlib.MAX_WBITS), False
                    if not data:
                        break
                elif not data and len(piece) < INFLATE_PIECE:
                    break  # input used up and no output held back
    except zlib.error as exc:
        raise InvalidInput(f"the file is not valid gzip ({exc})") from None
    if started and not inflater.eof:
        raise InvalidInput("the gzip file ends early: it was truncated")


def lines(stream: IO[bytes], limits: Limits, progress: Progress | None = None) -> Iterator[tuple[int, Line]]:
    """The file's non-blank lines as objects with a string ``type``, numbered from 1 (blank lines
    count). A line that is not such an object is the file's error (400, naming the line)."""
    seen = progress if progress is not None else Progress()
    source = chunks_of(stream)
    head = next(source, b"")
    rest = _prepend(head, source)
    data = _inflated(rest) if head[:2] == b"\x1f\x8b" else rest
    for number, raw in _split(data, limits, seen):
        yield number, _parse(number, raw)


def decompressed(stream: IO[bytes], limits: Limits, progress: Progress | None = None) -> Iterator[bytes]:
    """The file's bytes (gzip or plain), inflated a bounded piece at a time and counted against
    ``limits.max_bytes`` and the deadline while read (for readers of other formats than JSON
    Lines: the peers' exports of ``datarights.importers``)."""
    seen = progress if progress is not None else Progress()
    source = chunks_of(stream)
    head = next(source, b"")
    rest = _prepend(head, source)
    check = _checker(limits, seen)
    for piece in _inflated(rest) if head[:2] == b"\x1f\x8b" else rest:
        seen.bytes += len(piece)
        check()
        yield piece


def _prepend(head: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if head:
        yield head
    yield from rest


def _split(data: Iterator[bytes], limits: Limits, seen: Progress) -> Iterator[tuple[int, bytes]]:
    """Lines of ``data`` (without their newline), counting bytes and lines against ``limits``."""
    buffer = bytearray()
    check = _checker(limits, seen)
    for piece in data:
        seen.bytes += len(piece)
        check()
        start = 0
        buffer += piece
        while (end := buffer.find(b"\n", start)) >= 0:
            seen.lines += 1
            line = bytes(buffer[start:end])
            start = end + 1
            if seen.lines > limits.max_lines:
                raise PayloadTooLarge(f"the file has more than {limits.max_lines:,} lines (the import limit)")
            if len(line) > limits.max_line_bytes:
                raise PayloadTooLarge(_line_too_long(seen.lines, limits))
            if line.strip():
                yield seen.lines, line
        del buffer[:start]
        if len(buffer) > limits.max_line_bytes:
            raise PayloadTooLarge(_line_too_long(seen.lines + 1, limits))
    if buffer.strip():
        seen.lines += 1
        if seen.lines > limits.max_lines:
            raise PayloadTooLarge(f"the file has more than {limits.max_lines:,} lines (the import limit)")
        yield seen.lines, bytes(buffer)


def _line_too_long(number: int, limits: Limits) -> str:
    return f"line {number} is longer than {limits.max_line_bytes // MiB} MB (the import limit for one line)"


def _checker(limits: Limits, seen: Progress) -> Callable[[], None]:
    def check() -> None:
        if seen.bytes > limits.max_bytes:
            raise PayloadTooLarge(f"the file decompresses to more than {limits.max_bytes // MiB} MB (the import limit)")
        if limits.deadline is not None and time.monotonic() > limits.deadline:
            raise TooLong("the import took longer than its time limit; split the file or ask the operator")

    return check


def _parse(number: int, raw: bytes) -> Line:
    if json_too_deep(raw):
        raise InvalidInput(f"line {number}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InvalidInput(f"line {number}: not JSON ({exc})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise InvalidInput(f"line {number}: not an object with a type")
    return obj
