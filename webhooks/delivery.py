"""Sending webhook deliveries (docs/reference/webhooks.md), fairly across accounts.

``deliver_due`` runs a loop of *lanes*: up to ``LANES`` deliveries in flight at once, each sent
from a thread, **at most one per account** — the account's oldest due delivery — so one
account's slow receiver holds only its own lane and never another account's delivery. The loop
looks for newly due work every ``POLL`` seconds while lanes are busy (a test event queued
meanwhile leaves at once), stops taking work after ``limit`` deliveries or ``budget`` seconds, and
returns when what it sent is recorded.

Across processes, an account's lane is a PostgreSQL session advisory lock
(``pg_try_advisory_lock``, keyed by ``hashtext`` of the account id) held by the loop's connection
while the account's delivery is in flight: two loops never send two deliveries of one account at
once, and a crashed worker's locks go with its connection. Two accounts whose ids hash alike
share a lane now and then; that only serialises them. A delivery is also leased
(``next_attempt_at`` moved ``LEASE`` ahead, compare-and-set) before it is sent, so a crash
mid-send delays it by ``LEASE`` and nothing is sent twice by two loops.

Only the HTTP exchange runs in the lane's thread; every database read and write happens on the
loop's own thread and connection. Each exchange is bounded as a whole by
``MMW_WEBHOOK_TIMEOUT`` (``mmw.outbound``: DNS, connecting, sending, the answer's headers
and body); a failure is rescheduled with exponential backoff for ``RETRY_FOR``, and an endpoint
failing ``MMW_WEBHOOK_DISABLE_AFTER`` times in a row is disabled and its project's owners and
admins e-mailed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass

import httpx
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.services import audit_record
from mmw import outbound
from mmw.mail import send_in_languages
from orgs.models import Membership
from orgs.selectors import MANAGING_ROLES
from webhooks.models import WebhookDelivery, WebhookEndpoint

DELIVER_BATCH = 50
LANES = 8
POLL = 0.2
BUDGET = 20.0
LEASE = dt.timedelta(minutes=5)
RETRY_FOR = dt.timedelta(hours=24)
FIRST_RETRY = dt.timedelta(seconds=30)
MAX_RETRY = dt.timedelta(hours=1)
LANE_LOCK = "webhook-delivery-account"


def outbound_policy() -> outbound.Policy:
    """What webhook deliveries may reach, from settings at each use: https to public addresses,
    the whole exchange within ``MMW_WEBHOOK_TIMEOUT``; ``MMW_WEBHOOK_ALLOW_HTTP`` and
    ``MMW_WEBHOOK_ALLOWED_NETWORKS`` are the operator's exceptions."""
    return outbound.Policy(
        allow_http=settings.MMW_WEBHOOK_ALLOW_HTTP,
        allowed_networks=tuple(settings.MMW_WEBHOOK_ALLOWED_NETWORKS),
        timeout=settings.MMW_WEBHOOK_TIMEOUT,
    )


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``MMW-Signature`` header value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


@dataclass(frozen=True)
class _Request:
    """What a lane's thread needs to send one delivery (built on the loop's thread)."""

    url: str
    body: bytes
    headers: dict[str, str]
    policy: outbound.Policy


@dataclass(frozen=True)
class _Outcome:
    status: int | None
    ms: int | None
    error: str


@dataclass(frozen=True)
class _Claim:
    delivery: WebhookDelivery
    account_id: int


def deliver_due(*, now: dt.datetime | None = None, limit: int = DELIVER_BATCH, budget: float = BUDGET) -> int:
    """Send due deliveries of active endpoints, at most one per account at a time (see the
    module), until none is due, ``limit`` were taken or ``budget`` seconds have passed. ``now``
    fixes the time the deliveries are judged and stamped at (tests); by default, the clock's.
    Returns how many were sent."""
    clock: Callable[[], dt.datetime] = (lambda: now) if now is not None else timezone.now
    stop_taking = time.monotonic() + budget
    taken = sent = 0
    with _lanes() as (pool, locks):
        flying: dict[Future[_Outcome], _Claim] = {}
        while True:
            room = min(LANES - len(flying), limit - taken) if time.monotonic() < stop_taking else 0
            for claim in _claim(clock(), locks, room):
                flying[pool.submit(_send, _request(claim.delivery, clock()))] = claim
                taken += 1
            if not flying:
                return sent
            done, _ = wait(flying, timeout=POLL, return_when=FIRST_COMPLETED)
            for future in done:
                claim = flying.pop(future)
                outcome = future.result()
                _record(claim.delivery, clock(), outcome.status, outcome.ms, outcome.error[:300])
                locks.release(claim.account_id)
                sent += 1


