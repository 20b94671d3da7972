"""Error pages (#20 gap 7): people get a branded page with the site's navigation; /api/ stays JSON."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory
from django.urls import reverse

from mmw import api_errors
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for

pytestmark = pytest.mark.django_db


def test_a_missing_page_is_branded_with_links_home(tenancy: Tenancy) -> None:
    answer = client_for(tenancy.alice.user).get("/p/00000000-0000-0000-0000-000000000000/")
    assert answer.status_code == 404
    text = answer.content.decode()
    assert 'data-testid="error-page"' in text
    assert "This page does not exist" in text
    assert f'href="{reverse("dashboard:home")}"' in text
    assert 'rel="icon"' in text
    assert "Log out" in text  # the signed-in header


def test_a_stranger_gets_the_404_page_with_a_login_link(db: None) -> None:
    text = Client().get("/no-such-page/").content.decode()
    assert "This page does not exist" in text
    assert reverse("account_login") in text


def test_api_paths_stay_json(tenancy: Tenancy) -> None:
    answer = client_for(tenancy.alice.user).get("/api/v1/no-such-route")
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "not_found"


def test_a_refusal_names_its_reason_on_a_branded_page(tenancy: Tenancy) -> None:
    """Bob (a member) may not manage project settings: a 403 page, not Django's bare one."""
    answer = client_for(tenancy.bob.user).post(
        reverse("dashboard:settings", args=[tenancy.alice.project.pk]), {"action": "rename", "name": "x"}
    )
    assert answer.status_code == 403
    text = answer.content.decode()
    assert "You may not open this page" in text
    assert 'data-testid="error-page"' in text


def test_the_500_page_is_branded_and_needs_no_request_context() -> None:
    request = RequestFactory().get("/a/t-1/")
    text = api_errors.server_error(request).content.decode()
    assert "Something went wrong on our side" in text
    assert 'rel="icon"' in text


def test_the_favicon_is_served(db: None) -> None:
    answer = Client().get("/favicon.ico")
    assert answer.status_code == 301
    assert answer["Location"].endswith("dashboard/favicon.svg")
