"""What every peer reader shares: the items it yields, the bounded reading of what was uploaded,
and the few conversions (times, JSON) every format needs.

A reader turns one peer's export into ``PeerItem``s (one future record each) and ``Problem``s
(one per item it cannot read, naming it). Nothing here writes; ``datarights.importers.service``
does, through ``remember``'s write path.

Bounds — a peer's file is as hostile as any upload, and is bounded while it is read:

- a JSON document (mem0, Letta, Supermemory): ``MAX_DOCUMENT_BYTES`` decompressed (gzip is
  inflated a piece at a time by ``datarights.restore.reader``), JSON nested at most
  ``mmw.boundary.MAX_JSON_DEPTH`` deep, checked before it is parsed;
- a folder or a zip of Markdown notes (basic-memory): at most ``MAX_FILES`` notes of at most
  ``MAX_NOTE_BYTES`` each and ``MAX_DOCUMENT_BYTES`` in all; a zip member is read with its size
  bounded (never trusting the size the archive claims), symbolic links are not followed, and
  nothing is written to disk;
- at most ``MAX_ITEMS`` items per import.
"""

from __future__ import annotations

import io
import json
import os
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path, PurePosixPath
from typing import IO, Any

from datarights.restore import reader
from mmw.boundary import MAX_JSON_DEPTH, json_too_deep
from mmw.errors import InvalidInput, PayloadTooLarge

MiB = reader.MiB
MAX_DOCUMENT_BYTES = 64 * MiB
MAX_NOTE_BYTES = 1 * MiB
MAX_FILES = 100_000
MAX_ITEMS = 100_000


@dataclass(frozen=True)
class PeerItem:
    """One record to be: the peer's id (``origin_id``, stable across its exports), the text, when
    it was said (``occurred_at``, RFC 3339 with an offset), the peer's own revision of it, tags,
    and a note kept as the record's ``reason``. ``label`` names it in a report."""

    label: str
    origin_id: str
    content: str
    occurred_at: str | None = None
    revision: str | None = None
    tags: tuple[str, ...] = ()
    note: str | None = None


@dataclass(frozen=True)
class Problem:
    """An item that cannot be imported (``skip``: one with nothing to import, counted apart)."""

    label: str
    message: str
    skip: bool = False


Read = Iterator[PeerItem | Problem]


class Upload:
    """What was given to import: a local path (a file or a folder: the command) or the bytes of
    an uploaded file (the dashboard), read within the bounds above."""

    def __init__(self, *, path: Path | None = None, data: bytes | None = None, name: str = "upload") -> None:
        assert (path is None) != (data is None)
        self.path = path
        self.data = data
        self.name = path.name if path is not None else name

    @classmethod
    def of_path(cls, path: str | Path) -> Upload:
        return cls(path=Path(path))

    @classmethod
    def of_bytes(cls, data: bytes, name: str = "upload") -> Upload:
        return cls(data=data, name=name)

    # --- one JSON document ---------------------------------------------------------------------

    def document(self) -> Any:
        """The file as one JSON value, or (a file of one object per line) a list of them."""
        raw = self._bytes()
        if json_too_deep(raw):
            raise InvalidInput(f"the file's JSON is nested deeper than {MAX_JSON_DEPTH} levels")
        try:
            return json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as first:
            lines = [line for line in raw.splitlines() if line.strip()]
            try:
                if len(lines) > 1:
                    return [json.loads(line) for line in lines]
            except (ValueError, UnicodeDecodeError, RecursionError):
                pass
            raise InvalidInput(f"the file is not JSON ({first})") from None

    def _bytes(self) -> bytes:
        if self.path is not None and self.path.is_dir():
            raise InvalidInput(f"{self.name} is a folder; this service's export is one file")
        limits = reader.Limits(max_bytes=MAX_DOCUMENT_BYTES)
        pieces: list[bytes] = []
        try:
            with self._open() as stream:
                pieces.extend(reader.decompressed(stream, limits))
        except PayloadTooLarge:
            raise PayloadTooLarge(_too_big()) from None
        except OSError as exc:
            raise InvalidInput(f"cannot read {self.name}: {exc.strerror or exc}") from None
        return b"".join(pieces)

    def _open(self) -> IO[bytes]:
        if self.path is not None:
            return self.path.open("rb")
        return io.BytesIO(self.data or b"")

    # --- many Markdown notes -------------------------------------------------------------------

    def notes(self) -> Iterator[tuple[str, bytes | None, datetime | None]]:
        """Each ``.md`` file of the folder (or of the zip): its path inside, its bytes (None when
        it is over ``MAX_NOTE_BYTES``) and when it was last changed (None when unknown)."""
        if self.path is not None and self.path.is_dir():
            yield from _folder_notes(self.path)
            return
        if self.path is not None and not zipfile.is_zipfile(self.path):
            raise InvalidInput(f"{self.name} is neither a folder nor a zip of notes")
        source: Any = self.path if self.path is not None else io.BytesIO(self.data or b"")
        try:
            archive = zipfile.ZipFile(source)
        except (zipfile.BadZipFile, OSError):
            raise InvalidInput(f"{self.name} is neither a folder nor a zip of notes") from None
        with archive:
            yield from _zip_notes(archive)


