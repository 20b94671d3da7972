"""Everything that writes the ledger: ``ledger_record``, ``ledger_reverse`` and
``ledger_complete`` (docs/ledger.md).

Each takes the caller's ``Principal`` and the raw JSON object of the call, parses it with
``ledger.inputs`` and answers the same on REST and MCP. The checks run in remember's order
(``memories.admission``: rate, scope, role, billing state), text fields pass the Memory Guard
(card numbers and IBANs redacted, poisoning refused), and every write is audited.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.keys import Principal
from accounts.models import SCOPE_LEDGER_WRITE
from accounts.services import audit_record
from ledger import inputs, presenters
from ledger.currencies import check_currency, format_amount, parse_amount
from ledger.models import Entry, Kind
from ledger.repeat import occurrences, parse_repeat
from memories import admission, record_rules
from memories.inputs import parse
from memories.models import Visibility
from memories.presenters import project_envelope
from memories.record_rules import parse_occurred_at, parse_time_filter, request_hash
from mmw import replicas, times
from mmw.errors import Conflict, InvalidInput, NotFound
from mmw.locks import advisory_xact_lock

SCREENED = ("counterparty", "category", "memo", "reference", "tags")
REFERENCE_CONFLICT = "409 Conflict: reference was used with different content"
ALREADY_REVERSED = "409 Conflict: entry was already reversed"
ALREADY_COMPLETED = "409 Conflict: occurrence was already completed"
NOT_A_REMINDER = "409 Conflict: only a reminder can be completed"
CANCELLED = "409 Conflict: reminder was cancelled"
ALL_COMPLETED = "409 Conflict: every occurrence of this reminder is completed"
NOT_AN_OCCURRENCE = "due_at is not an occurrence of this reminder"
COMPLETE_HORIZON = timedelta(days=366)


def begin_write(principal: Principal) -> admission.Admission:
    """The checks every ledger write makes, once per call (``admission.admit_write``)."""
    return admission.admit_write(principal, SCOPE_LEDGER_WRITE)


def _screen(principal: Principal, values: dict[str, Any]) -> dict[str, Any]:
    fields = {name: values[name] for name in SCREENED}
    clean, _ = record_rules.guarded(fields, secrets_mode=principal.project.guard_secrets_mode)
    return {**values, **clean}


def entry_fields(values: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The checked columns of a new entry (product rules after the shape checks of ``parse``);
    ``ledger_record`` and an import's ledger lines both pass here."""
    kind = values["kind"]
    if kind not in inputs.KINDS:
        raise InvalidInput('kind must be "transaction" or "reminder"')
    if values["visibility"] not in inputs.VISIBILITY:
        raise InvalidInput("visibility must be one of author, department, project, org")
    currency = check_currency(values["currency"])
    amount = parse_amount(values["amount"], currency)
    fields: dict[str, Any] = {"kind": kind, "amount": amount, "currency": currency, "repeat": ""}
    if kind == Kind.TRANSACTION:
        if values["due_at"] is not None or values["repeat"] is not None:
            raise InvalidInput("due_at and repeat are for reminders; a transaction has occurred_at")
        occurred = values["occurred_at"]
        fields["occurred_at"] = parse_occurred_at(occurred, now=now) if occurred is not None else now
    else:
        if values["occurred_at"] is not None:
            raise InvalidInput("a reminder has due_at, not occurred_at")
        if values["due_at"] is None:
            raise InvalidInput("due_at is required for a reminder")
        fields["due_at"] = parse_time_filter("due_at", values["due_at"])
        fields["repeat"] = parse_repeat(values["repeat"]).text() if values["repeat"] is not None else ""
    for name in ("counterparty", "category", "memo"):
        fields[name] = (values[name] or "").strip()
    fields["tags"] = sorted(set(values["tags"] or []))
    fields["reference"] = values["reference"]
    fields["visibility"] = values["visibility"]
    return fields


def content_digest(fields: Mapping[str, Any]) -> str:
    """What makes two entries with one reference "the same content" (the time of a transaction
    left to its default is not part of it: a replay an hour later is still the same entry)."""
    same = {k: v for k, v in fields.items() if k not in ("reference", "occurred_at")}
    same["amount"] = format_amount(fields["amount"], fields["currency"])
    return request_hash(same)


