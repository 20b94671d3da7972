"""Judge the stored edges again with today's rules (``manage.py archivist_rescore``, and migration
0015 once): a ``related`` / ``refines`` / ``contradicts`` edge gets the score the archivist gives
its pair now, changes kind, or goes; then every record is brought back within ``MAX_PER_KIND``
edges of each kind, the strongest kept.

Since statuses read ``contradicts`` edges (``memories.statuses``), an edge written by an older
rule — 435 "contradictions" among 30 notes of one template — would put consistent records in
conflict; this removes them. It judges only the pairs already linked (the archivist found them
with the same candidates); a pair the old rules left unlinked stays so. Idempotent; reads and
writes in batches of edge ids, so an interrupted run can simply run again.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from django.db import transaction
from django.db.models import Case, F, FloatField, Max, When
from pgvector.django import CosineDistance

from memories import statuses
from memories.archivist.graph import JUDGED, MAX_PER_KIND
from memories.archivist.judge import classify
from memories.archivist.text import features
from memories.models import Memory, MemoryRelation, RelationType

BATCH = 2000


@dataclass
class Rescored:
    judged: int = 0
    kept: int = 0
    changed: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # "old->new": count
    removed: int = 0
    capped: int = 0


class _Pair(NamedTuple):
    id: int
    relation: str
    distance: float | None
    from_id: uuid.UUID
    to_id: uuid.UUID
    newer: str
    older: str
    newer_key: str | None
    older_key: str | None
    newer_version: int
    older_version: int
    workspace_id: int


_FIELDS = (
    "id",
    "relation",
    "distance",
    "from_memory_id",
    "to_memory_id",
    "from_memory__content",
    "to_memory__content",
    "from_memory__fact_key",
    "to_memory__fact_key",
    "from_memory__version",
    "to_memory__version",
    "from_memory__workspace_id",
)


def rescore_relations(*, batch: int = BATCH, progress: Callable[[str], None] | None = None) -> Rescored:
    """Judge every stored judged edge again, then apply the caps; see the module's docstring."""
    done = Rescored()
    last = 0
    while True:
        rows = [
            _Pair(*row)
            for row in MemoryRelation.objects.filter(id__gt=last, relation__in=JUDGED)
            .order_by("id")
            .annotate(distance=_DISTANCE)
            .values_list(*_FIELDS)[:batch]
        ]
        if not rows:
            break
        last = rows[-1].id
        _judge_batch(rows, done)
        if progress:
            progress(f"judged {done.judged} edges")
    done.capped = _cap_all()
    return done


# The cosine distance of the two ends' vectors when they come from one model, else NULL.
_DISTANCE = Case(
    When(
        from_memory__embedding_model=F("to_memory__embedding_model"),
        then=CosineDistance(F("from_memory__embedding"), F("to_memory__embedding")),
    ),
    default=None,
    output_field=FloatField(),
)


def _verdict(pair: _Pair, settled: bool) -> tuple[str | None, float]:
    """The relation (or None) and score the archivist gives ``pair`` now."""
    if pair.newer_key is not None and pair.newer_key == pair.older_key:
        differ = statuses.normalised(pair.newer) != statuses.normalised(pair.older)
        return (RelationType.CONTRADICTS, 1.0) if differ and not settled else (None, 0.0)
    cos = None if pair.distance is None else 1 - pair.distance
    judged = classify(features(pair.newer), features(pair.older), vector_cosine=cos)
    if judged.relation not in JUDGED or (judged.relation == RelationType.CONTRADICTS and settled):
        return None, 0.0
    return judged.relation, judged.score


def _judge_batch(rows: list[_Pair], done: Rescored) -> None:
    groups = {(p.workspace_id, k) for p in rows for k in (p.newer_key, p.older_key) if k is not None}
    floors = _floors(groups)
    updates: list[MemoryRelation] = []
    remove: list[int] = []
    add: list[MemoryRelation] = []
    for pair in rows:
        done.judged += 1
        settled = any(
            key is not None and version < floors.get((pair.workspace_id, key), 0)
            for key, version in ((pair.newer_key, pair.newer_version), (pair.older_key, pair.older_version))
        )
        relation, score = _verdict(pair, settled)
        if relation is None:
            remove.append(pair.id)
        elif relation == pair.relation:
            updates.append(MemoryRelation(id=pair.id, score=score))
        else:
            done.changed[f"{pair.relation}->{relation}"] += 1
            remove.append(pair.id)
            add.append(
                MemoryRelation(from_memory_id=pair.from_id, to_memory_id=pair.to_id, relation=relation, score=score)
            )
    with transaction.atomic():
        MemoryRelation.objects.filter(id__in=remove).delete()
        MemoryRelation.objects.bulk_update(updates, ["score"])
        MemoryRelation.objects.bulk_create(add, ignore_conflicts=True)
    done.kept += len(updates)
    done.removed += len(remove) - len(add)


def _floors(groups: set[tuple[int, str]]) -> dict[tuple[int, str], int]:
    """The newest deliberate version of each (workspace, fact_key): versions below are settled."""
    if not groups:
        return {}
    rows = (
        Memory.objects.live()
        .filter(
            workspace_id__in={ws for ws, _ in groups},
            fact_key__in={key for _, key in groups},
            expected_version__isnull=False,
        )
        .values("workspace_id", "fact_key")
        .annotate(top=Max("version"))
        .values_list("workspace_id", "fact_key", "top")
    )
    return {(ws, str(key)): int(top) for ws, key, top in rows if (ws, key) in groups}


def _cap_all() -> int:
    """Delete every judged edge beyond the ``MAX_PER_KIND`` strongest of its kind at either end
    (edges between versions of one key are not counted). Returns how many went."""
    by_end: dict[tuple[object, str], list[tuple[float, str, str, int]]] = defaultdict(list)
    rows = (
        MemoryRelation.objects.filter(relation__in=JUDGED)
        .values_list(
            "id", "from_memory_id", "to_memory_id", "relation", "score", "from_memory__fact_key", "to_memory__fact_key"
        )
        .iterator(chunk_size=BATCH)
    )
    for rid, src, dst, relation, score, key_a, key_b in rows:
        if key_a is not None and key_a == key_b:
            continue
        for end in (src, dst):
            by_end[(end, relation)].append((score, str(src), str(dst), rid))
    beyond: set[int] = set()
    for group in by_end.values():
        if len(group) > MAX_PER_KIND:
            group.sort(key=lambda r: (-r[0], r[1], r[2]))
            beyond.update(rid for *_, rid in group[MAX_PER_KIND:])
    ordered = sorted(beyond)
    for start in range(0, len(ordered), BATCH):
        MemoryRelation.objects.filter(id__in=ordered[start : start + BATCH]).delete()
    return len(beyond)
