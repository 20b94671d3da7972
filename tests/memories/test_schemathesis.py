"""Schemathesis against the served schema on a live server (harness: ``tests/memories/fuzz.py``).

``make test`` runs ``MMW_FUZZ_EXAMPLES`` (default 20) positive and as many negative examples
per operation with a fixed seed; ``make fuzz`` runs the same with 500 each (>= 10,000 cases) and
prints the tally. A second test fuzzes the routes the schema leaves out — import, OAuth and
webhook registration (``tests/memories/fuzz_surfaces.py``): ``MMW_FUZZ_SURFACE_EXAMPLES``
(default 25) cases per route, 600 under ``make fuzz``. The account has a plan without rate
limits, so cases test the API rather than the limiter, and a few records so reads have something
to present.
"""

from __future__ import annotations

import gzip
import json
import os
import uuid
from typing import Any

import httpx
import pytest
from django.test import Client

from accounts import services
from accounts.keys import resolve_key
from accounts.models import ALL_SCOPES
from billing.models import Plan, Subscription
from dashboard.principals import principal_for_user
from datarights.restore import jobs
from ledger.services import ledger_record
from memories.services import memory_remember
from mmw import outbound
from tests import live
from tests.factories import issue_key
from tests.memories import fuzz, fuzz_surfaces
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.slow
live_server = live.live_server
EXAMPLES = int(os.environ.get("MMW_FUZZ_EXAMPLES", "20"))


@pytest.fixture(autouse=True)
def _fast_embeddings(settings: Any) -> None:
    settings.MMW_EMBEDDING_BACKEND = "ngram"
    settings.MMW_EMBEDDING_OPTIONS = {}


@pytest.fixture
def fuzz_key(transactional_db: None) -> str:
    """A key of a project whose account has an unlimited plan, with a few records in it."""
    user, _ = services.user_get_or_create(email="fuzz@example.com")
    account = services.account_create(name="Fuzz", owner=user)
    project, _ = services.project_get_or_create(account=account, name="fuzz", actor=user)
    plan = Plan.objects.create(code="fuzz-unlimited", name="Fuzz")
    Subscription.objects.update_or_create(account=account, defaults={"plan": plan, "state": Subscription.State.ACTIVE})
    principal = principal_for_user(user, project)
    assert principal is not None
    for i in range(3):
        memory_remember(
            principal=principal,
            payload={"content": f"fact number {i}", "fact_key": "fk", "source_id": "src", "tags": ["kind:fact"]},
        )
    return issue_key(user, project)


def test_the_served_schema_holds_for_generated_requests(live_server: live.LiveServer, fuzz_key: str) -> None:
    tally = fuzz.run(live_server, fuzz_key, examples_per_mode=EXAMPLES)
    print("\n" + tally.report())
    assert tally.total >= 10 * EXAMPLES  # every operation was exercised
    assert tally.server_errors == 0, tally.report()
    assert not tally.failures, tally.report()


SURFACE_EXAMPLES = int(os.environ.get("MMW_FUZZ_SURFACE_EXAMPLES", "25"))


def _export_lines(base_url: str, key: str, project_id: str) -> list[dict[str, Any]]:
    """The project's own export, with a line of every type it lacks (a relation, a session and
    its turn): the valid file the import phase mutates."""
    answer = httpx.get(f"{base_url}/api/v1/export", headers={"Authorization": f"Bearer {key}"}, timeout=60)
    assert answer.status_code == 200, answer.text
    lines = [json.loads(line) for line in gzip.decompress(answer.content).splitlines() if line.strip()]
    memories = [line["id"] for line in lines if line["type"] == "memory"]
    now = "2026-12-01T10:00:00+00:00"
    session = str(uuid.uuid4())
    lines += [
        {"type": "relation", "from": memories[0], "to": memories[1], "relation": "related", "score": 0.5,
         "created_at": now},
        {"type": "session", "id": session, "project": project_id, "client": "codex", "author": None,
         "created_at": now, "forgotten": False, "forgotten_at": None, "client_session_id": "s1", "title": "chat",
         "working_directory": "", "device": "", "started_at": None, "ended_at": None,
         "shared_with_project": False, "turn_count": 1, "updated_at": now},
        {"type": "turn", "session": session, "position": 0, "role": "user", "occurred_at": now,
         "content": "hello", "content_hash": "0" * 64, "is_stub": False, "stub_reason": "", "created_at": now},
    ]  # fmt: skip
    assert {line["type"] for line in lines} >= {"header", "project", "workspace", "memory", "ledger_entry"}
    valid = httpx.post(
        f"{base_url}/api/v1/import",
        content=gzip.compress(b"".join(json.dumps(line).encode() + b"\n" for line in lines)),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/gzip"},
        timeout=120,
    )
    assert valid.status_code == 200, valid.text  # the unmutated file imports: mutations test the rules
    return lines


def _clients(base_url: str) -> list[str]:
    ids = []
    for method in ("none", "client_secret_post", "client_secret_basic"):
        answer = httpx.post(
            f"{base_url}/oauth/register",
            json={
                "client_name": "fuzz",
                "redirect_uris": ["http://127.0.0.1:9/cb"],
                "token_endpoint_auth_method": method,
            },
            timeout=30,
        )
        assert answer.status_code == 201, answer.text
        ids.append(answer.json()["client_id"])
    return ids


def test_the_routes_outside_the_schema_hold_for_generated_requests(
    live_server: live.LiveServer, fuzz_key: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.MMW_OAUTH_REGISTRATIONS_PER_HOUR = 10**9
    settings.MMW_OAUTH_CLIENT_METADATA_AUTHORIZATIONS_PER_MINUTE = 10**9
    # No DNS: ".internal" names resolve to a private address, ".invalid" to none, others to a
    # public one (a webhook URL is only checked when registered; nothing is delivered here).
    monkeypatch.setattr(outbound, "resolve", _resolve)
    first = resolve_key(fuzz_key)
    assert first is not None
    key = issue_key(first.user, first.project, scopes=list(ALL_SCOPES))  # ledger lines too
    principal = resolve_key(key)
    assert principal is not None
    ledger_record(
        principal=principal,
        payload={"kind": "transaction", "amount": "-12.50", "currency": "EUR", "counterparty": "Cafe"},
    )
    project_id = str(principal.project.pk)
    lines = _export_lines(live_server, key, project_id)
    dashboard = Client(raise_request_exception=True)
    dashboard.force_login(principal.user)

    def reset() -> None:
        WebhookEndpoint.objects.filter(project=principal.project).delete()

    tally = fuzz_surfaces.run_all(
        live_server,
        key,
        lines,
        _clients(live_server),
        dashboard,
        project_id,
        reset,
        jobs.import_job_run,
        examples=SURFACE_EXAMPLES,
    )
    print("\n" + tally.report())
    assert len(tally.cases) >= 9  # every surface was exercised
    assert min(tally.cases.values()) >= 5
    assert tally.server_errors == 0, tally.report()
    assert not tally.failures, tally.report()


def _resolve(host: str, port: int) -> list[str]:
    if host.endswith(".invalid"):
        return []
    return ["10.1.2.3"] if host.endswith(".internal") else ["93.184.216.34"]
