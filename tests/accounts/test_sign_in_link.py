"""The quickstart user gets into the dashboard (issue #40, item 3): ``quickstart`` prints a
one-time sign-in link; on a server on this machine the address counts as verified; the link
names the person on GET and signs in only on the button, once, within the hour, and then asks
for a password."""

from __future__ import annotations

import datetime as dt
import re
from io import StringIO
from typing import Any

import pytest
from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from accounts import services as account_services
from accounts.models import AuditEvent, SignInLink

pytestmark = pytest.mark.django_db


def quickstart(email: str) -> str:
    out = StringIO()
    call_command("quickstart", "--email", email, stdout=out)
    return out.getvalue()


def link_in(text: str) -> str:
    match = re.search(r"Dashboard:  https?://[^/]+(/sign-in/\S+/)   \(one-time, valid 1 hour\)", text)
    assert match is not None, text
    return match.group(1)


def test_quickstart_prints_a_link_that_signs_in_once_and_asks_for_a_password(settings: Any) -> None:
    settings.PUBLIC_URL = "http://127.0.0.1:8000"
    path = link_in(quickstart("dana@example.com"))
    browser = Client()
    shown = browser.get(path)
    assert shown.status_code == 200
    assert "signs you in as <strong>dana@example.com</strong>" in shown.content.decode()
    assert browser.get("/").status_code == 302  # a GET (a link preview) signed nobody in
    signed = browser.post(path)
    assert signed.status_code == 302
    assert signed["Location"] == "/accounts/password/set/"
    assert browser.get("/").status_code == 302
    assert browser.get(browser.get("/")["Location"]).status_code == 200  # the projects page
    again = Client().post(path)
    assert again.status_code == 400
    assert "This sign-in link was already used, has expired or does not exist." in again.content.decode()
    assert set(AuditEvent.objects.filter(action__startswith="user.").values_list("action", flat=True)) == {
        "user.sign_in_link_created",
        "user.signed_in_by_link",
    }


def test_on_a_local_server_the_quickstart_address_is_verified(settings: Any) -> None:
    settings.PUBLIC_URL = "http://localhost:8123"
    quickstart("erin@example.com")
    assert EmailAddress.objects.filter(email="erin@example.com", verified=True, primary=True).exists()


def test_on_a_public_server_the_address_still_needs_its_e_mail(settings: Any) -> None:
    settings.PUBLIC_URL = "https://mmw.example.com"
    link_in(quickstart("fay@example.com"))
    assert not EmailAddress.objects.filter(email="fay@example.com", verified=True).exists()


def test_an_expired_or_made_up_link_is_refused_alike(settings: Any) -> None:
    path = link_in(quickstart("gus@example.com"))
    SignInLink.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    for url in (path, "/sign-in/mmwsl_made-up/"):
        assert Client().get(url).status_code == 400
        assert Client().post(url).status_code == 400


def test_a_person_with_a_second_factor_gets_no_link() -> None:
    user, _ = account_services.user_get_or_create(email="hal@example.com")
    Authenticator.objects.create(user=user, type=Authenticator.Type.TOTP, data={})
    text = quickstart("hal@example.com")
    assert "Dashboard:  none: this person signs in with a second factor" in text
    assert not SignInLink.objects.exists()
