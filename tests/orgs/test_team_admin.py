"""Team admin (issue #20): resending an invitation (audited, the old link replaced), the audit
log's filters and CSV download, and the organisation's settings (rename, transfer, leave)."""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections.abc import Callable
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts import services as account_services
from accounts.models import AuditEvent
from mmw.errors import Conflict, Forbidden, InvalidInput
from orgs import selectors as org_selectors
from orgs import services as org_services
from orgs.models import Membership
from orgs.selectors import AuditFilters
from tests.orgs.world import Org, make_org

pytestmark = pytest.mark.django_db

Role = Membership.Role


def client_for(org: Org, person: object = None) -> Client:
    client = Client()
    client.force_login(person or org.founder.user)  # type: ignore[arg-type]
    return client


# --- resend -----------------------------------------------------------------------------------


def test_resend_mails_a_new_link_replaces_the_old_and_is_audited(
    django_capture_on_commit_callbacks: Callable[..., object],
) -> None:
    org = make_org()
    first = org_services.invitation_create(
        account=org.account, actor=org.founder.user, email="eve@x.test", role="auditor"
    )
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[attr-defined]
        again = org_services.invitation_resend(invitation=first.invitation, actor=org.founder.user)
    assert again.invitation.role == "auditor"
    assert again.url in mail.outbox[-1].body
    row = AuditEvent.objects.filter(account=org.account).latest("pk")
    assert (row.action, row.data["email"], row.data["replaced"]) == (
        "invitation.resent",
        "eve@x.test",
        [first.invitation.pk],
    )
    eve = account_services.user_get_or_create(email="eve@x.test")[0]
    with pytest.raises(InvalidInput, match="replaced by a newer one"):
        org_services.invitation_accept(token=first.token, user=eve)
    assert org_services.invitation_accept(token=again.token, user=eve).role == "auditor"
    with pytest.raises(Conflict, match="no longer open"):
        org_services.invitation_resend(invitation=again.invitation, actor=org.founder.user)


def test_only_owners_and_admins_resend() -> None:
    org = make_org()
    member = org.add("mia@x.test")
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@x.test")
    with pytest.raises(Forbidden):
        org_services.invitation_resend(invitation=issued.invitation, actor=member.user)


def test_the_members_page_resends() -> None:
    org = make_org()
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@x.test")
    url = reverse("dashboard:invitation-resend", args=[org.account.tenant_id, issued.invitation.pk])
    answer = client_for(org).post(url, follow=True)
    assert "Invitation sent again to eve@x.test" in answer.content.decode()
    assert AuditEvent.objects.filter(account=org.account, action="invitation.resent").count() == 1
    other = make_org("other")
    assert client_for(other).post(url).status_code == 404


def test_a_reinvite_that_changes_the_role_says_so_and_the_audit_row_names_both_roles() -> None:
    org = make_org()
    org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@x.test")
    answer = client_for(org).post(
        reverse("dashboard:members", args=[org.account.tenant_id]),
        {"email": "eve@x.test", "role": Role.ADMIN},
        follow=True,
    )
    page = answer.content.decode()
    assert "replaces the pending one (role member → admin)" in page
    row = AuditEvent.objects.filter(account=org.account, action="invitation.created").latest("pk")
    assert row.data["role"] == Role.ADMIN
    assert row.data["replaced_roles"] == [Role.MEMBER]
    assert len(row.data["replaced"]) == 1


# --- the audit log ------------------------------------------------------------------------------


def test_the_audit_log_filters_by_actor_action_family_and_days() -> None:
    org = make_org()
    admin = org.add("ada@x.test", role=Role.ADMIN)
    org_services.invitation_create(account=org.account, actor=admin.user, email="eve@x.test")
    account_services.api_key_create(user=admin.user, project=org.project, name="ci")
    old = AuditEvent.objects.create(account=org.account, action="project.renamed", data={"from": "a", "to": "b"})
    AuditEvent.objects.filter(pk=old.pk).update(created_at=timezone.now() - dt.timedelta(days=40))

    def actions(**f: Any) -> list[str]:
        rows = org_selectors.audit_events_for(account=org.account, actor=org.founder.user, filters=AuditFilters(**f))
        return [e.action for e in rows]

    # org.add issued ada a key first (api_key.created), then she invited and made one herself
    assert actions(actor="ADA@x.test") == ["api_key.created", "invitation.created", "api_key.created"]
    family = actions(action="api_key.")
    assert set(family) == {"api_key.created"}
    assert len(family) == 3
    assert actions(action="invitation.created") == ["invitation.created"]
    assert actions(actor="system") == ["project.renamed"]
    today = timezone.now().date()
    assert "project.renamed" not in actions(since=today - dt.timedelta(days=1))
    assert actions(until=today - dt.timedelta(days=30)) == ["project.renamed"]
    member = org.add("mia@x.test")
    with pytest.raises(Forbidden):
        org_selectors.audit_events_for(account=org.account, actor=member.user)


