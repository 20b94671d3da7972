"""mmw.replicas' decisions without a standby (tests/mmw/test_replicas.py runs them against a real one)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, OperationalError, connections

from billing.models import Plan
from memories.models import Memory
from mmw import replicas

ALIAS = "replica1"


@pytest.fixture
def one_replica(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    monkeypatch.setattr(replicas, "aliases", lambda: [ALIAS])
    settings.MMW_REPLICA_MAX_LAG = 5.0
    replicas.forget_states()


def serving(replayed: int, lag: float = 0.0) -> Any:
    return lambda alias, fresh=False: replicas.State(time.monotonic(), serving=True, replayed=replayed, lag=lag)


def test_the_settings_of_a_replica_url() -> None:
    primary = {"CONN_MAX_AGE": 0, "OPTIONS": {"pool": {"max_size": 8, "connection_class": object}}}
    found = replicas.replica_databases(
        primary, ["postgres://u:p@10.0.0.2:5433/mmw", "postgres://u@10.0.0.3/mmw"], pooled=True
    )
    assert list(found) == ["replica1", "replica2"]
    one = found["replica1"]
    assert (one["HOST"], one["PORT"], one["NAME"], one["ENGINE"]) == (
        "10.0.0.2",
        5433,
        "mmw",
        "django.db.backends.postgresql",
    )
    assert one["OPTIONS"]["connect_timeout"] == 2
    assert one["OPTIONS"]["pool"] == {"max_size": 8}, "the primary's breaker class is for the primary alone"
    assert one["TEST"] == {"MIRROR": "default"}
    assert "pool" not in replicas.replica_databases(primary, ["postgres://u@h/db"], pooled=False)["replica1"]["OPTIONS"]


def test_no_replicas_configured_means_no_router_and_nothing_moves() -> None:
    from django.conf import settings

    assert replicas.aliases() == []
    assert settings.DATABASE_ROUTERS == []
    assert replicas.choose("1:1") == DEFAULT_DB_ALIAS


@pytest.mark.usefixtures("one_replica")
def test_a_caller_reads_on_the_replica_only_once_it_has_replayed_the_callers_last_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(replicas, "state", serving(replayed=100))
    for written, expected in [(None, ALIAS), (50, ALIAS), (100, ALIAS), (101, DEFAULT_DB_ALIAS)]:
        monkeypatch.setattr(replicas, "written_position", lambda caller, w=written: w)
        assert replicas.choose("1:2") == expected, written


@pytest.mark.usefixtures("one_replica")
def test_a_replica_lagging_past_the_bound_or_not_serving_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replicas, "written_position", lambda caller: None)
    monkeypatch.setattr(replicas, "state", serving(replayed=100, lag=5.5))
    assert replicas.choose(None) == DEFAULT_DB_ALIAS
    monkeypatch.setattr(replicas, "state", serving(replayed=100, lag=4.5))
    assert replicas.choose(None) == ALIAS
    monkeypatch.setattr(replicas, "state", lambda alias, fresh=False: replicas.State(time.monotonic(), serving=False))
    assert replicas.choose(None) == DEFAULT_DB_ALIAS


@pytest.mark.django_db
@pytest.mark.usefixtures("one_replica")
def test_inside_a_transaction_every_read_stays_on_the_primary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replicas, "state", serving(replayed=100))
    assert connections[DEFAULT_DB_ALIAS].in_atomic_block  # pytest-django's test transaction
    assert replicas.choose(None) == DEFAULT_DB_ALIAS
    token = replicas._chosen.set(ALIAS)
    try:
        assert replicas.current() == DEFAULT_DB_ALIAS
        assert replicas.ReplicaRouter().db_for_read(Memory) == DEFAULT_DB_ALIAS
    finally:
        replicas._chosen.reset(token)


def test_the_router_sends_writes_and_unrouted_apps_to_the_primary(monkeypatch: pytest.MonkeyPatch) -> None:
    router = replicas.ReplicaRouter()
    token = replicas._chosen.set(ALIAS)
    try:
        assert router.db_for_read(Memory) == ALIAS
        assert router.db_for_read(Plan) == DEFAULT_DB_ALIAS, "billing is read on the primary"
        assert router.db_for_write(Memory) == DEFAULT_DB_ALIAS
    finally:
        replicas._chosen.reset(token)
    assert router.db_for_read(Memory) == DEFAULT_DB_ALIAS, "outside a marked read"
    assert router.allow_migrate(ALIAS, "memories") is False


@pytest.mark.usefixtures("one_replica")
def test_a_read_that_fails_on_the_replica_runs_again_on_the_primary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replicas, "choose", lambda caller: ALIAS)
    monkeypatch.setattr(replicas, "_ask", lambda alias: replicas.State(time.monotonic(), serving=False))
    ran_on: list[str] = []

    @replicas.reads
    def selector(*, principal: Any = None) -> str:
        ran_on.append(replicas.current())
        if replicas.current() == ALIAS:
            raise OperationalError("server closed the connection unexpectedly")
        return "answer"

    assert selector() == "answer"
    assert ran_on == [ALIAS, DEFAULT_DB_ALIAS]
    assert replicas._states[ALIAS].serving is False, "left out until MMW_REPLICA_RETRY_SECONDS pass"


@pytest.mark.usefixtures("one_replica")
def test_a_read_failing_on_a_replica_that_still_serves_runs_on_the_primary_and_keeps_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(replicas, "choose", lambda caller: ALIAS)
    monkeypatch.setattr(replicas, "_ask", lambda alias: replicas.State(time.monotonic(), serving=True))
    ran_on: list[str] = []

    @replicas.reads
    def selector() -> str:
        ran_on.append(replicas.current())
        if replicas.current() == ALIAS:
            raise OperationalError("canceling statement due to conflict with recovery")
        return "answer"

    assert selector() == "answer"
    assert ran_on == [ALIAS, DEFAULT_DB_ALIAS]
    assert ALIAS not in replicas._states, "the replica still serves: not left out"


@pytest.mark.usefixtures("one_replica")
def test_an_error_of_the_primarys_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(replicas, "choose", lambda caller: ALIAS)
    monkeypatch.setattr(replicas, "_ask", lambda alias: replicas.State(time.monotonic(), serving=True))

    @replicas.reads
    def selector() -> str:
        raise OperationalError("the primary is down")

    with pytest.raises(OperationalError):
        selector()


@pytest.mark.django_db
@pytest.mark.usefixtures("one_replica")
def test_a_write_notes_the_primarys_position_for_its_caller_at_commit(
    monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    monkeypatch.setattr(replicas, "primary_position", lambda: 4242)
    principal = type("P", (), {"account": type("A", (), {"pk": 7})(), "user": type("U", (), {"pk": 9})()})()

    @replicas.writes
    def service(*, principal: Any) -> None:
        return None

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        service(principal=principal)
    assert cache.get("mmw:ryw:7:9") is None, "not before the commit"
    for callback in callbacks:
        callback()
    assert replicas.written_position("7:9") == 4242


@pytest.fixture
def refusing_replica(django_db_blocker: Any) -> Iterator[str]:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    conf = replicas.replica_databases({}, [f"postgres://postgres@127.0.0.1:{port}/mmw"], pooled=False)
    connections.settings[ALIAS] = connections.configure_settings({**connections.settings, **conf})[ALIAS]
    replicas.forget_states()
    try:
        with django_db_blocker.unblock():
            yield ALIAS
    finally:
        del connections[ALIAS]
        del connections.settings[ALIAS]
        replicas.forget_states()


def test_a_replica_that_refuses_is_skipped_at_once_and_not_asked_again_for_a_while(
    refusing_replica: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behaviour, not wall time: one bounded attempt (a connect timeout, no retry), then the
    replica is not asked again, however fresh the question, until its retry time."""
    settings.MMW_REPLICA_RETRY_SECONDS = 60.0
    asks: list[str] = []
    ask = replicas._ask

    def counted(alias: str) -> replicas.State:
        asks.append(alias)
        return ask(alias)

    monkeypatch.setattr(replicas, "_ask", counted)
    assert replicas.state(refusing_replica).serving is False
    assert asks == [refusing_replica]
    assert connections.settings[refusing_replica]["OPTIONS"]["connect_timeout"] == 2  # the one attempt is bounded
    asked = replicas._states[refusing_replica].at
    assert replicas.state(refusing_replica, fresh=True).at == asked, "a failed replica waits out its retry time"
    assert replicas.state(refusing_replica).serving is False
    assert asks == [refusing_replica], "asked again within its retry time"


