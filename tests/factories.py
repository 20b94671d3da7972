"""factory_boy factories for the tenancy objects."""

from __future__ import annotations

from typing import Any

import factory

from accounts import services
from accounts.models import Account, Project, User
from orgs.models import Membership


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"user{n}@example.com")
    password = factory.PostGenerationMethodCall("set_password", "pw-for-tests-only")


class AccountFactory(factory.django.DjangoModelFactory[Account]):
    class Meta:
        model = Account

    name = factory.Sequence(lambda n: f"Account {n}")
    kind = Account.Kind.ORGANIZATION


class ProjectFactory(factory.django.DjangoModelFactory[Project]):
    class Meta:
        model = Project

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"project-{n}")


class MembershipFactory(factory.django.DjangoModelFactory[Membership]):
    class Meta:
        model = Membership

    account = factory.SubFactory(AccountFactory)
    user = factory.SubFactory(UserFactory)
    role = Membership.Role.MEMBER


def issue_key(user: User, project: Project, **kwargs: Any) -> str:
    """Issue a key through the real service and return the raw secret."""
    return services.api_key_create(user=user, project=project, **kwargs).raw


def on_plan(account: Account, code: str = "team") -> Account:
    """Move ``account``'s subscription to the seeded plan ``code`` (Team: organisation features),
    as a paid checkout would; organisations in tests that add members, roles or departments use it."""
    from billing.models import Plan, Subscription

    Subscription.objects.filter(account=account).update(plan=Plan.objects.get(code=code))
    return account
