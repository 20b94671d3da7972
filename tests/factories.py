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
