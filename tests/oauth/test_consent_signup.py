"""Consent with sign-up on the way (issue #18: "a consent page (logged in; sign-up possible on the
way)"): a person without an account follows the client's authorization link, signs up from the
login page, confirms the e-mail, and lands on the same consent page, for the same request."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core import mail
from django.test import Client as Browser
from django.urls import reverse

from accounts.models import Project, User
from accounts.services import personal_account, user_get_or_create
from oauth.models import Grant
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.oauth import grants

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-pass-phrase-9"


def test_a_new_person_signs_up_on_the_way_and_comes_back_to_the_same_consent(db: None) -> None:
    parked = grants.pending(grants.client(name="Hosted Assistant"), ["memory:read", "memory:write"])
    consent_path = reverse("dashboard:oauth-consent", args=[parked.public_id])
    browser = Browser()

    sent_to_login = browser.get(consent_path)
    assert sent_to_login.status_code == 302
    login = urlsplit(sent_to_login["Location"])
    assert (login.path, parse_qs(login.query)) == (reverse("account_login"), {"next": [consent_path]})
    login_page = unescape(browser.get(sent_to_login["Location"]).content.decode())
    links = [urlsplit(href) for href in re.findall(r'href="([^"]+)"', login_page)]
    signup = [link for link in links if link.path == reverse("account_signup")]
    assert signup, "the login page offers sign-up"
    assert all(parse_qs(link.query) == {"next": [consent_path]} for link in signup)  # keeping `next`
    signup_url = f"{reverse('account_signup')}?{signup[0].query}"

    signed_up = browser.post(
        signup_url,
        {"email": "newcomer@example.com", "password1": PASSWORD, "password2": PASSWORD, "next": consent_path},
    )
    assert signed_up.status_code == 302
    assert signed_up["Location"] == reverse("account_email_verification_sent")
    link = re.search(r"https?://\S+/accounts/confirm-email/(\S+?)/", str(mail.outbox[-1].body))
    assert link is not None
    confirmed = browser.post(reverse("account_confirm_email", args=[link.group(1)]))
    assert confirmed.status_code == 302
    assert confirmed["Location"] == consent_path  # back where the client sent the person

    page = browser.get(consent_path)
    assert page.status_code == 200
    text = page.content.decode()
    assert "Hosted Assistant" in text
    assert "127.0.0.1:9" in text  # the redirect host of the same request
    assert 'value="memory:read"' in text
    assert 'value="memory:write"' in text
    newcomer = User.objects.get(email="newcomer@example.com")
    # A newcomer has no project yet: the consent page names one to create instead of a dead end.
    assert 'name="new_project"' in text
    answer = browser.post(
        consent_path, {"decision": "approve", "new_project": "assistant", "scopes": ["memory:read", "memory:write"]}
    )
    assert answer.status_code == 302
    assert answer["Location"].startswith(grants.REDIRECT + "?")
    query = parse_qs(urlsplit(answer["Location"]).query)
    assert query["state"] == ["st-1"]
    assert "code" in query
    grant = Grant.objects.get()
    assert (grant.user, grant.project.name, grant.scopes) == (newcomer, "assistant", ["memory:read", "memory:write"])
    assert grant.project.account == personal_account(user=newcomer)


def test_a_person_with_projects_picks_one_and_no_project_is_created(tenancy: Tenancy) -> None:
    parked = grants.pending(grants.client())
    browser = client_for(tenancy.alice.user)
    path = reverse("dashboard:oauth-consent", args=[parked.public_id])
    assert 'name="new_project"' not in browser.get(path).content.decode()
    answer = browser.post(path, {"decision": "approve", "new_project": "sneaky", "scopes": ["memory:read"]})
    assert answer.status_code == 200  # no project chosen: the page asks again
    assert b"choose a project" in answer.content
    assert not Project.objects.filter(name="sneaky").exists()
    assert not Grant.objects.exists()


def test_a_bad_new_project_name_keeps_the_person_on_the_consent_page(db: None) -> None:
    newcomer, _ = user_get_or_create(email="newcomer@example.com")
    parked = grants.pending(grants.client())
    browser = client_for(newcomer)
    path = reverse("dashboard:oauth-consent", args=[parked.public_id])
    answer = browser.post(path, {"decision": "approve", "new_project": "   ", "scopes": ["memory:read"]})
    assert answer.status_code == 200
    assert b"project name must not be empty" in answer.content
    assert not Project.objects.filter(account=personal_account(user=newcomer)).exists()
    assert not Grant.objects.exists()
