"""The archivist's rules, idempotency and visibility, and the beat jobs, run in-process.

(The same task on a real worker and broker, with failures injected, is in test_background.py.)
"""

from __future__ import annotations

import io
import json
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core.management import call_command
from django.db.models import Q
from django.utils import timezone

from accounts.models import AuditEvent
from billing.models import Plan
from billing.seeds import DEFAULT_PLANS
from memories import archivist, tasks
from memories.models import IdempotencyRecord, Memory, MemoryRelation
from mmw.celery import app
from tests.conftest import Tenancy
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db

Edge = tuple[uuid.UUID, uuid.UUID, str]


@pytest.fixture(autouse=True)
def _plans(db: None) -> None:
    """The default plans (a flushed test database may have lost them), so writes are allowed."""
    if not Plan.objects.exists():
        Plan.objects.bulk_create([Plan(**row) for row in DEFAULT_PLANS])


@pytest.fixture
def alice(tenancy: Tenancy) -> Api:
    return Api(tenancy.alice.key)


def _write(api: Api, content: str, **fields: Any) -> uuid.UUID:
    return uuid.UUID(api.ok_remember(content=content, **fields)["id"])


def _edges(*ids: uuid.UUID) -> set[Edge]:
    """The stored edges touching ``ids`` (what the archivist wrote, before any visibility filter)."""
    rows = MemoryRelation.objects.filter(Q(from_memory_id__in=ids) | Q(to_memory_id__in=ids))
    return {(r.from_memory_id, r.to_memory_id, r.relation) for r in rows}


def _archive(*ids: uuid.UUID) -> list[str]:
    return [archivist.archive(i) for i in ids]


# --- the rules -------------------------------------------------------------------------------


def test_newer_record_with_more_detail_refines_the_older(alice: Api) -> None:
    older = _write(alice, "The API uses JWT for authentication.")
    newer = _write(alice, "The API uses JWT for authentication; tokens expire after 15 minutes, refreshed via /auth.")
    assert _archive(newer) == [archivist.ARCHIVED]
    assert _edges(newer) == {(newer, older, "refines")}
    assert Memory.objects.get(id=newer).archived_at is not None
    assert Memory.objects.get(id=older).content == "The API uses JWT for authentication."  # never edited


def test_new_version_of_a_fact_key_supersedes_and_contradicts_the_old(alice: Api) -> None:
    v1 = _write(alice, "The on-call rotation changes every Monday.", fact_key="on-call")
    v2 = _write(alice, "The on-call rotation changes every Thursday.", fact_key="on-call")
    _archive(v1, v2)
    assert _edges(v2) == {(v2, v1, "supersedes"), (v2, v1, "contradicts")}
    assert MemoryRelation.objects.get(from_memory=v2, relation="supersedes").score == 1.0


def test_identical_new_version_only_supersedes(alice: Api) -> None:
    v1 = _write(alice, "Deploys happen on weekdays only.", fact_key="deploy-days")
    v2 = _write(alice, "Deploys happen on weekdays only.", fact_key="deploy-days")
    _archive(v2)
    assert _edges(v2) == {(v2, v1, "supersedes")}


@pytest.mark.parametrize(
    ("older_text", "newer_text"),
    [
        ("Таймаут запроса к платёжному шлюзу — 30 секунд.", "Таймаут запроса к платёжному шлюзу — 10 секунд."),
        ("Le cache Redis est partagé entre les services.", "Le cache Redis n'est pas partagé entre les services."),
        ("Feature flag new-checkout is enabled in production.", "Feature flag new-checkout is disabled in production."),
        ("We deploy the backend with Ansible playbooks.", "We deploy the backend with Terraform."),
    ],
)
def test_incompatible_records_without_a_fact_key_contradict(alice: Api, older_text: str, newer_text: str) -> None:
    older = _write(alice, older_text)
    newer = _write(alice, newer_text)
    _archive(newer)
    assert _edges(newer) == {(newer, older, "contradicts")}


