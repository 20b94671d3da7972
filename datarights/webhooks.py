"""Webhooks (docs/webhooks.md): a project's endpoints are told, from the worker, about records
created, forgotten or in conflict and sessions uploaded — only what every member of the project
may read (records of visibility ``project``/``org``, sessions shared with the project).

The database is the outbox, as for the archivist: ``scan`` turns what happened since each
endpoint's ``cursor`` (minus ``LAG``, so a transaction still open is not skipped) into
``WebhookDelivery`` rows, at most one per event and endpoint; ``deliver_due`` sends the due ones,
signed (``MMW-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``), and reschedules a
failure with exponential backoff for ``RETRY_FOR``; an endpoint failing ``MMW_WEBHOOK_DISABLE_AFTER``
times in a row is disabled and its project's owners and admins e-mailed. Every URL goes through
``datarights.outbound`` (https, public addresses, checked again at each delivery and redirect).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import secrets
import uuid
from collections.abc import Iterable
from typing import Any

import httpx
from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from accounts.keys import principal_for
from accounts.models import Project, User
from accounts.services import audit_record
from datarights import outbound
from datarights.models import WebhookDelivery, WebhookEndpoint
from memories import statuses
from memories.models import Memory, Visibility
from mmw.errors import InvalidInput, NotFound
from mmw.mail import send_on_commit
from orgs.models import Membership
from orgs.selectors import MANAGING_ROLES, acting_membership
from transcripts.models import Session

LAG = dt.timedelta(seconds=10)
SCAN_BATCH = 1000
DELIVER_BATCH = 50
LEASE = dt.timedelta(minutes=5)
RETRY_FOR = dt.timedelta(hours=24)
FIRST_RETRY = dt.timedelta(seconds=30)
MAX_RETRY = dt.timedelta(hours=1)
SHARED = (Visibility.PROJECT, Visibility.ORG)
MANAGERS_ONLY = "only owners and admins can manage webhooks"
MAX_ENDPOINTS = 10


# --- endpoints ------------------------------------------------------------------------------


def _manage(project: Project, actor: User) -> None:
    acting_membership(account=project.account, user=actor, manage=True, refusal=MANAGERS_ONLY)


def outbound_policy() -> outbound.Policy:
    """What webhook deliveries may reach, from settings at each use: https to public addresses;
    ``MMW_WEBHOOK_ALLOW_HTTP`` and ``MMW_WEBHOOK_ALLOWED_NETWORKS`` are the operator's exceptions."""
    return outbound.Policy(
        allow_http=settings.MMW_WEBHOOK_ALLOW_HTTP,
        allowed_networks=tuple(settings.MMW_WEBHOOK_ALLOWED_NETWORKS),
        timeout=settings.MMW_WEBHOOK_TIMEOUT,
    )


@transaction.atomic
def endpoint_create(
    *, project: Project, actor: User, url: str, events: Iterable[str], include_content: bool
) -> WebhookEndpoint:
    """A new endpoint; its secret is random (shown to the project's managers to verify signatures)."""
    _manage(project, actor)
    chosen = sorted(set(events))
    if not chosen or any(e not in WebhookEndpoint.EVENTS for e in chosen):
        raise InvalidInput(f"choose events among {', '.join(WebhookEndpoint.EVENTS)}")
    if len(url) > 2000:
        raise InvalidInput("url exceeds maximum length of 2000")
    try:
        policy = outbound_policy()
        _, host, port = outbound.check_url(url, policy)
        outbound.checked_addresses(host, port, policy)
    except outbound.Refused as exc:
        raise InvalidInput(f"webhook URL refused: {exc}") from exc
    if WebhookEndpoint.objects.filter(project=project).count() >= MAX_ENDPOINTS:
        raise InvalidInput(f"a project has at most {MAX_ENDPOINTS} webhook endpoints")
    endpoint = WebhookEndpoint.objects.create(
        project=project,
        url=url,
        secret=f"whsec_{secrets.token_hex(24)}",
        events=chosen,
        include_content=include_content,
        created_by=actor,
        cursor=timezone.now(),
    )
    audit_record(
        action="webhook.created",
        account=project.account,
        actor_user=actor,
        target_type="webhook",
        target_id=str(endpoint.pk),
        data={"project": str(project.pk), "url": url, "events": chosen},
    )
    return endpoint


