"""Adding a webhook whose URL the outbound guard refuses: malformed host names and URLs, and IPv6
forms of non-public addresses, answer the manager a specific refusal (never a 500), on the
service and on the dashboard's Webhooks tab. No network: every URL here fails before a lookup."""

from __future__ import annotations

import html

import pytest
from django.test import Client

from mmw.errors import InvalidInput
from tests.conftest import Tenancy
from webhooks import services as webhooks
from webhooks.models import WebhookEndpoint

pytestmark = pytest.mark.django_db

NOT_PUBLIC = "a private, loopback or link-local address"
REFUSED = [
    ("https://" + "a" * 64 + ".example.com/x", "a label of the URL's host name is longer than 63 characters"),
    ("https://a..example.com/x", "the URL's host name has an empty label"),
    ("https://[::1/x", "the URL is not well formed"),
    ("https://example.com:0/x", "the URL's port is not a number from 1 to 65535"),
    (
        "https://[64:ff9b::a9fe:a9fe]/",
        f"64:ff9b::a9fe:a9fe resolves to 64:ff9b::a9fe:a9fe, which stands for 169.254.169.254, {NOT_PUBLIC}",
    ),
    (
        "https://[2002:a9fe:a9fe::1]/",
        f"2002:a9fe:a9fe::1 resolves to 2002:a9fe:a9fe::1, which stands for 169.254.169.254, {NOT_PUBLIC}",
    ),
    ("https://[::127.0.0.1]/", f"::127.0.0.1 resolves to ::127.0.0.1, which stands for 127.0.0.1, {NOT_PUBLIC}"),
    ("https://[fec0::1]/", f"fec0::1 resolves to fec0::1, {NOT_PUBLIC}"),
]


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_a_refused_webhook_url_is_an_invalid_input_saying_why(tenancy: Tenancy, url: str, reason: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        webhooks.endpoint_create(
            project=tenancy.alice.project,
            actor=tenancy.alice.user,
            url=url,
            events=["memory.created"],
            include_content=False,
        )
    assert refused.value.message == f"webhook URL refused: {reason}"
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.parametrize(("url", "reason"), REFUSED[:3])
def test_the_webhooks_tab_shows_why_a_url_is_refused(tenancy: Tenancy, url: str, reason: str) -> None:
    alice = Client()
    alice.force_login(tenancy.alice.user)
    page = f"/p/{tenancy.alice.project.pk}/webhooks/"
    answer = alice.post(page, {"action": "create", "url": url, "events": ["memory.created"]}, follow=True)
    assert answer.status_code == 200
    assert html.escape(f"webhook URL refused: {reason}") in answer.content.decode()
    assert not WebhookEndpoint.objects.exists()
