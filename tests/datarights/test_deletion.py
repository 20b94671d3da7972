"""Deletion with retention (docs/data.md), on a frozen clock: requested → closed at once →
reminded → purged (or cancelled in between); forgotten content purged after its retention with
its stub kept; a person deleting their own user. "No content left" is asserted with SQL over
every table."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from django.core import mail
from django.db import connection
from django.utils import timezone

from accounts.keys import resolve_key
from accounts.models import ALL_SCOPES, Account, ApiKey, AuditEvent, User
from datarights import deletion
from datarights import format as fmt
from datarights.models import AccountDeletion
from datarights.tasks import enforce_retention
from ledger import services as ledger_services
from memories import services
from memories.models import Memory
from mmw.errors import Conflict, Forbidden, InvalidInput
from orgs.models import Membership
from tests.conftest import Tenancy
from tests.factories import issue_key
from transcripts.models import Session, Turn
from transcripts.services import session_add_turns, session_forget_by_id, session_upsert

pytestmark = pytest.mark.django_db
MARKER = "zebracornmarker"
T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def at(self, **delta: float) -> dt.datetime:
        self.now = T0 + dt.timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> Iterator[Clock]:
    frozen = Clock()
    with mock.patch("django.utils.timezone.now", side_effect=lambda: frozen.now):
        yield frozen


def tables_holding(text: str) -> list[str]:
    """Every table of the database with a row whose text form contains ``text``."""
    found = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        for (table,) in cursor.fetchall():
            cursor.execute(f'SELECT count(*) FROM "{table}" AS t WHERE t::text ILIKE %s', [f"%{text}%"])  # noqa: S608
            if cursor.fetchone()[0]:
                found.append(table)
    return found


def write(tenancy: Tenancy, key: str, content: str, **extra: Any) -> str:
    principal = resolve_key(key)
    assert principal is not None
    return str(services.memory_remember(principal=principal, payload={"content": content, **extra})["id"])


def fill(tenancy: Tenancy) -> None:
    write(tenancy, tenancy.alice.key, f"{MARKER} deploys go through staging", fact_key=f"{MARKER}-key", tags=[MARKER])
    write(tenancy, tenancy.bob.key, f"{MARKER} bob's draft", visibility="author")
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    session_upsert(principal=principal, client="codex", session_id=f"{MARKER}-s", payload={"title": f"{MARKER} chat"})
    turns = [{"position": 0, "role": "user", "content": f"{MARKER} hello"}]
    session_add_turns(principal=principal, client="codex", session_id=f"{MARKER}-s", payload={"turns": turns})
    ledger_key = resolve_key(issue_key(tenancy.alice.user, tenancy.alice.project, scopes=ALL_SCOPES))
    assert ledger_key is not None
    paid = ledger_services.ledger_record(
        principal=ledger_key,
        payload={"kind": "transaction", "amount": "-5", "currency": "EUR", "memo": f"{MARKER} paid"},
    )
    ledger_services.ledger_reverse(
        principal=ledger_key, payload={"entry_id": paid["entry"]["id"], "reason": f"{MARKER} refunded"}
    )


def with_password(user: User) -> User:
    user.set_password("correct horse")
    user.save()
    return user


def request(tenancy: Tenancy) -> AccountDeletion:
    return deletion.account_deletion_request(
        account=tenancy.alice.account,
        actor=with_password(tenancy.alice.user),
        confirmation="Alice & Co",
        password="correct horse",
    )


def test_account_deletion_closes_at_once_reminds_then_purges_everything(
    tenancy: Tenancy, clock: Clock, django_capture_on_commit_callbacks: Any
) -> None:
    fill(tenancy)
    assert {"memories_memory", "ledger_entry"} <= set(tables_holding(MARKER))
    with django_capture_on_commit_callbacks(execute=True):
        request(tenancy)
    assert mail.outbox[-1].to == ["alice@example.com"]
    assert resolve_key(tenancy.alice.key) is None  # keys stop at once
    assert resolve_key(tenancy.bob.key) is None
    assert not ApiKey.objects.filter(account=tenancy.alice.account, revoked_at__isnull=True).exists()
    assert not Membership.objects.filter(account=tenancy.alice.account, is_active=True).exists()  # hidden

    clock.at(days=26)
    assert enforce_retention()["reminded"] == 0
    clock.at(days=27, hours=1)
    with django_capture_on_commit_callbacks(execute=True):
        assert enforce_retention() == {"reminded": 1, "accounts_purged": 0, "forgotten_purged": 0}
    assert "will be deleted" in mail.outbox[-1].subject
    clock.at(days=29, hours=23)
    assert enforce_retention()["accounts_purged"] == 0
    assert Account.objects.filter(pk=tenancy.alice.account.pk).exists()

    clock.at(days=30, hours=1)
    assert enforce_retention()["accounts_purged"] == 1
    assert not Account.objects.filter(pk=tenancy.alice.account.pk).exists()
    assert tables_holding(MARKER) == []
    assert tables_holding("Alice & Co") == []
    assert AuditEvent.objects.filter(action="account.purged", target_id=tenancy.alice.account.tenant_id).exists()
    assert Account.objects.filter(pk=tenancy.charlie.account.pk).exists()  # nobody else's
    assert resolve_key(tenancy.charlie.key) is not None


def test_cancel_before_the_purge_restores_exactly_what_was_closed(tenancy: Tenancy, clock: Clock) -> None:
    fill(tenancy)
    revoked_before = tenancy.alice.user.api_keys.create(
        account=tenancy.alice.account, project=tenancy.alice.project, prefix="x", digest="y", revoked_at=T0
    )
    opened = request(tenancy)
    clock.at(days=10)
    deletion.account_deletion_cancel(deletion_id=opened.pk, actor=tenancy.alice.user)
    assert resolve_key(tenancy.alice.key) is not None
    assert resolve_key(tenancy.bob.key) is not None
    revoked_before.refresh_from_db()
    assert revoked_before.revoked_at == T0  # a key revoked before the request stays revoked
    clock.at(days=40)
    assert enforce_retention()["accounts_purged"] == 0
    assert Memory.objects.filter(account=tenancy.alice.account).count() == 2


def test_deletion_needs_an_owner_the_typed_name_and_the_password(tenancy: Tenancy) -> None:
    with_password(tenancy.bob.user)
    with pytest.raises(Forbidden, match="only an owner"):
        deletion.account_deletion_request(
            account=tenancy.alice.account, actor=tenancy.bob.user, confirmation="Alice & Co", password="correct horse"
        )
    alice = with_password(tenancy.alice.user)
    with pytest.raises(InvalidInput):
        deletion.account_deletion_request(
            account=tenancy.alice.account, actor=alice, confirmation="alice & co", password="correct horse"
        )
    with pytest.raises(Forbidden, match="password"):
        deletion.account_deletion_request(
            account=tenancy.alice.account, actor=alice, confirmation="Alice & Co", password="wrong"
        )
    assert resolve_key(tenancy.alice.key) is not None
    request(tenancy)
    with pytest.raises(Conflict):
        deletion._close(tenancy.alice.account, alice, delete_requester=False)


def test_forgotten_content_is_purged_after_retention_and_the_stub_stays(tenancy: Tenancy, clock: Clock) -> None:
    memory_id = write(tenancy, tenancy.alice.key, f"{MARKER} the old rule", tags=[MARKER], source_id=f"{MARKER}.md")
    write(tenancy, tenancy.alice.key, "a record that stays")
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    services.memory_forget(principal=principal, payload={"memory_id": memory_id})
    session_upsert(principal=principal, client="codex", session_id="s", payload={"title": f"{MARKER} chat"})
    turns = [{"position": 0, "role": "user", "content": f"{MARKER} hi"}]
    session_add_turns(principal=principal, client="codex", session_id="s", payload={"turns": turns})
    session_forget_by_id(principal=principal, session_pk=Session.objects.get().pk)

    clock.at(days=29)
    assert enforce_retention()["forgotten_purged"] == 0
    assert tables_holding(MARKER)
    clock.at(days=31)
    assert enforce_retention()["forgotten_purged"] == 2
    assert tables_holding(MARKER) == []
    stub = Memory.objects.get(pk=memory_id)
    assert stub.content == fmt.PURGED_CONTENT
    assert stub.forgotten_at is not None
    assert stub.version == 1
    assert AuditEvent.objects.filter(action="memory.forgotten", target_id=memory_id).exists()
    assert not Turn.objects.exists()
    assert Memory.objects.filter(content="a record that stays").exists()
    assert enforce_retention()["forgotten_purged"] == 0  # idempotent


def test_the_only_member_of_an_organisation_cannot_delete_themselves_and_orphan_it(tenancy: Tenancy) -> None:
    """The last owner may not leave even an organisation with no one else in it: it would be
    left with no one able to pay for, export or delete it. Deleting it first is the way out."""
    alice = with_password(tenancy.alice.user)
    Membership.objects.filter(account=tenancy.alice.account, user=tenancy.bob.user).delete()
    with pytest.raises(Conflict, match="last owner of Alice & Co"):
        deletion.user_delete(user=alice, password="correct horse")
    assert Membership.objects.filter(account=tenancy.alice.account, user=alice, is_active=True).exists()
    assert User.objects.get(pk=alice.pk).is_active


def test_a_user_deletes_themselves_unless_last_owner(tenancy: Tenancy, clock: Clock) -> None:
    alice = with_password(tenancy.alice.user)
    with pytest.raises(Conflict, match="last owner of Alice & Co"):
        deletion.user_delete(user=alice, password="correct horse")
    bob = with_password(tenancy.bob.user)
    write(tenancy, tenancy.bob.key, f"{MARKER} bob's note in the org")
    closed = deletion.user_delete(user=bob, password="correct horse")
    assert closed is not None
    assert resolve_key(tenancy.bob.key) is None
    assert ApiKey.objects.get(user=bob).revoked_at is not None
    assert not Membership.objects.filter(account=tenancy.alice.account, user=bob).exists()
    left = AuditEvent.objects.get(action="membership.removed", account=tenancy.alice.account)
    assert left.actor_user_id == bob.pk
    assert left.data["left"] is True  # leaving, as the dashboard's Leave
    assert resolve_key(tenancy.alice.key) is not None
    clock.at(days=31)
    enforce_retention()
    assert not User.objects.filter(pk=bob.pk).exists()
    assert Memory.objects.get(content__startswith=MARKER).author is None  # the org keeps its record
    assert timezone.now() == clock.now
