"""Everything that writes memories: ``memory_remember`` and ``memory_forget``.

Both take the caller's ``Principal`` and the raw JSON object of the request; the checks run in
the order docs/reference/remember.md lists, with its exact texts, whichever surface (REST, MCP, dashboard) calls.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from accounts.keys import Principal
from accounts.models import SCOPE_WRITE, Account, User, Workspace
from accounts.services import MANAGE_REFUSAL, audit_record
from memories import admission, embedding, guard, inputs, presenters, record_rules, tasks
from memories.models import IdempotencyRecord, Memory, MemoryRelation, Visibility, live_count
from memories.presenters import API_VERSION
from memories.workspaces import ALL, WorkspaceState, workspace_state
from mmw.errors import Conflict, Forbidden, InvalidInput, MMWError, NotFound
from mmw.locks import advisory_xact_lock
from orgs.selectors import acting_membership


@dataclass(frozen=True)
class RememberInput:
    content: str
    workspace: str
    scope: str
    source: str
    source_id: str | None
    source_hash: str | None
    source_revision: str | None
    fact_key: str | None
    confidence: float
    derived_from: list[str] | None
    tags: list[str] | None
    expires_at: str | None
    reason: str | None
    expected_version: int | None
    visibility: str


def memory_remember(
    *, principal: Principal, payload: Mapping[str, Any] | None, idempotency_key: str | None = None
) -> presenters.Remembered:
    """Store one new record (never updating or deleting another) and return SPEC's answer.

    With ``idempotency_key`` a replay of the same input returns the first answer unchanged, and
    the same key with other input is refused; the key is scoped to (API key, project, workspace).
    """
    data = RememberInput(**inputs.parse(inputs.REMEMBER, payload))
    _check_fields(data)
    with transaction.atomic():
        derived = _check_derived_from(principal, data.derived_from)
        if idempotency_key is not None:
            replay = _idempotent_replay(principal, data, idempotency_key)
            if replay is not None:
                return replay
        answer = _remember(principal, data, derived, admission.admit(principal))
        if idempotency_key is not None and principal.api_key is not None:
            IdempotencyRecord.objects.create(
                api_key=principal.api_key,
                project=principal.project,
                workspace_name=data.workspace,
                key=idempotency_key,
                request_hash=record_rules.request_hash(vars(data)),
                response=answer,
            )
    return answer


def _check_fields(data: RememberInput) -> None:
    if not data.content.strip():
        raise InvalidInput("content must not be empty")
    if not data.workspace.strip() or not data.scope.strip():
        raise InvalidInput("workspace and scope must not be empty")
    if not 0.0 <= data.confidence <= 1.0:
        raise InvalidInput("confidence must be between 0 and 1")
    if data.source_hash is not None and data.source_id is None:
        raise InvalidInput("source_id is required when source_hash is provided")
    if data.visibility not in Visibility.values:
        raise InvalidInput(f"visibility must be one of {', '.join(Visibility.values)}")
    if data.expected_version is not None and data.expected_version < 1:
        raise InvalidInput("expected_version must be a positive integer")
    if data.expected_version is not None and data.fact_key is None:
        raise InvalidInput("expected_version requires fact_key")


def _check_derived_from(principal: Principal, ids: list[str] | None) -> list[uuid.UUID]:
    """Every id must name a live record the caller can read; the answer is sorted and unique."""
    if not ids:
        return []
    try:
        wanted = sorted({uuid.UUID(i) for i in ids})
    except ValueError:
        raise InvalidInput("derived_from contains unknown memory ids") from None
    found = Memory.objects.visible_to(principal).live().filter(id__in=wanted).count()
    if found != len(wanted):
        raise InvalidInput("derived_from contains unknown memory ids")
    return wanted


def _idempotent_replay(principal: Principal, data: RememberInput, key: str) -> presenters.Remembered | None:
    if not record_rules.valid_idempotency_key(key):
        raise InvalidInput("invalid X-Idempotency-Key")
    if principal.api_key is None:
        return None
    # Serialise concurrent requests with the same key; the loser sees the winner's record.
    advisory_xact_lock("idem", f"{principal.api_key.pk}:{principal.project.pk}:{data.workspace}:{key}")
    record = IdempotencyRecord.objects.filter(
        api_key=principal.api_key, project=principal.project, workspace_name=data.workspace, key=key
    ).first()
    if record is None:
        return None
    if record.request_hash != record_rules.request_hash(vars(data)):
        raise Conflict("409 Conflict: idempotency key was used with different input")
    return cast(presenters.Remembered, dict(record.response))  # stored from a Remembered


def _remember(
    principal: Principal, data: RememberInput, derived: list[uuid.UUID], admitted: admission.Admission
) -> presenters.Remembered:
    now = timezone.now()
    expires_at = record_rules.parse_expires_at(data.expires_at, now=now) if data.expires_at else None
    state = workspace_state(principal, data.workspace)
    version = _next_version(principal, state, data)
    if SCOPE_WRITE not in principal.scopes:
        raise Forbidden("403 Forbidden: key lacks memory:write")
    clean, redactions = _screen(principal, data)
    admitted.check_quota()
    _check_technical_limits(principal, state)
    admitted.check_rate()
    state.raise_problem()
    if not principal.membership.may_write:
        raise Forbidden("membership may not write in this organization")
    admitted.ensure_may_write()
    workspace = state.workspace or Workspace.objects.get_or_create(project=principal.project, name=data.workspace)[0]
    vector, model_id = embedding.embed_for_write(clean["content"])
    if version > 1:
        Memory.objects.filter(workspace=workspace, fact_key=clean["fact_key"], superseded_at__isnull=True).update(
            superseded_at=now
        )
    memory = Memory.objects.create(
        account=principal.account,
        project=principal.project,
        workspace=workspace,
        content=clean["content"],
        scope=data.scope,
        source=data.source,
        source_id=clean["source_id"],
        source_hash=data.source_hash,
        source_revision=clean["source_revision"],
        fact_key=clean["fact_key"],
        version=version,
        expected_version=data.expected_version,
        confidence=data.confidence,
        importance=record_rules.importance_from_tags(clean["tags"] or []),
        derived_from=derived,
        tags=clean["tags"] or [],
        reason=clean["reason"],
        expires_at=expires_at,
        visibility=data.visibility,
        department_ids=sorted(principal.department_ids) if data.visibility == Visibility.DEPARTMENT else [],
        author=principal.user,
        api_key=principal.api_key,
        device_label=principal.device_label,
        embedding=vector,
        embedding_model=model_id,
    )
    _link_derived(memory, derived)
    transaction.on_commit(lambda: tasks.enqueue_archive(memory.id))
    return presenters.remembered(principal, memory, redactions, admitted.notice())


def _next_version(principal: Principal, state: WorkspaceState, data: RememberInput) -> int:
    """The version the new record gets; enforces ``expected_version`` under a per-key lock.

    Numbers are never reused (forgotten and hidden versions keep theirs, so numbering may show
    gaps); ``expected_version`` is compared with the newest live version *the caller can read*,
    the one they can have seen, so another member's draft is neither revealed nor in the way."""
    if data.fact_key is None:
        return 1
    latest_seen = latest_any = 0
    if state.workspace is not None:
        advisory_xact_lock("fact", f"{state.workspace.pk}:{data.fact_key}")
        versions = Memory.objects.filter(workspace=state.workspace, fact_key=data.fact_key)
        latest_any = versions.aggregate(m=Max("version"))["m"] or 0
        seen = Memory.objects.visible_to(principal).live().filter(workspace=state.workspace, fact_key=data.fact_key)
        latest_seen = seen.aggregate(m=Max("version"))["m"] or 0
    if data.expected_version is not None and data.expected_version != latest_seen:
        raise Conflict(f"version conflict: expected version {data.expected_version} but the latest is {latest_seen}")
    return latest_any + 1