def test_similar_records_are_related_and_others_are_not(alice: Api) -> None:
    staging = _write(alice, "Staging deploys via the systemd unit app-staging.")
    prod = _write(alice, "Prod deploys via the systemd unit app-prod.")
    theme = _write(alice, "The user prefers dark mode in the dashboard.")
    _archive(prod, theme)
    assert _edges(prod) == {(prod, staging, "related")}
    assert _edges(theme) == set()


def test_summary_keeps_one_derived_from_edge_per_live_source(alice: Api) -> None:
    first = _write(alice, "Staging deploys via the systemd unit app-staging.")
    second = _write(alice, "Prod deploys via the release pipeline.")
    summary = _write(
        alice, "Deploy summary: staging via systemd, prod via the pipeline.", derived_from=[str(first), str(second)]
    )
    assert MemoryRelation.objects.filter(from_memory=summary, relation="derived_from").count() == 2  # at write time
    _archive(summary)
    derived = MemoryRelation.objects.filter(from_memory=summary, relation="derived_from")
    assert sorted(derived.values_list("to_memory_id", flat=True)) == sorted([first, second])


def test_edges_do_not_depend_on_the_order_the_tasks_run(alice: Api) -> None:
    a = _write(alice, "Backups run nightly.")
    b = _write(alice, "Backups run nightly at 02:00 UTC and are kept for 14 days in S3.")
    _archive(a)  # the older record first: it finds the newer one and still points newer -> older
    assert _edges(a) == {(b, a, "refines")}
    _archive(b)
    assert _edges(a, b) == {(b, a, "refines")}


def test_thirty_template_notes_relate_without_contradicting_and_stay_within_the_cap(alice: Api) -> None:
    """Issue #36: the same sentence about 30 modules is 30 consistent facts, not 435 contradictions."""
    ids = [_write(alice, f"Module m{i} owns /api/m{i}") for i in range(1, 31)]
    _archive(*ids)
    edges = MemoryRelation.objects.filter(from_memory__in=ids)
    assert not edges.filter(relation="contradicts").exists()
    assert edges.filter(relation="related").exists()
    for record in ids:
        touching = MemoryRelation.objects.filter(Q(from_memory=record) | Q(to_memory=record))
        assert touching.filter(relation="related").count() <= archivist.MAX_PER_KIND
    scores = list(edges.values_list("score", flat=True))
    assert 0.4 < min(scores) < max(scores) < 1.0  # their similarity (cosine here), not a constant 1.0
    for hit in alice.search(query="module owns api", limit=30)["results"]:
        assert hit["status"] == "unverified"
        assert all(e["relation"] != "contradicts" for e in hit["graph_relations"])


def test_scores_are_the_strength_of_the_relation(alice: Api) -> None:
    older = _write(alice, "The database port is 5432.")
    changed = _write(alice, "The database port is 6432.")
    detailed = _write(alice, "The database port is 5432, behind PgBouncer on the primary.")
    _archive(changed, detailed)
    contradiction = MemoryRelation.objects.get(from_memory=changed, to_memory=older)
    assert (contradiction.relation, round(contradiction.score, 2)) == ("contradicts", 0.67)  # 2 of 3 tokens align
    refinement = MemoryRelation.objects.get(from_memory=detailed, to_memory=older)
    assert (refinement.relation, refinement.score) == ("refines", 1.0)  # keeps all of the older


def _store_related(record: uuid.UUID, others: list[uuid.UUID], scores: list[float]) -> str:
    edges = [archivist.Edge(record, other, "related", score) for other, score in zip(others, scores, strict=True)]
    memory = Memory.objects.get(id=record)
    return archivist.store(memory, edges, Memory.objects.all())


