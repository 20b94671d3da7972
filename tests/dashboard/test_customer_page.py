"""The admin's customer page (issue #40, item 4): support answers "my key stopped working and
search returns nothing" from one page — plan and state, members, keys with state, last use and
calls, the refused calls by key with the reason, a pending deletion, webhooks and their failures,
usage — found by e-mail, tenant id, project id or any form of a key."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts import refused_calls, services
from accounts.models import ApiKey, User
from billing import services as billing_services
from dashboard.principals import principal_for_user
from datarights.models import AccountDeletion
from memories.services import memory_remember
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db


def customer_url(tenancy: Tenancy) -> str:
    return reverse("admin:accounts_account_customer", args=[tenancy.alice.account.pk])


def prefix(raw: str) -> str:
    return raw[4:12]


@pytest.mark.parametrize(
    "form",
    ["mmw_{p}…", "mmw_{p}...", "mmw_{p}", "{p}", "Bearer {key}", "{key}", "{project}", "{tenant}", "alice@example.com"],
)
def test_any_form_of_a_key_an_e_mail_a_tenant_or_project_id_opens_the_customer_page(
    staff: User, tenancy: Tenancy, form: str
) -> None:
    term = form.format(
        p=prefix(tenancy.alice.key),
        key=tenancy.alice.key,
        project=tenancy.alice.project.pk,
        tenant=tenancy.alice.account.tenant_id,
    )
    if term == "alice@example.com":  # Alice is in two accounts (her own, and Alice & Co): a list
        page = client_for(staff).get(reverse("admin:accounts_account_changelist"), {"q": term})
        assert page.status_code == 200
        assert tenancy.alice.account.tenant_id in page.content.decode()
        return
    answer = client_for(staff).get(reverse("admin:accounts_account_changelist"), {"q": term})
    assert answer.status_code == 302
    assert answer["Location"].startswith(customer_url(tenancy))


def test_the_key_list_finds_a_key_written_as_the_list_shows_it(staff: User, tenancy: Tenancy) -> None:
    shown = f"mmw_{prefix(tenancy.bob.key)}…"
    page = client_for(staff).get(reverse("admin:accounts_apikey_changelist"), {"q": shown}).content.decode()
    assert shown in page
    assert f"mmw_{prefix(tenancy.alice.key)}…" not in page
    assert "1 result" in page


def test_the_customer_page_answers_the_ticket(staff: User, tenancy: Tenancy, settings: object) -> None:
    alice, org = tenancy.alice, tenancy.alice.account
    principal = principal_for_user(alice.user, alice.project)
    assert principal is not None
    memory_remember(principal=principal, payload={"content": "prod deploys from the main branch"})
    services.api_key_revoke(api_key=ApiKey.objects.get(prefix=prefix(alice.key)), actor=alice.user)
    ApiKey.objects.filter(prefix=prefix(tenancy.bob.key)).update(expires_at=timezone.now() - dt.timedelta(days=1))
    for raw in (alice.key, alice.key, tenancy.bob.key):
        Client().get("/api/v1/workspaces", HTTP_AUTHORIZATION=f"Bearer {raw}")
    refused_calls.flush()
    hook = WebhookEndpoint.objects.create(
        project=alice.project,
        url="https://hooks.example.com/mmw",
        secret="s",
        events=["memory.created"],
        cursor=timezone.now(),
    )
    WebhookDelivery.objects.create(
        endpoint=hook,
        event_key="memory.created:1",
        event_type="memory.created",
        payload={},
        status=WebhookDelivery.Status.GAVE_UP,
        attempts=8,
        next_attempt_at=timezone.now(),
        last_status_code=500,
        last_error="server error",
    )
    billing_services.subscription_suspend(account=org, actor=staff, reason="chargeback")

    page = client_for(staff).get(customer_url(tenancy), {"key": f"mmw_{prefix(alice.key)}…"}).content.decode()

    assert "Free (without organisation features)" in page
    assert "<strong>suspended</strong> (by support)" in page
    assert "alice@example.com</td><td>Owner" in page
    assert "bob@example.com</td><td>Member" in page
    searched = page.split('data-testid="searched-key"', 1)[1].split("</tr>", 1)[0]
    assert f"mmw_{prefix(alice.key)}…" in searched
    assert "<strong>revoked</strong>" in searched
    assert f"mmw_{prefix(tenancy.bob.key)}…</code></td><td><strong>expired</strong>" in page
    refused = page.split('data-testid="refused"', 1)[1].split("</table>", 1)[0]
    assert "API key revoked</td><td>2</td>" in refused
    assert "API key expired</td><td>1</td>" in refused
    assert "alpha</td>" in page.split('data-testid="usage"', 1)[1]
    assert "https://hooks.example.com/mmw" in page
    assert "server error" in page
    assert 'data-testid="deletion"><h2>Pending deletion</h2>\n<p>None.</p>' in page


def test_a_pending_deletion_is_on_the_page(staff: User, tenancy: Tenancy) -> None:
    now = timezone.now()
    AccountDeletion.objects.create(
        account=tenancy.alice.account,
        requested_by=tenancy.alice.user,
        requested_at=now,
        purge_after=now + dt.timedelta(days=30),
    )
    page = client_for(staff).get(customer_url(tenancy)).content.decode()
    assert "Deletion requested" in page
    assert "by alice@example.com" in page


def test_people_outside_support_cannot_open_it(tenancy: Tenancy) -> None:
    assert Client().get(customer_url(tenancy)).status_code == 302  # to the admin's login
    bare = User.objects.create_user("bare@example.com", "pw", is_staff=True)
    assert client_for(bare).get(customer_url(tenancy)).status_code == 403


def test_support_reads_deletions_webhooks_and_refused_calls_in_the_admin(staff: User, tenancy: Tenancy) -> None:
    client = client_for(staff)
    for name in (
        "admin:datarights_accountdeletion_changelist",
        "admin:webhooks_webhookendpoint_changelist",
        "admin:webhooks_webhookdelivery_changelist",
        "admin:accounts_refusedcall_changelist",
    ):
        assert client.get(reverse(name)).status_code == 200, name
