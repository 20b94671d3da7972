"""Plan limits at their boundaries: records per project (also under a race for the last slot),
calls per minute per key and per project (429 + Retry-After), on both counter stores."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier
from typing import Any

import pytest
from django.db import connection
from django.urls import reverse

from accounts.keys import resolve_key
from billing import counters, gate
from billing.models import Plan, RateCounter
from dashboard.principals import principal_for_user
from memories import services as memory_services
from memories.models import Memory
from mmw.errors import Forbidden, MMWError
from tests.billing.conftest import Clock, Plans
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db


def set_free(**limits: int | None) -> None:
    Plan.objects.filter(code="free").update(**limits)


def test_the_last_record_the_plan_allows_is_stored_and_the_next_refused(tenancy: Tenancy, plans: Plans) -> None:
    set_free(records_per_project=3)
    api = Api(tenancy.alice.key)
    ids = [api.ok_remember(content=f"fact number {i}")["id"] for i in range(3)]
    status, answer = api.remember(content="one too many")
    assert (status, answer["error"]) == (403, {"code": "limit_exceeded", "message": "project memory limit exceeded"})
    assert Memory.objects.filter(project=tenancy.alice.project).count() == 3
    Api(tenancy.charlie.key).ok_remember(content="another project has its own limit")
    assert api.forget(memory_id=ids[0])[0] == 200  # a forgotten record frees its slot
    api.ok_remember(content="fits again")


def test_a_batch_counts_each_record_against_the_plan_and_stops_at_the_limit(tenancy: Tenancy, plans: Plans) -> None:
    set_free(records_per_project=4)
    api = Api(tenancy.alice.key)
    api.ok_remember(content="already stored")
    status, answer = api.call(
        "POST",
        "/memories/batch",
        {"records": [{"content": f"batch fact {i}"} for i in range(3)] + [{"content": ""}, {"content": "one more"}]},
    )
    assert status == 200
    results = answer["results"]
    assert all("id" in r for r in results[:3])
    assert results[3]["error"]["message"] == "content must not be empty"
    assert results[4]["error"] == {"code": "limit_exceeded", "message": "project memory limit exceeded"}
    assert Memory.objects.filter(project=tenancy.alice.project).count() == 4


def test_a_batch_is_one_call_against_the_rate_limit(tenancy: Tenancy, plans: Plans, clock: Clock) -> None:
    set_free(calls_per_minute_per_key=2, calls_per_minute_per_project=100, records_per_project=None)
    api = Api(tenancy.alice.key)
    for _ in range(2):
        status, answer = api.call("POST", "/memories/batch", {"records": [{"content": "x"}] * 20})
        assert (status, len(answer["results"])) == (200, 20)
    status, answer = api.call("POST", "/memories/batch", {"records": [{"content": "x"}] * 20})
    assert (status, answer["error"]["message"]) == (429, "MCP rate limit exceeded")
    assert Memory.objects.filter(project=tenancy.alice.project).count() == 40


def test_an_unlimited_plan_takes_no_lock_and_counts_nothing(tenancy: Tenancy, plans: Plans) -> None:
    set_free(records_per_project=None, calls_per_minute_per_key=None, calls_per_minute_per_project=None)
    api = Api(tenancy.alice.key)
    for i in range(5):
        api.ok_remember(content=f"unlimited {i}")
    assert not RateCounter.objects.filter(bucket__startswith="rate:").exists()


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_writes_for_the_last_slot_store_exactly_one(tenancy: Tenancy) -> None:
    set_free(records_per_project=2)
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    memory_services.memory_remember(principal=principal, payload={"content": "the first record"})
    for attempt in range(3):
        barrier = Barrier(2)

        def write(n: int, attempt: int = attempt, barrier: Barrier = barrier) -> Any:
            try:
                caller = resolve_key(tenancy.alice.key)
                assert caller is not None
                barrier.wait()
                return memory_services.memory_remember(
                    principal=caller, payload={"content": f"racer {n} of attempt {attempt}"}
                )
            except MMWError as exc:
                return exc
            finally:
                connection.close()

        with ThreadPoolExecutor(max_workers=2) as pool:
            answers = list(pool.map(write, range(2)))
        refused = [a for a in answers if isinstance(a, Exception)]
        assert len(refused) == 1, answers
        assert isinstance(refused[0], Forbidden)
        assert refused[0].message == "project memory limit exceeded"
        assert Memory.objects.filter(project=tenancy.alice.project, forgotten_at__isnull=True).count() == 2
        Memory.objects.filter(content__startswith="racer").delete()  # free the slot for the next round


def test_the_key_limit_allows_its_calls_then_answers_429_until_the_next_minute(
    tenancy: Tenancy, plans: Plans, clock: Clock
) -> None:
    set_free(calls_per_minute_per_key=3, calls_per_minute_per_project=100)
    api = Api(tenancy.alice.key)
    api.ok_remember(content="call one")
    api.search(query="call")
    assert api.call("GET", "/workspaces")[0] == 200
    response = api.client.post(
        "/api/v1/memories/search",
        data={"query": "call four"},
        content_type="application/json",
        headers={"Authorization": f"Bearer {api.key}"},
    )
    assert response.status_code == 429
    assert response.json()["error"] == {"code": "rate_limited", "message": "MCP rate limit exceeded"}
    assert response["Retry-After"] == "50"
    clock.advance(49)
    assert api.remember(content="still the same minute")[0] == 429
    assert Api(tenancy.bob.key).remember(content="another key has its own budget")[0] == 201
    clock.advance(1)
    api.ok_remember(content="a new minute")


def test_the_project_limit_counts_every_key_of_the_project(tenancy: Tenancy, plans: Plans, clock: Clock) -> None:
    set_free(calls_per_minute_per_key=100, calls_per_minute_per_project=4)
    alice, bob = Api(tenancy.alice.key), Api(tenancy.bob.key)
    for api in (alice, bob, alice, bob):
        api.search(query="anything")
    status, answer = alice.call("POST", "/memories/search", {"query": "fifth"})
    assert (status, answer["error"]["message"]) == (429, "project call limit exceeded")
    assert Api(tenancy.charlie.key).search(query="other project")["results"] == []
    clock.advance(50)
    bob.search(query="next minute")


def test_forget_counts_toward_the_key_limit(tenancy: Tenancy, plans: Plans, clock: Clock) -> None:
    set_free(calls_per_minute_per_key=2, calls_per_minute_per_project=100)
    api = Api(tenancy.alice.key)
    kept = api.ok_remember(content="to forget")
    assert api.forget(memory_id=kept["id"])[0] == 200
    status, answer = api.forget(memory_id=kept["id"])
    assert (status, answer["error"]["message"]) == (429, "MCP rate limit exceeded")


def test_allowed_calls_feed_the_monthly_usage_counter(tenancy: Tenancy, plans: Plans, clock: Clock) -> None:
    set_free(calls_per_minute_per_key=2)
    api = Api(tenancy.alice.key)
    api.search(query="a")
    api.search(query="b")
    assert api.call("POST", "/memories/search", {"query": "refused"})[0] == 429
    bucket = gate.monthly_calls_bucket(str(tenancy.alice.project.pk), "202701")
    assert counters.peek(bucket) == 2


@pytest.fixture
def redis_cache(settings: Any) -> None:
    """Django's cache on the test Redis (its own key prefix), as production runs it."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": str(settings.CELERY_BROKER_URL),
            "KEY_PREFIX": f"mmw-test-{uuid.uuid4().hex}",
        }
    }


