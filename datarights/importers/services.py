"""Importing another service's export: its items, read by the peer's reader, written through
``remember``'s own write path (``memories.remember.memory_remember_batch``).

Why that door and not the MMW-export importer (``datarights.restore``): a peer's items are new
writes into a project that may already hold records, each with its own fate — the restore
importer takes whole MMW exports into an empty (or the same) project and refuses a file for any
one line, and it trusts ids, versions and authors a peer does not have. ``remember``'s batch
writer applies to each item exactly what a write applies — the parameter table and its bounds,
Memory Guard (a secret redacted, an injection refused), versions, quotas, the workspace rules —
and answers each item alone, which is what "import the rest only when asked" needs.

Contract of ``peer_import``:

- **Provenance.** ``source`` is the service (``mem0``), ``source_id`` the service and the item's
  own id (``mem0:448c…``, ``basic-memory:main/notes/deploy``), ``occurred_at`` the item's
  original time, ``source_revision`` its revision there; the peer's metadata is kept in
  ``reason``. The author is the caller.
- **Re-importing adds nothing.** ``source_hash`` is the SHA-256 of the item as the peer holds it
  (before the Guard); an item whose ``source_id`` and hash a record of the workspace already has
  (live or forgotten) is *unchanged* and not written. An item whose text changed there is written
  as the next version of its ``fact_key`` (the ``source_id``) with ``expected_version``: it
  supersedes the version imported before.
- **All or nothing, unless asked.** Every item is checked; without ``partial`` one bad item (a
  reader's problem or a write's refusal) refuses the whole import — nothing is written — and
  ``PeerImportRefused`` names each (the first ``MAX_REPORTED``). With ``partial`` the good items
  are written and the bad ones are named in the report. The import and its audit row
  (``data.imported_from``) commit together.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Max

from accounts.keys import Principal
from accounts.models import SCOPE_WRITE, Workspace
from accounts.services import audit_record
from datarights.importers import basic_memory, letta, mem0, supermemory
from datarights.importers.items import MAX_ITEMS, PeerItem, Problem, Read, Upload
from memories import inputs, record_rules
from memories.models import Memory
from memories.remember import memory_remember_batch
from mmw.errors import Forbidden, InvalidInput, MMWError, PayloadTooLarge

MAX_REPORTED = 50
MANAGERS_ONLY = "403 Forbidden: only owners and admins can import"

READERS: dict[str, Callable[[Upload], Read]] = {
    mem0.SERVICE: mem0.read,
    basic_memory.SERVICE: basic_memory.read,
    letta.SERVICE: letta.read,
    supermemory.SERVICE: supermemory.read,
}
SERVICES = tuple(READERS)


@dataclass
class PeerImportReport:
    service: str
    items: int = 0
    created: int = 0
    updated: int = 0  # a newer version of an item imported before
    unchanged: int = 0
    skipped: int = 0  # items with nothing to import (an empty block, a deleted passage)
    redacted: int = 0
    skipped_items: list[str] = field(default_factory=list)
    _refused: list[tuple[int, str]] = field(default_factory=list)

    def refuse(self, position: int, label: str, message: str) -> None:
        """Note item number ``position`` of the file (from 1) as refused, and why."""
        self._refused.append((position, f"{label}: {message}"))

    @property
    def refused_count(self) -> int:
        return len(self._refused)

    @property
    def refused(self) -> list[str]:
        """The refused items in the file's order, the first ``MAX_REPORTED``."""
        return [text for _, text in sorted(self._refused)[:MAX_REPORTED]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "items": self.items,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "redacted": self.redacted,
            "refused": self.refused_count,
        }

    def summary(self) -> str:
        text = (
            f"{self.service}: {self.items} item(s) read — {self.created} created, {self.updated} updated, "
            f"{self.unchanged} unchanged, {self.skipped} skipped, {self.redacted} secret(s) redacted"
        )
        if self.refused_count:
            text += f", {self.refused_count} refused"
        return text


class PeerImportRefused(InvalidInput):
    """Some items cannot be imported and ``partial`` was not asked: nothing was written."""

    def __init__(self, report: PeerImportReport) -> None:
        more = (
            f" (and {report.refused_count - len(report.refused)} more)"
            if report.refused_count > len(report.refused)
            else ""
        )
        super().__init__(
            f"import refused, nothing was written: {report.refused_count} item(s) cannot be imported{more}: "
            + "; ".join(report.refused)
            + " — fix them, or import the others with partial"
        )
        self.report = report


@dataclass(frozen=True)
class _Planned:
    position: int
    item: PeerItem
    payload: dict[str, Any]
    changed: bool  # a new version of an item imported before


def check_may_import(principal: Principal) -> None:
    """Owners and admins with a writing key (or in the dashboard), as for an MMW import."""
    if SCOPE_WRITE not in principal.scopes:
        raise Forbidden("403 Forbidden: key lacks memory:write")
    if not principal.membership.manages:
        raise Forbidden(MANAGERS_ONLY)