def endpoint_of(*, project: Project, actor: User, endpoint_id: int) -> WebhookEndpoint:
    _manage(project, actor)
    found = WebhookEndpoint.objects.filter(project=project, pk=endpoint_id).first()
    if found is None:
        raise NotFound("webhook not found")
    return found


def endpoints_of(*, project: Project, actor: User) -> QuerySet[WebhookEndpoint]:
    _manage(project, actor)
    return WebhookEndpoint.objects.filter(project=project).order_by("created_at")


def delivery_log(*, endpoint: WebhookEndpoint, limit: int = 50) -> list[WebhookDelivery]:
    return list(endpoint.deliveries.order_by("-created_at", "-id")[:limit])


@transaction.atomic
def endpoint_delete(*, project: Project, actor: User, endpoint_id: int) -> None:
    endpoint = endpoint_of(project=project, actor=actor, endpoint_id=endpoint_id)
    audit_record(
        action="webhook.deleted",
        account=project.account,
        actor_user=actor,
        target_type="webhook",
        target_id=str(endpoint.pk),
        data={"project": str(project.pk), "url": endpoint.url},
    )
    endpoint.delete()


@transaction.atomic
def endpoint_enable(*, project: Project, actor: User, endpoint_id: int) -> WebhookEndpoint:
    """Turn a disabled endpoint back on; events it missed meanwhile are not sent."""
    endpoint = endpoint_of(project=project, actor=actor, endpoint_id=endpoint_id)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
        is_active=True, disabled_at=None, disabled_reason="", consecutive_failures=0, cursor=timezone.now()
    )
    endpoint.refresh_from_db()
    return endpoint


@transaction.atomic
def endpoint_send_test(*, project: Project, actor: User, endpoint_id: int) -> WebhookDelivery:
    """Queue a ``test`` event for the endpoint now (the worker sends it at once)."""
    endpoint = endpoint_of(project=project, actor=actor, endpoint_id=endpoint_id)
    delivery = _delivery(endpoint, "test", f"test:{uuid.uuid4()}", {"message": "a test event from MMW"})
    delivery.save()
    return delivery


# --- events ---------------------------------------------------------------------------------


def _delivery(endpoint: WebhookEndpoint, event_type: str, key: str, data: dict[str, Any]) -> WebhookDelivery:
    event_id = uuid.uuid4()
    now = timezone.now()
    payload = {
        "id": str(event_id),
        "type": event_type,
        "created_at": now.isoformat(),
        "project": str(endpoint.project_id),
        "data": data,
    }
    return WebhookDelivery(
        endpoint=endpoint, event_id=event_id, event_key=key, event_type=event_type, payload=payload, next_attempt_at=now
    )


def _memory_data(memory: Memory, endpoint: WebhookEndpoint, status: str, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "memory": {
            "id": str(memory.pk),
            "workspace": memory.workspace.name,
            "fact_key": memory.fact_key,
            "version": memory.version,
            "status": status,
            **extra,
        }
    }
    if endpoint.include_content and memory.forgotten_at is None:
        data["memory"]["content"] = memory.content
    return data


def scan(*, now: dt.datetime | None = None) -> int:
    """Turn what happened since each active endpoint's cursor into deliveries. Returns how many."""
    end = (now or timezone.now()) - LAG
    created = 0
    for endpoint in WebhookEndpoint.objects.filter(is_active=True, cursor__lt=end).select_related("project"):
        created += _scan_one(endpoint, end)
    return created