def test_a_record_keeps_its_strongest_relations_of_each_kind(alice: Api) -> None:
    hub = _write(alice, "Hub record.")
    others = [_write(alice, f"Neighbour {i}.") for i in range(7)]
    assert _store_related(hub, others, [0.3, 0.9, 0.4, 0.8, 0.5, 0.7, 0.6]) == archivist.ARCHIVED
    kept = dict(MemoryRelation.objects.filter(from_memory=hub).values_list("to_memory", "score"))
    assert sorted(kept.values()) == [0.5, 0.6, 0.7, 0.8, 0.9]  # MAX_PER_KIND, strongest first

    # Counting what other records' runs gave it: a stronger edge pushes the weakest out, a
    # weaker one is not stored.
    stronger, weaker = _write(alice, "Stronger."), _write(alice, "Weaker.")
    _store_related(stronger, [hub], [0.95])
    _store_related(weaker, [hub], [0.2])
    touching = MemoryRelation.objects.filter(Q(from_memory=hub) | Q(to_memory=hub), relation="related")
    assert sorted(touching.values_list("score", flat=True)) == [0.6, 0.7, 0.8, 0.9, 0.95]
    assert not MemoryRelation.objects.filter(from_memory=weaker).exists()


def test_blind_new_version_contradicts_exactly_as_its_status_says(alice: Api) -> None:
    v1 = _write(alice, "The API uses JWT for authentication.", fact_key="auth")
    v2 = _write(alice, "The API uses JWT for authentication; tokens expire after 15 minutes.", fact_key="auth")
    _archive(v1, v2)
    assert _edges(v2) == {(v2, v1, "supersedes"), (v2, v1, "contradicts")}  # text alone would say "refines"
    assert MemoryRelation.objects.get(from_memory=v2, relation="contradicts").score == 1.0
    got = alice.call("GET", f"/memories/{v1}")[1]["memory"]
    assert (got["status"], got["conflicts_with"]) == ("conflict", [str(v2)])


def test_a_deliberate_version_settles_the_contradictions_of_the_versions_it_supersedes(alice: Api) -> None:
    v1 = _write(alice, "Deploys go out on Tuesdays.", fact_key="deploy-day")
    v2 = _write(alice, "Deploys go out on Fridays.", fact_key="deploy-day")
    note = _write(alice, "Deploys go out on Mondays.")  # no fact_key: contradicts both by its words
    _archive(v1, v2, note)
    assert {(e[0], e[1]) for e in _edges(v1, v2) if e[2] == "contradicts"} == {(v2, v1), (note, v1), (note, v2)}
    v3 = _write(alice, "Deploys go out on Mondays.", fact_key="deploy-day", expected_version=2)
    # Read at once, before the archivist ran: the superseded versions conflict with nothing.
    for record in (v1, v2, note):
        assert alice.call("GET", f"/memories/{record}")[1]["memory"]["status"] == "unverified"
    _archive(v3)
    assert not MemoryRelation.objects.filter(relation="contradicts").filter(
        Q(from_memory__in=[v1, v2]) | Q(to_memory__in=[v1, v2])
    )
    assert _edges(v3) >= {(v3, v1, "supersedes"), (v3, v2, "supersedes")}
    later = _write(alice, "Deploys go out on Tuesdays, says the old wiki.")
    _archive(later)
    assert (later, v1, "contradicts") not in _edges(later)  # never towards a settled version


def test_rescoring_judges_stored_edges_again_and_applies_the_caps(alice: Api) -> None:
    """Edges an earlier archivist stored (every template pair a contradiction with score 1.0, a
    refinement between two blind versions) are judged again by ``manage.py archivist_rescore``."""
    notes = [_write(alice, f"Module m{i} owns /api/m{i}") for i in range(1, 9)]
    port_old, port_new = _write(alice, "The database port is 5432."), _write(alice, "The database port is 6432.")
    v1 = _write(alice, "Backups run nightly.", fact_key="backups")
    v2 = _write(alice, "Backups run nightly at 02:00 UTC.", fact_key="backups")
    stale = [(b, a, "contradicts", 1.0) for j, b in enumerate(notes) for a in notes[:j]]
    stale += [(port_new, port_old, "contradicts", 1.0), (v2, v1, "refines", 1.0), (v2, v1, "supersedes", 1.0)]
    MemoryRelation.objects.bulk_create(
        [MemoryRelation(from_memory_id=b, to_memory_id=a, relation=r, score=s) for b, a, r, s in stale]
    )
    out = io.StringIO()
    call_command("archivist_rescore", stdout=out)
    assert "removed" in out.getvalue()
    template = MemoryRelation.objects.filter(from_memory__in=notes)
    assert not template.filter(relation="contradicts").exists()
    for note in notes:
        assert MemoryRelation.objects.filter(Q(from_memory=note) | Q(to_memory=note)).count() <= archivist.MAX_PER_KIND
    port = MemoryRelation.objects.get(from_memory=port_new)
    assert (port.relation, round(port.score, 2)) == ("contradicts", 0.67)
    assert _edges(v2) == {(v2, v1, "contradicts"), (v2, v1, "supersedes")}  # the versions' status says conflict
    before = list(MemoryRelation.objects.order_by("id").values_list("from_memory", "to_memory", "relation", "score"))
    call_command("archivist_rescore", stdout=io.StringIO())
    after = list(MemoryRelation.objects.order_by("id").values_list("from_memory", "to_memory", "relation", "score"))
    assert after == before  # idempotent


