"""A streamed answer (an export) may last longer than the request deadline: the deadline is for
the first byte; once the answer has started, the boundary waits for its end instead of returning
(which made uvicorn cut the response: "ASGI callable returned without completing response")."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

from mmw.boundary import Boundary


async def slow_stream(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/gzip")]})
    await send({"type": "http.response.body", "body": b"first", "more_body": True})
    await asyncio.sleep(0.3)
    await send({"type": "http.response.body", "body": b"last", "more_body": False})


def test_a_streamed_answer_outlives_the_deadline_and_arrives_whole() -> None:
    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    boundary = Boundary(slow_stream, lambda path: "api", max_in_flight=2, admission_wait=1.0, deadline=0.1)
    scope = {"type": "http", "path": "/api/v1/export", "method": "GET", "headers": []}
    asyncio.run(boundary(scope, receive, send))
    bodies = [m["body"] for m in sent if m["type"] == "http.response.body"]
    assert bodies == [b"first", b"last"]


async def silent_until_late(scope: Any, receive: Any, send: Any) -> None:
    await asyncio.sleep(0.3)  # a write that commits after the deadline
    await send({"type": "http.response.start", "status": 201, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"{}", "more_body": False})


def test_the_deadline_answer_says_the_request_may_still_complete() -> None:
    """Not "the database is unreachable": the work was not cancelled and a write may commit."""
    import json

    from mmw.boundary import DEADLINE_MESSAGE

    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    boundary = Boundary(silent_until_late, lambda path: "api", max_in_flight=2, admission_wait=1.0, deadline=0.1)
    scope = {"type": "http", "path": "/api/v1/memories", "method": "POST", "headers": []}
    asyncio.run(boundary(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    assert start["status"] == 503
    body = json.loads(next(m["body"] for m in sent if m["type"] == "http.response.body"))
    assert body["error"]["message"] == DEADLINE_MESSAGE