@transaction.atomic
def _scan_one(endpoint: WebhookEndpoint, end: dt.datetime) -> int:
    start = endpoint.cursor
    deliveries: list[WebhookDelivery] = []
    reached = end
    shared = Memory.objects.filter(project=endpoint.project, visibility__in=SHARED).select_related("workspace")
    wanted = set(endpoint.events)
    if wanted & {"memory.created", "memory.conflict"}:
        rows = list(shared.filter(created_at__gt=start, created_at__lte=end).order_by("created_at")[:SCAN_BATCH])
        reached = _capped(rows, "created_at", reached)
        if "memory.created" in wanted:
            deliveries += [
                _delivery(endpoint, "memory.created", f"memory.created:{m.pk}", _memory_data(m, endpoint, "active"))
                for m in rows
            ]
        if "memory.conflict" in wanted:
            deliveries += _conflicts(endpoint, rows)
    if "memory.forgotten" in wanted:
        rows = list(shared.filter(forgotten_at__gt=start, forgotten_at__lte=end).order_by("forgotten_at")[:SCAN_BATCH])
        reached = _capped(rows, "forgotten_at", reached)
        deliveries += [
            _delivery(endpoint, "memory.forgotten", f"memory.forgotten:{m.pk}", _memory_data(m, endpoint, "forgotten"))
            for m in rows
        ]
    if "session.uploaded" in wanted:
        sessions = Session.objects.filter(
            project=endpoint.project, shared_with_project=True, forgotten_at__isnull=True
        ).filter(updated_at__gt=start, updated_at__lte=end)
        rows_s = list(sessions.order_by("updated_at")[:SCAN_BATCH])
        reached = _capped(rows_s, "updated_at", reached)
        deliveries += [
            _delivery(
                endpoint,
                "session.uploaded",
                f"session.uploaded:{s.pk}:{s.updated_at.isoformat()}",
                {"session": {"id": str(s.pk), "client": s.client, "turn_count": s.turn_count}},
            )
            for s in rows_s
        ]
    WebhookDelivery.objects.bulk_create(deliveries, ignore_conflicts=True)
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(cursor=reached)
    return len(deliveries)


def _capped(rows: list[Any], field: str, reached: dt.datetime) -> dt.datetime:
    """A full batch: the next scan resumes at its last time (duplicates are ignored by key)."""
    if len(rows) < SCAN_BATCH:
        return reached
    last: dt.datetime = getattr(rows[-1], field)
    return min(reached, last - dt.timedelta(microseconds=1))


def _conflicts(endpoint: WebhookEndpoint, rows: list[Memory]) -> list[WebhookDelivery]:
    """``memory.conflict`` for new records whose fact_key now has diverging current versions, as
    ``memories.statuses`` decides it for the endpoint's creator; ids of records the project as a
    whole cannot read are left out of ``conflicts_with``."""
    keyed = [m for m in rows if m.fact_key is not None and m.forgotten_at is None]
    creator = endpoint.created_by
    principal = principal_for(user=creator, project=endpoint.project) if keyed and creator else None
    if principal is None:
        return []
    infos = statuses.compute(principal, keyed)
    named = {i for info in infos.values() for i in info.conflicts_with}
    readable = {
        str(i)
        for i in Memory.objects.filter(pk__in=named, project=endpoint.project, visibility__in=SHARED).values_list(
            "id", flat=True
        )
    }
    found = []
    for memory in keyed:
        info = infos[memory.pk]
        others = [i for i in info.conflicts_with if i in readable]
        if info.status == statuses.CONFLICT and others:
            data = _memory_data(memory, endpoint, "conflict", conflicts_with=others)
            found.append(_delivery(endpoint, "memory.conflict", f"memory.conflict:{memory.pk}", data))
    return found


