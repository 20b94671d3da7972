"""Schemathesis against the served schema on a live server (harness: ``tests/memories/fuzz.py``).

``make test`` runs ``MMW_FUZZ_EXAMPLES`` (default 20) positive and as many negative examples
per operation with a fixed seed; ``make fuzz`` runs the same with 500 each (>= 10,000 cases) and
prints the tally. The account has a plan without rate limits, so cases test the API rather than
the limiter, and a few records so reads have something to present.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from accounts import services
from billing.models import Plan, Subscription
from dashboard.principals import principal_for_user
from memories.services import memory_remember
from tests import live
from tests.factories import issue_key
from tests.memories import fuzz

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
