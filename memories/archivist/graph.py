"""Writing the archivist's edges: one transaction that locks, re-checks, settles, caps and inserts.

The rules it keeps (docs/background.md, "What the archivist stores"):

- **versions a deliberate write superseded contradict nothing**: a version of a ``fact_key``
  below a newer version written with ``expected_version`` is settled (``memories.statuses``
  shows it in conflict with nothing), so no ``contradicts`` edge is written towards it, and
  archiving a deliberate version visible to the whole project removes the ``contradicts`` edges
  of every version it settles;
- **a cap per kind**: a record keeps at most ``MAX_PER_KIND`` judged edges (``related``,
  ``refines``, ``contradicts`` between records that are not versions of one key) of each kind,
  the strongest; a stronger new edge pushes the weakest out, counting the edges both ends have.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from memories.models import Memory, MemoryQuerySet, MemoryRelation, RelationType, Visibility

ARCHIVED, FORGOTTEN, ALREADY = "archived", "skipped: forgotten", "skipped: already archived"
MAX_PER_KIND = 5
JUDGED = (RelationType.RELATED, RelationType.REFINES, RelationType.CONTRADICTS)
_SHARED = (Visibility.PROJECT, Visibility.ORG)
_Row = tuple[float, str, str, str, int | None]  # score, from, to, relation, stored id (None: new)


@dataclass(frozen=True)
class Edge:
    from_id: uuid.UUID
    to_id: uuid.UUID
    relation: str
    score: float
    versions: bool = False  # between two versions of one fact_key: the version rule, never capped


def deliberate_floors(scope: MemoryQuerySet, workspace_id: int, keys: Iterable[str]) -> dict[str, int]:
    """For each of ``keys``, the newest live version in ``scope`` written with
    ``expected_version``: every version below it is settled."""
    wanted = sorted(set(keys))
    if not wanted:
        return {}
    rows = (
        scope.live()
        .filter(workspace_id=workspace_id, fact_key__in=wanted, expected_version__isnull=False)
        .values("fact_key")
        .annotate(top=Max("version"))
        .values_list("fact_key", "top")
    )
    return {str(key): int(top) for key, top in rows}


def store(record: Memory, edges: list[Edge], scope: MemoryQuerySet) -> str:
    """Insert ``edges`` for ``record`` and mark it archived, or say why not (forgotten meanwhile,
    archived by a duplicate). ``scope``: what the record's author reads (settled versions)."""
    settles = _settled_by(record)
    targets = {e.to_id for e in edges} | {e.from_id for e in edges} | settles
    with transaction.atomic():
        # One lock statement in id order: the record, every target and every version it settles,
        # so two archivists never deadlock each other, and ``forget`` (which locks what it
        # forgets) waits or wins cleanly.
        rows = {
            rid: (archived_at, key, version)
            for rid, archived_at, key, version in Memory.objects.live()
            .filter(id__in=sorted(targets | {record.id}))
            .order_by("id")
            .select_for_update(no_key=True)
            .values_list("id", "archived_at", "fact_key", "version")
        }
        if record.id not in rows:
            return FORGOTTEN
        if rows[record.id][0] is not None:
            return ALREADY
        live = [e for e in edges if e.from_id in rows and e.to_id in rows]
        live = _without_settled(live, rows, record.workspace_id, scope)
        if settles:
            MemoryRelation.objects.filter(relation=RelationType.CONTRADICTS).filter(
                Q(from_memory_id__in=settles) | Q(to_memory_id__in=settles)
            ).delete()
        live = _capped(live)
        MemoryRelation.objects.bulk_create(
            [
                MemoryRelation(from_memory_id=e.from_id, to_memory_id=e.to_id, relation=e.relation, score=e.score)
                for e in live
            ],
            ignore_conflicts=True,
        )
        Memory.objects.filter(id=record.id).update(archived_at=timezone.now())
    return ARCHIVED