def test_redis_counters_are_atomic_increments_with_a_lifetime(redis_cache: None, plans: Plans) -> None:
    bucket = f"rate:key:test:{uuid.uuid4().hex}"
    with ThreadPoolExecutor(max_workers=8) as pool:
        counts = sorted(pool.map(lambda _: counters.hit(bucket, ttl=60), range(40)))
    assert counts == list(range(1, 41))  # every increment seen exactly once
    assert counters.peek(bucket) == 40
    assert not RateCounter.objects.exists()  # nothing went to PostgreSQL


def test_rate_limits_hold_on_redis_too(tenancy: Tenancy, plans: Plans, clock: Clock, redis_cache: None) -> None:
    set_free(calls_per_minute_per_key=2, calls_per_minute_per_project=100)
    api = Api(tenancy.alice.key)
    api.search(query="one")
    api.search(query="two")
    assert api.call("POST", "/memories/search", {"query": "three"})[0] == 429
    clock.advance(50)
    api.search(query="next minute")


def test_postgres_counters_expire_and_are_purged(plans: Plans) -> None:
    counters.hit("rate:key:old", ttl=-1)
    counters.hit("rate:key:new", ttl=60)
    assert counters.peek("rate:key:old") == 0
    assert counters.purge_expired() == 1
    assert list(RateCounter.objects.values_list("bucket", flat=True)) == ["rate:key:new"]


