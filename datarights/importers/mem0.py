"""mem0: what ``Memory.get_all()`` answers (the open-source library: ``{"results": [...]}``) and
what the platform's ``MemoryClient.get_all()`` / ``GET /v1/memories/`` answer (a list, or
``{"results": [...]}``), saved as JSON (or one memory per line).

A memory (mem0's ``MemoryItem`` and the platform's memory object) is ``{id, memory, hash,
metadata, created_at, updated_at}`` with the entity fields ``user_id``, ``agent_id``,
``run_id``, ``app_id``, ``actor_id``, ``role`` and, on the platform, ``categories``. Each becomes
one record: ``memory`` its content, ``created_at`` when it was said, ``updated_at`` (else
``hash``) its revision, the entity fields and categories tags (``user:alice``,
``category:preferences``), the metadata kept in its reason.
"""

from __future__ import annotations

from typing import Any

from datarights.importers.items import PeerItem, Problem, Read, Upload, metadata_note, strings, time_text
from mmw.errors import InvalidInput

SERVICE = "mem0"
_ENTITIES = (("user_id", "user"), ("agent_id", "agent"), ("run_id", "run"), ("app_id", "app"), ("actor_id", "actor"))
_SHAPE = 'not a mem0 export: expected a list of memories or {"results": [...]} as Memory.get_all() answers'


def read(upload: Upload) -> Read:
    document = upload.document()
    memories = document.get("results", document.get("memories")) if isinstance(document, dict) else document
    if not isinstance(memories, list):
        raise InvalidInput(_SHAPE)
    for number, memory in enumerate(memories, start=1):
        yield _item(number, memory)


def _item(number: int, memory: Any) -> PeerItem | Problem:
    if not isinstance(memory, dict) or not isinstance(memory.get("id"), str) or not memory["id"].strip():
        return Problem(f"memory #{number}", "not a memory: an object with a string id is expected")
    label = f"memory {memory['id']}"
    content = memory.get("memory")
    if not isinstance(content, str):
        return Problem(label, "its memory (the text) is missing or not a string")
    tags = [
        f"{tag}:{memory[key]}" for key, tag in _ENTITIES if isinstance(memory.get(key), str | int) and memory[key] != ""
    ]
    if isinstance(memory.get("role"), str):
        tags.append(f"role:{memory['role']}")
    tags.extend(f"category:{c}" for c in strings(memory.get("categories")))
    try:
        occurred = time_text(memory.get("created_at"))
        revision = time_text(memory.get("updated_at")) or (
            memory.get("hash") if isinstance(memory.get("hash"), str) else None
        )
    except InvalidInput as exc:
        return Problem(label, exc.message)
    return PeerItem(
        label=label,
        origin_id=memory["id"],
        content=content,
        occurred_at=occurred,
        revision=revision,
        tags=tuple(tags),
        note=metadata_note(SERVICE, memory.get("metadata")),
    )
