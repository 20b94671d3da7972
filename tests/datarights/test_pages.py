"""The dashboard's Data pages: export for owners and admins (404 for strangers, 403 for members),
account deletion with its typed name and password, cancel, and deleting one's own user."""

from __future__ import annotations

import gzip
import json

import pytest
from django.test import Client

from accounts.keys import resolve_key
from accounts.models import User
from datarights.models import AccountDeletion
from memories import services
from tests.conftest import Tenancy

pytestmark = pytest.mark.django_db


def logged_in(user: User) -> Client:
    user.set_password("correct horse")
    user.save()
    client = Client()
    client.force_login(user)
    return client


def test_export_from_the_dashboard_for_owners_only(tenancy: Tenancy) -> None:
    principal = resolve_key(tenancy.alice.key)
    assert principal is not None
    services.memory_remember(principal=principal, payload={"content": "exported from the dashboard"})
    base = f"/a/{tenancy.alice.account.tenant_id}/data/"
    alice = logged_in(tenancy.alice.user)
    assert "Delete account" in alice.get(base).content.decode()
    answer = alice.get(f"{base}export?project={tenancy.alice.project.pk}")
    assert answer.status_code == 200
    lines = [json.loads(x) for x in gzip.decompress(b"".join(answer)).decode().splitlines()]
    assert any(x.get("content") == "exported from the dashboard" for x in lines)
    assert alice.get(f"{base}export").status_code == 200  # the whole account: an owner

    bob = logged_in(tenancy.bob.user)
    assert "Delete account" not in bob.get(base).content.decode()
    assert bob.get(f"{base}export?project={tenancy.alice.project.pk}").status_code == 403
    charlie = logged_in(tenancy.charlie.user)
    assert charlie.get(base).status_code == 404
    assert charlie.get(f"{base}export").status_code == 404


def test_delete_then_cancel_from_the_dashboard(tenancy: Tenancy) -> None:
    alice = logged_in(tenancy.alice.user)
    base = f"/a/{tenancy.alice.account.tenant_id}/data/"
    alice.post(base, {"confirm": "Alice & Co", "password": "wrong"})
    assert not AccountDeletion.objects.exists()
    assert resolve_key(tenancy.alice.key) is not None
    answer = alice.post(base, {"confirm": "Alice & Co", "password": "correct horse"})
    assert answer.status_code == 302
    assert resolve_key(tenancy.alice.key) is None
    assert alice.get(base).status_code == 404  # hidden
    listing = alice.get("/data/").content.decode()
    assert "Cancel deletion" in listing
    deletion = AccountDeletion.objects.get()
    assert logged_in(tenancy.charlie.user).post(f"/data/deletions/{deletion.pk}/cancel").status_code == 404
    assert AccountDeletion.objects.get().cancelled_at is None  # not Charlie's to cancel
    alice.post(f"/data/deletions/{deletion.pk}/cancel")
    assert resolve_key(tenancy.alice.key) is not None
    assert alice.get(base).status_code == 200


def test_delete_my_user_logs_out_and_closes_my_personal_account(tenancy: Tenancy) -> None:
    charlie = logged_in(tenancy.charlie.user)
    answer = charlie.post("/data/delete-my-user", {"password": "correct horse"})
    assert answer.status_code == 302
    assert resolve_key(tenancy.charlie.key) is None
    assert charlie.get("/data/").status_code == 302  # logged out: to the login page
    assert AccountDeletion.objects.get().account == tenancy.charlie.account


def test_import_from_the_dashboard_queues_a_job_shows_its_progress_and_refuses_members(tenancy: Tenancy) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from datarights.models import ImportJob
    from datarights.restore import jobs
    from memories.models import Memory
    from tests.datarights.test_import_door import file_of, memory

    url = f"/p/{tenancy.alice.project.pk}/import/"
    alice = logged_in(tenancy.alice.user)
    assert "Import" in alice.get(url).content.decode()
    upload = SimpleUploadedFile("export.jsonl.gz", file_of(memory(content="brought in from the dashboard")))
    answer = alice.post(url, {"file": upload})
    assert answer.status_code == 302
    job = ImportJob.objects.get(project=tenancy.alice.project)
    assert job.status == "queued"
    assert job.via == "dashboard"
    page = alice.get(url).content.decode()
    assert 'hx-trigger="every 2s"' in page  # followed while it runs
    assert jobs.import_job_run(str(job.pk)) == "succeeded"
    row = alice.get(f"/p/{tenancy.alice.project.pk}/import/{job.pk}").content.decode()
    assert "succeeded" in row
    assert "created 1 memory, 1 workspace" in row
    assert "every 2s" not in row
    assert Memory.objects.filter(content="brought in from the dashboard").exists()
    bob = logged_in(tenancy.bob.user)
    assert bob.get(url).status_code == 403
    assert bob.get(f"/p/{tenancy.alice.project.pk}/import/{job.pk}").status_code == 403
    charlie = logged_in(tenancy.charlie.user)
    assert charlie.get(url).status_code == 404
