"""Everything that writes memories: ``memory_remember`` and ``memory_remember_batch`` (in
``memories.remember``: one code path for one record and for many), ``memory_forget``, workspace
deletion and expiry.

Each takes the caller's ``Principal`` and the raw JSON object of the request; the checks run in
the order docs/reference/ lists, with its exact texts, whichever surface (REST, MCP, dashboard) calls.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from accounts.keys import Principal
from accounts.models import SCOPE_WRITE, Account, User, Workspace
from accounts.services import MANAGE_REFUSAL, audit_record
from memories import admission, inputs, presenters, sequence, tasks
from memories.models import Memory, MemoryRelation
from memories.presenters import API_VERSION
from memories.remember import memory_remember, memory_remember_batch
from memories.workspaces import ALL, WorkspaceState, workspace_state
from mmw import replicas
from mmw.errors import Forbidden, InvalidInput, MMWError, NotFound
from orgs.selectors import acting_membership

# --- forget -----------------------------------------------------------------------------


@replicas.writes
def memory_keep_version(*, principal: Principal, memory_id: str) -> presenters.Remembered:
    """Resolve a conflict by keeping one version: a new version of its fact_key with the same
    content and provenance, written as a deliberate update of the newest version the caller can
    read (``expected_version``), so every earlier version is superseded. Audited.
    Goes through ``memory_remember``: the same checks, Guard, limits and billing as any write."""
    wanted = _parse_uuid(memory_id)
    record = None
    if wanted is not None:
        record = Memory.objects.visible_to(principal).live().filter(id=wanted).select_related("workspace").first()
    if record is None:
        raise NotFound("memory not found")
    if record.fact_key is None:
        raise InvalidInput("only a record with a fact_key has versions to choose between")
    latest = (
        Memory.objects.visible_to(principal)
        .live()
        .filter(workspace_id=record.workspace_id, fact_key=record.fact_key)
        .aggregate(m=Max("version"))["m"]
    )
    payload = {
        "content": record.content,
        "workspace": record.workspace.name,
        "scope": record.scope,
        "source": record.source,
        "source_id": record.source_id,
        "source_hash": record.source_hash,
        "source_revision": record.source_revision,
        "fact_key": record.fact_key,
        "confidence": record.confidence,
        "tags": list(record.tags) or None,
        "visibility": record.visibility,
        "expected_version": latest,
        "reason": f"kept version {record.version} to resolve a conflict",
    }
    with transaction.atomic():
        answer = memory_remember(principal=principal, payload=payload)
        audit_record(
            action="memory.version_kept",
            account=principal.account,
            actor_user=principal.user,
            actor_key=principal.api_key,
            target_type="memory",
            target_id=answer["id"],
            data={"kept": str(record.id), "version": answer["version"], "project": str(principal.project.pk)},
        )
    return answer


@replicas.writes
def memory_forget(
    *, principal: Principal, payload: Mapping[str, Any] | None
) -> presenters.ForgottenOne | presenters.ForgottenSource:
    """Soft-delete by id or by source: only live records the caller can read; relations go too.

    A missing record is not an error (``forgotten: false`` / ``forgotten_count: 0``)."""
    values = inputs.parse(inputs.FORGET, payload)
    memory_id, source_id, workspace_name = values["memory_id"], values["source_id"], values["workspace"]
    if memory_id is None and source_id is None:
        raise InvalidInput("Either memory_id or source_id must be provided")
    if memory_id is not None and source_id is not None:
        raise InvalidInput("Provide only one of memory_id and source_id: forgetting by source must be explicit")
    if not workspace_name.strip():
        raise InvalidInput("workspace must not be empty")
    if workspace_name == ALL and source_id is not None:
        raise InvalidInput("forget by source_id needs one workspace, not '*'")
    admitted = admission.admit(principal)
    admitted.check_rate()
    state = WorkspaceState(ALL, None) if workspace_name == ALL else workspace_state(principal, workspace_name)
    state.raise_problem()
    if SCOPE_WRITE not in principal.scopes:
        raise Forbidden("403 Forbidden: key lacks memory:write")
    if not principal.membership.may_write:
        raise Forbidden("membership may not write in this organization")
    admitted.ensure_may_write()
    with transaction.atomic():
        if memory_id is not None:
            return _forget_one(principal, memory_id, state, admitted)
        return _forget_source(principal, source_id, state, admitted)


def _forget_one(
    principal: Principal, memory_id: str, state: WorkspaceState, admitted: admission.Admission
) -> presenters.ForgottenOne:
    """Forget one record of the given workspace (``*``: of any workspace of the project)."""
    target = _parse_uuid(memory_id)
    record = None
    if target is not None and (state.workspace is not None or state.name == ALL):
        records = Memory.objects.visible_to(principal).filter(forgotten_at__isnull=True, id=target)
        if state.workspace is not None:
            records = records.filter(workspace=state.workspace)
        record = records.select_for_update().select_related("workspace").first()
    forgotten = record is not None and _soft_delete(principal, [record], by="id") == 1
    name = record.workspace.name if record is not None else state.name
    return {
        "id": memory_id,
        "forgotten": forgotten,
        **presenters.envelope(principal, name, admitted.notice()),
        "at": timezone.now().isoformat(),
    }


def _forget_source(
    principal: Principal, source_id: str, state: WorkspaceState, admitted: admission.Admission
) -> presenters.ForgottenSource:
    count = 0
    if state.workspace is not None:
        records = list(
            Memory.objects.visible_to(principal)
            .filter(forgotten_at__isnull=True, workspace=state.workspace, source_id=source_id)
            .select_for_update()
        )
        count = _soft_delete(principal, records, by="source_id")
    return {
        "source_id": source_id,
        "forgotten_count": count,
        **presenters.envelope(principal, state.name, admitted.notice()),
        "at": timezone.now().isoformat(),
    }


def _soft_delete(principal: Principal, records: list[Memory], *, by: str) -> int:
    if not records:
        return 0
    ids = [r.id for r in records]
    count = _forget_ids(ids, at=timezone.now(), actor=principal.user)
    audit_record(
        action="memory.forgotten",
        account=principal.account,
        actor_user=principal.user,
        actor_key=principal.api_key,
        target_type="memory",
        target_id=str(ids[0]) if len(ids) == 1 else "",
        data={"by": by, "ids": [str(i) for i in ids], "project": str(principal.project.pk)},
    )
    return count


def _forget_ids(ids: Sequence[uuid.UUID], *, at: datetime, actor: User | None) -> int:
    """THE soft delete, for forget, workspace deletion and expiry alike: the still-live records
    among ``ids`` get ``forgotten_at`` (they leave every read; the rows stay for audit and
    history) and lose their graph relations. Returns how many were live. The caller writes the
    audit row that says why, inside the same transaction."""
    if not ids:
        return 0
    count = Memory.objects.filter(id__in=ids, forgotten_at__isnull=True).update(forgotten_at=at, forgotten_by=actor)
    MemoryRelation.objects.filter(from_memory_id__in=ids).delete()
    MemoryRelation.objects.filter(to_memory_id__in=ids).delete()
    relinked = sequence.unlink(ids)  # a forgotten record's words stop finding its neighbour
    if relinked:
        transaction.on_commit(lambda: tasks.enqueue_embedding(relinked))
    return count


@transaction.atomic
def workspace_delete(*, workspace: Workspace, actor: User) -> int:
    """Delete a workspace for good: its live records are forgotten (soft, kept for audit), their
    relations removed, and its name stays reserved in the project (the row is kept, so the unique
    constraint refuses the name; writes answer ``workspace '<name>' was deleted …``).
    Returns the number of records forgotten. Owners and admins only; idempotent."""
    project = workspace.project
    acting_membership(account=project.account, user=actor, manage=True, refusal=MANAGE_REFUSAL)
    replicas.note_write(replicas.caller_key(project.account_id, actor.pk))  # at this transaction's commit
    locked = Workspace.objects.select_for_update().get(pk=workspace.pk)
    if locked.deleted_at is not None:
        return 0
    now = timezone.now()
    ids = list(Memory.objects.filter(workspace=locked, forgotten_at__isnull=True).values_list("id", flat=True))
    count = _forget_ids(ids, at=now, actor=actor)
    locked.deleted_at = now
    locked.save(update_fields=["deleted_at"])
    audit_record(
        action="workspace.deleted",
        account=project.account,
        actor_user=actor,
        target_type="workspace",
        target_id=str(locked.public_id),
        data={"name": locked.name, "project": str(project.pk), "forgotten_count": count},
    )
    return count


def memory_expire_due(*, limit: int) -> int:
    """Soft-forget up to ``limit`` records past ``expires_at`` (reads already hide them; this
    makes it permanent and drops their relations), with one ``memory.expired`` audit row per
    project naming them. Concurrent runs skip each other's rows. Returns how many."""
    now = timezone.now()
    with transaction.atomic():
        rows = list(
            Memory.objects.filter(forgotten_at__isnull=True, expires_at__lte=now)
            .order_by("expires_at")
            .select_for_update(skip_locked=True)
            .values_list("id", "account_id", "project_id")[:limit]
        )
        count = _forget_ids([memory_id for memory_id, _, _ in rows], at=now, actor=None)
        groups: dict[tuple[int, uuid.UUID], list[str]] = defaultdict(list)
        for memory_id, account_id, project_id in rows:
            groups[(account_id, project_id)].append(str(memory_id))
        accounts = Account.objects.in_bulk({key[0] for key in groups})
        for (account_id, project_id), group in groups.items():
            audit_record(
                action="memory.expired",
                account=accounts.get(account_id),
                target_type="memory",
                target_id=group[0] if len(group) == 1 else "",
                data={"by": "expires_at", "ids": group, "project": str(project_id)},
            )
    return count


def _parse_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


__all__ = [
    "API_VERSION",
    "MMWError",
    "memory_expire_due",
    "memory_forget",
    "memory_remember",
    "memory_remember_batch",
    "workspace_delete",
]
