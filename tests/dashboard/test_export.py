"""The memory browser's export: the current filter, streamed, as JSON Lines or CSV, through the
core's ``memory_export`` (the same listing as the browser), scoped to the person."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.urls import reverse

from dashboard.principals import principal_for_user
from memories.selectors import EXPORT_CHUNK, memory_export
from memories.services import memory_remember
from mmw import csv_safe
from tests.conftest import Actor, Tenancy
from tests.dashboard.conftest import client_for

pytestmark = pytest.mark.django_db


def remember(actor: Actor, content: str, **extra: Any) -> str:
    principal = principal_for_user(actor.user, actor.project)
    assert principal is not None
    return str(memory_remember(principal=principal, payload={"content": content, **extra})["id"])


def download(actor: Actor, fmt: str, **params: str) -> tuple[Any, str]:
    url = reverse("dashboard:memories-export", args=[actor.project.pk, fmt])
    response = client_for(actor.user).get(url, params)
    body = b"".join(response).decode() if response.streaming else response.content.decode()
    return response, body


@pytest.mark.parametrize("text", ['=HYPERLINK("x")', "+1", "-2+3", "-A1", "@SUM(A1)", "\tcmd", "\rcmd"])
def test_a_cell_a_spreadsheet_would_run_is_prefixed(text: str) -> None:
    assert csv_safe.cell(text) == "'" + text
    assert csv_safe.cell("plain " + text) == "plain " + text


def test_csv_streams_the_filtered_records_formula_escaped(tenancy: Tenancy) -> None:
    wanted = remember(tenancy.alice, "=cmd|' /C calc'!A0", tags=["ops"])
    remember(tenancy.alice, "not tagged ops")
    response, body = download(tenancy.alice, "csv", tags="ops", workspace="*")
    assert response.status_code == 200
    assert response.streaming
    # Served by ASGI (uvicorn): a synchronous iterator would be read whole into memory first.
    assert response.is_async
    assert response["Cache-Control"] == "no-store"
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment;" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [r["id"] for r in rows] == [wanted]
    assert rows[0]["content"] == "'=cmd|' /C calc'!A0"
    assert rows[0]["tags"] == "ops"


def test_jsonl_is_each_record_as_search_shows_it_and_only_what_the_person_reads(tenancy: Tenancy) -> None:
    mine = remember(tenancy.alice, "alice's shared note")
    remember(tenancy.bob, "bob's private draft", visibility="author")
    response, body = download(tenancy.alice, "jsonl")
    assert response["Content-Type"].startswith("application/x-ndjson")
    records = [json.loads(line) for line in body.splitlines()]
    assert mine in {r["id"] for r in records}
    assert "bob's private draft" not in body
    assert {"id", "content", "status", "author", "graph_relations"} <= set(records[0])


def test_the_export_follows_status_and_sort_and_spans_chunks(tenancy: Tenancy) -> None:
    principal = principal_for_user(tenancy.alice.user, tenancy.alice.project)
    assert principal is not None
    ids = [remember(tenancy.alice, f"note number {i}", confidence=(i % 10) / 10) for i in range(EXPORT_CHUNK + 3)]
    out = list(memory_export(principal=principal, payload={"workspace": "*"}, order="oldest"))
    assert [r["id"] for r in out] == ids
    by_confidence = list(memory_export(principal=principal, payload={"workspace": "*"}, order="confidence"))
    assert by_confidence[0]["confidence"] == 0.9
    remember(tenancy.alice, "the office opens at 8", fact_key="office-hours")
    remember(tenancy.alice, "the office opens at 9", fact_key="office-hours")
    conflicts = list(memory_export(principal=principal, payload={"workspace": "*"}, status="conflict"))
    assert {r["content"] for r in conflicts} == {"the office opens at 8", "the office opens at 9"}


def test_a_bad_filter_or_format_is_refused_before_streaming(tenancy: Tenancy) -> None:
    response, _ = download(tenancy.alice, "csv", min_confidence="7")
    assert response.status_code == 400
    response, _ = download(tenancy.alice, "xlsx")
    assert response.status_code == 404
    outsider = client_for(tenancy.charlie.user)
    answer = outsider.get(reverse("dashboard:memories-export", args=[tenancy.alice.project.pk, "csv"]))
    assert answer.status_code == 404