# --- idempotency, forgetting --------------------------------------------------------------------


def test_archiving_twice_changes_nothing(alice: Api) -> None:
    older = _write(alice, "The staging database runs PostgreSQL 15.")
    newer = _write(alice, "The staging database runs PostgreSQL 16.")
    assert _archive(newer) == [archivist.ARCHIVED]
    rows = list(
        MemoryRelation.objects.order_by("id").values_list("id", "from_memory", "to_memory", "relation", "score")
    )
    archived_at = Memory.objects.get(id=newer).archived_at
    assert _archive(newer) == [archivist.ALREADY]
    # A redelivery that runs the whole analysis again (as if the first commit had been lost):
    Memory.objects.filter(id=newer).update(archived_at=None)
    assert _archive(newer) == [archivist.ARCHIVED]
    assert (
        list(MemoryRelation.objects.order_by("id").values_list("id", "from_memory", "to_memory", "relation", "score"))
        == rows
    )
    assert [row[1:4] for row in rows] == [(newer, older, "contradicts")]
    assert archived_at is not None


def test_record_forgotten_before_its_turn_is_skipped(alice: Api) -> None:
    older = _write(alice, "Logs are kept for 30 days.")
    newer = _write(alice, "Logs are kept for 90 days.")
    status, _ = alice.forget(memory_id=str(newer))
    assert status == 200
    assert _archive(newer) == [archivist.FORGOTTEN]
    assert _edges(newer, older) == set()
    assert Memory.objects.get(id=newer).archived_at is None
    assert archivist.archive(uuid.uuid4()) == archivist.MISSING
    assert archivist.archive("not-a-uuid") == archivist.MISSING


def test_forgetting_removes_the_relations_from_search(alice: Api) -> None:
    older = _write(alice, "Logs are kept for 30 days in Loki.")
    newer = _write(alice, "Logs are kept for 30 days in Loki, shipped by Promtail with labels per service.")
    _archive(newer)
    hit = next(r for r in alice.search(query="logs Loki")["results"] if r["id"] == str(newer))
    assert [(e["id"], e["relation"]) for e in hit["graph_relations"]] == [(str(older), "refines")]
    alice.forget(memory_id=str(older))
    assert _edges(older, newer) == set()
    hit = next(r for r in alice.search(query="logs Loki")["results"] if r["id"] == str(newer))
    assert hit["graph_relations"] == []


