"""Organisation services: invitations, roles and ownership, deactivation, departments, project
access, personal accounts, and the audit rows each of them writes."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.core import mail, signing
from django.utils import timezone

from accounts import services as account_services
from accounts.keys import resolve_key
from accounts.models import AuditEvent, User
from mmw.errors import Conflict, Forbidden, InvalidInput, NotFound
from orgs import selectors as org_selectors
from orgs import services as org_services
from orgs.models import Invitation, Membership
from tests.factories import issue_key
from tests.orgs.world import Org, make_org

pytestmark = pytest.mark.django_db

Role = Membership.Role


def new_user(email: str) -> User:
    return account_services.user_get_or_create(email=email)[0]


def actions(org: Org) -> list[str]:
    return list(AuditEvent.objects.filter(account=org.account).order_by("pk").values_list("action", flat=True))


# --- invitations ------------------------------------------------------------------------------


def test_invitation_is_emailed_and_accepting_it_makes_a_membership_with_the_invited_role(
    django_capture_on_commit_callbacks: Callable[..., object],
) -> None:
    org = make_org()
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[attr-defined]
        issued = org_services.invitation_create(
            account=org.account, actor=org.founder.user, email=" Eve@Example.com ", role=Role.AUDITOR
        )
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["eve@example.com"]
    assert issued.url in message.body
    assert issued.token not in (issued.invitation.nonce_digest, "")
    assert Invitation.objects.get().nonce_digest != issued.token

    eve = new_user("eve@example.com")
    membership = org_services.invitation_accept(token=issued.token, user=eve)
    assert (membership.account, membership.role, membership.is_active) == (org.account, Role.AUDITOR, True)
    assert actions(org)[-2:] == ["invitation.created", "invitation.accepted"]


def test_a_used_invitation_cannot_be_used_again() -> None:
    org = make_org()
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@example.com")
    eve = new_user("eve@example.com")
    org_services.invitation_accept(token=issued.token, user=eve)
    with pytest.raises(Conflict, match=r"^invitation link was already used$"):
        org_services.invitation_accept(token=issued.token, user=eve)


def test_an_invitation_past_its_expiry_time_is_refused() -> None:
    org = make_org()
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@example.com")
    Invitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(InvalidInput, match=r"^invitation link has expired: ask for a new one$"):
        org_services.invitation_accept(token=issued.token, user=new_user("eve@example.com"))
    assert not Membership.objects.filter(account=org.account, user__email="eve@example.com").exists()


def test_an_invitation_whose_signature_is_too_old_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    org = make_org()
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@example.com")
    eve = new_user("eve@example.com")
    later = time.time() + org_services.INVITATION_TTL.total_seconds() + 60
    monkeypatch.setattr(signing.time, "time", lambda: later)  # type: ignore[attr-defined]
    with pytest.raises(InvalidInput, match=r"^invitation link has expired: ask for a new one$"):
        org_services.invitation_accept(token=issued.token, user=eve)


def test_an_invitation_for_another_address_is_refused() -> None:
    org = make_org()
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@example.com")
    with pytest.raises(Forbidden, match=r"^this invitation was sent to another e-mail address$"):
        org_services.invitation_accept(token=issued.token, user=new_user("mallory@example.com"))
    assert Invitation.objects.get().accepted_at is None, "a refused attempt does not use the link up"


@pytest.mark.parametrize(
    "tamper",
    [
        lambda token: token[:-1] + ("A" if token[-1] != "A" else "B"),  # signature
        lambda token: "x" + token,  # payload
        lambda token: signing.dumps({"i": 1, "n": "guess"}, salt="mmw.orgs.invitation", key="not-the-secret"),
        lambda token: "",
        lambda token: "garbage",
    ],
    ids=["signature", "payload", "foreign-key", "empty", "garbage"],
)
def test_a_tampered_invitation_token_is_refused(tamper: Callable[[str], str]) -> None:
    org = make_org()
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@example.com")
    with pytest.raises(InvalidInput, match=r"^invitation link is invalid$"):
        org_services.invitation_accept(token=tamper(issued.token), user=new_user("eve@example.com"))


def test_a_validly_signed_token_with_the_wrong_nonce_is_refused() -> None:
    org = make_org()
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@example.com")
    forged = signing.dumps({"i": issued.invitation.pk, "n": "not-the-nonce"}, salt=org_services.INVITATION_SALT)
    with pytest.raises(InvalidInput, match=r"^invitation link is invalid$"):
        org_services.invitation_accept(token=forged, user=new_user("eve@example.com"))


def test_a_new_invitation_replaces_the_open_one_and_a_revoked_one_is_refused() -> None:
    org = make_org()
    first = org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@example.com")
    second = org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@example.com")
    eve = new_user("eve@example.com")
    with pytest.raises(InvalidInput, match=r"^invitation was revoked or replaced by a newer one$"):
        org_services.invitation_accept(token=first.token, user=eve)
    org_services.invitation_revoke(invitation=second.invitation, actor=org.founder.user)
    with pytest.raises(InvalidInput, match=r"^invitation was revoked or replaced by a newer one$"):
        org_services.invitation_accept(token=second.token, user=eve)
    assert actions(org).count("invitation.revoked") == 1


def test_only_owners_and_admins_invite_and_nobody_invites_an_owner_or_an_existing_member() -> None:
    org = make_org()
    member = org.add("member@acme.test", Role.MEMBER)
    admin = org.add("admin@acme.test", Role.ADMIN)
    with pytest.raises(Forbidden, match=r"^only owners and admins can manage this organization$"):
        org_services.invitation_create(account=org.account, actor=member.user, email="eve@example.com")
    with pytest.raises(NotFound, match=r"^organization not found$"):
        org_services.invitation_create(account=org.account, actor=new_user("out@x.test"), email="eve@example.com")
    with pytest.raises(InvalidInput, match=r"owners are made by an owner"):
        org_services.invitation_create(account=org.account, actor=org.founder.user, email="e@x.test", role=Role.OWNER)
    with pytest.raises(Conflict, match=r"^member@acme.test is already a member of this organization$"):
        org_services.invitation_create(account=org.account, actor=admin.user, email="member@acme.test")
    with pytest.raises(InvalidInput, match=r"^invalid e-mail address"):
        org_services.invitation_create(account=org.account, actor=admin.user, email="not-an-address")
    assert org_services.invitation_create(account=org.account, actor=admin.user, email="eve@example.com").token


def test_accepting_while_already_a_member_is_refused() -> None:
    org = make_org()
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="eve@example.com")
    eve = new_user("eve@example.com")
    Membership.objects.create(account=org.account, user=eve, role=Role.MEMBER, is_active=False)
    with pytest.raises(Conflict, match=r"deactivated: ask an owner or admin to reactivate it"):
        org_services.invitation_accept(token=issued.token, user=eve)


def test_a_personal_account_takes_no_invitations_departments_or_access_lists() -> None:
    carol = new_user("carol@example.com")
    personal = account_services.personal_account(user=carol)
    project, _ = account_services.project_get_or_create(account=personal, name="mine", actor=carol)
    message = "^personal accounts have a single member: invite people into an organization$"
    with pytest.raises(InvalidInput, match=message):
        org_services.invitation_create(account=personal, actor=carol, email="eve@example.com")
    with pytest.raises(InvalidInput, match=r"^departments exist only in organizations$"):
        org_services.department_create(account=personal, actor=carol, name="red")
    with pytest.raises(InvalidInput, match=r"^project access lists exist only in organizations$"):
        org_services.project_access_set(project=project, actor=carol, members=[])
    only = Membership.objects.get(account=personal)
    with pytest.raises(Conflict, match=r"^an organization must keep at least one active owner$"):
        org_services.membership_role_change(membership=only, actor=carol, role=Role.MEMBER)
    assert org_selectors.audit_events_for(account=personal, actor=carol).count() >= 1


# --- roles and ownership ----------------------------------------------------------------------


def test_the_last_active_owner_can_be_neither_demoted_deactivated_nor_removed() -> None:
    org = make_org()
    founder = org.founder.membership
    for change in (
        lambda: org_services.membership_role_change(membership=founder, actor=org.founder.user, role=Role.ADMIN),
        lambda: org_services.membership_deactivate(membership=founder, actor=org.founder.user),
        lambda: org_services.membership_remove(membership=founder, actor=org.founder.user),
    ):
        with pytest.raises(Conflict, match=r"^an organization must keep at least one active owner$"):
            change()
    # A deactivated second owner does not count as one.
    other = org.add("other@acme.test", Role.OWNER)
    org_services.membership_deactivate(membership=other.membership, actor=org.founder.user)
    with pytest.raises(Conflict, match=r"at least one active owner"):
        org_services.membership_role_change(membership=founder, actor=org.founder.user, role=Role.ADMIN)
    org_services.membership_reactivate(membership=other.membership, actor=org.founder.user)
    org_services.membership_role_change(membership=founder, actor=org.founder.user, role=Role.ADMIN)
    assert Membership.objects.get(pk=founder.pk).role == Role.ADMIN


def test_admins_cannot_touch_owners_or_grant_ownership() -> None:
    org = make_org()
    admin = org.add("admin@acme.test", Role.ADMIN)
    owner2 = org.add("owner2@acme.test", Role.OWNER)
    member = org.add("member@acme.test", Role.MEMBER)
    for change in (
        lambda: org_services.membership_role_change(membership=owner2.membership, actor=admin.user, role=Role.MEMBER),
        lambda: org_services.membership_deactivate(membership=owner2.membership, actor=admin.user),
        lambda: org_services.membership_remove(membership=owner2.membership, actor=admin.user),
    ):
        with pytest.raises(Forbidden, match=r"^admins cannot change, deactivate or remove an owner$"):
            change()
    with pytest.raises(Forbidden, match=r"^only an owner can grant the owner role$"):
        org_services.membership_role_change(membership=member.membership, actor=admin.user, role=Role.OWNER)
    with pytest.raises(Forbidden, match=r"^only an owner can transfer ownership$"):
        org_services.ownership_transfer(account=org.account, actor=admin.user, to=admin.membership)
    # What admins may do: appoint auditors and admins among non-owners.
    org_services.membership_role_change(membership=member.membership, actor=admin.user, role=Role.AUDITOR)
    assert Membership.objects.get(pk=member.membership.pk).role == Role.AUDITOR


def test_members_and_auditors_manage_nothing() -> None:
    org = make_org()
    member = org.add("member@acme.test", Role.MEMBER)
    auditor = org.add("auditor@acme.test", Role.AUDITOR)
    for actor in (member.user, auditor.user):
        with pytest.raises(Forbidden, match=r"^only owners and admins can manage this organization$"):
            org_services.membership_role_change(membership=member.membership, actor=actor, role=Role.ADMIN)
        with pytest.raises(Forbidden):
            org_services.department_create(account=org.account, actor=actor, name="green")
        with pytest.raises(Forbidden):
            org_services.project_access_set(project=org.project, actor=actor, members=None)


def test_ownership_transfer_swaps_roles_in_one_step_and_is_audited() -> None:
    org = make_org()
    heir = org.add("heir@acme.test", Role.MEMBER)
    org_services.ownership_transfer(account=org.account, actor=org.founder.user, to=heir.membership)
    roles = dict(Membership.objects.filter(account=org.account).values_list("user__email", "role"))
    assert roles == {"founder@acme.test": Role.ADMIN, "heir@acme.test": Role.OWNER}
    event = AuditEvent.objects.get(action="ownership.transferred")
    assert event.data == {"from": "founder@acme.test", "to": "heir@acme.test", "previous_role": "member"}
    with pytest.raises(Forbidden):  # the former owner is an admin now
        org_services.ownership_transfer(account=org.account, actor=org.founder.user, to=org.founder.membership)


def test_ownership_goes_only_to_another_active_member_of_the_same_organization() -> None:
    org = make_org()
    other = make_org("globex")
    sleeper = org.add("sleeper@acme.test", Role.MEMBER)
    org_services.membership_deactivate(membership=sleeper.membership, actor=org.founder.user)
    with pytest.raises(Conflict, match=r"^ownership can only be transferred to an active member$"):
        org_services.ownership_transfer(account=org.account, actor=org.founder.user, to=sleeper.membership)
    with pytest.raises(NotFound, match=r"^membership not found$"):
        org_services.ownership_transfer(account=org.account, actor=org.founder.user, to=other.founder.membership)
    with pytest.raises(InvalidInput):
        org_services.ownership_transfer(account=org.account, actor=org.founder.user, to=org.founder.membership)


def test_role_changes_are_audited_with_before_and_after() -> None:
    org = make_org()
    bob = org.add("bob@acme.test", Role.MEMBER)
    org_services.membership_role_change(membership=bob.membership, actor=org.founder.user, role=Role.AUDITOR)
    org_services.membership_role_change(membership=bob.membership, actor=org.founder.user, role=Role.AUDITOR)
    events = AuditEvent.objects.filter(action="membership.role_changed")
    assert [(e.actor_user_id, e.target_id, e.data) for e in events] == [
        (
            org.founder.user.pk,
            str(bob.membership.pk),
            {"user": "bob@acme.test", "previous": "member", "role": "auditor"},
        )
    ], "a change to the same role is no change and writes no row"
    with pytest.raises(InvalidInput, match=r"^role must be one of owner, admin, member, auditor$"):
        org_services.membership_role_change(membership=bob.membership, actor=org.founder.user, role="god")


# --- deactivation and removal -----------------------------------------------------------------


def test_a_deactivated_members_keys_stop_at_once_and_work_again_after_reactivation() -> None:
    org = make_org()
    bob = org.add("bob@acme.test", Role.MEMBER)
    assert resolve_key(bob.key) is not None
    org_services.membership_deactivate(membership=bob.membership, actor=org.founder.user)
    assert resolve_key(bob.key) is None
    with pytest.raises(Exception, match=r"only an active member of the account can hold its keys"):
        issue_key(bob.user, org.project)
    org_services.membership_reactivate(membership=bob.membership, actor=org.founder.user)
    assert resolve_key(bob.key) is not None
    assert actions(org)[-2:] == ["membership.deactivated", "membership.reactivated"]


def test_removing_a_member_revokes_their_keys_for_good() -> None:
    org = make_org()
    bob = org.add("bob@acme.test", Role.MEMBER, departments=["red"])
    org_services.membership_remove(membership=bob.membership, actor=org.founder.user)
    assert not Membership.objects.filter(pk=bob.membership.pk).exists()
    assert resolve_key(bob.key) is None
    event = AuditEvent.objects.get(action="membership.removed")
    assert event.data["revoked_keys"] == [bob.key[4:12]]
    assert event.data["left"] is False
    # Re-invited, the old key stays dead.
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="bob@acme.test")
    org_services.invitation_accept(token=issued.token, user=bob.user)
    assert resolve_key(bob.key) is None


def test_a_member_may_leave_on_their_own() -> None:
    org = make_org()
    bob = org.add("bob@acme.test", Role.MEMBER)
    org_services.membership_remove(membership=bob.membership, actor=bob.user)
    assert AuditEvent.objects.get(action="membership.removed").data["left"] is True


def test_a_deactivated_admin_manages_nothing() -> None:
    org = make_org()
    admin = org.add("admin@acme.test", Role.ADMIN)
    bob = org.add("bob@acme.test", Role.MEMBER)
    org_services.membership_deactivate(membership=admin.membership, actor=org.founder.user)
    with pytest.raises(NotFound, match=r"^organization not found$"):
        org_services.membership_deactivate(membership=bob.membership, actor=admin.user)


# --- departments ------------------------------------------------------------------------------


def test_departments_are_created_renamed_and_deleted_by_owners_and_admins_with_audit_rows() -> None:
    org = make_org(departments=())
    admin = org.add("admin@acme.test", Role.ADMIN)
    bob = org.add("bob@acme.test", Role.MEMBER)
    red = org_services.department_create(account=org.account, actor=admin.user, name="  Red ")
    assert red.name == "Red"
    with pytest.raises(Conflict, match=r"^a department named 'red' already exists$"):
        org_services.department_create(account=org.account, actor=admin.user, name="red")
    with pytest.raises(InvalidInput, match=r"^department name must not be empty$"):
        org_services.department_create(account=org.account, actor=admin.user, name=" ")
    org_services.department_member_add(department=red, membership=bob.membership, actor=admin.user)
    org_services.department_member_add(department=red, membership=bob.membership, actor=admin.user)
    org_services.department_rename(department=red, actor=admin.user, name="Crimson")
    org_services.department_member_remove(department=red, membership=bob.membership, actor=admin.user)
    org_services.department_delete(department=red, actor=admin.user)
    assert [a for a in actions(org) if a.startswith("department.")] == [
        "department.created",
        "department.member_added",
        "department.renamed",
        "department.member_removed",
        "department.deleted",
    ]


def test_a_department_takes_only_members_of_its_own_organization() -> None:
    org, other = make_org(), make_org("globex")
    with pytest.raises(NotFound, match=r"^membership not found$"):
        org_services.department_member_add(
            department=org.departments["red"], membership=other.founder.membership, actor=org.founder.user
        )


# --- project access ---------------------------------------------------------------------------


def test_a_member_left_off_a_projects_list_can_neither_use_nor_get_a_key_for_it() -> None:
    org = make_org()
    ann = org.add("ann@acme.test", Role.MEMBER)
    bob = org.add("bob@acme.test", Role.MEMBER)
    admin = org.add("admin@acme.test", Role.ADMIN)
    org_services.project_access_set(project=org.project, actor=org.founder.user, members=[ann.membership])
    assert resolve_key(bob.key) is None, "the key stops at once"
    assert resolve_key(ann.key) is not None
    assert resolve_key(admin.key) is not None, "owners and admins always have access"
    with pytest.raises(Forbidden, match=r"^this member has no access to the project$"):
        issue_key(bob.user, org.project)
    members = org_selectors.project_members(project=org.project, actor=bob.user)
    assert {m.user.email for m in members} == {"founder@acme.test", "ann@acme.test", "admin@acme.test"}

    org_services.project_access_grant(project=org.project, membership=bob.membership, actor=admin.user)
    assert resolve_key(bob.key) is not None
    org_services.project_access_revoke(project=org.project, membership=bob.membership, actor=admin.user)
    assert resolve_key(bob.key) is None
    org_services.project_access_set(project=org.project, actor=org.founder.user, members=None)
    assert resolve_key(bob.key) is not None, "back to every member"
    assert [a for a in actions(org) if a.startswith("project_access")] == ["project_access.changed"] * 4


def test_revoking_on_an_open_project_asks_to_restrict_it_first() -> None:
    org = make_org()
    bob = org.add("bob@acme.test", Role.MEMBER)
    with pytest.raises(Conflict, match=r"restrict it to a list of members first"):
        org_services.project_access_revoke(project=org.project, membership=bob.membership, actor=org.founder.user)


def test_an_access_list_takes_only_members_of_the_projects_organization() -> None:
    org, other = make_org(), make_org("globex")
    with pytest.raises(NotFound, match=r"^membership not found$"):
        org_services.project_access_set(project=org.project, actor=org.founder.user, members=[other.founder.membership])


# --- the audit log ----------------------------------------------------------------------------


def test_owners_and_admins_read_their_orgs_audit_events_and_no_one_else_does() -> None:
    org, other = make_org(), make_org("globex")
    admin = org.add("admin@acme.test", Role.ADMIN)
    member = org.add("member@acme.test", Role.MEMBER)
    auditor = org.add("auditor@acme.test", Role.AUDITOR)
    org_services.membership_role_change(membership=member.membership, actor=admin.user, role=Role.AUDITOR)
    for reader in (org.founder, admin):
        events = list(org_selectors.audit_events_for(account=org.account, actor=reader.user))
        assert events[0].action == "membership.role_changed", "newest first"
        assert {e.account_id for e in events} == {org.account.pk}
    for refused in (member, auditor):
        with pytest.raises(Forbidden, match=r"^only owners and admins can read the audit log$"):
            org_selectors.audit_events_for(account=org.account, actor=refused.user)
    with pytest.raises(NotFound, match=r"^organization not found$"):
        org_selectors.audit_events_for(account=org.account, actor=other.founder.user)


def test_every_security_relevant_org_action_writes_one_audit_row_naming_its_actor() -> None:
    org = make_org(departments=())
    founder = org.founder.user
    bob = org.add("bob@acme.test", Role.MEMBER)
    eve = new_user("eve@example.com")
    start = AuditEvent.objects.filter(account=org.account).count()
    issued = org_services.invitation_create(account=org.account, actor=founder, email="eve@example.com")
    joined = org_services.invitation_accept(token=issued.token, user=eve)
    org_services.membership_role_change(membership=joined, actor=founder, role=Role.ADMIN)
    org_services.membership_deactivate(membership=bob.membership, actor=founder)
    org_services.membership_reactivate(membership=bob.membership, actor=founder)
    red = org_services.department_create(account=org.account, actor=founder, name="red")
    org_services.department_member_add(department=red, membership=bob.membership, actor=founder)
    org_services.project_access_set(project=org.project, actor=founder, members=[bob.membership])
    org_services.ownership_transfer(account=org.account, actor=founder, to=joined)
    org_services.membership_remove(membership=bob.membership, actor=eve)
    events = AuditEvent.objects.filter(account=org.account).order_by("pk")[start:]
    rows = list(events.values_list("action", "actor_user__email"))
    assert rows == [
        ("invitation.created", "founder@acme.test"),
        ("invitation.accepted", "eve@example.com"),
        ("membership.role_changed", "founder@acme.test"),
        ("membership.deactivated", "founder@acme.test"),
        ("membership.reactivated", "founder@acme.test"),
        ("department.created", "founder@acme.test"),
        ("department.member_added", "founder@acme.test"),
        ("project_access.changed", "founder@acme.test"),
        ("ownership.transferred", "founder@acme.test"),
        ("membership.removed", "eve@example.com"),
    ]
    assert all(issued.token not in str(e.data) for e in AuditEvent.objects.all()), "no secret in the log"
