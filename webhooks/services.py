"""Webhooks (docs/reference/webhooks.md): a project's endpoints are told, from the worker, about
records created, forgotten or in conflict and sessions uploaded — only what every member of the
project may read (records of visibility ``project``/``org``, sessions shared with the project).

The database is the outbox, as for the archivist: ``scan`` turns what happened since each
endpoint's ``cursor`` (minus ``LAG``, so a transaction still open is not skipped) into
``WebhookDelivery`` rows, at most one per event and endpoint; ``webhooks.delivery`` sends the
due ones (``deliver_due``, re-exported here), fairly across accounts, each within its deadline.
Every URL goes through ``mmw.outbound`` (well formed, https, public addresses, checked
again at each delivery and redirect).
"""

from __future__ import annotations

import datetime as dt
import secrets
import uuid
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.keys import principal_for
from accounts.models import Project, User
from accounts.services import audit_record
from memories import statuses
from memories.models import Memory, Visibility
from mmw import outbound
from mmw.errors import InvalidInput, NotFound, Template
from orgs.selectors import acting_membership
from transcripts.models import Session
from webhooks.delivery import deliver_due as deliver_due  # the webhook service's one entry point
from webhooks.delivery import outbound_policy
from webhooks.models import WebhookDelivery, WebhookEndpoint

LAG = dt.timedelta(seconds=10)
SCAN_BATCH = 1000
SHARED = (Visibility.PROJECT, Visibility.ORG)
MANAGERS_ONLY = "only owners and admins can manage webhooks"
MAX_ENDPOINTS = 10
# The refusals a page may show a person (translated there by template: interfaces.people_errors).
EVENTS_AMONG = Template("choose events among %(events)s")
URL_TOO_LONG = Template("url exceeds maximum length of %(limit)s")
URL_REFUSED = Template("webhook URL refused: %(reason)s")
TOO_MANY_ENDPOINTS = Template("a project has at most %(limit)s webhook endpoints")


# --- endpoints ------------------------------------------------------------------------------


def _manage(project: Project, actor: User) -> None:
    acting_membership(account=project.account, user=actor, manage=True, refusal=MANAGERS_ONLY)


@transaction.atomic
def endpoint_create(
    *, project: Project, actor: User, url: str, events: Iterable[str], include_content: bool
) -> WebhookEndpoint:
    """A new endpoint; its secret is random (shown to the project's managers to verify signatures)."""
    _manage(project, actor)
    chosen = sorted(set(events))
    if not chosen or any(e not in WebhookEndpoint.EVENTS for e in chosen):
        raise InvalidInput(EVENTS_AMONG, events=", ".join(WebhookEndpoint.EVENTS))
    if len(url) > 2000:
        raise InvalidInput(URL_TOO_LONG, limit=2000)
    try:
        policy = outbound_policy()
        _, host, port = outbound.check_url(url, policy)
        outbound.checked_addresses(host, port, policy)
    except outbound.Refused as exc:
        raise InvalidInput(URL_REFUSED, reason=str(exc)) from exc
    if WebhookEndpoint.objects.filter(project=project).count() >= MAX_ENDPOINTS:
        raise InvalidInput(TOO_MANY_ENDPOINTS, limit=MAX_ENDPOINTS)
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
