"""Issue #42: the language a page speaks — the person's saved choice, else Accept-Language, else
English — and the header's switch that saves it."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from accounts.models import User
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for

pytestmark = pytest.mark.django_db


def lang_of(html: str) -> str:
    start = html.index('<html lang="') + len('<html lang="')
    return html[start : html.index('"', start)]


def test_pages_are_english_without_accept_language(tenancy: Tenancy) -> None:
    response = client_for(tenancy.alice.user).get(f"/a/{tenancy.alice.account.tenant_id}/", follow=True)
    assert response.status_code == 200
    assert lang_of(response.content.decode()) == "en"


@pytest.mark.parametrize(
    ("header", "expected"), [("ru", "ru"), ("fr-FR,fr;q=0.9", "fr"), ("de", "en"), ("en-US", "en")]
)
def test_accept_language_picks_the_page_language(tenancy: Tenancy, header: str, expected: str) -> None:
    response = Client().get("/accounts/login/", HTTP_ACCEPT_LANGUAGE=header)
    assert response.status_code == 200
    assert lang_of(response.content.decode()) == expected
    assert response["Content-Language"] == expected


def test_the_saved_choice_wins_over_accept_language(tenancy: Tenancy) -> None:
    alice = tenancy.alice.user
    alice.language = "fr"
    alice.save(update_fields=["language"])
    response = client_for(alice).get(f"/a/{tenancy.alice.account.tenant_id}/", HTTP_ACCEPT_LANGUAGE="ru")
    assert lang_of(response.content.decode()) == "fr"


def test_the_switch_saves_the_choice_and_returns_to_the_page(tenancy: Tenancy) -> None:
    client = client_for(tenancy.alice.user)
    back = f"/a/{tenancy.alice.account.tenant_id}/usage/"
    response = client.post("/language", {"language": "ru", "next": back})
    assert response.status_code == 302
    assert response["Location"] == back
    assert User.objects.get(pk=tenancy.alice.user.pk).language == "ru"
    assert response.cookies[settings.LANGUAGE_COOKIE_NAME].value == "ru"
    assert lang_of(client.get(back, HTTP_ACCEPT_LANGUAGE="en").content.decode()) == "ru"
    # "" goes back to the browser's language; an unknown code is taken as "".
    client.post("/language", {"language": "xx", "next": back})
    assert User.objects.get(pk=tenancy.alice.user.pk).language == ""


def test_the_switch_never_redirects_off_site(tenancy: Tenancy) -> None:
    response = client_for(tenancy.alice.user).post("/language", {"language": "fr", "next": "https://evil.example/"})
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_the_switch_works_before_sign_in() -> None:
    client = Client()
    response = client.post("/language", {"language": "fr", "next": "/accounts/login/"})
    assert response["Location"] == "/accounts/login/"
    assert lang_of(client.get("/accounts/login/").content.decode()) == "fr"


def test_the_header_offers_the_three_languages(tenancy: Tenancy) -> None:
    html = Client().get("/accounts/login/").content.decode()
    switch = html[html.index('data-testid="language-switch"') :]
    for code, name in (("en", "English"), ("ru", "Русский"), ("fr", "Français")):
        assert f'<option value="{code}" lang="{code}"' in switch
        assert name in switch
