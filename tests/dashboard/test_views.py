"""Every dashboard view through the Django test client: roles, other tenants (404), CSRF, forms."""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Sequence
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from accounts.keys import resolve_key
from accounts.models import Account, ApiKey, AuditEvent, Project, Workspace
from dashboard.principals import principal_for_user
from memories import rerank
from memories.models import Memory
from memories.services import memory_remember
from orgs.models import Invitation, Membership
from tests.conftest import Tenancy
from tests.dashboard.conftest import client_for
from tests.factories import on_plan

pytestmark = pytest.mark.django_db


def remember(t: Any, content: str, **extra: Any) -> str:
    principal = principal_for_user(t.user, t.project)
    assert principal is not None
    return str(memory_remember(principal=principal, payload={"content": content, **extra})["id"])


# --- accounts ------------------------------------------------------------------------------


def test_signup_sends_verification_and_creates_the_personal_account(client: Client) -> None:
    response = client.post(
        reverse("account_signup"),
        {"email": "new@example.com", "password1": "a-long-pass-phrase-9", "password2": "a-long-pass-phrase-9"},
    )
    assert response.status_code == 302
    account = Account.objects.get(memberships__user__email="new@example.com")
    assert account.kind == Account.Kind.PERSONAL
    link = re.search(r"https?://\S+/accounts/confirm-email/\S+/", str(mail.outbox[-1].body))
    assert link is not None
    path = link.group(0).split("://", 1)[1].split("/", 1)[1]
    assert client.post("/" + path).status_code == 302
    assert client.get(reverse("dashboard:home")).status_code == 302  # logged in → their projects


def test_anonymous_is_sent_to_log_in(client: Client, tenancy: Tenancy) -> None:
    response = client.get(reverse("dashboard:projects", args=[tenancy.alice.account.tenant_id]))
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_failed_logins_are_throttled(client: Client, tenancy: Tenancy) -> None:
    tenancy.alice.user.set_password("right-password-1")
    tenancy.alice.user.save()
    for _ in range(6):
        client.post(reverse("account_login"), {"login": "alice@example.com", "password": "wrong"})
    right = client.post(reverse("account_login"), {"login": "alice@example.com", "password": "right-password-1"})
    assert b"Too many failed login attempts" in right.content
    assert "_auth_user_id" not in client.session


# --- projects ------------------------------------------------------------------------------


def test_projects_list_shows_record_counts_and_other_accounts_are_404(tenancy: Tenancy) -> None:
    remember(tenancy.alice, "the build uses make")
    alice = client_for(tenancy.alice.user)
    page = alice.get(reverse("dashboard:projects", args=[tenancy.alice.account.tenant_id]))
    assert page.status_code == 200
    assert b"alpha" in page.content
    assert alice.get(reverse("dashboard:projects", args=[tenancy.charlie.account.tenant_id])).status_code == 404
    assert alice.get(reverse("dashboard:memories", args=[tenancy.charlie.project.pk])).status_code == 404


def test_create_project_keeps_input_on_error_and_members_may_not_create(tenancy: Tenancy) -> None:
    url = reverse("dashboard:projects", args=[tenancy.alice.account.tenant_id])
    alice = client_for(tenancy.alice.user)
    clash = alice.post(url, {"name": "ALPHA"})
    assert clash.status_code == 400
    assert b"already exists" in clash.content
    assert b'value="ALPHA"' in clash.content
    made = alice.post(url, {"name": "beta"})
    assert made.status_code == 302
    assert Project.objects.filter(account=tenancy.alice.account, name="beta").exists()
    bob = client_for(tenancy.bob.user)
    bob.post(url, {"name": "gamma"})
    assert not Project.objects.filter(name="gamma").exists()


def test_rename_and_delete_project_are_for_managers(tenancy: Tenancy) -> None:
    url = reverse("dashboard:settings", args=[tenancy.alice.project.pk])
    assert client_for(tenancy.bob.user).get(url).status_code == 403
    alice = client_for(tenancy.alice.user)
    assert alice.post(url, {"action": "rename", "name": "alpha2"}).status_code == 302
    assert alice.post(url, {"action": "delete", "confirm": "wrong"}).status_code == 302
    assert Project.objects.get(pk=tenancy.alice.project.pk).deleted_at is None
    assert alice.post(url, {"action": "delete", "confirm": "alpha2"}).status_code == 302
    assert Project.objects.get(pk=tenancy.alice.project.pk).deleted_at is not None
    assert resolve_key(tenancy.alice.key) is None
    assert AuditEvent.objects.filter(action="project.deleted").exists()


