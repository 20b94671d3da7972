"""The dense ranker beside the keyword ranker in a real served process (uvicorn, the psycopg pool
on, as in production): searches answer as in process, the side connection is used (the server's
debug log says so), and it never fails over to the request's connection with an error."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from django.db import connection

from tests.conftest import Tenancy
from tests.memories.test_nearest_round_trip import TEXTS
from tests.mmw.test_overload import served

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

EXPECTED = {
    "when are backups deleted": "Production backups are kept thirty days on S3.",
    "which database does staging use": "The staging database is PostgreSQL 15 in eu-west-3, without replicas.",
    "frontend build tool": "Frontend builds use Vite and run on every pull request.",
}


def test_served_searches_rank_the_dense_side_on_a_second_connection(tenancy: Tenancy, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    auth = {"Authorization": f"Bearer {tenancy.alice.key}"}
    database = str(connection.settings_dict["NAME"])
    # Not a test of the deadline: a loaded machine's first writes (the model warming up) may pass 5 s.
    served_app = served(log, MMW_TEST_DATABASE_NAME=database, MMW_LOG_LEVEL="DEBUG", MMW_REQUEST_DEADLINE="30")
    with served_app as url, httpx.Client(base_url=f"{url}/api/v1", headers=auth, timeout=30) as client:
        for text in TEXTS:
            assert client.post("/memories", json={"content": text}).status_code == 201

        def top(query: str) -> str:
            answer = client.post("/memories/search", json={"query": query, "limit": 3})
            assert answer.status_code == 200, answer.text
            return str(answer.json()["results"][0]["content"])

        for query, expected in EXPECTED.items():  # one at a time, then four at once
            assert top(query) == expected
        with ThreadPoolExecutor(4) as pool:
            tops = list(pool.map(top, list(EXPECTED) * 4))
        assert tops == list(EXPECTED.values()) * 4
    text = log.read_text()
    assert "the dense ranker ran on a side connection" in text, text[-3000:]
    assert "failed on a side connection" not in text, text[-3000:]
