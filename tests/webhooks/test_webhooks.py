"""Webhooks (docs/reference/webhooks.md) against local receivers: signed deliveries of what the
project reads, retries with backoff on 500 and timeouts, giving up after a day, auto-disable with
an e-mail, the SSRF guard (private address, DNS rebinding through a resolver stub, redirect to
loopback), the overall deadline against a receiver that drips its answer, and one account's slow
receiver leaving another account's deliveries alone. Local receivers are reachable only because
the tests allow their networks and plain http, as an operator's setting would."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core import mail
from django.db import connection
from django.test import Client
from django.utils import timezone

from accounts.keys import resolve_key
from memories import services
from mmw import outbound
from mmw.errors import InvalidInput
from tests.conftest import Tenancy
from tests.webhooks.drip import DripServer
from webhooks import services as webhooks
from webhooks.delivery import FIRST_RETRY, LANE_LOCK
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = [pytest.mark.django_db, pytest.mark.slow]  # starts HTTP servers (the receivers)


class Receiver:
    """An HTTP server on ``host`` that records each POST (and when it came, ``time.monotonic``)
    and answers from ``statuses`` (the last one repeats), after ``delay`` seconds, or with a
    redirect to ``location``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.arrived: list[float] = []
        self.statuses = [200]
        self.delay = 0.0
        self.location: str | None = None
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                receiver.arrived.append(time.monotonic())
                time.sleep(receiver.delay)
                status = receiver.statuses.pop(0) if len(receiver.statuses) > 1 else receiver.statuses[0]
                self.send_response(307 if receiver.location else status)
                if receiver.location:
                    self.send_header("Location", receiver.location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(settings: Any) -> Iterator[Receiver]:
    settings.MMW_WEBHOOK_ALLOW_HTTP = True
    settings.MMW_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    running = Receiver()
    yield running
    running.close()


def endpoint(tenancy: Tenancy, url: str, **kwargs: Any) -> WebhookEndpoint:
    return webhooks.endpoint_create(
        project=tenancy.alice.project,
        actor=tenancy.alice.user,
        url=url,
        events=kwargs.pop("events", WebhookEndpoint.EVENTS),
        include_content=kwargs.pop("include_content", False),
    )


def write(key: str, **payload: Any) -> str:
    principal = resolve_key(key)
    assert principal is not None
    return str(services.memory_remember(principal=principal, payload=payload)["id"])


def later(seconds: float = 0) -> dt.datetime:
    """A time at which what happened until now is past the scan's lag."""
    return timezone.now() + webhooks.LAG + dt.timedelta(seconds=seconds)


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    fields = dict(part.split("=", 1) for part in headers["mmw-signature"].split(","))
    expected = hmac.new(secret.encode(), f"{fields['t']}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, fields["v1"])


def test_signed_deliveries_carry_ids_and_statuses_of_what_the_project_reads(
    tenancy: Tenancy, receiver: Receiver
) -> None:
    hook = endpoint(tenancy, receiver.url)
    shared = write(tenancy.alice.key, content="deploys go through staging", fact_key="deploy")
    draft = write(tenancy.alice.key, content="my private draft", visibility="author")
    bobs = write(tenancy.bob.key, content="deploys go straight to prod", fact_key="deploy")
    assert webhooks.scan(now=later()) == 4  # two created, and the second deploy version conflicts... once
    assert webhooks.deliver_due(now=later()) == 4
    payloads = [json.loads(body) for _, body in receiver.received]
    assert all(verify(hook.secret, headers, body) for headers, body in receiver.received)
    created = {p["data"]["memory"]["id"] for p in payloads if p["type"] == "memory.created"}
    assert created == {shared, bobs}
    assert draft not in json.dumps(payloads)
    assert "staging" not in json.dumps(payloads)  # no content unless asked
    conflicts = [p["data"]["memory"] for p in payloads if p["type"] == "memory.conflict"]
    assert {c["id"] for c in conflicts} == {shared, bobs}
    assert all(c["status"] == "conflict" for c in conflicts)
    assert webhooks.scan(now=later()) == 0  # each event once
    assert WebhookDelivery.objects.filter(status="succeeded").count() == 4


def test_a_forgotten_record_is_announced_and_content_only_on_request(tenancy: Tenancy, receiver: Receiver) -> None:
    endpoint(tenancy, receiver.url, events=["memory.forgotten", "memory.created"], include_content=True)
    memory_id = write(tenancy.alice.key, content="the old rule")
    webhooks.scan(now=later())
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    services.memory_forget(principal=principal, payload={"memory_id": memory_id})
    webhooks.scan(now=later(1))
    webhooks.deliver_due(now=later(1))
    by_type = {json.loads(b)["type"]: json.loads(b)["data"]["memory"] for _, b in receiver.received}
    assert by_type["memory.created"]["content"] == "the old rule"
    assert by_type["memory.forgotten"]["status"] == "forgotten"
    assert "content" not in by_type["memory.forgotten"]


def test_a_500_is_retried_with_backoff_then_delivered(tenancy: Tenancy, receiver: Receiver) -> None:
    endpoint(tenancy, receiver.url, events=["memory.created"])
    write(tenancy.alice.key, content="a fact")
    receiver.statuses = [500, 200]
    now = later()
    webhooks.scan(now=now)
    webhooks.deliver_due(now=now)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, 500)
    assert delivery.next_attempt_at == now + FIRST_RETRY
    assert webhooks.deliver_due(now=now + dt.timedelta(seconds=10)) == 0
    assert webhooks.deliver_due(now=now + dt.timedelta(seconds=31)) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("succeeded", 2, 200)
    assert delivery.response_ms is not None
    assert len(receiver.received) == 2


def test_a_timeout_is_a_failure_and_a_day_of_failures_gives_up(
    tenancy: Tenancy, receiver: Receiver, settings: Any
) -> None:
    settings.MMW_WEBHOOK_TIMEOUT = 0.3
    endpoint(tenancy, receiver.url, events=["memory.created"])
    write(tenancy.alice.key, content="a fact")
    receiver.delay = 1.0
    now = later()
    webhooks.scan(now=now)
    webhooks.deliver_due(now=now)
    delivery = WebhookDelivery.objects.get()
    assert delivery.last_error == "timed out: the answer took longer than 0.3 s"
    WebhookDelivery.objects.filter(pk=delivery.pk).update(created_at=now - dt.timedelta(hours=24))
    webhooks.deliver_due(now=now + dt.timedelta(hours=1))
    delivery.refresh_from_db()
    assert delivery.status == "gave_up"


def test_repeated_failures_disable_the_endpoint_and_email_its_managers(
    tenancy: Tenancy, receiver: Receiver, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.MMW_WEBHOOK_DISABLE_AFTER = 3
    hook = endpoint(tenancy, receiver.url, events=["memory.created"])
    for i in range(4):
        write(tenancy.alice.key, content=f"fact {i}")
    receiver.statuses = [503]
    webhooks.scan(now=later())
    with django_capture_on_commit_callbacks(execute=True):
        webhooks.deliver_due(now=later())
    hook.refresh_from_db()
    assert not hook.is_active
    assert "3 failed deliveries in a row" in hook.disabled_reason
    assert mail.outbox[-1].to == ["alice@example.com"]
    assert len(receiver.received) == 3  # the fourth is held while the endpoint is off
    assert webhooks.deliver_due(now=later(60)) == 0
    webhooks.endpoint_enable(project=tenancy.alice.project, actor=tenancy.alice.user, endpoint_id=hook.pk)
    hook.refresh_from_db()
    assert hook.is_active
    assert hook.consecutive_failures == 0


def test_a_private_or_loopback_address_is_refused_without_the_operators_setting(
    tenancy: Tenancy, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.MMW_WEBHOOK_ALLOWED_NETWORKS = []
    with pytest.raises(InvalidInput, match="must start with https"):
        endpoint(tenancy, "http://hooks.example.com/x")
    settings.MMW_WEBHOOK_ALLOW_HTTP = True
    for address in ("127.0.0.1", "10.1.2.3", "169.254.169.254", "[::1]", "[::ffff:127.0.0.1]"):
        with pytest.raises(InvalidInput, match="private, loopback or link-local"):
            endpoint(tenancy, f"http://{address}:8080/x")
    stub = {"hooks.example.com": ["93.184.216.34", "192.168.1.20"]}
    monkeypatch.setattr(outbound, "resolve", lambda host, port: stub[host])
    with pytest.raises(InvalidInput, match=r"resolves to 192\.168\.1\.20"):
        endpoint(tenancy, "http://hooks.example.com/x")


def test_dns_rebinding_between_check_and_delivery_is_refused(
    tenancy: Tenancy, receiver: Receiver, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = {"rebind.example.com": ["93.184.216.34"]}
    monkeypatch.setattr(outbound, "resolve", lambda host, port: answers[host])
    port = receiver.url.split(":")[2].split("/")[0]
    endpoint(tenancy, f"http://rebind.example.com:{port}/hook", events=["memory.created"])
    settings.MMW_WEBHOOK_ALLOWED_NETWORKS = []
    answers["rebind.example.com"] = ["127.0.0.1"]  # the name now points at us
    write(tenancy.alice.key, content="a fact")
    webhooks.scan(now=later())
    webhooks.deliver_due(now=later())
    delivery = WebhookDelivery.objects.get()
    assert delivery.last_error.startswith("refused: rebind.example.com resolves to 127.0.0.1")
    assert receiver.received == []


def test_a_redirect_to_loopback_is_refused(tenancy: Tenancy, settings: Any) -> None:
    settings.MMW_WEBHOOK_ALLOW_HTTP = True
    settings.MMW_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    inner = Receiver("127.0.0.1")
    outer = Receiver("127.0.0.2")
    outer.location = inner.url
    try:
        endpoint(tenancy, outer.url, events=["memory.created"])
        write(tenancy.alice.key, content="a fact")
        webhooks.scan(now=later())
        webhooks.deliver_due(now=later())
    finally:
        inner.close()
        outer.close()
    delivery = WebhookDelivery.objects.get()
    assert delivery.last_error == "refused: 127.0.0.1 resolves to 127.0.0.1, a private, loopback or link-local address"
    assert len(outer.received) == 1
    assert inner.received == []


def test_the_dashboard_page_adds_tests_and_logs_for_managers_only(tenancy: Tenancy, receiver: Receiver) -> None:
    url = f"/p/{tenancy.alice.project.pk}/webhooks/"
    alice = Client()
    alice.force_login(tenancy.alice.user)
    created = alice.post(url, {"action": "create", "url": receiver.url, "events": ["memory.created"]})
    assert created.status_code == 302
    hook = WebhookEndpoint.objects.get()
    alice.post(url, {"action": "test", "endpoint": hook.pk})
    webhooks.deliver_due()
    assert json.loads(receiver.received[0][1])["type"] == "test"
    page = alice.get(url).content.decode()
    assert hook.secret in page
    assert "succeeded" in page
    bob = Client()
    bob.force_login(tenancy.bob.user)
    assert bob.get(url).status_code == 403
    charlie = Client()
    charlie.force_login(tenancy.charlie.user)
    assert charlie.get(url).status_code == 404
    assert charlie.post(url, {"action": "delete", "endpoint": hook.pk}).status_code == 404
    assert WebhookEndpoint.objects.exists()


@pytest.fixture
def drip(settings: Any) -> Iterator[DripServer]:
    """A receiver that answers a byte every 0.1 s (no read ever waits long), and a 1 s deadline."""
    settings.MMW_WEBHOOK_ALLOW_HTTP = True
    settings.MMW_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    settings.MMW_WEBHOOK_TIMEOUT = 1.0
    running = DripServer(interval=0.1)
    yield running
    running.close()


def test_a_receiver_dripping_its_answer_is_cut_at_the_deadline_and_the_delivery_fails(
    tenancy: Tenancy, drip: DripServer
) -> None:
    endpoint(tenancy, drip.url, events=["memory.created"])
    write(tenancy.alice.key, content="a fact")
    now = later()
    webhooks.scan(now=now)
    assert webhooks.deliver_due(now=now) == 1
    assert drip.finished == 0  # cut off mid-answer: never waited for the ~7 s the drip would take
    delivery = WebhookDelivery.objects.get()
    assert delivery.last_error == "timed out: the answer took longer than 1 s"
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, None)
    assert delivery.next_attempt_at == now + FIRST_RETRY


class Posts:
    """``outbound.post`` as the lanes call it, watched: how many posts to each URL have started,
    the most in flight at once, and, as each returns, how many to each URL had started by then."""

    def __init__(self, post: Any) -> None:
        self._post = post
        self._lock = threading.Lock()
        self.started: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()
        self._in_flight: Counter[str] = Counter()
        self.returned: list[tuple[str, Counter[str]]] = []

    def __call__(self, url: str, **options: Any) -> Any:
        with self._lock:
            self.started[url] += 1
            self._in_flight[url] += 1
            self.peak[url] = max(self.peak[url], self._in_flight[url])
        try:
            return self._post(url, **options)
        finally:
            with self._lock:
                self._in_flight[url] -= 1
                self.returned.append((url, Counter(self.started)))


def test_another_accounts_test_event_leaves_at_once_while_one_accounts_receiver_drips(
    tenancy: Tenancy, drip: DripServer, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behaviour, not wall time: Charlie's test event is sent and answered before Alice's last
    slow delivery has even started, and Alice's go one at a time, each cut off mid-answer."""
    posts = Posts(outbound.post)
    monkeypatch.setattr(outbound, "post", posts)
    endpoint(tenancy, drip.url, events=["memory.created"])  # Alice's account: a slow receiver
    for i in range(3):
        write(tenancy.alice.key, content=f"fact {i}")
    webhooks.scan(now=later())
    charlie = tenancy.charlie
    hook = webhooks.endpoint_create(
        project=charlie.project, actor=charlie.user, url=receiver.url, events=["memory.created"], include_content=False
    )
    webhooks.endpoint_send_test(project=charlie.project, actor=charlie.user, endpoint_id=hook.pk)
    assert webhooks.deliver_due(now=later()) == 4
    charlies = [started for url, started in posts.returned if url == receiver.url]
    assert len(charlies) == 1
    assert charlies[0][drip.url] < 3  # not after Alice's three slow deliveries
    assert json.loads(receiver.received[0][1])["type"] == "test"
    assert drip.connections == posts.started[drip.url] == 3
    assert posts.peak[drip.url] == 1  # Alice's deliveries went one at a time...
    assert drip.finished == 0  # ...each cut off at the deadline
    failed = WebhookDelivery.objects.filter(endpoint__project=tenancy.alice.project)
    assert {d.last_error for d in failed} == {"timed out: the answer took longer than 1 s"}
    assert WebhookDelivery.objects.get(endpoint=hook).status == "succeeded"


def test_an_account_whose_lane_another_process_holds_is_left_to_it(tenancy: Tenancy, receiver: Receiver) -> None:
    endpoint(tenancy, receiver.url, events=["memory.created"])
    write(tenancy.alice.key, content="a fact")
    webhooks.scan(now=later())
    other = connection.get_new_connection(connection.get_connection_params())  # another worker's loop
    try:
        lane = [LANE_LOCK, str(tenancy.alice.account.pk)]
        other.execute("SELECT pg_advisory_lock(hashtext(%s), hashtext(%s))", lane)
        assert webhooks.deliver_due(now=later()) == 0
        other.execute("SELECT pg_advisory_unlock(hashtext(%s), hashtext(%s))", lane)
    finally:
        other.close()
    assert webhooks.deliver_due(now=later()) == 1
    assert len(receiver.received) == 1


@pytest.mark.parametrize("action", ["", "x", "Create"])
def test_a_form_with_an_unknown_action_says_so_and_changes_nothing(tenancy: Tenancy, action: str) -> None:
    alice = Client()
    alice.force_login(tenancy.alice.user)
    posted = alice.post(
        f"/p/{tenancy.alice.project.pk}/webhooks/",
        {"action": action, "url": "https://hooks.example/x", "events": ["memory.created"]},
        follow=True,
    )
    assert posted.status_code == 200
    shown = [(m.level_tag, str(m.message)) for m in posted.context["messages"]]
    assert shown == [("error", "unknown webhook action: choose create, test, enable or delete")]
    assert not WebhookEndpoint.objects.exists()
