"""Everything that writes sessions: upsert, turns, forget, share (docs/sessions.md).

Every service takes the caller's ``Principal`` and the raw JSON of the request, parses it with
``transcripts.inputs`` and answers the same on REST, MCP and the dashboard. One upload is one
admission (``memories.admission``): one call against the rate limit, and its new turns against
the plan's turns-per-project limit (``Admission.turn_room``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.keys import Principal
from accounts.models import SCOPE_WRITE
from accounts.services import audit_record
from memories import admission, guard, record_rules
from memories.inputs import parse
from memories.presenters import project_envelope
from mmw import replicas, text
from mmw.errors import Conflict, Forbidden, InvalidInput, MMWError, NotFound
from mmw.locks import advisory_xact_lock
from transcripts import indexing, inputs, presenters, selectors, tasks
from transcripts.models import Session, Turn

TURN_LIMIT_TEXT = "project session turn limit exceeded"


def _begin_write(principal: Principal) -> admission.Admission:
    """The checks every session write makes, once per call (``admission.admit_write``)."""
    return admission.admit_write(principal, SCOPE_WRITE)


def _forgotten(key: inputs.SessionKey) -> Conflict:
    return Conflict(f"session {key.client}/{key.session_id} was forgotten and cannot be uploaded again")


# --- upsert ---------------------------------------------------------------------------------


@replicas.writes
def session_upsert(
    *, principal: Principal, client: Any, session_id: Any, payload: Mapping[str, Any] | None
) -> tuple[dict[str, Any], bool]:
    """Create the caller's session (client, session_id) or update its metadata; fields left out
    (or null) keep their stored value. Returns ``(answer, created)``."""
    key = inputs.session_key(client, session_id)
    values = parse(inputs.UPSERT, payload)
    now = timezone.now()
    started = inputs.parse_time("started_at", values["started_at"], now=now)
    ended = inputs.parse_time("ended_at", values["ended_at"], now=now)
    if started is not None and ended is not None and ended < started:
        raise InvalidInput("ended_at must not be before started_at")
    labels = _screen_labels(principal, {k: values[k] for k in ("title", "working_directory", "device")})
    admitted = _begin_write(principal)
    with transaction.atomic():
        advisory_xact_lock("session", f"{principal.project.pk}:{principal.user.pk}:{key.client}:{key.session_id}")
        found = selectors.own_session(principal, key)
        created = found is None
        if found is not None and found.forgotten_at is not None:
            raise _forgotten(key)
        target = found or Session(
            account=principal.account,
            project=principal.project,
            author=principal.user,
            api_key=principal.api_key,
            client=key.client,
            client_session_id=key.session_id,
            device=principal.device_label,
        )
        for name, value in (*labels.items(), ("started_at", started), ("ended_at", ended)):
            if value is not None:
                setattr(target, name, value)
        target.save()
    return {**project_envelope(principal, admitted.notice()), "session": presenters.session(target)}, created


def _screen_labels(principal: Principal, labels: dict[str, str | None]) -> dict[str, str | None]:
    clean, _ = record_rules.guarded(labels, secrets_mode=principal.project.guard_secrets_mode)
    return {k: v if isinstance(v, str) else None for k, v in clean.items()}


# --- turns ----------------------------------------------------------------------------------


@replicas.writes
def session_add_turns(
    *, principal: Principal, client: Any, session_id: Any, payload: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Add up to 500 turns to the caller's session, each answered in place (in order):
    ``created`` (stored; ``withheld`` names the Guard's reason when it was kept as a stub,
    ``redactions`` lists redacted secrets), ``unchanged`` (that position already holds the same
    turn), or ``{"error": …}`` for that turn alone (bad fields, 409 for other content at a
    stored position, the plan's turn limit). Positions are the idempotency key.
    ``queued_for_vectors``: the session's turns waiting for the worker's vector after this call
    (its new turns, a turn whose predecessor changed, earlier ones not embedded yet), at most
    ``memories.selectors.PENDING_COUNT_MAX``."""
    key = inputs.session_key(client, session_id)
    raw = inputs.turns_list(payload)
    admitted = _begin_write(principal)
    now = timezone.now()
    results: list[dict[str, Any]] = []
    with transaction.atomic():
        advisory_xact_lock("session", f"{principal.project.pk}:{principal.user.pk}:{key.client}:{key.session_id}")
        target = selectors.own_session(principal, key)
        if target is None:
            raise NotFound("session not found")
        if target.forgotten_at is not None:
            raise _forgotten(key)
        parsed: list[tuple[int, dict[str, Any] | MMWError]] = []
        for index, item in enumerate(raw):
            try:
                values: dict[str, Any] = inputs.turn_item(index, item)
                values["occurred_at"] = inputs.parse_time("occurred_at", values["occurred_at"], now=now) or now
                parsed.append((index, values))
            except MMWError as exc:
                parsed.append((index, exc))
        positions = [v["position"] for _, v in parsed if isinstance(v, dict)]
        existing = Turn.objects.filter(session=target, position__in=positions)
        stored = dict(existing.values_list("position", "content_hash"))
        new = [v for _, v in parsed if isinstance(v, dict) and v["position"] not in stored]
        room = admitted.turn_room(len({v["position"] for v in new}))
        rows: list[Turn] = []
        for index, outcome in parsed:
            if isinstance(outcome, MMWError):
                results.append(_item_error(index, None, outcome))
                continue
            results.append(_one_turn(principal, target, index, outcome, stored, rows, room))
        if rows:
            Turn.objects.bulk_create(rows)
            Session.objects.filter(pk=target.pk).update(turn_count=F("turn_count") + len(rows), updated_at=now)
            indexing.refresh_context(target.pk, min(r.position for r in rows))
            target_id = target.pk
            transaction.on_commit(lambda: tasks.enqueue_embedding(target_id))
        target.refresh_from_db()
    return {
        **project_envelope(principal, admitted.notice()),
        "session": presenters.session(target),
        "created": sum(1 for r in results if r.get("status") == "created"),
        "unchanged": sum(1 for r in results if r.get("status") == "unchanged"),
        "errors": sum(1 for r in results if "error" in r),
        "queued_for_vectors": selectors.session_pending(target.pk),
        "results": results,
    }


