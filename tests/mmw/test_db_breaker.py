"""mmw.db.breaker: a refused database fails borrows at once for a short window, then one probe."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import psycopg
import pytest

from mmw.db import breaker
from mmw.db.breaker import Breaker, WatchedConnection, is_refusal, probe_refused, server_address


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def listening() -> Iterator[tuple[str, int]]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield "127.0.0.1", int(sock.getsockname()[1])


@pytest.fixture
def closed() -> tuple[str, int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return "127.0.0.1", int(sock.getsockname()[1])  # nobody listens once it is closed


def test_the_probe_tells_a_refusal_from_a_listener(listening: tuple[str, int], closed: tuple[str, int]) -> None:
    assert probe_refused(closed)
    assert not probe_refused(listening)
    assert probe_refused(("/nonexistent-folder", 5432))  # a Unix socket that is not there


def test_a_refusal_opens_the_breaker_for_its_window_then_a_probe_decides(
    closed: tuple[str, int], listening: tuple[str, int]
) -> None:
    clock = Clock()
    gate = Breaker(window=1.0, clock=clock)
    gate.record_connected()
    gate.admit(closed)  # closed breaker: no probe, nothing raised
    gate.record_refused()
    with pytest.raises(psycopg.OperationalError, match="refused connections less than 1 s ago"):
        gate.admit(listening)  # open: not even tried
    clock.now += 1.01
    with pytest.raises(psycopg.OperationalError, match="probe"):
        gate.admit(closed)  # past the window: the probe is refused, open again
    assert gate.is_open()
    clock.now += 1.01
    gate.admit(listening)  # the probe is accepted: closed
    assert not gate.is_open()
    gate.admit(closed)  # and no more probes until the next refusal


def test_a_process_that_never_connected_probes_first(closed: tuple[str, int]) -> None:
    gate = Breaker(window=1.0, clock=Clock())
    with pytest.raises(psycopg.OperationalError):
        gate.admit(closed)
    assert gate.is_open()


def test_the_pools_connection_class_records_refusals_and_successes(
    closed: tuple[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Breaker(window=1.0, clock=Clock())
    monkeypatch.setattr(breaker, "BREAKER", gate)
    host, port = closed
    with pytest.raises(psycopg.OperationalError) as refused:
        WatchedConnection.connect(host=host, port=port, dbname="x", user="x", connect_timeout=2)
    assert is_refusal(refused.value)
    assert gate.is_open()


def test_other_connect_failures_are_not_refusals() -> None:
    assert not is_refusal(psycopg.OperationalError("timeout expired"))
    assert not is_refusal(psycopg.OperationalError('FATAL: password authentication failed for user "x"'))
    assert is_refusal(
        psycopg.OperationalError('connection to server on socket "/x/.s.PGSQL.5432" failed: No such file or directory')
    )


def test_server_address_reads_libpq_parameters() -> None:
    assert server_address({"host": "/var/run/pg", "port": 5433}) == ("/var/run/pg", 5433)
    assert server_address({"host": "db.internal"}) == ("db.internal", 5432)
    assert server_address({}) == ("localhost", 5432)