def _screen(principal: Principal, data: RememberInput) -> tuple[dict[str, Any], list[presenters.Redaction]]:
    """Memory Guard over every text field; refusals become the SPEC's error."""
    fields: dict[str, Any] = {
        "content": data.content,
        "source_id": data.source_id,
        "source_revision": data.source_revision,
        "fact_key": data.fact_key,
        "tags": data.tags,
        "reason": data.reason,
    }
    try:
        clean, redactions = guard.screen_fields(fields, secrets_mode=principal.project.guard_secrets_mode)
    except guard.GuardRejection as exc:
        raise InvalidInput(f"Memory rejected by Security Guard: {exc.reason}", code="guard_rejected") from None
    return dict(clean), [{"field": r.field, "rule": r.rule_id} for r in redactions]


def _check_technical_limits(principal: Principal, state: WorkspaceState) -> None:
    """The operator's ceilings (settings), read from the trigger-kept ``LiveCount`` rows in O(1)."""
    in_workspace = live_count(workspace_id=state.workspace.pk) if state.workspace is not None else 0
    if in_workspace >= settings.MMW_MAX_MEMORIES_PER_WORKSPACE:
        raise Forbidden("maximum number of memories exceeded for workspace", code="limit_exceeded")
    if live_count(account_id=principal.account.pk) >= settings.MMW_MAX_MEMORIES_PER_TENANT:
        raise Forbidden("maximum number of memories exceeded for tenant", code="limit_exceeded")


def _link_derived(memory: Memory, derived: list[uuid.UUID]) -> None:
    MemoryRelation.objects.bulk_create(
        [MemoryRelation(from_memory=memory, to_memory_id=i, relation="derived_from", score=1.0) for i in derived],
        ignore_conflicts=True,
    )


# --- forget -----------------------------------------------------------------------------


def memory_keep_version(*, principal: Principal, memory_id: str) -> presenters.Remembered:
    """Resolve a conflict by keeping one version: a new version of its fact_key with the same
    content and provenance, written as a deliberate update of the newest version the caller can
    read (``expected_version``), so every earlier version is superseded (SPEC §1). Audited.
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
    return count


@transaction.atomic
def workspace_delete(*, workspace: Workspace, actor: User) -> int:
    """Delete a workspace for good: its live records are forgotten (soft, kept for audit), their
    relations removed, and its name stays reserved in the project (the row is kept, so the unique
    constraint refuses the name; writes answer ``workspace '<name>' was deleted …``).
    Returns the number of records forgotten. Owners and admins only; idempotent."""
    project = workspace.project
    acting_membership(account=project.account, user=actor, manage=True, refusal=MANAGE_REFUSAL)
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


__all__ = ["API_VERSION", "MMWError", "memory_expire_due", "memory_forget", "memory_remember", "workspace_delete"]