def test_healthz_shows_each_replicas_known_state_and_asks_no_more_often_than_the_router(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    import asyncio

    from mmw import health

    monkeypatch.setattr(health, "CHECKS", {"database": lambda: None, "broker": lambda: None})
    assert "replicas" not in asyncio.run(health.report()), "no replicas configured: the body is as before"

    monkeypatch.setattr(replicas, "aliases", lambda: [ALIAS, "replica2"])
    settings.MMW_REPLICA_MAX_LAG = 5.0
    settings.MMW_REPLICA_CHECK_SECONDS = 60.0
    settings.MMW_REPLICA_RETRY_SECONDS = 60.0
    replicas.forget_states()
    said = {ALIAS: replicas.State(0, serving=True, replayed=10, lag=0.5), "replica2": replicas.State(0, serving=False)}
    asked: list[str] = []

    def ask(alias: str) -> replicas.State:
        asked.append(alias)
        return replicas.State(time.monotonic(), said[alias].serving, said[alias].replayed, said[alias].lag)

    monkeypatch.setattr(replicas, "_ask", ask)
    body = asyncio.run(health.report())
    assert body["status"] == "ok", "a replica down sends reads to the primary: never a 503"
    assert body["replicas"][ALIAS]["state"] == "ok"
    assert body["replicas"][ALIAS]["lag_seconds"] == 0.5
    assert body["replicas"]["replica2"]["state"] == "unreachable"
    for _ in range(20):
        asyncio.run(health.report())
    assert sorted(asked) == [ALIAS, "replica2"], "probes within the check cadence reuse the known state"

    said[ALIAS] = replicas.State(0, serving=True, replayed=10, lag=7.0)
    replicas.forget_states()
    assert asyncio.run(health.report())["replicas"][ALIAS]["state"] == "lagging"
    assert replicas.describe(None) == {"state": "unknown"}