def test_csrf_is_enforced_on_every_form(tenancy: Tenancy) -> None:
    alice = client_for(tenancy.alice.user, csrf=True)
    url = reverse("dashboard:projects", args=[tenancy.alice.account.tenant_id])
    assert alice.post(url, {"name": "csrf-less"}).status_code == 403
    key = ApiKey.objects.get(user=tenancy.alice.user)
    assert alice.post(reverse("dashboard:key-revoke", args=[tenancy.alice.project.pk, key.pk])).status_code == 403
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None


# --- keys ----------------------------------------------------------------------------------


def test_key_is_shown_once_with_mcp_configs_and_works(tenancy: Tenancy) -> None:
    alice = client_for(tenancy.alice.user)
    url = reverse("dashboard:keys", args=[tenancy.alice.project.pk])
    response = alice.post(url, {"name": "ci", "device_label": "build box", "scopes": ["memory:read"]})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    raw = re.search(rb"mmw_[A-Za-z0-9]{20,}", response.content)
    assert raw is not None
    text = response.content.decode()
    for client in ("Claude Code", "Cursor", "Codex", "mcpServers", "claude mcp add --transport http"):
        assert client in text
    principal = resolve_key(raw.group(0).decode())
    assert principal is not None
    assert principal.scopes == frozenset({"memory:read"})
    listing = alice.get(url).content.decode()
    assert raw.group(0).decode() not in listing
    assert "build box" in listing


def ticked_scopes(page: str) -> dict[str, bool]:
    """Each scope checkbox of a key form: its value → whether it is ticked."""
    boxes = re.findall(r'<input type="checkbox" name="scopes"[^>]*>', page)
    return {re.search(r'value="([^"]+)"', box).group(1): " checked" in box for box in boxes}  # type: ignore[union-attr]


def test_the_new_key_form_never_pre_ticks_the_ledger_scopes(tenancy: Tenancy, dana: Any) -> None:
    """docs/ledger.md: financial records are opt-in, so a key gets the memory scopes unless asked."""
    url = reverse("dashboard:keys", args=[tenancy.alice.project.pk])
    page = client_for(tenancy.alice.user).get(url).content.decode()
    owner = ticked_scopes(page)
    assert owner == {"memory:read": True, "memory:write": True, "ledger:read": False, "ledger:write": False}
    assert "shown only the tools these allow" in page
    auditor = ticked_scopes(client_for(dana).get(url).content.decode())
    assert auditor == {"memory:read": True, "ledger:read": False}
    # A refused post shows what was posted, ticked or not.
    posted = client_for(tenancy.alice.user).post(url, {"name": "x" * 201, "scopes": ["ledger:read"]})
    assert posted.status_code == 400
    assert ticked_scopes(posted.content.decode())["ledger:read"] is True


def test_key_form_errors_keep_input(tenancy: Tenancy) -> None:
    response = client_for(tenancy.alice.user).post(
        reverse("dashboard:keys", args=[tenancy.alice.project.pk]), {"name": "no-scopes", "device_label": "laptop"}
    )
    assert response.status_code == 400
    assert b'value="laptop"' in response.content


def test_members_see_and_revoke_only_their_own_keys(tenancy: Tenancy) -> None:
    alice_key = ApiKey.objects.get(user=tenancy.alice.user)
    bob = client_for(tenancy.bob.user)
    page = bob.get(reverse("dashboard:keys", args=[tenancy.bob.project.pk])).content.decode()
    assert f"mmw_{alice_key.prefix}" not in page
    assert bob.post(reverse("dashboard:key-revoke", args=[tenancy.alice.project.pk, alice_key.pk])).status_code == 404
    bob_key = ApiKey.objects.get(user=tenancy.bob.user)
    assert bob.post(reverse("dashboard:key-revoke", args=[tenancy.bob.project.pk, bob_key.pk])).status_code == 302
    assert resolve_key(tenancy.bob.key) is None
    charlie = client_for(tenancy.charlie.user)
    assert (
        charlie.post(reverse("dashboard:key-revoke", args=[tenancy.alice.project.pk, alice_key.pk])).status_code == 404
    )