# --- deliveries -----------------------------------------------------------------------------


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``MMW-Signature`` header value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def deliver_due(*, now: dt.datetime | None = None, limit: int = DELIVER_BATCH) -> int:
    """Send up to ``limit`` due deliveries of active endpoints. Each is leased first (another
    worker skips it), so a crash mid-send only delays it by ``LEASE``. Returns how many were sent."""
    now = now or timezone.now()
    with transaction.atomic():
        due = list(
            WebhookDelivery.objects.filter(
                status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now, endpoint__is_active=True
            )
            .select_for_update(skip_locked=True, of=("self",))
            .select_related("endpoint")
            .order_by("next_attempt_at")[:limit]
        )
        WebhookDelivery.objects.filter(pk__in=[d.pk for d in due]).update(next_attempt_at=now + LEASE)
    sent = 0
    for delivery in due:
        if not WebhookEndpoint.objects.filter(pk=delivery.endpoint_id, is_active=True).exists():
            WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=now)  # disabled meanwhile: held
            continue
        _attempt(delivery, now)
        sent += 1
    return sent


def _attempt(delivery: WebhookDelivery, now: dt.datetime) -> None:
    endpoint = delivery.endpoint
    body = json.dumps(delivery.payload, sort_keys=True, separators=(",", ":")).encode()
    stamp = int(now.timestamp())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "MMW-Webhooks/1",
        "MMW-Event": delivery.event_type,
        "MMW-Delivery": str(delivery.event_id),
        "MMW-Signature": signature(endpoint.secret, stamp, body),
    }
    error, status, ms = "", None, None
    try:
        answer = outbound.post(endpoint.url, body=body, headers=headers, policy=outbound_policy())
        status, ms = answer.status, answer.ms
        if not 200 <= answer.status < 300:
            error = f"answered {answer.status}"
    except outbound.TimedOut as exc:
        error = f"timed out: {exc}"
    except outbound.Refused as exc:
        error = f"refused: {exc}"
    except httpx.HTTPError as exc:
        error = f"network error: {type(exc).__name__}"
    _record(delivery, now, status, ms, error[:300])


@transaction.atomic
def _record(delivery: WebhookDelivery, now: dt.datetime, status: int | None, ms: int | None, error: str) -> None:
    delivery.attempts += 1
    delivery.last_status_code, delivery.response_ms, delivery.last_error = status, ms, error
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=delivery.endpoint_id)
    if not error:
        delivery.status, delivery.delivered_at = WebhookDelivery.Status.SUCCEEDED, now
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(consecutive_failures=0)
    else:
        backoff = min(FIRST_RETRY * 2 ** (delivery.attempts - 1), MAX_RETRY)
        if now + backoff - delivery.created_at > RETRY_FOR:
            delivery.status = WebhookDelivery.Status.GAVE_UP
        delivery.next_attempt_at = now + backoff
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(consecutive_failures=F("consecutive_failures") + 1)
        if endpoint.is_active and endpoint.consecutive_failures + 1 >= settings.MMW_WEBHOOK_DISABLE_AFTER:
            _disable(endpoint, now, error)
    delivery.save()


def _disable(endpoint: WebhookEndpoint, now: dt.datetime, error: str) -> None:
    reason = f"{settings.MMW_WEBHOOK_DISABLE_AFTER} failed deliveries in a row (last: {error})"[:200]
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(is_active=False, disabled_at=now, disabled_reason=reason)
    project = endpoint.project
    managers = Membership.objects.filter(account=project.account, is_active=True, role__in=MANAGING_ROLES)
    send_on_commit(
        subject=f"[MMW] webhook disabled — {project.name}",
        body=(
            f"The webhook {endpoint.url} of project {project.name} was disabled after {reason}.\n"
            f"Fix the receiver, then turn it back on: {settings.PUBLIC_URL}/p/{project.pk}/webhooks/\n"
        ),
        recipients=sorted(set(managers.values_list("user__email", flat=True))),
        what=f"webhook {endpoint.pk} disabled",
    )
    audit_record(
        action="webhook.disabled",
        account=project.account,
        target_type="webhook",
        target_id=str(endpoint.pk),
        data={"project": str(project.pk), "reason": reason},
    )
