"""Who may revoke a key is decided by ``api_key_revoke`` itself, not by the page that calls it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from accounts import services
from accounts.keys import resolve_key
from accounts.models import ApiKey, AuditEvent
from dashboard.support import ensure_support_group
from mmw.errors import Forbidden
from tests.conftest import Tenancy

pytestmark = pytest.mark.django_db


def key_of(raw: str) -> ApiKey:
    principal = resolve_key(raw)
    assert principal is not None
    assert principal.api_key is not None
    return principal.api_key


def test_a_member_cannot_revoke_someone_elses_key(tenancy: Tenancy) -> None:
    with pytest.raises(Forbidden, match=r"^only the key's holder, an owner or an admin can revoke it$"):
        services.api_key_revoke(api_key=key_of(tenancy.alice.key), actor=tenancy.bob.user)
    assert resolve_key(tenancy.alice.key) is not None
    assert not AuditEvent.objects.filter(action="api_key.revoked").exists()


def test_someone_outside_the_account_cannot_revoke_it(tenancy: Tenancy) -> None:
    with pytest.raises(Forbidden):
        services.api_key_revoke(api_key=key_of(tenancy.alice.key), actor=tenancy.charlie.user)
    assert resolve_key(tenancy.alice.key) is not None


def test_the_holder_an_owner_and_support_staff_may_revoke(tenancy: Tenancy) -> None:
    services.api_key_revoke(api_key=key_of(tenancy.bob.key), actor=tenancy.alice.user)  # owner
    assert resolve_key(tenancy.bob.key) is None
    own = services.api_key_create(user=tenancy.bob.user, project=tenancy.bob.project)
    services.api_key_revoke(api_key=own.api_key, actor=tenancy.bob.user)  # holder
    staff = tenancy.charlie.user
    staff.is_staff = True
    staff.save()
    staff.groups.add(ensure_support_group())
    staff = type(staff).objects.get(pk=staff.pk)  # a fresh object: permissions are cached per instance
    services.api_key_revoke(api_key=key_of(tenancy.alice.key), actor=staff)  # support, in the admin
    assert resolve_key(tenancy.alice.key) is None
    assert Group.objects.filter(name="Support").exists()
