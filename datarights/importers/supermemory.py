"""Supermemory: what listing a namespace answers, saved as JSON (pages may be joined in a list).

Two generations of its API, both read:

- **``client.list(namespace, type)``** (SDK 5, Fern-generated ``ListResponse``): ``{documents,
  chunks, memories, pagination}``. A document is ``{id, title, type, content, summary, metadata,
  url, system: {status, createdAt, updatedAt, ...}}`` (``content`` only with ``include: {content:
  true}``); a memory — a fact Supermemory learned — is ``{id, memory, metadata, isStatic,
  isInference, isLatest, isForgotten, version, system: {createdAt, updatedAt}}``. Chunks are
  pieces of documents and are not imported (the documents are). A forgotten memory, or a version
  that is not the latest of its chain, is skipped.
- **``POST /v3/documents/list``** (SDK 3, ``DocumentListResponse``): ``{"memories": [...],
  "pagination": ...}`` where each entry is a document ``{id, customId, connectionId,
  containerTags, createdAt, updatedAt, metadata, status, summary, title, type, content}``.

A document becomes a record with its title as a heading; without ``content`` its ``summary`` is
imported and the record tagged ``supermemory:summary``. ``createdAt`` is when it was written,
``updatedAt`` its revision; container tags, type and custom id become tags, metadata the reason.
"""

from __future__ import annotations

from typing import Any

from datarights.importers.items import PeerItem, Problem, Read, Upload, metadata_note, strings, time_text, titled
from mmw.errors import InvalidInput

SERVICE = "supermemory"
_SHAPE = (
    "not a Supermemory export: expected what listing a namespace answers ({documents, memories, ...} "
    'or {"memories": [...]} of /v3/documents/list), or a list of such pages'
)


def read(upload: Upload) -> Read:
    answer = upload.document()
    pages = answer if isinstance(answer, list) and all(_is_page(a) for a in answer) and answer else [answer]
    number = 0
    for page in pages:
        for entry in _entries(page):
            number += 1
            yield _item(number, entry)


def _is_page(value: Any) -> bool:
    return isinstance(value, dict) and any(isinstance(value.get(k), list) for k in ("documents", "memories"))


def _entries(page: Any) -> list[Any]:
    if isinstance(page, list):  # the entries alone
        return page
    if not _is_page(page):
        raise InvalidInput(_SHAPE)
    return [e for key in ("documents", "memories") if isinstance(page.get(key), list) for e in page[key]]


def _item(number: int, entry: Any) -> PeerItem | Problem:
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"].strip():
        return Problem(f"entry #{number}", "not a document or memory: an object with a string id is expected")
    if isinstance(entry.get("memory"), str):
        return _memory(entry)
    return _document(entry)


def _times(entry: dict[str, Any]) -> tuple[str | None, str | None]:
    system: dict[str, Any] = entry["system"] if isinstance(entry.get("system"), dict) else entry
    return time_text(system.get("createdAt")), time_text(system.get("updatedAt"))


def _memory(entry: dict[str, Any]) -> PeerItem | Problem:
    label = f"memory {entry['id']}"
    if entry.get("isForgotten") is True:
        return Problem(label, "forgotten in Supermemory: not imported", skip=True)
    if entry.get("isLatest") is False:
        return Problem(label, "an older version of a memory: only the latest is imported", skip=True)
    try:
        occurred, revision = _times(entry)
    except InvalidInput as exc:
        return Problem(label, exc.message)
    tags = ["supermemory:memory"]
    if entry.get("isStatic") is True:
        tags.append("supermemory:static")
    if entry.get("isInference") is True:
        tags.append("supermemory:inferred")
    return PeerItem(
        label=label,
        origin_id=entry["id"],
        content=entry["memory"],
        occurred_at=occurred,
        revision=revision,
        tags=tuple(tags),
        note=metadata_note(SERVICE, entry.get("metadata")),
    )


def _document(entry: dict[str, Any]) -> PeerItem | Problem:
    label = f"document {entry['id']}"
    content, summary = entry.get("content"), entry.get("summary")
    tags = [f"container:{t}" for t in strings(entry.get("containerTags"))]
    if isinstance(entry.get("type"), str):
        tags.append(f"type:{entry['type']}")
    if isinstance(entry.get("customId"), str) and entry["customId"]:
        tags.append(f"custom-id:{entry['customId']}")
    if not (isinstance(content, str) and content.strip()):
        if not (isinstance(summary, str) and summary.strip()):
            return Problem(label, "it has no content (list the documents with includeContent: true) and no summary")
        content = summary
        tags.append("supermemory:summary")
    title = entry.get("title") if isinstance(entry.get("title"), str) else None
    try:
        occurred, revision = _times(entry)
    except InvalidInput as exc:
        return Problem(label, exc.message)
    return PeerItem(
        label=label,
        origin_id=entry["id"],
        content=titled(title, content),
        occurred_at=occurred,
        revision=revision,
        tags=tuple(tags),
        note=metadata_note(SERVICE, entry.get("metadata")),
    )