def test_project_and_organization_gates_follow_the_plan(tenancy: Tenancy, plans: Plans) -> None:
    account = tenancy.alice.account
    set_free(projects_per_account=1)
    with pytest.raises(Forbidden, match="at most 1 projects"):
        gate.check_project_limit(account)
    with pytest.raises(Forbidden, match="organization features"):
        gate.ensure_organization_features(account)
    Plan.objects.filter(code="free").update(projects_per_account=None, organization_features=True)
    gate.check_project_limit(account)
    gate.ensure_organization_features(account)


def test_creating_a_project_asks_the_plan_through_the_accounts_seam(tenancy: Tenancy, plans: Plans) -> None:
    """accounts never imports billing: billing.apps installs its check into accounts.limits."""
    from accounts import services as account_services

    set_free(projects_per_account=2)  # alpha exists: one more fits
    account_services.project_create(account=tenancy.alice.account, actor=tenancy.alice.user, name="beta")
    with pytest.raises(Forbidden, match="at most 2 projects"):
        account_services.project_create(account=tenancy.alice.account, actor=tenancy.alice.user, name="gamma")
    with pytest.raises(Forbidden, match="only owners and admins can manage projects"):
        account_services.project_create(account=tenancy.alice.account, actor=tenancy.bob.user, name="delta")


def test_a_person_browsing_the_dashboard_is_not_metered_as_api_calls(
    tenancy: Tenancy, plans: Plans, clock: Clock
) -> None:
    """Lists, searches and record pages neither count toward the month's calls nor hit the
    per-minute limits; the same reads through a key do."""
    set_free(calls_per_minute_per_key=1, calls_per_minute_per_project=1)
    alice = tenancy.alice
    kept = memory_services.memory_remember(
        principal=_dashboard_principal(tenancy), payload={"content": "the deploy freeze starts on Fridays"}
    )
    browser = client_for(alice.user)
    pages = [
        reverse("dashboard:projects", args=[alice.account.tenant_id]),
        reverse("dashboard:usage", args=[alice.account.tenant_id]),
        reverse("dashboard:memories", args=[alice.project.pk]),
        reverse("dashboard:memories", args=[alice.project.pk]) + "?q=deploy+freeze",
        reverse("dashboard:memory", args=[alice.project.pk, kept["id"]]),
        reverse("dashboard:keys", args=[alice.project.pk]),
        reverse("dashboard:sessions", args=[alice.project.pk]),
    ]
    for _ in range(3):
        for url in pages:
            assert browser.get(url).status_code == 200, url
    bucket = gate.monthly_calls_bucket(str(alice.project.pk), "202701")
    assert counters.peek(bucket) == 0
    api = Api(alice.key)
    api.search(query="deploy")
    assert counters.peek(bucket) == 1
    assert api.call("POST", "/memories/search", {"query": "second"})[0] == 429


def _dashboard_principal(tenancy: Tenancy) -> Any:
    principal = principal_for_user(tenancy.alice.user, tenancy.alice.project)
    assert principal is not None
    return principal
