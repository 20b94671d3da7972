"""The Django admin for support staff: the Support group (not superusers), key revocation through
the service, read-only memories whose opening is audited."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from accounts.keys import resolve_key
from accounts.models import ApiKey, AuditEvent, User
from dashboard.principals import principal_for_user
from memories.models import Memory
from memories.services import memory_remember
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for

pytestmark = pytest.mark.django_db


def test_support_staff_find_accounts_by_email_and_tenant_id(staff: User, tenancy: Tenancy) -> None:
    client = client_for(staff)
    url = reverse("admin:accounts_account_changelist")
    assert tenancy.alice.account.tenant_id.encode() in client.get(url, {"q": "bob@example.com"}).content
    assert b"Alice &amp; Co" in client.get(url, {"q": tenancy.alice.account.tenant_id}, follow=True).content


def test_support_staff_revoke_keys_through_the_service(staff: User, tenancy: Tenancy) -> None:
    key = ApiKey.objects.get(user=tenancy.alice.user)
    response = client_for(staff).post(
        reverse("admin:accounts_apikey_changelist"), {"action": "revoke", "_selected_action": [key.pk]}
    )
    assert response.status_code == 302
    assert resolve_key(tenancy.alice.key) is None
    assert AuditEvent.objects.filter(action="api_key.revoked", actor_user=staff).exists()


def test_memories_are_read_only_and_opening_one_is_audited(staff: User, tenancy: Tenancy) -> None:
    principal = principal_for_user(tenancy.alice.user, tenancy.alice.project)
    assert principal is not None
    record_id = memory_remember(principal=principal, payload={"content": "the vault lives in room 4"})["id"]
    Memory.objects.filter(pk=record_id).update(forgotten_at="2030-01-01T00:00:00Z")
    client = client_for(staff)
    listing = client.get(reverse("admin:memories_memory_changelist"))
    assert listing.status_code == 200
    assert str(record_id).encode() in listing.content
    assert b"the vault lives" not in listing.content
    detail = client.get(reverse("admin:memories_memory_change", args=[record_id]))
    assert b"the vault lives in room 4" in detail.content
    assert b'name="_save"' not in detail.content
    assert AuditEvent.objects.filter(
        action="memory.viewed_by_staff", actor_user=staff, target_id=str(record_id)
    ).exists()


def test_staff_without_the_group_see_nothing(tenancy: Tenancy) -> None:
    bare = User.objects.create_user("bare@example.com", "pw", is_staff=True)
    assert client_for(bare).get(reverse("admin:memories_memory_changelist")).status_code == 403


def test_the_admin_index_is_branded_and_names_every_section_once_correctly(tenancy: Tenancy) -> None:
    """B13: "Memorys", "Project accesss", two "Accounts" sections and Django's stock branding."""
    root = User.objects.create_superuser("root@example.com", "pw")
    text = client_for(root).get(reverse("admin:index")).content.decode()
    assert "Memorys" not in text
    assert "accesss" not in text
    assert ">Memories</a>" in text
    assert ">Project access</a>" in text
    captions = re.findall(r'<caption>\s*<a [^>]*class="section"[^>]*>([^<]+)</a>', text)
    assert len(captions) == len(set(captions)), captions
    assert "Django administration" not in text
    assert "MMW support" in text