def _too_big() -> str:
    return f"the file decompresses to more than {MAX_DOCUMENT_BYTES // MiB} MB (the limit of an import from a service)"


class _Budget:
    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0

    def take(self, size: int) -> None:
        self.files += 1
        self.bytes += size
        if self.files > MAX_FILES:
            raise PayloadTooLarge(f"more than {MAX_FILES:,} notes (the limit of one import)")
        if self.bytes > MAX_DOCUMENT_BYTES:
            raise PayloadTooLarge(f"the notes hold more than {MAX_DOCUMENT_BYTES // MiB} MB (the limit of one import)")


def _folder_notes(root: Path) -> Iterator[tuple[str, bytes | None, datetime | None]]:
    budget = _Budget()
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(folder) / name
            if not name.endswith(".md") or name.startswith("."):
                continue
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):  # a symbolic link or a device: never followed
                continue
            relative = path.relative_to(root).as_posix()
            when = datetime.fromtimestamp(info.st_mtime, tz=UTC)
            if info.st_size > MAX_NOTE_BYTES:
                budget.take(0)
                yield relative, None, when
                continue
            budget.take(info.st_size)
            with path.open("rb") as stream:
                data = stream.read(MAX_NOTE_BYTES + 1)
            yield relative, (data if len(data) <= MAX_NOTE_BYTES else None), when


def _zip_notes(archive: zipfile.ZipFile) -> Iterator[tuple[str, bytes | None, datetime | None]]:
    budget = _Budget()
    for info in sorted(archive.infolist(), key=lambda i: i.filename):
        name = PurePosixPath(info.filename)
        if info.is_dir() or name.suffix != ".md" or any(part.startswith(".") for part in name.parts):
            continue
        if (info.external_attr >> 16) & 0o170000 == 0o120000:  # a symbolic link stored in the zip
            continue
        when = datetime(*info.date_time, tzinfo=UTC) if info.date_time[0] >= 1980 else None
        try:
            with archive.open(info) as member:
                data = member.read(MAX_NOTE_BYTES + 1)  # the bytes inflated, whatever the header claims
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, EOFError) as exc:
            raise InvalidInput(f"the zip is damaged at {info.filename} ({exc})") from None
        budget.take(len(data))
        yield name.as_posix(), (data if len(data) <= MAX_NOTE_BYTES else None), when


# --- conversions -----------------------------------------------------------------------------------


def time_text(value: Any) -> str | None:
    """An RFC 3339 time with an offset from what a peer wrote (ISO 8601, a space for the ``T``, a
    trailing ``Z``; a time without an offset is taken as UTC), None for null or empty. Refuses
    anything else (``InvalidInput`` naming the value), so a wrong time is never guessed."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):  # YAML reads "created: 2024-05-01" as a date
        parsed = datetime.combine(value, time(0, 0), tzinfo=UTC)
    elif isinstance(value, str) and len(value) <= 64:
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise InvalidInput(f"{value!r} is not an ISO 8601 time") from None
    else:
        raise InvalidInput(f"{str(value)[:64]!r} is not an ISO 8601 time")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.isoformat()


def strings(value: Any) -> list[str]:
    """The strings of a list a peer wrote (tags, ids); anything else is no strings."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def metadata_note(service: str, metadata: Any) -> str:
    """The record's ``reason``: where it came from, and the peer's metadata as JSON (kept whole:
    a ``reason`` over remember's bound is that item's error, never cut)."""
    text = f"imported from {service}"
    if metadata not in (None, {}, [], ""):
        text += "; metadata: " + json.dumps(metadata, sort_keys=True, ensure_ascii=False, default=str)
    return text


def titled(title: str | None, body: str) -> str:
    """The text of a titled document: its title as a heading unless the body starts with it."""
    body = body.strip()
    title = (title or "").strip()
    if not title or body.startswith("#") or body.startswith(title):
        return body
    return f"# {title}\n\n{body}".rstrip()