def test_key_revoke_with_htmx_returns_the_row(tenancy: Tenancy) -> None:
    key = ApiKey.objects.get(user=tenancy.alice.user)
    response = client_for(tenancy.alice.user).post(
        reverse("dashboard:key-revoke", args=[tenancy.alice.project.pk, key.pk]), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert b"revoked" in response.content
    assert b"<tr" in response.content


def test_a_key_revoked_with_htmx_leaves_no_flash_for_the_next_page(tenancy: Tenancy) -> None:
    """B3: the htmx revoke answered the row and also queued "Key mmw_… revoked", which then
    appeared on whatever page the person opened next."""
    key = ApiKey.objects.get(user=tenancy.alice.user)
    alice = client_for(tenancy.alice.user)
    alice.post(reverse("dashboard:key-revoke", args=[tenancy.alice.project.pk, key.pk]), HTTP_HX_REQUEST="true")
    later = alice.get(reverse("dashboard:memories", args=[tenancy.alice.project.pk]))
    assert b"revoked: it stopped working now" not in later.content
    other = ApiKey.objects.create(
        account=tenancy.alice.account,
        project=tenancy.alice.project,
        user=tenancy.alice.user,
        prefix="zzzzzzzz",
        digest="0" * 64,
    )
    alice.post(reverse("dashboard:key-revoke", args=[tenancy.alice.project.pk, other.pk]))  # without htmx
    keys_page = alice.get(reverse("dashboard:keys", args=[tenancy.alice.project.pk]))
    assert "Key mmw_zzzzzzzz… revoked" in keys_page.content.decode()


# --- memory browser ------------------------------------------------------------------------


def test_browser_lists_searches_and_filters(tenancy: Tenancy) -> None:
    remember(tenancy.alice, "staging deploys via the app-staging systemd unit", source_id="docs/deploy.md")
    remember(tenancy.alice, "tabs are four spaces wide", scope="style")
    alice = client_for(tenancy.alice.user)
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    listing = alice.get(url).content.decode()
    assert "staging deploys" in listing
    assert "four spaces" in listing
    assert "unverified" in listing
    found = alice.get(url, {"q": "staging systemd", "workspace": "*"}).content.decode()
    assert "staging deploys" in found
    scoped = alice.get(url, {"scope": "style", "workspace": "*"}).content.decode()
    assert "four spaces" in scoped
    assert "staging deploys" not in scoped
    bad = alice.get(url, {"min_confidence": "7"})
    assert bad.status_code == 400


def test_browser_filters_pass_the_same_input_table_as_the_api(tenancy: Tenancy) -> None:
    """The browser's listing parses its filters with ``inputs.LIST`` (search's bounds): 65 short
    tags fit the form's length but not the 64-tag bound, and are refused with the API's text."""
    alice = client_for(tenancy.alice.user)
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    page = alice.get(url, {"tags": ",".join(f"t{i}" for i in range(65)), "workspace": "*"})
    assert page.status_code == 400
    assert b"tags accepts at most 64 items" in page.content
    searched = alice.get(url, {"q": "x", "tags": ",".join(f"t{i}" for i in range(65)), "workspace": "*"})
    assert b"tags accepts at most 64 items" in searched.content


def test_empty_browser_says_what_to_do_next(tenancy: Tenancy) -> None:
    page = client_for(tenancy.alice.user).get(reverse("dashboard:memories", args=[tenancy.alice.project.pk]))
    assert b"No memories in this project yet" in page.content
    assert b"API key" in page.content


def test_conflict_is_shown_side_by_side_and_one_click_forgets(tenancy: Tenancy) -> None:
    first = remember(tenancy.alice, "deploys go out on Tuesdays", fact_key="deploy-day")
    second = remember(tenancy.alice, "deploys go out on Thursdays", fact_key="deploy-day", reason="moved")
    alice = client_for(tenancy.alice.user)
    page = alice.get(reverse("dashboard:memory", args=[tenancy.alice.project.pk, second])).content.decode()
    assert "Conflict" in page
    assert "Tuesdays" in page
    assert "Thursdays" in page
    assert "moved" in page
    forget = alice.post(reverse("dashboard:memory-forget", args=[tenancy.alice.project.pk, first]))
    assert forget.status_code == 302
    assert Memory.objects.get(pk=first).forgotten_at is not None
    page = alice.get(reverse("dashboard:memory", args=[tenancy.alice.project.pk, second])).content.decode()
    assert "Conflict" not in page
    assert "forgotten" in page


def test_keep_this_version_resolves_a_conflict_with_an_audited_deliberate_version(tenancy: Tenancy) -> None:
    first = remember(tenancy.alice, "deploys go out on Tuesdays", fact_key="deploy-day")
    second = remember(tenancy.bob, "deploys go out on Fridays", fact_key="deploy-day")
    alice = client_for(tenancy.alice.user)
    page = alice.get(reverse("dashboard:memory", args=[tenancy.alice.project.pk, first])).content.decode()
    assert "Keep this version" in page
    assert "another current version of deploy-day says something else" in page
    kept = alice.post(reverse("dashboard:memory-keep", args=[tenancy.alice.project.pk, first]))
    assert kept.status_code == 302
    newest = Memory.objects.get(fact_key="deploy-day", version=3)
    assert kept["Location"].endswith(f"/memories/{newest.pk}/")
    assert (newest.content, newest.expected_version) == ("deploys go out on Tuesdays", 2)
    assert AuditEvent.objects.filter(action="memory.version_kept", target_id=str(newest.pk)).exists()
    for shown in (first, second, str(newest.pk)):
        page = alice.get(reverse("dashboard:memory", args=[tenancy.alice.project.pk, shown])).content.decode()
        assert "Conflict" not in page


def test_a_stale_record_shows_why(tenancy: Tenancy) -> None:
    old = remember(tenancy.alice, "deploys need two approvals", source_id="docs/deploy.md", source_hash="h1")
    remember(tenancy.alice, "deploys need one approval", source_id="docs/deploy.md", source_hash="h2")
    page = client_for(tenancy.alice.user).get(reverse("dashboard:memory", args=[tenancy.alice.project.pk, old]))
    text = page.content.decode()
    assert 'data-testid="status-reason"' in text
    assert "stale: a newer record of this source" in text
    assert "re-read the source" in text


def test_other_tenants_memory_is_404(tenancy: Tenancy) -> None:
    theirs = remember(tenancy.charlie, "charlie's secret plan")
    alice = client_for(tenancy.alice.user)
    assert alice.get(reverse("dashboard:memory", args=[tenancy.alice.project.pk, theirs])).status_code == 404
    assert alice.get(reverse("dashboard:memory", args=[tenancy.charlie.project.pk, theirs])).status_code == 404
    alice.post(reverse("dashboard:memory-forget", args=[tenancy.alice.project.pk, theirs]))
    assert Memory.objects.get(pk=theirs).forgotten_at is None


def test_auditor_sees_but_cannot_forget(tenancy: Tenancy, dana: Any) -> None:
    record = remember(tenancy.alice, "the on-call rota lives in PagerDuty")
    dana_client = client_for(dana)
    page = dana_client.get(reverse("dashboard:memories", args=[tenancy.alice.project.pk])).content.decode()
    assert "on-call rota" in page
    assert "Forget</button>" not in page
    refused = dana_client.post(reverse("dashboard:memory-forget", args=[tenancy.alice.project.pk, record]), follow=True)
    assert b"membership may not write in this organization" in refused.content
    assert Memory.objects.get(pk=record).forgotten_at is None


def test_an_auditor_is_offered_only_a_read_key(tenancy: Tenancy, dana: Any) -> None:
    """B7: an auditor could create a key with memory:write that every write then refused."""
    url = reverse("dashboard:keys", args=[tenancy.alice.project.pk])
    dana_client = client_for(dana)
    form = dana_client.get(url).content.decode()
    assert 'value="memory:read"' in form
    assert 'value="memory:write"' not in form
    assert 'value="ledger:read"' in form
    assert 'value="ledger:write"' not in form
    refused = dana_client.post(url, {"name": "ci", "scopes": ["memory:read", "memory:write"]})
    assert refused.status_code == 400
    assert not ApiKey.objects.filter(user=dana).exists()
    assert dana_client.post(url, {"name": "ci", "scopes": ["memory:read"]}).status_code == 200
    assert ApiKey.objects.get(user=dana).scopes == ["memory:read"]
    owner_form = client_for(tenancy.alice.user).get(url).content.decode()
    assert 'value="memory:write"' in owner_form


def test_a_forget_refused_in_the_grace_period_is_explained_once_in_plain_words(tenancy: Tenancy) -> None:
    """B9: the banner and the flash both showed the long agent-style [MMW Notice], its URL not a link."""
    from billing.models import Subscription

    record = remember(tenancy.alice, "the VPN config lives in vault")
    Subscription.objects.filter(account=tenancy.alice.account).update(
        state=Subscription.State.GRACE, grace_ends_at=timezone.now() + dt.timedelta(days=7)
    )
    alice = client_for(tenancy.alice.user)
    url = reverse("dashboard:memory-forget", args=[tenancy.alice.project.pk, record])
    text = alice.post(url, follow=True).content.decode()
    assert "[MMW Notice]" not in text
    assert "search, recall_context, validate_memory" not in text
    assert text.count("read-only") == 2  # the banner says why, the flash says what did not happen
    assert "Not forgotten: this account is read-only" in text
    billing = reverse("dashboard:billing", args=[tenancy.alice.account.tenant_id])
    assert f'<a class="button small" href="{billing}">See billing</a>' in text  # payments off in tests
    assert Memory.objects.get(pk=record).forgotten_at is None


def test_forget_by_source_asks_for_confirmation(tenancy: Tenancy) -> None:
    for i in range(3):
        remember(tenancy.alice, f"fact {i} from the runbook", source_id="runbook.md")
    alice = client_for(tenancy.alice.user)
    url = reverse("dashboard:forget-source", args=[tenancy.alice.project.pk])
    review = alice.get(url, {"source_id": "runbook.md", "workspace": "default"})
    assert b"Forget 3 record(s)" in review.content
    assert Memory.objects.filter(source_id="runbook.md", forgotten_at__isnull=True).count() == 3
    done = alice.post(url, {"source_id": "runbook.md", "workspace": "default", "confirm": "yes"})
    assert done.status_code == 302
    assert Memory.objects.filter(source_id="runbook.md", forgotten_at__isnull=True).count() == 0


# --- workspaces ----------------------------------------------------------------------------


def test_workspace_delete_forgets_records_and_reserves_the_name(tenancy: Tenancy) -> None:
    remember(tenancy.alice, "scratch note", workspace="scratch")
    ws = Workspace.objects.get(project=tenancy.alice.project, name="scratch")
    url = reverse("dashboard:workspace-delete", args=[tenancy.alice.project.pk, ws.public_id])
    assert client_for(tenancy.bob.user).post(url, {"confirm": "scratch"}).status_code == 403
    alice = client_for(tenancy.alice.user)
    listing = alice.get(reverse("dashboard:workspaces", args=[tenancy.alice.project.pk])).content.decode()
    assert "scratch" in listing
    assert alice.post(url, {"confirm": "scratch"}).status_code == 302
    assert Workspace.objects.get(pk=ws.pk).deleted_at is not None
    assert not Memory.objects.filter(workspace=ws, forgotten_at__isnull=True).exists()
    with pytest.raises(Exception, match="was deleted and cannot be reused"):
        remember(tenancy.alice, "again", workspace="scratch")
    assert AuditEvent.objects.filter(action="workspace.deleted").exists()


# --- usage, billing ------------------------------------------------------------------------


def test_usage_draws_charts(tenancy: Tenancy) -> None:
    remember(tenancy.alice, "one record")
    page = client_for(tenancy.bob.user).get(reverse("dashboard:usage", args=[tenancy.alice.account.tenant_id]))
    assert page.status_code == 200
    assert page.content.count(b'<svg class="chart"') == 3  # the plan meter is an <svg> too
    assert b"of 1,000" in page.content


def test_billing_is_for_owners_and_admins_and_shows_the_banner(tenancy: Tenancy) -> None:
    from billing.models import Subscription

    url = reverse("dashboard:billing", args=[tenancy.alice.account.tenant_id])
    assert client_for(tenancy.bob.user).get(url).status_code == 403
    assert client_for(tenancy.charlie.user).get(url).status_code == 404
    Subscription.objects.filter(account=tenancy.alice.account).update(state="suspended")
    page = client_for(tenancy.alice.user).get(url)
    assert page.status_code == 200
    assert b'data-testid="billing-banner"' in page.content
    projects = client_for(tenancy.bob.user).get(reverse("dashboard:projects", args=[tenancy.alice.account.tenant_id]))
    assert b'data-testid="billing-banner"' in projects.content


# --- organisation --------------------------------------------------------------------------


def test_invite_accept_and_role_change(tenancy: Tenancy, django_capture_on_commit_callbacks: Any) -> None:
    from accounts import services

    tenant = on_plan(tenancy.alice.account).tenant_id
    alice = client_for(tenancy.alice.user)
    bad = alice.post(reverse("dashboard:members", args=[tenant]), {"email": "not-an-email", "role": "member"})
    assert bad.status_code == 400
    assert b'value="not-an-email"' in bad.content
    with django_capture_on_commit_callbacks(execute=True):
        invited = alice.post(
            reverse("dashboard:members", args=[tenant]), {"email": "eve@example.com", "role": "auditor"}
        )
    assert invited.status_code == 302
    link = re.search(r"/invitations/accept/\?token=\S+", str(mail.outbox[-1].body))
    assert link is not None
    eve, _ = services.user_get_or_create(email="eve@example.com")
    eve_client = client_for(eve)
    token = link.group(0).split("token=", 1)[1]
    from urllib.parse import unquote

    assert eve_client.post(reverse("dashboard:invitation-accept"), {"token": unquote(token)}).status_code == 302
    membership = Membership.objects.get(account=tenancy.alice.account, user=eve)
    assert membership.role == "auditor"
    url = reverse("dashboard:member-action", args=[tenant, membership.pk])
    client_for(tenancy.bob.user).post(url, {"action": "role", "role": "admin"})
    assert Membership.objects.get(pk=membership.pk).role == "auditor"
    alice.post(url, {"action": "role", "role": "member"})
    assert Membership.objects.get(pk=membership.pk).role == "member"
    assert Invitation.objects.filter(accepted_by=eve).exists()


def test_members_cannot_invite_and_audit_log_is_for_managers(tenancy: Tenancy) -> None:
    tenant = tenancy.alice.account.tenant_id
    bob = client_for(tenancy.bob.user)
    assert (
        bob.post(reverse("dashboard:members", args=[tenant]), {"email": "x@example.com", "role": "member"}).status_code
        == 403
    )
    assert bob.get(reverse("dashboard:audit", args=[tenant])).status_code == 403
    assert client_for(tenancy.charlie.user).get(reverse("dashboard:audit", args=[tenant])).status_code == 404
    log = client_for(tenancy.alice.user).get(reverse("dashboard:audit", args=[tenant]))
    assert log.status_code == 200
    assert b"api_key.created" in log.content


def test_departments_create_and_add_member(tenancy: Tenancy) -> None:
    tenant = on_plan(tenancy.alice.account).tenant_id
    alice = client_for(tenancy.alice.user)
    url = reverse("dashboard:departments", args=[tenant])
    assert alice.post(url, {"action": "create", "name": "Platform"}).status_code == 302
    from orgs.models import Department

    dept = Department.objects.get(account=tenancy.alice.account, name="Platform")
    bob_membership = Membership.objects.get(account=tenancy.alice.account, user=tenancy.bob.user)
    assert alice.post(url, {"action": "add", "department": dept.pk, "member": bob_membership.pk}).status_code == 302
    assert dept.members.filter(pk=bob_membership.pk).exists()
    assert client_for(tenancy.bob.user).post(url, {"action": "create", "name": "Bobs"}).status_code == 403
    assert b"Platform" in client_for(tenancy.bob.user).get(url).content


def test_forget_selected_reviews_then_forgets_each_with_an_audit_row(tenancy: Tenancy, dana: Any) -> None:
    kept = remember(tenancy.alice, "keep me")
    chosen = [remember(tenancy.alice, f"obsolete note {i}") for i in range(3)]
    charlies = remember(tenancy.charlie, "not alice's to forget")
    alice = client_for(tenancy.alice.user)
    url = reverse("dashboard:forget-selected", args=[tenancy.alice.project.pk])
    review = alice.post(url, {"ids": [*chosen, charlies]})
    assert review.status_code == 200
    text = review.content.decode()
    assert "Forget 3 records?" in text
    assert "obsolete note 1" in text
    assert "not alice" not in text
    assert Memory.objects.filter(pk__in=chosen, forgotten_at__isnull=True).count() == 3  # nothing yet
    done = alice.post(url, {"ids": [*chosen, charlies], "confirm": "yes"}, follow=True)
    assert "Forgot 3 record(s)" in done.content.decode()
    assert Memory.objects.filter(pk__in=chosen, forgotten_at__isnull=False).count() == 3
    assert Memory.objects.get(pk=kept).forgotten_at is None
    assert Memory.objects.get(pk=charlies).forgotten_at is None
    audited = AuditEvent.objects.filter(action="memory.forgotten", target_id__in=chosen).count()
    assert audited == 3
    auditor = client_for(dana).post(url, {"ids": [kept], "confirm": "yes"}, follow=True)
    assert b"membership may not write in this organization" in auditor.content
    assert Memory.objects.get(pk=kept).forgotten_at is None


def test_the_new_key_page_waits_for_the_first_call_then_confirms_it(tenancy: Tenancy, dana: Any) -> None:
    alice = client_for(tenancy.alice.user)
    created = alice.post(
        reverse("dashboard:keys", args=[tenancy.alice.project.pk]), {"name": "ci", "scopes": ["memory:read"]}
    )
    raw = re.search(r'data-testid="raw-key">(mmw_[^<]+)<', created.content.decode())
    assert raw is not None
    key = ApiKey.objects.get(name="ci")
    url = reverse("dashboard:key-first-call", args=[tenancy.alice.project.pk, key.pk])
    assert f'hx-get="{url}"' in created.content.decode()
    waiting = alice.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "Waiting for the first call" in waiting
    assert 'hx-trigger="every 3s"' in waiting
    assert resolve_key(raw.group(1)) is not None  # what every REST or MCP call does first
    done = alice.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "First call received" in done
    assert "hx-trigger" not in done  # polling stops
    assert client_for(dana).get(url).status_code == 404  # another person's key


def test_the_header_leads_to_the_persons_email_and_password_settings(tenancy: Tenancy) -> None:
    alice = client_for(tenancy.alice.user)
    home = alice.get(reverse("dashboard:projects", args=[tenancy.alice.account.tenant_id])).content.decode()
    assert f'href="{reverse("account_email")}"' in home
    settings_page = alice.get(reverse("account_email"))
    assert settings_page.status_code == 200
    assert reverse("account_change_password") in settings_page.content.decode()


def test_the_invitation_page_names_organisation_role_and_inviter_and_a_replaced_link_offers_nothing(
    tenancy: Tenancy, django_capture_on_commit_callbacks: Any
) -> None:
    """Gap 5: the page never named the organisation, role or inviter, and a replaced invitation's
    old link still showed "Accept"."""
    from urllib.parse import unquote

    from accounts import services

    tenant = on_plan(tenancy.alice.account).tenant_id
    alice = client_for(tenancy.alice.user)
    links = []
    for role in ("member", "auditor"):
        with django_capture_on_commit_callbacks(execute=True):
            alice.post(reverse("dashboard:members", args=[tenant]), {"email": "eve@example.com", "role": role})
        found = re.search(r"token=(\S+)", str(mail.outbox[-1].body))
        assert found is not None
        links.append(unquote(found.group(1)))
    eve, _ = services.user_get_or_create(email="eve@example.com")
    eve_client = client_for(eve)
    url = reverse("dashboard:invitation-accept")
    old = eve_client.get(url, {"token": links[0]})
    assert old.status_code == 400
    assert "Invitation was revoked or replaced by a newer one." in old.content.decode()
    assert "Accept invitation" not in old.content.decode()
    current = eve_client.get(url, {"token": links[1]}).content.decode()
    assert "alice@example.com invited you to <strong>Alice &amp; Co</strong> as <strong>Auditor</strong>" in current
    assert "Accept invitation" in current
    assert not Membership.objects.filter(user=eve, account=tenancy.alice.account).exists()  # looking accepts nothing


def test_the_audit_log_names_people_and_keys_not_bare_ids(tenancy: Tenancy) -> None:
    """Gap 5: the audit log showed "membership 6"."""
    from orgs import services as org_services

    tenant = on_plan(tenancy.alice.account).tenant_id
    bob = Membership.objects.get(account=tenancy.alice.account, user=tenancy.bob.user)
    org_services.membership_role_change(membership=bob, actor=tenancy.alice.user, role=Membership.Role.ADMIN)
    key = ApiKey.objects.get(user=tenancy.bob.user)
    client_for(tenancy.alice.user).post(reverse("dashboard:key-revoke", args=[tenancy.alice.project.pk, key.pk]))
    text = client_for(tenancy.alice.user).get(reverse("dashboard:audit", args=[tenant])).content.decode()
    assert "membership · bob@example.com" in text
    assert f"api key · mmw_{key.prefix}…" in text
    assert f"membership {bob.pk}<" not in text


def test_the_search_page_says_why_where_else_and_when(tenancy: Tenancy) -> None:
    remember(tenancy.alice, "Staging is deployed with make deploy-staging from the release branch")
    remember(tenancy.alice, "module m7 owns the /api/m7 endpoints", workspace="backend")
    remember(tenancy.alice, "I bought a brass desk lamp for the study", occurred_at="2026-05-12T10:00:00Z")
    client = client_for(tenancy.alice.user)
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    plain = client.get(url, {"q": "how do we deploy staging", "workspace": "*"}).content.decode()
    assert 'data-testid="explain"' not in plain
    why = client.get(url, {"q": "how do we deploy staging", "workspace": "*", "why": "on"}).content.decode()
    assert 'data-testid="explain"' in why
    assert 'data-testid="explain-query"' in why
    assert "Fused " in why
    assert "keyword #1" in why
    elsewhere = client.get(url, {"q": "which module owns the m7 endpoints", "workspace": "default"}).content.decode()
    assert 'data-testid="elsewhere"' in elsewhere
    assert "backend</a> (1)" in elsewhere
    timed = client.get(url, {"q": "the lamp I bought last month", "workspace": "*"}).content.decode()
    assert 'data-testid="time-window"' in timed
    assert "last month" in timed


def test_the_search_page_reranks_when_asked_and_says_when_it_did_not(tenancy: Tenancy) -> None:
    remember(tenancy.alice, "Melanie: We camped at Big Sur last summer.")
    remember(tenancy.alice, "Caroline: Melanie sells camping gear and camp chairs.")
    client = client_for(tenancy.alice.user)
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    plain = client.get(url, {"q": "Where has Melanie camped?", "workspace": "*"}).content.decode()
    assert 'data-testid="reranked"' not in plain
    asked = client.get(url, {"q": "Where has Melanie camped?", "workspace": "*", "rerank": "on"}).content.decode()
    assert "The first 20 results were reordered by the cross-encoder." in asked
    assert asked.index("Big Sur") < asked.index("camping gear")
    russian = client.get(url, {"q": "Где Мелани ходила в поход?", "workspace": "*", "rerank": "on"}).content.decode()
    assert "Not reranked: the cross-encoder reads English only." in russian


def test_the_search_page_says_when_the_reranker_failed(tenancy: Tenancy, monkeypatch: pytest.MonkeyPatch) -> None:
    class Failing:
        def logits(self, query: str, texts: Sequence[str]) -> list[float]:
            raise RuntimeError("onnxruntime: out of memory")

    remember(tenancy.alice, "Melanie: We camped at Big Sur last summer.")
    remember(tenancy.alice, "Caroline: Melanie sells camping gear and camp chairs.")
    monkeypatch.setattr(rerank, "_LOADED", [rerank.Loaded(Failing(), time.monotonic())])
    url = reverse("dashboard:memories", args=[tenancy.alice.project.pk])
    page = client_for(tenancy.alice.user).get(url, {"q": "Where has Melanie camped?", "workspace": "*", "rerank": "on"})
    assert page.status_code == 200
    assert "Not reranked: the cross-encoder failed on this search; the usual order is shown." in page.content.decode()
