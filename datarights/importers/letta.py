"""Letta: an agent file (``.af``) and the agent's archival memory.

- **Agent file, current schema** (Letta's ``AgentFileSchema``: ``{agents, groups, blocks,
  files, sources, tools, mcp_servers, metadata, created_at}``): each memory block (``{id, label,
  value, description, limit, ...}``) of each agent becomes a record. Block ids in a file are the
  file's own (``block-0``), so a block is known by its agent's name and its label
  (``<agent>/block/<label>``): exporting the agent again finds the same records.
- **Agent file, first schema** (``{name, core_memory: [{label, value, created_at, updated_at,
  ...}], messages, ...}``, Letta before 0.8): each ``core_memory`` block likewise.
- **Archival memory** (passages): a list of passages — ``{id, text, tags, created_at, archive_id,
  metadata, ...}`` as Letta's ``GET /v1/agents/{agent_id}/archival-memory`` answers — or a
  ``passages`` list inside the agent file (or one of its agents). Agent files Letta exports today do
  not carry passages (agent-file's README: "We currently do not support Passages"), so the
  archival memory comes as that list. Each passage becomes a record known by its id.

A block's description is kept in the record's reason; a block with an empty value has nothing to
import and is counted as skipped. Messages (the conversation) are not imported: they are a
session's turns, not memory.
"""

from __future__ import annotations

from typing import Any

from datarights.importers.items import PeerItem, Problem, Read, Upload, metadata_note, strings, time_text
from mmw.errors import InvalidInput

SERVICE = "letta"
_SHAPE = "not a Letta agent file (.af) or a list of archival passages"


def read(upload: Upload) -> Read:
    document = upload.document()
    if isinstance(document, list):
        yield from _passages(document, None)
        return
    if not isinstance(document, dict):
        raise InvalidInput(_SHAPE)
    if isinstance(document.get("agents"), list) and isinstance(document.get("blocks"), list):
        yield from _current(document)
    elif isinstance(document.get("core_memory"), list):
        name = _name(document.get("name"), "agent")
        yield from _blocks(document["core_memory"], name, document.get("updated_at") or document.get("created_at"))
        yield from _passages(document.get("passages") or [], name)
    elif isinstance(document.get("passages"), list):
        yield from _passages(document["passages"], None)
    else:
        raise InvalidInput(_SHAPE)


def _name(value: Any, default: str) -> str:
    return value.strip() if isinstance(value, str) and value.strip() else default


def _current(document: dict[str, Any]) -> Read:
    agents = [a for a in document["agents"] if isinstance(a, dict)]
    owner: dict[str, str] = {}  # the file's block id → the name of the first agent that holds it
    for number, agent in enumerate(agents, start=1):
        for block_id in strings(agent.get("block_ids")):
            owner.setdefault(block_id, _name(agent.get("name"), f"agent-{number}"))
    blocks = [{**b, "_agent": owner.get(str(b.get("id")), "")} for b in document["blocks"] if isinstance(b, dict)]
    yield from _blocks(blocks, None, document.get("created_at"))
    yield from _passages(document.get("passages") or [], None)
    for number, agent in enumerate(agents, start=1):
        yield from _passages(agent.get("passages") or [], _name(agent.get("name"), f"agent-{number}"))


def _blocks(blocks: list[Any], agent: str | None, file_time: Any) -> Read:
    for number, block in enumerate(blocks, start=1):
        if not isinstance(block, dict) or not isinstance(block.get("label"), str) or not block["label"].strip():
            yield Problem(f"block #{number}", "not a memory block: an object with a label is expected")
            continue
        holder = agent if agent is not None else block.get("_agent") or ""
        key = f"{holder}/block/{block['label']}" if holder else f"block/{block['label']}"
        label = f"block {key}"
        value = block.get("value")
        if not isinstance(value, str):
            yield Problem(label, "its value is missing or not a string")
            continue
        if not value.strip():
            yield Problem(label, "empty: nothing to import", skip=True)
            continue
        try:
            occurred = time_text(block.get("created_at") or file_time)
            revision = time_text(block.get("updated_at"))
        except InvalidInput as exc:
            yield Problem(label, exc.message)
            continue
        tags = ["letta:block", f"block:{block['label']}", *([f"agent:{holder}"] if holder else [])]
        description = block.get("description")
        note = metadata_note(SERVICE, block.get("metadata") or block.get("metadata_"))
        if isinstance(description, str) and description.strip():
            note += f"; block description: {description.strip()}"
        yield PeerItem(label, key, value.strip(), occurred, revision, tuple(tags), note)


def _passages(passages: Any, agent: str | None) -> Read:
    if not isinstance(passages, list):
        yield Problem("passages", "passages must be a list")
        return
    for number, passage in enumerate(passages, start=1):
        if not isinstance(passage, dict) or not isinstance(passage.get("id"), str) or not passage["id"].strip():
            yield Problem(f"passage #{number}", "not a passage: an object with a string id is expected")
            continue
        label = f"passage {passage['id']}"
        text = passage.get("text", passage.get("content"))
        if not isinstance(text, str):
            yield Problem(label, "its text is missing or not a string")
            continue
        if passage.get("is_deleted") is True:
            yield Problem(label, "deleted in Letta: not imported", skip=True)
            continue
        try:
            occurred = time_text(passage.get("created_at"))
            revision = time_text(passage.get("updated_at"))
        except InvalidInput as exc:
            yield Problem(label, exc.message)
            continue
        tags = ["letta:archival", *strings(passage.get("tags"))]
        if agent:
            tags.append(f"agent:{agent}")
        note = metadata_note(SERVICE, passage.get("metadata") or passage.get("metadata_"))
        yield PeerItem(label, passage["id"], text, occurred, revision, tuple(tags), note)