def _settled_by(record: Memory) -> set[uuid.UUID]:
    """The live versions a deliberate, project-wide ``record`` supersedes: whoever reads one of
    them reads ``record`` too, so none of them is in conflict for anyone any more."""
    if record.fact_key is None or record.expected_version is None or record.visibility not in _SHARED:
        return set()
    return set(
        Memory.objects.live()
        .filter(workspace_id=record.workspace_id, fact_key=record.fact_key, version__lt=record.version)
        .values_list("id", flat=True)
    )


def _without_settled(
    edges: list[Edge],
    rows: Mapping[uuid.UUID, tuple[object, str | None, int]],
    workspace_id: int,
    scope: MemoryQuerySet,
) -> list[Edge]:
    """``edges`` less the ``contradicts`` towards a settled version, checked again under the locks
    (a deliberate version may have committed since the analysis read)."""
    keyed = {
        rows[end][1]
        for e in edges
        if e.relation == RelationType.CONTRADICTS
        for end in (e.from_id, e.to_id)
        if rows[end][1] is not None
    }
    floors = deliberate_floors(scope, workspace_id, (k for k in keyed if k is not None))
    if not floors:
        return edges

    def settled(rid: uuid.UUID) -> bool:
        key, version = rows[rid][1], rows[rid][2]
        return key is not None and version < floors.get(key, 0)

    return [e for e in edges if e.relation != RelationType.CONTRADICTS or not (settled(e.from_id) or settled(e.to_id))]


def _capped(edges: list[Edge]) -> list[Edge]:
    """``edges`` less those that would give an end more than ``MAX_PER_KIND`` judged edges of a
    kind; existing weaker edges they outrank are deleted. Version edges are never counted."""
    judged = [e for e in edges if e.relation in JUDGED and not e.versions]
    if not judged:
        return edges
    ends = {e.from_id for e in judged} | {e.to_id for e in judged}
    existing = (
        MemoryRelation.objects.filter(relation__in=JUDGED)
        .filter(Q(from_memory_id__in=ends) | Q(to_memory_id__in=ends))
        .values_list(
            "id", "from_memory_id", "to_memory_id", "relation", "score", "from_memory__fact_key", "to_memory__fact_key"
        )
    )
    stored: list[_Row] = []
    seen: set[tuple[str, str, str]] = set()
    for rid, src, dst, relation, score, src_key, dst_key in existing:
        if src_key is not None and src_key == dst_key:
            continue  # two versions of one key
        stored.append((score, str(src), str(dst), relation, rid))
        seen.add((str(src), str(dst), relation))
    new: list[_Row] = [
        (e.score, str(e.from_id), str(e.to_id), e.relation, None)
        for e in judged
        if (str(e.from_id), str(e.to_id), e.relation) not in seen  # stored already (a re-run): counted once
    ]
    # First the new edges that make the cut at both ends, then the stored ones they push out.
    beyond = _beyond_cap(stored + new, {str(x) for x in ends})
    dropped_new = {(src, dst, relation) for _, src, dst, relation, rid in beyond if rid is None}
    survivors = [row for row in new if (row[1], row[2], row[3]) not in dropped_new]
    dropped_ids = {rid for *_, rid in _beyond_cap(stored + survivors, {str(x) for x in ends}) if rid is not None}
    if dropped_ids:
        MemoryRelation.objects.filter(id__in=dropped_ids).delete()
    return [e for e in edges if (str(e.from_id), str(e.to_id), e.relation) not in dropped_new]


def _beyond_cap(rows: list[_Row], ends: set[str]) -> list[_Row]:
    """The rows past the ``MAX_PER_KIND`` strongest of their kind at one of ``ends``."""
    by_end: dict[tuple[str, str], list[_Row]] = defaultdict(list)
    for row in rows:
        for end in (row[1], row[2]):
            if end in ends:
                by_end[(end, row[3])].append(row)
    beyond: list[_Row] = []
    for group in by_end.values():
        group.sort(key=lambda r: (-r[0], r[1], r[2]))
        beyond.extend(group[MAX_PER_KIND:])
    return beyond
