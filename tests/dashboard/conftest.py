"""Dashboard fixtures: the Alice / Bob / Charlie tenancy (from ``tests/conftest.py``) plus an
auditor, Dana, in Alice's organisation; clients signed in as each of them."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from accounts import services
from accounts.models import User
from dashboard.support import ensure_support_group
from orgs.models import Membership
from tests.conftest import Tenancy


@pytest.fixture(autouse=True)
def _fast_embeddings(settings: Any) -> None:
    settings.MMW_EMBEDDING_BACKEND = "ngram"
    settings.MMW_EMBEDDING_OPTIONS = {}


@pytest.fixture
def dana(tenancy: Tenancy) -> User:
    user, _ = services.user_get_or_create(email="dana@example.com")
    Membership.objects.create(account=tenancy.alice.account, user=user, role=Membership.Role.AUDITOR)
    return user


@pytest.fixture
def staff(tenancy: Tenancy) -> User:
    """A support engineer: staff, in the support group (the Django admin's users)."""
    user = User.objects.create_user("support@example.com", "pw", is_staff=True)
    user.groups.add(ensure_support_group())
    return user


def client_for(user: User, *, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client
