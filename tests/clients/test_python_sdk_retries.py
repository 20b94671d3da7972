"""mmw-client's retry rule and error family, against scripted answers (httpx.MockTransport: the
server is the edge here). The live server and a connection dropped after the commit are in
test_python_sdk_live.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import httpx
import pytest
from mmw_client import AsyncMMWClient, MMWClient, Retries, errors

KEY = "mmw_test"
CREATED = {"api_version": "1.0", "tenant_id": "t", "project_id": "p", "workspace": "default", "id": "m1"}


def scripted(
    answers: Sequence[httpx.Response | Exception],
) -> tuple[list[httpx.Request], httpx.MockTransport]:
    seen: list[httpx.Request] = []
    queue: list[httpx.Response | Exception] = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = queue.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return seen, httpx.MockTransport(handler)


def client(
    answers: Sequence[httpx.Response | Exception], **kwargs
) -> tuple[MMWClient, list[httpx.Request], list[float]]:
    seen, transport = scripted(answers)
    slept: list[float] = []
    mmw = MMWClient("http://mmw.test", KEY, http_client=httpx.Client(transport=transport), sleep=slept.append, **kwargs)
    return mmw, seen, slept


def error(status: int, code: str, message: str = "no", headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}}, headers=headers)


def test_a_429_is_retried_after_its_retry_after_with_the_same_idempotency_key() -> None:
    mmw, seen, slept = client(
        [error(429, "rate_limited", headers={"Retry-After": "2"}), httpx.Response(201, json=CREATED)]
    )
    assert mmw.remember("a fact")["id"] == "m1"
    assert slept == [2.0]
    keys = [r.headers["X-Idempotency-Key"] for r in seen]
    assert len(keys) == 2
    assert keys[0] == keys[1]
    assert keys[0].startswith("mmw-py-")
    assert seen[0].headers["Authorization"] == f"Bearer {KEY}"
    assert json.loads(seen[1].content) == {"content": "a fact"}


def test_each_logical_write_gets_its_own_key() -> None:
    mmw, seen, _ = client([httpx.Response(201, json=CREATED), httpx.Response(201, json=CREATED)])
    mmw.remember("one")
    mmw.remember("two")
    assert seen[0].headers["X-Idempotency-Key"] != seen[1].headers["X-Idempotency-Key"]


def test_a_key_you_pass_is_sent_as_is() -> None:
    mmw, seen, _ = client([httpx.Response(201, json=CREATED)])
    mmw.remember("one", idempotency_key="import-42", fact_key="k", tags=["kind:fact"], source_id=None)
    assert seen[0].headers["X-Idempotency-Key"] == "import-42"
    assert json.loads(seen[0].content) == {"content": "one", "fact_key": "k", "tags": ["kind:fact"]}


def test_503_backs_off_then_gives_up_with_the_servers_error() -> None:
    answers: list[httpx.Response | Exception] = [error(503, "service_unavailable", "down")] * 3
    mmw, seen, slept = client(answers, retries=Retries(attempts=3, backoff=1.0))
    with pytest.raises(errors.ServiceUnavailable) as raised:
        mmw.search("anything")
    assert len(seen) == 3
    assert len(slept) == 2
    assert 0.5 <= slept[0] <= 1.0
    assert 1.0 <= slept[1] <= 2.0
    assert raised.value.message == "down"
    assert raised.value.status == 503


def test_a_503_is_not_retried_for_a_write_the_server_would_not_recognise() -> None:
    """MMW answers 503 to a request past its deadline while it may still commit: an unreferenced
    payment is not sent again."""
    mmw, seen, slept = client([error(503, "service_unavailable", headers={"Retry-After": "1"})])
    with pytest.raises(errors.ServiceUnavailable):
        mmw.ledger_record("transaction", "-10.00", "EUR")
    assert len(seen) == 1
    assert slept == []


def test_a_retry_after_longer_than_max_wait_is_raised_at_once_with_it() -> None:
    mmw, seen, slept = client([error(429, "rate_limited", headers={"Retry-After": "600"})])
    with pytest.raises(errors.RateLimited) as raised:
        mmw.search("x")
    assert raised.value.retry_after == 600.0
    assert slept == []
    assert len(seen) == 1


def test_a_dropped_answer_retries_a_keyed_write_but_not_an_unkeyed_payment() -> None:
    dropped = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    mmw, seen, _ = client([dropped, httpx.Response(201, json=CREATED)])
    mmw.remember("x")
    assert seen[0].headers["X-Idempotency-Key"] == seen[1].headers["X-Idempotency-Key"]

    mmw, seen, _ = client([httpx.ReadTimeout("slow")])
    with pytest.raises(errors.TransportError, match="gave no answer \\(timed out\\)"):
        mmw.ledger_record("transaction", "-10.00", "EUR")  # no reference: a retry could pay twice
    assert len(seen) == 1

    recorded = {"entry": {"id": "e1"}, "replayed": False}
    mmw, seen, _ = client([httpx.ReadTimeout("slow"), httpx.Response(200, json={**recorded, "replayed": True})])
    assert mmw.ledger_record("transaction", "-10.00", "EUR", reference="INV-7")["replayed"] is True
    assert len(seen) == 2


def test_a_connection_that_never_opened_is_retried_for_any_call() -> None:
    mmw, seen, slept = client([httpx.ConnectError("refused"), httpx.Response(201, json={"given": True})])
    assert mmw.agent_consent(True, ["codex"])["given"] is True
    assert len(seen) == 2
    assert len(slept) == 1


def test_batch_records_each_get_a_key_kept_across_retries() -> None:
    answer = {**CREATED, "results": []}
    mmw, seen, _ = client([httpx.Response(502), httpx.Response(200, json=answer)])
    mmw.remember_batch([{"content": "a"}, {"content": "b", "idempotency_key": "mine"}, {"content": "c"}])
    first, second = (json.loads(r.content)["records"] for r in seen)
    assert first == second
    keys = [r["idempotency_key"] for r in first]
    assert keys[1] == "mine"
    assert len(set(keys)) == 3


@pytest.mark.parametrize(
    ("status", "code", "cls"),
    [
        (400, "invalid_input", errors.InvalidInput),
        (400, "guard_rejected", errors.GuardRejected),
        (400, "parse_error", errors.ParseError),
        (401, "not_authenticated", errors.NotAuthenticated),
        (402, "billing_notice", errors.BillingNotice),
        (403, "forbidden", errors.Forbidden),
        (403, "limit_exceeded", errors.LimitExceeded),
        (404, "not_found", errors.NotFound),
        (409, "conflict", errors.Conflict),
        (409, "workspace_deleted", errors.WorkspaceDeleted),
        (413, "payload_too_large", errors.PayloadTooLarge),
        (415, "unsupported_media_type", errors.UnsupportedMediaType),
        (429, "import_busy", errors.ImportBusy),
        (500, "internal_error", errors.InternalError),
        (403, "a_code_from_the_future", errors.Forbidden),
        (418, "teapot", errors.MMWError),
    ],
)
def test_each_error_code_is_its_own_class(status: int, code: str, cls: type[errors.MMWError]) -> None:
    mmw, _, _ = client([error(status, code, "the server's words")], retries=Retries(attempts=1))
    with pytest.raises(cls) as raised:
        mmw.get_memory("m1")
    assert type(raised.value) is cls
    assert (raised.value.status, raised.value.code, raised.value.message) == (status, code, "the server's words")


def test_an_answer_that_is_not_json_is_still_an_error_of_its_status() -> None:
    mmw, _, _ = client([httpx.Response(500, text="<html>oops</html>")])
    with pytest.raises(errors.InternalError, match="HTTP 500"):
        mmw.get_memory("m1")


def test_item_errors_of_a_batch_are_their_classes() -> None:
    assert isinstance(errors.item_error({"error": {"code": "write_failed", "message": "m"}}), errors.WriteFailed)
    assert isinstance(errors.item_error({"error": {"code": "guard_rejected", "message": "m"}}), errors.GuardRejected)
    assert errors.item_error({"id": "m1"}) is None


def test_ledger_pages_are_followed_to_the_last() -> None:
    pages = [
        httpx.Response(200, json={"entries": [{"id": "1"}, {"id": "2"}], "limit": 2, "offset": 0, "next_offset": 2}),
        httpx.Response(200, json={"entries": [{"id": "3"}], "limit": 2, "offset": 2, "next_offset": None}),
    ]
    mmw, seen, _ = client(pages)
    assert [e["id"] for e in mmw.iter_ledger_entries(page_size=2, currency="EUR")] == ["1", "2", "3"]
    assert [json.loads(r.content) for r in seen] == [
        {"currency": "EUR", "limit": 2, "offset": 0},
        {"currency": "EUR", "limit": 2, "offset": 2},
    ]


def test_the_async_client_retries_by_the_same_rule() -> None:
    seen, transport = scripted([httpx.ReadError("reset"), httpx.Response(201, json=CREATED)])
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def run() -> str:
        async with AsyncMMWClient(
            "http://mmw.test", KEY, http_client=httpx.AsyncClient(transport=transport), sleep=sleep
        ) as mmw:
            return (await mmw.remember("x"))["id"]

    assert asyncio.run(run()) == "m1"
    assert seen[0].headers["X-Idempotency-Key"] == seen[1].headers["X-Idempotency-Key"]
    assert len(slept) == 1


def test_a_key_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MMW_API_KEY", raising=False)
    with pytest.raises(ValueError, match="MMW_API_KEY"):
        MMWClient("http://mmw.test")
    monkeypatch.setenv("MMW_API_KEY", "mmw_env")
    monkeypatch.setenv("MMW_URL", "http://from-env.test/")
    assert MMWClient().base_url == "http://from-env.test"
