"""Issue #42, "Done when", for the support admin: a staff member who reads Russian or French meets
none of the English our catalogue translates on the admin's pages — the index, each MMW model's
list and one record's page, the customer page — and every MMW model and field the admin shows is
named in their language (Django's own admin strings come from Django's catalogues)."""

from __future__ import annotations

import datetime as dt
import html

import pytest
from django.contrib import admin
from django.db.models import Model
from django.test import Client
from django.urls import reverse
from django.utils import timezone, translation

from accounts import refused_calls
from accounts.models import ApiKey, User
from billing import services as billing_services
from dashboard.support import ensure_support_group
from datarights.models import AccountDeletion
from interfaces.admin import FIELD_LABELS
from mmw import catalogues
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.i18n.test_crawl import english_fragments, untranslated, world  # noqa: F401 - world: a fixture
from webhooks.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db
OURS = {"accounts", "billing", "datarights", "memories", "oauth", "orgs", "transcripts", "webhooks"}
# Words the admin shows as stored data, which happen to be English words our catalogue translates
# elsewhere: a record's scope (a label its writer chose), the plans' names (staff edit them here;
# the dashboard shows the seeded ones translated).
STORED = {"shared", "Free", "Pro", "Team"}


def our_models() -> list[type[Model]]:
    return [m for m in admin.site._registry if m._meta.app_label in OURS]


@pytest.fixture
def support(tenancy: Tenancy, world: str) -> User:  # noqa: F811 - the crawl's world, reused
    """A support engineer, and a record of every kind the admin lists: a refused call, a webhook
    with a delivery given up, a pending deletion, a suspended subscription."""
    staff = User.objects.create_user("support@example.com", "pw", is_staff=True)
    staff.groups.add(ensure_support_group())
    ApiKey.objects.filter(user=tenancy.bob.user).update(expires_at=timezone.now() - dt.timedelta(days=1))
    Client().get("/api/v1/workspaces", HTTP_AUTHORIZATION=f"Bearer {tenancy.bob.key}")
    refused_calls.flush()
    hook = WebhookEndpoint.objects.create(
        project=tenancy.alice.project,
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
    now = timezone.now()
    AccountDeletion.objects.create(
        account=tenancy.alice.account, requested_by=tenancy.alice.user, requested_at=now, purge_after=now
    )
    billing_services.subscription_suspend(account=tenancy.alice.account, actor=staff, reason="chargeback")
    return staff


def admin_pages(tenancy: Tenancy, staff: User) -> list[str]:
    """The index, the customer page, and for each MMW model support may view: its app's page, its
    list and its first record's page."""
    urls = [reverse("admin:index"), reverse("admin:accounts_account_customer", args=[tenancy.alice.account.pk])]
    for model in our_models():
        meta = model._meta
        if not staff.has_perm(f"{meta.app_label}.view_{meta.model_name}"):
            continue
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        first = model._default_manager.order_by("pk").first()
        if first is not None:
            urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[first.pk]))
        urls.append(reverse("admin:app_list", args=[meta.app_label]))
    return list(dict.fromkeys(urls))


@pytest.mark.parametrize("language", catalogues.LANGUAGES)
def test_no_admin_page_shows_a_translated_message_in_english(
    tenancy: Tenancy, support: User, language: str, client: Client
) -> None:
    support.language = language
    support.save(update_fields=["language"])
    client = client_for(support)
    fragments = {f: m for f, m in english_fragments(language).items() if f not in STORED}
    urls = admin_pages(tenancy, support)
    changes = [u for u in urls if u.endswith("/change/")]
    assert len(changes) >= 15, changes  # one record's page of (nearly) every model
    english = {}
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        page = response.content.decode()
        assert f'lang="{language}"' in page.split("<head", 1)[0], url
        left = untranslated(page, fragments)
        if left:
            english[url] = left
    assert not english, f"support in {language}: English left on {len(english)} admin page(s): {english}"


@pytest.mark.parametrize("language", catalogues.LANGUAGES)
def test_the_customer_page_speaks_the_staff_members_language(tenancy: Tenancy, support: User, language: str) -> None:
    support.language = language
    support.save(update_fields=["language"])
    page = client_for(support).get(reverse("admin:accounts_account_customer", args=[tenancy.alice.account.pk]))
    text = page.content.decode()
    with translation.override(language):
        for english in ("Plan and subscription", "Pending deletion", "Refused calls, last 30 days", "suspended"):
            assert translation.gettext(english) in text, english
            assert translation.gettext(english) != english
    assert ("Клиент: " if language == "ru" else "Client : ") + html.escape(tenancy.alice.account.name) in text
    assert "API key expired" in text  # what the agent read stays as it read it: English


def test_every_field_the_admin_shows_has_a_translated_name() -> None:
    """A field named by Django's default (its name with spaces) would stay English: each one of
    MMW's models has its name in ``FIELD_LABELS`` (whose strings the catalogue test holds translated)."""
    unnamed = [
        f"{model._meta.label}.{field.name}"
        for model in our_models()
        for field in model._meta.get_fields()
        if getattr(field, "concrete", False)
        and getattr(field, "_verbose_name", None) is None
        and field.name not in FIELD_LABELS
    ]
    assert not unnamed, f"add these to interfaces.admin.FIELD_LABELS: {unnamed}"
    with translation.override("ru"):
        assert str(User._meta.get_field("language").verbose_name) == "язык"
        assert str(ApiKey._meta.get_field("last_used_at").verbose_name) == "последнее использование"
    with translation.override("en"):
        assert str(ApiKey._meta.get_field("last_used_at").verbose_name) == "last used at"  # Django's default


@pytest.mark.parametrize("language", catalogues.LANGUAGES)
def test_the_admins_model_names_are_translated(language: str) -> None:
    english, translated = {}, {}
    with translation.override("en"):
        english = {m: (str(m._meta.verbose_name), str(m._meta.verbose_name_plural)) for m in our_models()}
    with translation.override(language):
        translated = {m: (str(m._meta.verbose_name), str(m._meta.verbose_name_plural)) for m in our_models()}
    same = [m._meta.label for m in english if english[m] == translated[m]]
    # French shares a few words with English (session, invitation): they are translated to themselves.
    assert len(same) <= (2 if language == "fr" else 0), same
