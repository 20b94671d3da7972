"""Statuses, computed when read (docs/reference/README.md): unverified, stale, conflict — never stored.

Everything here sees only records visible to the caller, so neither a status nor a
``conflicts_with`` id ever reveals a record the caller may not read, and a record the caller
cannot see never makes a visible one stale or conflicting.

- **conflict** is a divergence, not an update: among the visible live versions of a fact_key, a
  write that named ``expected_version`` (``Memory.expected_version``) supersedes every version
  before it; the versions no deliberate write superseded (the *heads*) conflict with each other
  when their content differs after whitespace normalisation. Superseded versions conflict with
  nothing. The graph tells the same story: a stored ``contradicts`` edge between two visible live
  records, neither superseded, puts both in conflict, each naming the other in
  ``conflicts_with`` — the archivist writes one between two heads of a fact_key that differ
  (so the edge and this rule agree) and between two records it judged to state incompatible
  values of one subject (``memories.archivist``), and never towards a superseded version.
- **stale**: the record's ``source_hash`` differs from the source's current hash — the one the
  caller passed (``Freshness``), or else that of the newest visible live record of the same
  ``source_id`` in the workspace that carries a hash.
- A summary (``derived_from``) takes the worst status of its visible live sources.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, Q

from accounts.keys import Principal
from memories.models import Memory, MemoryRelation, RelationType

UNVERIFIED, STALE, CONFLICT = "unverified", "stale", "conflict"
_RANK = {UNVERIFIED: 0, STALE: 1, CONFLICT: 2}
MAX_SUMMARY_DEPTH = 3


@dataclass
class StatusInfo:
    status: str = UNVERIFIED
    conflicts_with: list[str] = field(default_factory=list)
    is_latest: bool = True
    reason: str | None = None  # why stale or conflict, in words a person reads


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
    infos = {rid: StatusInfo() for rid in by_id}
    _apply_staleness(principal, list(by_id.values()), infos, freshness)
    _apply_conflicts(principal, list(by_id.values()), infos)
    _apply_contradictions(principal, list(by_id), infos)
    for _ in range(MAX_SUMMARY_DEPTH):
        for rid, record in by_id.items():
            for source in record.derived_from:
                inherited = infos.get(source)
                if inherited is not None and _RANK[inherited.status] > _RANK[infos[rid].status]:
                    infos[rid].status = inherited.status
                    infos[rid].reason = f"summarises {source}, which is {inherited.status}"
    return infos


def _apply_staleness(
    principal: Principal, records: list[Memory], infos: dict[uuid.UUID, StatusInfo], freshness: Freshness | None
) -> None:
    sourced = [r for r in records if r.source_id is not None and r.source_hash is not None]
    if not sourced:
        return
    newest: dict[tuple[int, str | None], tuple[str | None, uuid.UUID]] = {}
    rows = (
        Memory.objects.visible_to(principal)
        .live()
        .filter(
            workspace_id__in={r.workspace_id for r in sourced},
            source_id__in={r.source_id for r in sourced},
            source_hash__isnull=False,
        )
        .order_by("created_at", "id")
        .values_list("workspace_id", "source_id", "source_hash", "id")
    )
    for ws, source_id, source_hash, rid in rows:  # ascending: the last one seen is the newest
        newest[(ws, source_id)] = (source_hash, rid)
    for record in sourced:
        assert record.source_id is not None
        if freshness is not None and record.source_id == freshness.source_id:
            if record.source_hash != freshness.current_hash:
                infos[record.id].status = STALE
                infos[record.id].reason = "the source's current hash (as passed) differs from this record's"
            continue
        current = newest.get((record.workspace_id, record.source_id))
        if current is not None and current[0] != record.source_hash:
            infos[record.id].status = STALE
            infos[record.id].reason = f"a newer record of this source ({current[1]}) has another source_hash"


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
    groups: dict[tuple[int, str | None], list[_Version]] = defaultdict(list)
    rows = (
        Memory.objects.visible_to(principal)
        .live()
        .filter(workspace_id__in=workspaces, fact_key__in=keys)
        .values_list("id", "workspace_id", "fact_key", "content", "version", "expected_version")
    )
    for rid, ws, key, content, version, expected in rows:
        groups[(ws, key)].append(_Version(rid, normalised(content), version, expected is not None))
    for record in records:
        if record.fact_key is None:
            continue
        group = groups.get((record.workspace_id, record.fact_key), [])
        info = infos[record.id]
        info.is_latest = record.version >= max((v.version for v in group), default=record.version)
        # The newest deliberate update supersedes every version before it.
        floor = max((v.version for v in group if v.deliberate), default=0)
        if record.version < floor:
            continue
        mine = normalised(record.content)
        info.conflicts_with = sorted(
            str(v.id) for v in group if v.version >= floor and v.id != record.id and v.content != mine
        )
        if info.conflicts_with:
            info.status = CONFLICT
            info.reason = f"another current version of {record.fact_key} says something else"


@dataclass(frozen=True)
class _Version:
    id: uuid.UUID
    content: str
    version: int
    deliberate: bool  # written with expected_version


def normalised(content: str) -> str:
    """Content compared for conflicts: whitespace runs are one space, ends trimmed."""
    return " ".join(content.split())


def _apply_contradictions(principal: Principal, ids: list[uuid.UUID], infos: dict[uuid.UUID, StatusInfo]) -> None:
    """Both ends of a ``contradicts`` edge are in conflict while the caller reads both, both are
    live and neither is a version a deliberate write superseded."""
    edges = list(
        MemoryRelation.objects.filter(relation=RelationType.CONTRADICTS)
        .filter(Q(from_memory_id__in=ids) | Q(to_memory_id__in=ids))
        .values_list("from_memory_id", "to_memory_id")
    )
    if not edges:
        return  # no second statement for the ends
    visible = Memory.objects.visible_to(principal).live()
    superseded = visible.filter(
        workspace_id=OuterRef("workspace_id"),
        fact_key=OuterRef("fact_key"),
        version__gt=OuterRef("version"),
        expected_version__isnull=False,
    )
    ends = {a for a, _ in edges} | {b for _, b in edges}
    rows = visible.filter(id__in=ends).annotate(settled=Exists(superseded)).values_list("id", "settled")
    current = {rid for rid, settled in rows if not settled}
    for a, b in edges:
        if a not in current or b not in current:
            continue
        for mine, other in ((a, b), (b, a)):
            info = infos.get(mine)
            if info is None or str(other) in info.conflicts_with:
                continue
            info.conflicts_with = sorted([*info.conflicts_with, str(other)])
            if info.status != CONFLICT:
                info.status = CONFLICT
                info.reason = f"another current record ({other}) says otherwise"


def may_have_status() -> Q:
    """The records that can have a status other than unverified: those with a fact_key
    (conflict), a source hash (stale), sources (a summary inherits) or a ``contradicts`` edge."""
    contradictions = MemoryRelation.objects.filter(relation=RelationType.CONTRADICTS)
    return (
        Q(fact_key__isnull=False)
        | Q(source_hash__isnull=False)
        | ~Q(derived_from=[])
        | Q(Exists(contradictions.filter(from_memory_id=OuterRef("pk"))))
        | Q(Exists(contradictions.filter(to_memory_id=OuterRef("pk"))))
    )
