"""The curl snippet shown with a new key works as pasted (#20 gap 4), against a live server."""

from __future__ import annotations

import re
import subprocess
from typing import Any

import pytest
from django.urls import reverse

from memories.models import Memory
from tests import live
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for

live_server = live.live_server
pytestmark = pytest.mark.slow


def snippet_of(page: str) -> str:
    match = re.search(r"<pre>(curl -sS.*?)</pre>", page, re.DOTALL)
    assert match is not None, "no curl snippet on the key page"
    return match.group(1).replace("&#x27;", "'").replace("&quot;", '"')


def test_the_curl_snippet_remembers_a_first_record_as_pasted(
    live_server: live.LiveServer, tenancy: Tenancy, settings: Any, dana: Any
) -> None:
    settings.PUBLIC_URL = live_server.url
    url = reverse("dashboard:keys", args=[tenancy.alice.project.pk])
    page = client_for(tenancy.alice.user).post(url, {"name": "laptop", "scopes": ["memory:read", "memory:write"]})
    command = snippet_of(page.content.decode())
    ran = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=30, check=False)
    assert '"id"' in ran.stdout, ran.stdout + ran.stderr
    assert Memory.objects.filter(project=tenancy.alice.project, content__startswith="MMW is connected").exists()
    read_only = client_for(dana).post(url, {"name": "audit", "scopes": ["memory:read"]})
    searched = subprocess.run(
        ["bash", "-c", snippet_of(read_only.content.decode())], capture_output=True, text=True, timeout=30, check=False
    )
    assert '"results"' in searched.stdout, searched.stdout + searched.stderr