def test_target_forgotten_during_the_analysis_gets_no_edge(alice: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    older = _write(alice, "Logs are kept for 30 days.")
    newer = _write(alice, "Logs are kept for 90 days.")
    analyse = archivist.analyse

    def forget_meanwhile(record: Memory) -> list[archivist.Edge]:
        edges = analyse(record)
        alice.forget(memory_id=str(older))
        return edges

    monkeypatch.setattr(archivist, "analyse", forget_meanwhile)
    assert _archive(newer) == [archivist.ARCHIVED]
    assert _edges(newer) == set()


# --- visibility and tenancy ----------------------------------------------------------------------


def test_only_records_the_author_can_see_are_related(tenancy: Tenancy, alice: Api) -> None:
    bob = Api(tenancy.bob.key)
    charlie = Api(tenancy.charlie.key)
    draft = _write(bob, "The staging database runs PostgreSQL 15.", visibility="author")
    other_tenant = _write(charlie, "The staging database runs PostgreSQL 14.")
    mine = _write(alice, "The staging database runs PostgreSQL 16.")
    _archive(mine)
    assert _edges(mine) == set()  # Bob's draft is invisible to Alice; Charlie's account is another tenant
    _archive(draft)  # Bob can read Alice's project record: the edge exists, newer -> older
    assert _edges(draft) == {(mine, draft, "contradicts")}
    assert _edges(other_tenant) == set()
    alice_view = next(r for r in alice.search(query="staging PostgreSQL")["results"] if r["id"] == str(mine))
    assert alice_view["graph_relations"] == []  # the other end is a draft Alice may not read
    status, bob_view = bob.call("GET", f"/memories/{draft}")
    assert status == 200
    assert [(e["id"], e["relation"]) for e in bob_view["memory"]["graph_relations"]] == [(str(mine), "contradicts")]


# --- the optional LLM ---------------------------------------------------------------------------


class _FakeChat(BaseHTTPRequestHandler):
    answer: Callable[[], tuple[int, Any]] = staticmethod(lambda: (200, {}))
    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        status, payload = type(self).answer()
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def fake_llm(settings: Any) -> Iterator[type[_FakeChat]]:
    handler = type("FakeChat", (_FakeChat,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.MMW_ARCHIVIST_LLM_URL = f"http://127.0.0.1:{server.server_address[1]}/v1"
    settings.MMW_ARCHIVIST_LLM_MODEL = "tiny-judge"
    settings.MMW_ARCHIVIST_LLM_KEY = "sk-test"
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()


def _chat(content: str) -> tuple[int, Any]:
    return 200, {"choices": [{"message": {"role": "assistant", "content": content}}]}


def test_configured_llm_classifies_the_pair(alice: Api, fake_llm: type[_FakeChat]) -> None:
    fake_llm.answer = staticmethod(lambda: _chat('{"relation": "contradicts", "score": 0.9}'))
    older = _write(alice, "The API uses JWT for authentication.")
    newer = _write(alice, "The API uses JWT for authentication; tokens expire after 15 minutes.")
    _archive(newer)
    assert {(e[2]) for e in _edges(newer)} == {"contradicts"}  # the heuristic alone says "refines"
    assert MemoryRelation.objects.get(from_memory=newer).score == 0.9
    request = fake_llm.seen[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test"
    assert request["body"]["model"] == "tiny-judge"
    assert "OLDER:\nThe API uses JWT for authentication." in request["body"]["messages"][1]["content"]
    assert older in {e[1] for e in _edges(newer)}


def test_failing_llm_leaves_the_heuristic_answer(alice: Api, fake_llm: type[_FakeChat]) -> None:
    fake_llm.answer = staticmethod(lambda: (500, {"error": "overloaded"}))
    older = _write(alice, "The API uses JWT for authentication.")
    newer = _write(alice, "The API uses JWT for authentication; tokens expire after 15 minutes.")
    _archive(newer)
    assert _edges(newer) == {(newer, older, "refines")}
    assert len(fake_llm.seen) == 1


def test_llm_is_off_by_default(settings: Any) -> None:
    assert archivist.llm_config() is None


# --- the classifier on its own ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("older_text", "newer_text", "expected"),
    [
        ("Логи хранятся 30 дней.", "Логи хранятся 90 дней.", "contradicts"),
        ("Двухфакторная аутентификация обязательна.", "Двухфакторная аутентификация необязательна.", "contradicts"),
        (
            "Les déploiements en recette partent le mardi.",
            "Les déploiements en recette partent le jeudi.",
            "contradicts",
        ),
        ("Staging deploys go out on Tuesdays.", "Staging deploys go out on Thursdays.", "contradicts"),
        ("Порт базы данных — 5432.", "Порт базы данных — 6432.", "contradicts"),
        (
            "Search uses Elasticsearch.",
            "Search was migrated to OpenSearch; Elasticsearch is no longer used.",
            "contradicts",
        ),
        # The same sentence about another subject is consistent, in every language:
        ("Module m7 owns /api/m7.", "Module m8 owns /api/m8.", "related"),
        ("Модуль m7 отвечает за /api/m7.", "Модуль m8 отвечает за /api/m8.", "related"),
        ("Le module m7 gère /api/m7.", "Le module m8 gère /api/m8.", "related"),
        ("Host web-01 runs Ubuntu 22.04.", "Host web-02 runs Ubuntu 20.04.", "related"),
        ("Olga reviewed PR 412 and approved it.", "Olga reviewed PR 415 and approved it.", "related"),
        ("Caroline went to Paris on 7 May.", "Caroline went to Berlin on 8 May.", "related"),
        ("Backend uses PostgreSQL 16 and Redis 7.", "Backend uses PostgreSQL 16 and Kafka 3.6.", "related"),
        ("The user likes Python.", "The user likes Rust.", "related"),
        (
            "Фронтенд собирается через Vite.",
            "Фронтенд собирается через Vite, сборка — npm run build, артефакты в dist.",
            "refines",
        ),
        (
            "Les journaux sont envoyés à Loki.",
            "Les journaux sont envoyés à Loki via Promtail, rétention de 30 jours.",
            "refines",
        ),
        ("The web service has 4 replicas.", "The worker service has 8 replicas.", "related"),
        ("Use Black for Python formatting.", "The marketing site is hosted on Netlify.", "unrelated"),
    ],
)
def test_classifier_in_english_russian_and_french(older_text: str, newer_text: str, expected: str) -> None:
    verdict = archivist.classify(archivist.features(newer_text), archivist.features(older_text))
    assert verdict.relation == expected


def test_same_model_vectors_relate_records_without_shared_words() -> None:
    verdict = archivist.classify(
        archivist.features("Бэкапы делаются каждую ночь."),
        archivist.features("Backups run nightly."),
        vector_cosine=0.82,
    )
    assert verdict.relation == "related"
    assert verdict.score == 0.82


# --- enqueueing when the broker is away, the sweep -------------------------------------------------


class _HungBroker:
    """A broker that accepts connections and never answers (a hung Redis), counting the
    connections it is asked for. It drops each one after ``DROP_AFTER`` seconds, so a publish
    without socket timeouts fails the test's assertions instead of hanging it."""

    DROP_AFTER = 10.0

    def __init__(self) -> None:
        self._server = socket.socket()
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(16)
        self.port = int(self._server.getsockname()[1])
        self.connections = 0
        self._held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:  # closed
                return
            self.connections += 1
            self._held.append(connection)
            timer = threading.Timer(self.DROP_AFTER, connection.close)
            timer.daemon = True
            timer.start()

    def close(self) -> None:
        self._server.close()
        for connection in self._held:
            connection.close()


@pytest.fixture
def hung_broker(monkeypatch: pytest.MonkeyPatch) -> Iterator[_HungBroker]:
    broker = _HungBroker()
    monkeypatch.setitem(app.conf, "broker_url", f"redis://127.0.0.1:{broker.port}/12")
    tasks.publish_breaker.reset()
    yield broker
    tasks.publish_breaker.reset()
    broker.close()


def test_a_write_gives_a_hung_broker_bounded_attempts_then_stops_asking_it(
    alice: Api, hung_broker: _HungBroker, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    """The write commits and answers whatever the broker does: its publish runs with the request's
    socket timeouts and at most one retry, then the breaker keeps the next writes off the broker
    altogether (the sweep sends what they could not). Behaviour, not wall time: the timeouts the
    connection is opened with, the connections the broker is asked for, and none once open."""
    opened: list[dict[str, Any]] = []
    publish_connection = tasks._publish_connection

    def spy() -> Any:
        connection = publish_connection()
        opened.append(dict(connection.transport_options))
        return connection

    monkeypatch.setattr(tasks, "_publish_connection", spy)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        memory_id = _write(alice, "Backups run nightly.")
    assert len(callbacks) == 1
    assert opened, "the write did not try to publish"
    for options in opened:  # every socket operation against the broker is bounded, and briefly
        assert options["socket_connect_timeout"] == options["socket_timeout"] == tasks.PUBLISH_TIMEOUT
    assert tasks.PUBLISH_TIMEOUT <= 0.5
    attempts = 1 + int(tasks.PUBLISH_RETRY_POLICY["max_retries"])
    assert attempts <= 2
    assert 1 <= hung_broker.connections <= attempts
    assert tasks.publish_breaker.is_open()  # the next writes skip the broker for a few seconds

    asked, opened[:] = hung_broker.connections, []
    with django_capture_on_commit_callbacks(execute=True):
        second_id = _write(alice, "Restores are tested monthly.")
    assert tasks.enqueue_archive(memory_id) is False
    assert opened == []  # not asked at all
    assert hung_broker.connections == asked
    archived = Memory.objects.filter(id__in=[memory_id, second_id], archived_at__isnull=False)
    assert not archived.exists()  # the outbox: the sweep will send them


def test_sweep_sends_live_unarchived_records_older_than_the_grace_period(
    alice: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    monkeypatch.setattr(tasks.archive_memory, "delay", lambda memory_id: sent.append(memory_id))
    monkeypatch.setattr(tasks, "_queue_backlog", lambda: 0)
    pending = _write(alice, "Pending record one.")
    young = _write(alice, "Pending record two, just written.")
    done = _write(alice, "Archived record.")
    gone = _write(alice, "Forgotten record.")
    past = timezone.now() - timedelta(minutes=2)
    Memory.objects.exclude(id=young).update(created_at=past)
    Memory.objects.filter(id=done).update(archived_at=timezone.now())
    alice.forget(memory_id=str(gone))
    assert tasks.sweep_unarchived() == 1
    assert sent == [str(pending)]


def test_sweep_waits_while_the_queue_is_backlogged(alice: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tasks, "_queue_backlog", lambda: tasks.SWEEP_BATCH)
    _write(alice, "Pending record.")
    assert tasks.sweep_unarchived(min_age_seconds=0) == 0


def test_a_sweep_round_hit_by_a_database_blip_is_retried_not_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first query after a PostgreSQL restart fails; the round is tried again in seconds."""
    from celery.exceptions import Retry
    from django.db import OperationalError

    def blip() -> int:
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(tasks, "_queue_backlog", blip)
    with pytest.raises(Retry):
        tasks.sweep_unarchived.apply(throw=True)


# --- expiry and idempotency cleanup ------------------------------------------------------------


def test_expired_records_are_forgotten_with_an_audit_row(alice: Api) -> None:
    keep = _write(alice, "Logs are kept for 30 days in Loki.")
    expiring = _write(alice, "Logs are kept for 30 days in Loki, shipped by Promtail.", expires_at="1h")
    _archive(expiring)
    assert _edges(keep) == {(expiring, keep, "refines")}
    Memory.objects.filter(id=expiring).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert tasks.expire_memories() == 1
    record = Memory.objects.get(id=expiring)
    assert record.forgotten_at is not None
    assert record.content.startswith("Logs are kept")  # soft: the row stays for audit
    assert _edges(keep) == set()
    event = AuditEvent.objects.get(action="memory.expired")
    assert event.target_id == str(expiring)
    assert event.data["ids"] == [str(expiring)]
    assert tasks.expire_memories() == 0
    assert Memory.objects.get(id=keep).forgotten_at is None


def test_idempotency_records_older_than_a_day_are_deleted(alice: Api) -> None:
    for key in ("old-key", "new-key"):
        status, _ = alice.remember(headers={"X-Idempotency-Key": key}, content=f"Written with {key}.")
        assert status == 201
    IdempotencyRecord.objects.filter(key="old-key").update(created_at=timezone.now() - timedelta(hours=25))
    assert tasks.cleanup_idempotency_records() == 1
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new-key"]