@replicas.writes
def ledger_record(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.Recorded:
    """Append one entry. With a ``reference`` the caller already used (in this project), the same
    content answers the stored entry (``replayed``), other content is a 409."""
    values = parse(inputs.RECORD, payload)
    now = timezone.now()
    fields = entry_fields(_screen(principal, values), now)
    admitted = begin_write(principal)
    digest = content_digest(fields)
    explicit_time = values["occurred_at"] is not None
    with transaction.atomic():
        if fields["reference"] is not None:
            advisory_xact_lock("ledger", f"{principal.project.pk}:{principal.user.pk}:{fields['reference']}")
            found = Entry.objects.filter(
                project=principal.project, author=principal.user, reference=fields["reference"]
            ).first()
            if found is not None:
                if found.content_digest != digest or (explicit_time and found.occurred_at != fields["occurred_at"]):
                    raise Conflict(REFERENCE_CONFLICT)
                return {**project_envelope(principal, admitted.notice()), "entry": presenters.entry(found),
                        "replayed": True}  # fmt: skip
        admitted.check_ledger_quota()
        created = _insert(principal, fields, digest)
        _audit(principal, "ledger.recorded", created)
    return _recorded(principal, admitted, created)


def _insert(
    principal: Principal,
    fields: dict[str, Any],
    digest: str,
    reverses: Entry | None = None,
    keep_departments: Entry | None = None,
) -> Entry:
    """A reversal (or a completion) is seen by whoever sees its original: it keeps the original's
    departments."""
    original = reverses or keep_departments
    if original is not None:
        departments = list(original.department_ids)
    else:
        departments = sorted(principal.department_ids) if fields["visibility"] == Visibility.DEPARTMENT else []
    return Entry.objects.create(
        account=principal.account,
        project=principal.project,
        author=principal.user,
        api_key=principal.api_key,
        device_label=principal.device_label,
        department_ids=departments,
        content_digest=digest,
        reverses=reverses,
        **fields,
    )


def _audit(principal: Principal, action: str, entry: Entry) -> None:
    audit_record(
        action=action,
        account=principal.account,
        actor_user=principal.user,
        actor_key=principal.api_key,
        target_type="ledger_entry",
        target_id=str(entry.id),
        data={"project": str(principal.project.id), "kind": entry.kind, "currency": entry.currency},
    )


@replicas.writes
def ledger_reverse(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.Recorded:
    """Append the entry that cancels ``entry_id``: the same kind, currency and category, the
    opposite amount, ``reason`` as its memo. A reversed entry, or a reversal, cannot be reversed
    (409); an entry the caller cannot see is not found."""
    values = parse(inputs.REVERSE, payload)
    if not values["reason"].strip():
        raise InvalidInput("reason must not be empty")
    memo = _screen_memo(principal, values["reason"])
    admitted = begin_write(principal)
    entry_id = _uuid(values["entry_id"])
    with transaction.atomic():
        original = _locked_visible(principal, entry_id)
        if original.reverses_id is not None:
            raise Conflict("409 Conflict: a reversal cannot itself be reversed")
        if Entry.objects.filter(reverses=original).exists():
            raise Conflict(ALREADY_REVERSED)
        admitted.check_ledger_quota()
        fields = _follow_up(
            original,
            kind=original.kind,
            amount=-original.amount,
            occurred_at=timezone.now() if original.kind == Kind.TRANSACTION else None,
            due_at=original.due_at,
            memo=memo,
        )
        try:
            with transaction.atomic():
                created = _insert(principal, fields, content_digest(fields), reverses=original)
        except IntegrityError:
            raise Conflict(ALREADY_REVERSED) from None
        _audit(principal, "ledger.reversed", created)
    return _recorded(principal, admitted, created)


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value.strip())
    except ValueError:
        raise NotFound("ledger entry not found") from None


def _screen_memo(principal: Principal, memo: str | None) -> str:
    """A reversal's reason or a completion's memo through the Memory Guard, stripped."""
    screened = _screen(principal, {"counterparty": None, "category": None, "memo": memo,
                                   "reference": None, "tags": None})  # fmt: skip
    return str(screened["memo"] or "").strip()


def _locked_visible(principal: Principal, entry_id: uuid.UUID) -> Entry:
    """The entry the caller can see, locked for the rest of the transaction; 404 otherwise."""
    entry = Entry.objects.visible_to(principal).select_for_update().filter(pk=entry_id).first()
    if entry is None:
        raise NotFound("ledger entry not found")
    return entry


def _follow_up(original: Entry, **fields: Any) -> dict[str, Any]:
    """The columns a reversal or a completion copies from the entry it follows (and no reference
    or repeat of its own), with ``fields`` on top."""
    copied = {
        "currency": original.currency,
        "repeat": "",
        "counterparty": original.counterparty,
        "category": original.category,
        "reference": None,
        "tags": list(original.tags),
        "visibility": original.visibility,
    }
    return {**copied, **fields}


def _recorded(principal: Principal, admitted: admission.Admission, entry: Entry) -> presenters.Recorded:
    """A new entry's answer (never a replay)."""
    return {**project_envelope(principal, admitted.notice()), "entry": presenters.entry(entry), "replayed": False}


@replicas.writes
def ledger_complete(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.Recorded:
    """Append the transaction that completes (pays) one occurrence of a reminder: the reminder's
    amount, currency, counterparty, category, tags and visibility, ``completes`` pointing at it.
    ``due_at`` names the occurrence (default: the earliest one not completed yet). Each occurrence
    is completed once (409 ``occurrence was already completed``, in the service and the database);
    a completed occurrence leaves ``ledger_upcoming`` and the due-reminder e-mails."""
    values = parse(inputs.COMPLETE, payload)
    now = timezone.now()
    memo = _screen_memo(principal, values["memo"])
    due = parse_time_filter("due_at", values["due_at"]) if values["due_at"] is not None else None
    occurred = parse_occurred_at(values["occurred_at"], now=now) if values["occurred_at"] is not None else now
    admitted = begin_write(principal)
    entry_id = _uuid(values["entry_id"])
    with transaction.atomic():
        reminder = _locked_visible(principal, entry_id)
        if reminder.kind != Kind.REMINDER or reminder.reverses_id is not None:
            raise Conflict(NOT_A_REMINDER)
        if Entry.objects.filter(reverses=reminder).exists():
            raise Conflict(CANCELLED)
        at = _occurrence(reminder, due, now)
        admitted.check_ledger_quota()
        fields = _follow_up(
            reminder,
            kind=Kind.TRANSACTION,
            amount=reminder.amount,
            occurred_at=occurred,
            memo=memo,
            completes=reminder,
            completes_due_at=at,
        )
        try:
            with transaction.atomic():
                digest = content_digest({**fields, "completes": str(reminder.pk)})
                created = _insert(principal, fields, digest, keep_departments=reminder)
        except IntegrityError:
            raise Conflict(ALREADY_COMPLETED) from None
        _audit(principal, "ledger.completed", created)
    return _recorded(principal, admitted, created)


def _occurrence(reminder: Entry, due: datetime | None, now: datetime) -> datetime:
    """The occurrence ``due`` names (refused when it is not one), or the earliest not completed."""
    assert reminder.due_at is not None
    rule = parse_repeat(reminder.repeat) if reminder.repeat else None
    if due is not None:
        if next(occurrences(reminder.due_at, rule, start=due, end=due), None) is None:
            raise InvalidInput(NOT_AN_OCCURRENCE)
        if reminder.completions.filter(completes_due_at=due).exists():
            raise Conflict(ALREADY_COMPLETED)
        return due
    done = set(reminder.completions.values_list("completes_due_at", flat=True))
    horizon = times.capped_later(max(now, reminder.due_at), COMPLETE_HORIZON)
    for at in occurrences(reminder.due_at, rule, start=reminder.due_at, end=horizon):
        if at not in done:
            return at
    raise Conflict(ALL_COMPLETED)
