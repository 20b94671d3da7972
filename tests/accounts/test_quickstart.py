from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from accounts import keys
from accounts.models import Account, ApiKey, Project


def run_quickstart(*args: str) -> str:
    out = StringIO()
    call_command("quickstart", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_quickstart_json_prints_exactly_the_five_fields_and_a_working_key() -> None:
    payload = json.loads(run_quickstart("--email", "Dana@Example.com", "--project", "web", "--json"))
    assert set(payload) == {"api_key", "mcp_url", "api_url", "tenant_id", "project_id"}
    assert payload["mcp_url"] == "http://127.0.0.1:8000/mcp"
    assert payload["api_url"] == "http://127.0.0.1:8000/api/v1"
    assert payload["tenant_id"].startswith("t-")
    principal = keys.resolve_key(payload["api_key"])
    assert principal is not None
    assert principal.user.email == "dana@example.com"
    assert str(principal.project.id) == payload["project_id"]
    assert principal.account.tenant_id == payload["tenant_id"]
    assert principal.account.kind == Account.Kind.PERSONAL


@pytest.mark.django_db
def test_quickstart_reuses_user_and_project_but_issues_a_new_key() -> None:
    first = json.loads(run_quickstart("--email", "erin@example.com", "--project", "web", "--json"))
    second = json.loads(run_quickstart("--email", "erin@example.com", "--project", "web", "--json"))
    assert first["tenant_id"] == second["tenant_id"]
    assert first["project_id"] == second["project_id"]
    assert first["api_key"] != second["api_key"]
    assert Project.objects.filter(name="web").count() == 1
    assert ApiKey.objects.filter(project_id=first["project_id"]).count() == 2


@pytest.mark.django_db
def test_quickstart_human_output_shows_a_client_configuration() -> None:
    text = run_quickstart("--email", "fay@example.com")
    assert "mmw_" in text
    assert "/mcp" in text
    assert "Authorization" in text