def test_the_audit_csv_is_filtered_and_formula_escaped() -> None:
    org = make_org()
    account_services.account_rename(account=org.account, actor=org.founder.user, name='=HYPERLINK("evil")')
    url = reverse("dashboard:audit-csv", args=[org.account.tenant_id])
    answer = client_for(org).get(url, {"action": "account.renamed"})
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/csv")
    assert getattr(answer, "is_async", False)  # streamed under ASGI, not read whole into memory first
    rows = list(csv.DictReader(io.StringIO(b"".join(answer).decode())))
    assert [r["action"] for r in rows] == ["account.renamed"]
    assert rows[0]["actor"] == org.founder.user.email
    assert '"to": "=HYPERLINK' in rows[0]["data"]
    assert rows[0]["target"].startswith("account")
    assert not rows[0]["target"].startswith("=")
    page = client_for(org).get(reverse("dashboard:audit", args=[org.account.tenant_id]), {"action": "api_key."})
    assert page.status_code == 200
    assert "audit.csv?action=api_key." in page.content.decode()
    bad = client_for(org).get(url, {"since": "2026-02-02", "until": "2026-01-01"})
    assert bad.status_code == 400
    member = org.add("mia@x.test")
    assert client_for(org, member.user).get(url).status_code == 403


# --- organisation settings -------------------------------------------------------------------------


def test_rename_is_for_owners_and_admins_and_audited() -> None:
    org = make_org()
    member = org.add("mia@x.test")
    with pytest.raises(Forbidden):
        account_services.account_rename(account=org.account, actor=member.user, name="Mine now")
    url = reverse("dashboard:organization-settings", args=[org.account.tenant_id])
    answer = client_for(org).post(url, {"action": "rename", "name": "  Exar Labs  "}, follow=True)
    assert "Renamed to Exar Labs." in answer.content.decode()
    org.account.refresh_from_db()
    assert org.account.name == "Exar Labs"
    row = AuditEvent.objects.filter(account=org.account, action="account.renamed").get()
    assert row.data == {"from": "acme org", "to": "Exar Labs"}
    assert client_for(org, member.user).post(url, {"action": "rename", "name": "x"}).status_code == 403


def test_the_last_owner_cannot_leave_until_ownership_is_transferred() -> None:
    org = make_org()
    admin = org.add("ada@x.test", role=Role.ADMIN)
    url = reverse("dashboard:organization-settings", args=[org.account.tenant_id])
    page = client_for(org).get(url).content.decode()
    assert "you cannot leave" in page
    answer = client_for(org).post(url, {"action": "leave", "confirm": org.account.name}, follow=True)
    assert "must keep at least one active owner" in answer.content.decode()
    assert Membership.objects.filter(pk=org.founder.membership.pk).exists()
    client_for(org).post(url, {"action": "transfer", "to": admin.membership.pk})
    admin.membership.refresh_from_db()
    assert admin.membership.role == Role.OWNER
    left = client_for(org).post(url, {"action": "leave", "confirm": org.account.name})
    assert left.status_code == 302
    assert not Membership.objects.filter(pk=org.founder.membership.pk).exists()
    assert org_selectors.is_last_owner(Membership.objects.get(pk=admin.membership.pk))


def test_leave_needs_the_name_typed_and_a_member_can_leave() -> None:
    org = make_org()
    member = org.add("mia@x.test")
    url = reverse("dashboard:organization-settings", args=[org.account.tenant_id])
    client_for(org, member.user).post(url, {"action": "leave", "confirm": "nope"})
    assert Membership.objects.filter(pk=member.membership.pk).exists()
    client_for(org, member.user).post(url, {"action": "leave", "confirm": org.account.name})
    assert not Membership.objects.filter(pk=member.membership.pk).exists()
    row = AuditEvent.objects.filter(account=org.account, action="membership.removed").latest("pk")
    assert row.data["left"] is True