def _one_turn(
    principal: Principal,
    target: Session,
    index: int,
    values: dict[str, Any],
    stored: dict[int, str],
    rows: list[Turn],
    room: int,
) -> dict[str, Any]:
    """One turn's answer; a new turn is appended to ``rows`` and its hash to ``stored`` (so a
    position repeated within the call is compared with its first occurrence)."""
    position = values["position"]
    digest = text.sha256_hex(f"{values['role']}\x00{values['content']}")
    if position in stored:
        if stored[position] == digest:
            return {"index": index, "position": position, "status": "unchanged"}
        conflict = Conflict(f"409 Conflict: turn {position} was stored with other content")
        return _item_error(index, position, conflict)
    if len(rows) >= room:
        return _item_error(index, position, Forbidden(TURN_LIMIT_TEXT, code="limit_exceeded"))
    content, withheld, redactions = screen_turn(values["content"], secrets_mode=principal.project.guard_secrets_mode)
    rows.append(
        Turn(
            session=target,
            project_id=target.project_id,
            position=position,
            role=values["role"],
            occurred_at=values["occurred_at"],
            content=content,
            content_hash=digest,
            is_stub=withheld is not None,
            stub_reason=withheld or "",
        )
    )
    stored[position] = digest
    answer: dict[str, Any] = {"index": index, "position": position, "status": "created", "withheld": withheld}
    if redactions:
        answer["redactions"] = redactions
    return answer


def screen_turn(content: str, *, secrets_mode: str) -> tuple[str, str | None, list[str]]:
    """Memory Guard over a turn: ``(text, withheld reason or None, redacted rule ids)`` — secrets
    redacted; a refusal keeps a stub naming the reason (uploads and imports alike)."""
    try:
        result = guard.screen_text(content, field="content", secrets_mode=secrets_mode)
    except guard.GuardRejection as exc:
        reason = exc.reason[:150]
        return presenters.WITHHELD.format(reason=reason), reason, []
    return result.text, None, [r.rule_id for r in result.redactions]


def _item_error(index: int, position: int | None, exc: MMWError) -> dict[str, Any]:
    return {"index": index, "position": position, "error": {"code": exc.code, "message": exc.message}}


# --- forget and share -----------------------------------------------------------------------


@replicas.writes
def session_forget(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.SessionForgotten:
    """Soft-delete one session the caller can read (their own, else one shared with the
    project): it and its turns leave every read and search; the deletion is audited. A missing
    session is not an error (``forgotten: false``)."""
    values = parse(inputs.FORGET_SESSION, payload)
    key = inputs.session_key(values["client"], values["session_id"])
    admitted = _begin_write(principal)
    with transaction.atomic():
        found = selectors.resolve(principal, key)
        forgotten = False
        if found is not None:
            forgotten = _forget(principal, found)
    return {
        **project_envelope(principal, admitted.notice()),
        "client": key.client,
        "session_id": key.session_id,
        "forgotten": forgotten,
        "at": timezone.now().isoformat(),
    }


def _forget(principal: Principal, target: Session) -> bool:
    now = timezone.now()
    count = Session.objects.filter(pk=target.pk, forgotten_at__isnull=True).update(
        forgotten_at=now, forgotten_by=principal.user
    )
    if count:
        audit_record(
            action="session.forgotten",
            account=principal.account,
            actor_user=principal.user,
            actor_key=principal.api_key,
            target_type="session",
            target_id=str(target.pk),
            data={"client": target.client, "session_id": target.client_session_id, "project": str(target.project_id)},
        )
    return count == 1


@replicas.writes
def session_forget_by_id(*, principal: Principal, session_pk: uuid.UUID) -> bool:
    """The dashboard's forget: by the session's own id, among the sessions the caller can read."""
    _begin_write(principal)
    with transaction.atomic():
        found = Session.objects.visible_to(principal).live().filter(pk=session_pk).select_for_update().first()
        return found is not None and _forget(principal, found)


@replicas.writes
def session_share(*, principal: Principal, session_pk: uuid.UUID, shared: bool) -> Session:
    """Share the caller's own session with the project (or take it back); audited. Only its
    author may: another member's session answers as if it did not exist."""
    _begin_write(principal)
    with transaction.atomic():
        found = (
            Session.objects.visible_to(principal)
            .live()
            .filter(pk=session_pk, author_id=principal.user.pk)
            .select_for_update()
            .first()
        )
        if found is None:
            raise NotFound("session not found")
        if found.shared_with_project != shared:
            found.shared_with_project = shared
            found.save(update_fields=["shared_with_project", "updated_at"])
            audit_record(
                action="session.shared" if shared else "session.unshared",
                account=principal.account,
                actor_user=principal.user,
                target_type="session",
                target_id=str(found.pk),
                data={"project": str(found.project_id)},
            )
    return found


__all__ = ["session_add_turns", "session_forget", "session_share", "session_upsert"]
