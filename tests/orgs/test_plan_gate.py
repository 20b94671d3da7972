"""The plan's organisation features, enforced where organisations are managed.

Every service that grows or widens an organisation (invite, accept, reactivate, a role above
member, departments and their members, project access lists) asks the plan through
``accounts.limits``; those that shrink it never do, so an account moved to a smaller plan can
still tidy up. The dashboard shows the refusal where the action was tried.
"""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from accounts import services as account_services
from accounts.models import User
from billing.models import Plan
from mmw.errors import Forbidden
from orgs import services as org_services
from orgs.models import Invitation, Membership
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.factories import on_plan
from tests.orgs.world import make_org

pytestmark = pytest.mark.django_db

Role = Membership.Role
REFUSED = "organization features are not included in this account's plan"


def new_user(email: str) -> User:
    return account_services.user_get_or_create(email=email)[0]


def test_an_organisation_on_a_plan_without_them_cannot_grow_in_any_way() -> None:
    org = make_org("gate", departments=("red",))  # built on Team
    bob = org.add("bob@gate.test", Role.MEMBER)
    eve = org.add("eve@gate.test", Role.MEMBER)
    org_services.membership_deactivate(membership=eve.membership, actor=org.founder.user)
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="zoe@gate.test")
    on_plan(org.account, "free")
    owner = org.founder.user
    red = org.departments["red"]
    grows = {
        "invite": lambda: org_services.invitation_create(account=org.account, actor=owner, email="x@gate.test"),
        "accept": lambda: org_services.invitation_accept(token=issued.token, user=new_user("zoe@gate.test")),
        "department": lambda: org_services.department_create(account=org.account, actor=owner, name="blue"),
        "department member": lambda: org_services.department_member_add(
            department=red, membership=bob.membership, actor=owner
        ),
        "reactivate": lambda: org_services.membership_reactivate(membership=eve.membership, actor=owner),
        "role": lambda: org_services.membership_role_change(membership=bob.membership, actor=owner, role=Role.ADMIN),
        "restrict project": lambda: org_services.project_access_set(
            project=org.project, actor=owner, members=[bob.membership]
        ),
    }
    for name, action in grows.items():
        with pytest.raises(Forbidden, match=REFUSED):
            action()
        assert name  # each refusal is its own case
    assert not Membership.objects.filter(account=org.account, user__email="zoe@gate.test").exists()
    assert not Membership.objects.get(pk=eve.membership.pk).is_active
    assert Membership.objects.get(pk=bob.membership.pk).role == Role.MEMBER


def test_a_restricted_project_list_cannot_grow_either() -> None:
    org = make_org("lists", departments=())
    bob = org.add("bob@lists.test", Role.MEMBER)
    carol = org.add("carol@lists.test", Role.MEMBER)
    org_services.project_access_set(project=org.project, actor=org.founder.user, members=[bob.membership])
    on_plan(org.account, "free")
    with pytest.raises(Forbidden, match=REFUSED):
        org_services.project_access_grant(project=org.project, membership=carol.membership, actor=org.founder.user)
    # granting someone already on the list changes nothing, so it is not refused
    org_services.project_access_grant(project=org.project, membership=bob.membership, actor=org.founder.user)


def test_an_organisation_on_a_smaller_plan_can_still_shrink() -> None:
    org = make_org("shrink", departments=("red",))
    admin = org.add("adm@shrink.test", Role.ADMIN, departments=["red"])
    member = org.add("mem@shrink.test", Role.MEMBER)
    gone = org.add("gone@shrink.test", Role.MEMBER)
    org_services.project_access_set(project=org.project, actor=org.founder.user, members=[member.membership])
    issued = org_services.invitation_create(account=org.account, actor=org.founder.user, email="late@shrink.test")
    on_plan(org.account, "free")
    owner = org.founder.user
    org_services.membership_role_change(membership=admin.membership, actor=owner, role=Role.MEMBER)
    org_services.department_member_remove(department=org.departments["red"], membership=admin.membership, actor=owner)
    org_services.department_delete(department=org.departments["red"], actor=owner)
    org_services.project_access_revoke(project=org.project, membership=member.membership, actor=owner)
    org_services.project_access_set(project=org.project, actor=owner, members=None)
    org_services.membership_deactivate(membership=member.membership, actor=owner)
    org_services.membership_remove(membership=gone.membership, actor=owner)
    org_services.invitation_revoke(invitation=issued.invitation, actor=owner)
    assert Membership.objects.get(pk=admin.membership.pk).role == Role.MEMBER
    assert Invitation.objects.get(pk=issued.invitation.pk).revoked_at is not None


def test_plans_are_data_a_plan_given_the_features_opens_them() -> None:
    org = make_org("data", departments=())
    on_plan(org.account, "free")
    Plan.objects.filter(code="free").update(organization_features=True)  # e.g. a self-hosted install
    org_services.department_create(account=org.account, actor=org.founder.user, name="ops")


def test_the_dashboard_shows_the_refusal_where_the_invitation_was_tried(tenancy: Tenancy) -> None:
    tenant = tenancy.alice.account.tenant_id  # Alice & Co is on the default (Free) plan
    page = client_for(tenancy.alice.user).post(
        reverse("dashboard:members", args=[tenant]), {"email": "eve@example.com", "role": "member"}
    )
    assert page.status_code == 400  # the form, shown again with the refusal in people's words and the way forward
    assert (
        html.escape("members, roles and departments are not included in this account's plan").encode() in page.content
    )
    assert b'data-testid="plan-gap"' in page.content
    assert not Invitation.objects.filter(email="eve@example.com").exists()
