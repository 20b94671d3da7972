"""basic-memory: a folder of its Markdown notes (or a zip of that folder, for an upload).

A note, as basic-memory writes it (``write_note``, ``basic_memory.markdown``): YAML front matter
between ``---`` lines — ``title``, ``type``, ``permalink``, ``tags`` (a list, or one string) —
then the Markdown body, with its ``## Observations`` (``- [category] text #tag``) and
``## Relations`` (``- relates_to [[Other note]]``) kept as written. Each note becomes one record:
its title as a heading over the body, its tags and type as tags, the permalink its identity
(a note edited and imported again becomes the record's next version), the file's SHA-256 its
revision. When it was written: the front matter's ``created`` (or ``date``) when present, else
the file's modification time.

Front matter is read with YAML's safe loader, aliases refused (a few bytes of anchors cannot
expand into millions of nodes), and only the keys above are looked at.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import yaml

from datarights.importers.items import MAX_NOTE_BYTES, MiB, PeerItem, Problem, Read, Upload, time_text, titled
from mmw.errors import InvalidInput

SERVICE = "basic-memory"
MAX_FRONT_MATTER = 64 * 1024


class _NoAliases(yaml.SafeLoader):
    """YAML's safe loader without aliases (``*anchor``): front matter never needs them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases are not accepted")
        return super().compose_node(parent, index)


def read(upload: Upload) -> Read:
    for path, data, changed in upload.notes():
        yield _note(path, data, changed)


def _note(path: str, data: bytes | None, changed: datetime | None) -> PeerItem | Problem:
    label = f"note {path}"
    if data is None:
        return Problem(label, f"larger than {MAX_NOTE_BYTES // MiB} MB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Problem(label, "not UTF-8 text")
    try:
        front, body = _split(text)
        created = time_text(front.get("created") or front.get("date")) or time_text(changed)
    except InvalidInput as exc:
        return Problem(label, exc.message)
    title = front.get("title") if isinstance(front.get("title"), str) else path.rsplit("/", 1)[-1].removesuffix(".md")
    permalink = front.get("permalink")
    key = permalink.strip() if isinstance(permalink, str) and permalink.strip() else path.removesuffix(".md")
    tags = front.get("tags") or []
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",")]
    if not isinstance(tags, list):
        return Problem(label, "tags must be a list")
    names = [str(t).strip().lstrip("#") for t in tags if isinstance(t, str | int | float) and str(t).strip()]
    if isinstance(front.get("type"), str):
        names.append(f"type:{front['type']}")
    return PeerItem(
        label=label,
        origin_id=key,
        content=titled(title, body) or f"# {title}",
        occurred_at=created,
        revision=hashlib.sha256(data).hexdigest(),
        tags=tuple(names),
        note=f"imported from {SERVICE} ({path})",
    )


def _split(text: str) -> tuple[dict[str, Any], str]:
    """The front matter (a mapping; empty when the note has none) and the body."""
    if not text.startswith("---"):
        return {}, text
    first_break = text.find("\n")
    end = text.find("\n---", first_break)
    if first_break < 0 or text[:first_break].strip() != "---" or end < 0:
        raise InvalidInput("its front matter is not closed by a --- line")
    raw = text[first_break + 1 : end]
    if len(raw) > MAX_FRONT_MATTER:
        raise InvalidInput(f"its front matter is longer than {MAX_FRONT_MATTER // 1024} KB")
    try:
        front = yaml.load(raw, Loader=_NoAliases)  # noqa: S506 - a safe loader, aliases refused
    except yaml.YAMLError as exc:
        raise InvalidInput(f"its front matter is not valid YAML ({_first_line(exc)})") from None
    if front is None:
        front = {}
    if not isinstance(front, dict):
        raise InvalidInput("its front matter is not a mapping of keys to values")
    rest = text[end + 4 :]
    return front, rest.split("\n", 1)[1] if "\n" in rest else ""


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
