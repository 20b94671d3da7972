"""Statuses, computed when read (docs/reference/README.md): unverified, stale, conflict — never stored.

Everything here sees only records visible to the caller, so neither a status nor a
``conflicts_with`` id ever reveals a record the caller may not read.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from accounts.keys import Principal
from memories.models import Memory

UNVERIFIED, STALE, CONFLICT = "unverified", "stale", "conflict"
_RANK = {UNVERIFIED: 0, STALE: 1, CONFLICT: 2}
MAX_SUMMARY_DEPTH = 3


@dataclass
class StatusInfo:
    status: str = UNVERIFIED
    conflicts_with: list[str] = field(default_factory=list)
    is_latest: bool = True


@dataclass(frozen=True)
class Freshness:
    """A caller's claim that ``source_id`` now hashes to ``current_hash``."""

    source_id: str
    current_hash: str


def compute(
    principal: Principal, records: Iterable[Memory], freshness: Freshness | None = None
) -> dict[uuid.UUID, StatusInfo]:
    """Status of each record; summaries take the worst status of their (visible, live) sources."""
    by_id: dict[uuid.UUID, Memory] = {r.id: r for r in records}
    _load_sources(principal, by_id)
    infos = {rid: _own_status(r, freshness) for rid, r in by_id.items()}
    _apply_conflicts(principal, list(by_id.values()), infos)
    for _ in range(MAX_SUMMARY_DEPTH):
        for rid, record in by_id.items():
            for source in record.derived_from:
                inherited = infos.get(source)
                if inherited is not None and _RANK[inherited.status] > _RANK[infos[rid].status]:
                    infos[rid].status = inherited.status
    return infos


def _own_status(record: Memory, freshness: Freshness | None) -> StatusInfo:
    stale = (
        freshness is not None
        and record.source_id == freshness.source_id
        and record.source_hash != freshness.current_hash
    )
    return StatusInfo(status=STALE if stale else UNVERIFIED)


def _load_sources(principal: Principal, by_id: dict[uuid.UUID, Memory]) -> None:
    """Pull in the sources of summaries (and theirs), up to MAX_SUMMARY_DEPTH levels."""
    frontier = {s for r in by_id.values() for s in r.derived_from} - by_id.keys()
    for _ in range(MAX_SUMMARY_DEPTH):
        if not frontier:
            return
        found = list(Memory.objects.visible_to(principal).live().filter(id__in=frontier))
        for record in found:
            by_id[record.id] = record
        frontier = {s for r in found for s in r.derived_from} - by_id.keys()


def _apply_conflicts(principal: Principal, records: list[Memory], infos: dict[uuid.UUID, StatusInfo]) -> None:
    keyed = [(r.workspace_id, r.fact_key) for r in records if r.fact_key is not None]
    if not keyed:
        return
    workspaces = {w for w, _ in keyed}
    keys = {k for _, k in keyed}
    groups: dict[tuple[int, str | None], list[tuple[uuid.UUID, str, int]]] = defaultdict(list)
    rows = (
        Memory.objects.visible_to(principal)
        .live()
        .filter(workspace_id__in=workspaces, fact_key__in=keys)
        .values_list("id", "workspace_id", "fact_key", "content", "version")
    )
    for rid, ws, key, content, version in rows:
        groups[(ws, key)].append((rid, content, version))
    for record in records:
        if record.fact_key is None:
            continue
        group = groups.get((record.workspace_id, record.fact_key), [])
        info = infos[record.id]
        info.conflicts_with = sorted(
            str(rid) for rid, content, _ in group if rid != record.id and content != record.content
        )
        info.is_latest = record.version >= max((v for _, _, v in group), default=record.version)
        if info.conflicts_with:
            info.status = CONFLICT