@contextmanager
def _lanes() -> Iterator[tuple[ThreadPoolExecutor, _AccountLocks]]:
    """The lanes' threads and the accounts' locks; on the way out, threads still sending are
    waited for (each within its deadline) before the locks are let go."""
    locks = _AccountLocks()
    try:
        with ThreadPoolExecutor(LANES, thread_name_prefix="webhook-lane") as pool:
            yield pool, locks
    finally:
        locks.release_all()


class _AccountLocks:
    """The accounts whose lane this loop holds (see the module): a session advisory lock each."""

    def __init__(self) -> None:
        self.held: set[int] = set()

    def take(self, account_id: int) -> bool:
        if account_id in self.held:
            return False
        if self._call("pg_try_advisory_lock", account_id):
            self.held.add(account_id)
            return True
        return False

    def release(self, account_id: int) -> None:
        if account_id in self.held:
            self.held.discard(account_id)
            self._call("pg_advisory_unlock", account_id)

    def release_all(self) -> None:
        for account_id in list(self.held):
            self.release(account_id)

    @staticmethod
    def _call(function: str, account_id: int) -> bool:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {function}(hashtext(%s), hashtext(%s))", [LANE_LOCK, str(account_id)])
            row = cursor.fetchone()
        return bool(row and row[0])


def _claim(now: dt.datetime, locks: _AccountLocks, room: int) -> list[_Claim]:
    """Up to ``room`` due deliveries, each the oldest of an account whose lane is free, leased."""
    if room <= 0:
        return []
    due = WebhookDelivery.objects.filter(
        status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now, endpoint__is_active=True
    ).exclude(endpoint__project__account_id__in=locks.held)
    oldest_per_account = (
        due.order_by("endpoint__project__account_id", "next_attempt_at", "id")
        .distinct("endpoint__project__account_id")
        .values("pk")
    )
    candidates = (
        WebhookDelivery.objects.filter(pk__in=oldest_per_account)
        .select_related("endpoint__project")
        .order_by("next_attempt_at", "id")[: room + LANES]  # some may be in another loop's lanes
    )
    claims: list[_Claim] = []
    for delivery in candidates:
        if len(claims) == room:
            break
        account_id = delivery.endpoint.project.account_id
        if not locks.take(account_id):
            continue
        if _lease(delivery, now):
            claims.append(_Claim(delivery, account_id))
        else:
            locks.release(account_id)  # sent or rescheduled by another loop meanwhile
    return claims


def _lease(delivery: WebhookDelivery, now: dt.datetime) -> bool:
    leased = WebhookDelivery.objects.filter(
        pk=delivery.pk, status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now
    ).update(next_attempt_at=now + LEASE)
    return leased == 1


def _request(delivery: WebhookDelivery, now: dt.datetime) -> _Request:
    endpoint = delivery.endpoint
    body = json.dumps(delivery.payload, sort_keys=True, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "MMW-Webhooks/1",
        "MMW-Event": delivery.event_type,
        "MMW-Delivery": str(delivery.event_id),
        "MMW-Signature": signature(endpoint.secret, int(now.timestamp()), body),
    }
    return _Request(endpoint.url, body, headers, outbound_policy())


def _send(request: _Request) -> _Outcome:
    """One exchange (a lane's thread: no database). Every failure is an outcome, never raised."""
    try:
        answer = outbound.post(request.url, body=request.body, headers=request.headers, policy=request.policy)
    except outbound.TimedOut as exc:
        return _Outcome(None, None, f"timed out: {exc}")
    except outbound.Refused as exc:
        return _Outcome(None, None, f"refused: {exc}")
    except httpx.HTTPError as exc:
        return _Outcome(None, None, f"network error: {type(exc).__name__}")
    error = "" if 200 <= answer.status < 300 else f"answered {answer.status}"
    return _Outcome(answer.status, answer.ms, error)


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
    page = f"{settings.PUBLIC_URL}/p/{project.pk}/webhooks/"
    send_in_languages(
        recipients=sorted(set(managers.values_list("user__email", "user__language"))),
        compose=lambda: (
            "[MMW] " + _("webhook disabled — %(project)s") % {"project": project.name},
            _("The webhook %(url)s of project %(project)s was disabled after %(reason)s.")
            % {"url": endpoint.url, "project": project.name, "reason": reason}
            + "\n"
            + _("Fix the receiver, then turn it back on: %(page)s") % {"page": page}
            + "\n",
        ),
        what=f"webhook {endpoint.pk} disabled",
    )
    audit_record(
        action="webhook.disabled",
        account=project.account,
        target_type="webhook",
        target_id=str(endpoint.pk),
        data={"project": str(project.pk), "reason": reason},
    )
