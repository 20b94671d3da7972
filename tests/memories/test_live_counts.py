"""The trigger-kept live-record counters always equal a count(*) of live records, whatever
changed them (services, bulk statements, deletes, truncation), and the limits read them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from accounts.models import Workspace
from memories import services
from memories.models import LiveCount, Memory, live_count
from tests.conftest import Tenancy
from tests.memories.rest import Api

pytestmark = pytest.mark.django_db


def truth() -> dict[str, int]:
    """What the counters must say: live records per scope, by counting them."""
    out: dict[str, int] = {}
    for m in Memory.objects.filter(forgotten_at__isnull=True).values("workspace_id", "project_id", "account_id"):
        for scope in (f"w:{m['workspace_id']}", f"p:{m['project_id']}", f"a:{m['account_id']}"):
            out[scope] = out.get(scope, 0) + 1
    return out


def counters() -> dict[str, int]:
    return {c.scope: c.records for c in LiveCount.objects.all() if c.records}


def test_counters_follow_every_kind_of_change(tenancy: Tenancy) -> None:
    alice, charlie = Api(tenancy.alice.key), Api(tenancy.charlie.key)
    ids = [alice.ok_remember(content=f"fact number {i} about deploys")["id"] for i in range(5)]
    alice.ok_remember(content="a note in another workspace", workspace="ops")
    charlie.ok_remember(content="charlie's own fact")
    assert counters() == truth()
    assert live_count(project_id=tenancy.alice.project.pk) == 6
    assert live_count(account_id=tenancy.charlie.account.pk) == 1

    status, _ = alice.forget(memory_id=ids[0])
    assert status == 200
    assert counters() == truth()
    assert live_count(project_id=tenancy.alice.project.pk) == 5

    # Bulk statements that no service issues: one UPDATE touching several rows, one un-forget,
    # one UPDATE that changes nothing the counters track, one DELETE.
    Memory.objects.filter(id__in=ids[1:3]).update(forgotten_at=timezone.now())
    Memory.objects.filter(id=ids[1]).update(forgotten_at=None)
    Memory.objects.filter(id__in=ids).update(importance=0.9)
    Memory.objects.filter(id=ids[4]).delete()
    assert counters() == truth()
    ops = Workspace.objects.get(project=tenancy.alice.project, name="ops")
    assert live_count(workspace_id=ops.pk) == 1

    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the test's transaction holds deferred FK checks
        cursor.execute("TRUNCATE memories_memory CASCADE")
    assert counters() == {} == truth()


def test_live_count_needs_exactly_one_scope() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        live_count()
    with pytest.raises(ValueError, match="exactly one"):
        live_count(workspace_id=1, account_id=1)


def test_technical_limits_read_the_counters(tenancy: Tenancy) -> None:
    alice = Api(tenancy.alice.key)
    with override_settings(MMW_MAX_MEMORIES_PER_WORKSPACE=2):
        alice.ok_remember(content="first")
        alice.ok_remember(content="second")
        status, answer = alice.remember(content="third")
        assert (status, answer["error"]["code"]) == (403, "limit_exceeded")
        assert "workspace" in answer["error"]["message"]
        # Another workspace is not full; forgetting one record frees room in this one.
        alice.ok_remember(content="elsewhere", workspace="other")
        first = Memory.objects.filter(content="first").get()
        assert alice.forget(memory_id=str(first.id))[0] == 200
        alice.ok_remember(content="third, after a forget")
    with override_settings(MMW_MAX_MEMORIES_PER_TENANT=3):
        status, answer = alice.remember(content="one too many for the tenant", workspace="third")
        assert (status, answer["error"]["message"]) == (403, "maximum number of memories exceeded for tenant")
    assert services  # the limits are the service layer's (memories.services._check_technical_limits)
