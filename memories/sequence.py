"""Records that form a sequence, indexed with their predecessor ("contextual indexing").

A record written with a ``source_id`` and a ``position`` (a turn of a conversation, a paragraph of
a document) is often meaningless alone: "No, that's not necessary" answers the turn before it.
So such a record is also found by its predecessor's words — ``Memory.context_document`` holds
them, and the keyword ranker counts a term found only there at ``CONTEXT_WEIGHT`` of its IDF —
and its vector is computed from "the predecessor's last ``CONTEXT_CHARS`` characters + its own
text" (``contextual_text``). Session turns are indexed the same way (``transcripts.indexing``).

The predecessor is the live record of the same sequence with the highest lower position, where
the same sequence means the same workspace, ``source_id``, author, visibility and departments: a
record's context therefore never comes from a record some reader of it may not see (a draft
never lends its words to a shared record). Why and what it gained: docs/search.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery

from memories.models import Memory

CONTEXT_WEIGHT = 0.3  # a term found only in the predecessor counts this much of its IDF
CONTEXT_CHARS = 300  # the predecessor's last characters put before a record when embedding


def contextual_text(content: str, previous: str | None, limit: int) -> str:
    """The text a sequence member's vector is computed from: the predecessor's tail, a newline,
    the member's own text, cut to ``limit`` characters."""
    if previous:
        content = f"{previous[-CONTEXT_CHARS:]}\n{content}"
    return content[:limit]


def _same_sequence(ref: Any) -> QuerySet[Memory]:
    """Live records of ``ref``'s sequence, where ``ref`` maps the sequence fields to values or to
    ``OuterRef``s (a subquery over another row)."""
    return Memory.objects.filter(
        forgotten_at__isnull=True,
        workspace_id=ref("workspace_id"),
        source_id=ref("source_id"),
        author_id=ref("author_id"),
        visibility=ref("visibility"),
        department_ids=ref("department_ids"),
    )


def _before_outer() -> QuerySet[Memory]:
    """The outer row's predecessors, nearest first (for ``Subquery(...)[:1]``)."""
    return _same_sequence(OuterRef).filter(position__lt=OuterRef("position")).order_by("-position", "-created_at")


def _after_outer() -> QuerySet[Memory]:
    """The outer row's successors, nearest first."""
    return _same_sequence(OuterRef).filter(position__gt=OuterRef("position")).order_by("position", "created_at")


def previous_content(record: Memory) -> str | None:
    """The content of an unsaved ``record``'s predecessor (None outside a sequence, or first)."""
    if record.source_id is None or record.position is None or record.workspace_id is None:
        return None
    values = {
        "workspace_id": record.workspace_id,
        "source_id": record.source_id,
        "author_id": record.author_id,
        "visibility": record.visibility,
        "department_ids": record.department_ids,
    }
    found = (
        _same_sequence(values.__getitem__)
        .filter(position__lt=record.position)
        .order_by("-position", "-created_at")
        .values_list("content", flat=True)
        .first()
    )
    return found


def link(records: Sequence[Memory]) -> list[uuid.UUID]:
    """After inserting ``records`` (in the same transaction): give each of them that belongs to a
    sequence its predecessor's words, and give the record right after each of them — whose
    predecessor is now a new record — its new context too. Returns those successors: their vectors
    were computed with the old predecessor, so they are cleared here and must be embedded again.
    Records outside a sequence cost no query (most writes)."""
    new = {r.pk for r in records if r.source_id is not None and r.position is not None}
    if not new:
        return []
    firsts = (
        Memory.objects.filter(id__in=new)
        .annotate(next_id=Subquery(_after_outer().values("id")[:1]))
        .values_list("next_id", flat=True)
    )
    successors = {i for i in firsts if i is not None} - new
    _refresh(new | successors)
    if successors:
        _unembed(successors)
    return sorted(successors)


def unlink(forgotten_ids: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    """After forgetting ``forgotten_ids``: the records right after them take their new
    predecessor's words (a forgotten record's words must not keep finding its neighbour). Returns
    those records, whose vectors were cleared and must be embedded again."""
    gone = Memory.objects.filter(id__in=list(forgotten_ids), source_id__isnull=False, position__isnull=False)
    nexts = gone.annotate(next_id=Subquery(_after_outer().values("id")[:1])).values_list("next_id", flat=True)
    successors = {i for i in nexts if i is not None}
    if not successors:
        return []
    _refresh(successors)
    _unembed(successors)
    return sorted(successors)


def _unembed(ids: Iterable[uuid.UUID]) -> None:
    """Clear the vectors of records whose predecessor changed, and mark them unarchived: the
    caller queues their embedding after the commit, and should that message be lost (broker
    down, worker killed) the archivist's sweep picks them up as unarchived and embeds them first."""
    Memory.objects.filter(id__in=list(ids)).update(embedding=None, embedding_model=None, archived_at=None)


def _refresh(ids: Iterable[uuid.UUID]) -> None:
    """Set ``context_document`` of ``ids`` to their predecessor's ``search_document`` (one UPDATE)."""
    Memory.objects.filter(id__in=list(ids)).update(
        context_document=Subquery(_before_outer().values("search_document")[:1])
    )


def with_previous_content(rows: QuerySet[Memory]) -> QuerySet[Memory]:
    """``rows`` annotated with ``previous`` (the predecessor's content, None when there is none),
    for the background embedding of many records at once."""
    return rows.annotate(previous=Subquery(_before_outer().values("content")[:1]))