def peer_import(
    *, principal: Principal, service: str, upload: Upload, workspace: str = "default", partial: bool = False
) -> PeerImportReport:
    """Import ``upload`` (an export of ``service``) into the principal's project (module docstring)."""
    check_may_import(principal)
    reader = READERS.get(service)
    if reader is None:
        raise InvalidInput(f"unknown service {service!r}: one of {', '.join(SERVICES)}")
    inputs.parse((_workspace_param(),), {"workspace": workspace})
    report = PeerImportReport(service=service)
    items = _read(reader(upload), report)
    with transaction.atomic():
        planned = _plan(principal, service, workspace, items, report)
        _write(principal, planned, report)
        if report.refused_count and not partial:
            raise PeerImportRefused(report)  # rolls back every write of this import
        audit_record(
            action="data.imported_from",
            account=principal.account,
            actor_user=principal.user,
            actor_key=principal.api_key,
            target_type="project",
            target_id=str(principal.project.pk),
            data={**report.as_dict(), "workspace": workspace, "partial": partial},
        )
    return report


def _workspace_param() -> inputs.Param:
    return next(p for p in inputs.REMEMBER if p.name == "workspace")


def _read(items: Read, report: PeerImportReport) -> list[tuple[int, PeerItem]]:
    """The readable items with their place in the file, each origin id once; problems noted in
    ``report``."""
    found: list[tuple[int, PeerItem]] = []
    seen: dict[str, PeerItem] = {}
    for position, item in enumerate(items, start=1):
        report.items += 1
        if report.items > MAX_ITEMS:
            raise PayloadTooLarge(f"the file holds more than {MAX_ITEMS:,} items (the limit of one import)")
        if isinstance(item, Problem):
            if item.skip:
                report.skipped += 1
                report.skipped_items.append(f"{item.label}: {item.message}")
            else:
                report.refuse(position, item.label, item.message)
            continue
        earlier = seen.get(item.origin_id)
        if earlier is not None:
            if earlier.content != item.content:
                report.refuse(
                    position, item.label, f"its id appears twice in the file with different text ({earlier.label})"
                )
            else:
                report.unchanged += 1
            continue
        seen[item.origin_id] = item
        found.append((position, item))
    return found


def source_hash(service: str, item: PeerItem) -> str:
    """What the peer holds for this item: a change of its text (or of its id) changes it."""
    return hashlib.sha256(f"{service}\n{item.origin_id}\n{item.content}".encode()).hexdigest()


def _plan(
    principal: Principal, service: str, workspace: str, items: list[tuple[int, PeerItem]], report: PeerImportReport
) -> list[_Planned]:
    """Each item's remember payload; those already imported (same source and hash) left out."""
    mode = principal.project.guard_secrets_mode
    ids = {item.origin_id: _stored_id(f"{service}:{item.origin_id}", mode) for _, item in items}
    space = Workspace.objects.filter(project=principal.project, name=workspace).first()
    known: dict[str, set[str | None]] = {}
    latest: dict[str, int] = {}
    if space is not None:
        wanted = [i for i in ids.values() if i is not None]
        for start in range(0, len(wanted), 1000):
            chunk = wanted[start : start + 1000]
            for sid, digest in Memory.objects.filter(workspace=space, source_id__in=chunk).values_list(
                "source_id", "source_hash"
            ):
                known.setdefault(str(sid), set()).add(digest)
            readable = Memory.objects.visible_to(principal).live().filter(workspace=space, fact_key__in=chunk)
            for key, version in readable.values("fact_key").annotate(v=Max("version")).values_list("fact_key", "v"):
                latest[str(key)] = int(version)
    planned = []
    for position, item in items:
        digest = source_hash(service, item)
        stored = ids[item.origin_id]
        if stored is not None and digest in known.get(stored, ()):
            report.unchanged += 1
            continue
        source_id = f"{service}:{item.origin_id}"
        payload: dict[str, Any] = {
            "content": item.content,
            "workspace": workspace,
            "source": service,
            "source_id": source_id,
            "source_hash": digest,
            "source_revision": item.revision,
            "fact_key": source_id,
            "tags": list(item.tags) or None,
            "occurred_at": item.occurred_at,
            "reason": item.note,
        }
        version = latest.get(stored) if stored is not None else None
        if version is not None:
            payload["expected_version"] = version
        planned.append(_Planned(position, item, payload, changed=stored in known))
    return planned


def _stored_id(source_id: str, secrets_mode: str) -> str | None:
    """The ``source_id`` as a write stores it (after the Guard); None when the Guard refuses it
    (the write will then refuse the item itself)."""
    try:
        clean, _ = record_rules.guarded({"source_id": source_id}, secrets_mode=secrets_mode)
    except MMWError:
        return None
    value = clean["source_id"]
    return value if isinstance(value, str) else None


def _write(principal: Principal, planned: list[_Planned], report: PeerImportReport) -> None:
    for start in range(0, len(planned), inputs.MAX_BATCH):
        chunk = planned[start : start + inputs.MAX_BATCH]
        answer = memory_remember_batch(principal=principal, payload={"records": [p.payload for p in chunk]})
        for plan, result in zip(chunk, answer["results"], strict=True):
            if "error" in result:
                report.refuse(plan.position, plan.item.label, str(result["error"]["message"]))  # type: ignore[typeddict-item]
                continue
            report.redacted += len(result.get("redactions") or [])
            if plan.changed:
                report.updated += 1
            else:
                report.created += 1
