"""Every notice, in the documented shape, on both surfaces: writes and forget refused (REST 402, MCP
isError), reads answered with the notice in ``notice``; rate limits as MCP errors too."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from accounts.models import Account, User
from billing import selectors, services
from billing.models import Plan, Subscription
from tests import live
from tests.billing.conftest import Clock, notice_for
from tests.conftest import Actor, Tenancy
from tests.live import LiveServer, mcp_call
from tests.memories.rest import Api

live_server = live.live_server
State = Subscription.State


def put_in(state: str, actor: Actor) -> str:
    """Put the actor's account in ``state``; return the notice its calls must carry."""
    account = actor.account
    staff, _ = User.objects.get_or_create(email="support@mmw.example", defaults={"is_staff": True})
    if state == "grace":
        Subscription.objects.filter(account=account).update(
            state=State.GRACE, grace_ends_at=timezone.now() + dt.timedelta(days=7)
        )
    elif state == "suspended":
        Subscription.objects.filter(account=account).update(state=State.SUSPENDED, suspended_at=timezone.now())
    elif state == "suspended by staff":
        services.subscription_suspend(account=account, actor=staff)
    elif state == "no subscription":
        services.subscription_change_plan(account=account, plan=None, actor=staff)
    notice = notice_for(actor)
    assert notice is not None
    return notice


def check_shape(notice: str, account: Account) -> None:
    assert notice.startswith("[MMW Notice]: ")
    happened, works, todo = notice.removeprefix("[MMW Notice]: ").split("; ")
    assert happened
    assert "still work" in works
    assert selectors.billing_url(account) in todo


STATES = ["grace", "suspended", "suspended by staff", "no subscription"]


@pytest.mark.django_db
@pytest.mark.parametrize("state", STATES)
def test_rest_refuses_writes_and_forget_with_402_and_reads_carry_the_notice(tenancy: Tenancy, state: str) -> None:
    api = Api(tenancy.alice.key)
    kept = api.ok_remember(content="the deploy key rotates monthly", source_id="docs/keys.md")
    notice = put_in(state, tenancy.alice)
    check_shape(notice, tenancy.alice.account)
    refused = {"code": "billing_notice", "message": notice}

    assert api.remember(content="a new fact") == (402, {"error": refused})
    assert api.forget(memory_id=kept["id"]) == (402, {"error": refused})
    assert api.forget(source_id="docs/keys.md") == (402, {"error": refused})
    assert api.call("DELETE", f"/memories/{kept['id']}") == (402, {"error": refused})

    assert api.search(query="deploy key")["notice"] == notice
    for method, path, body in [
        ("GET", f"/memories/{kept['id']}", None),
        ("GET", f"/memories/{kept['id']}/history", None),
        ("GET", "/workspaces", None),
        ("POST", "/recall-context", {"task": "rotate the deploy key"}),
        ("POST", "/memories/validate", {"source_id": "docs/keys.md", "current_source_hash": "x"}),
    ]:
        status, answer = api.call(method, path, body)
        assert (status, answer.get("notice")) == (200, notice), (path, answer)

    charlie = Api(tenancy.charlie.key)  # another account is not affected
    assert charlie.remember(content="unaffected")[0] == 201
    assert "notice" not in charlie.search(query="unaffected")


@pytest.mark.django_db
def test_the_grace_notice_names_its_end_and_the_billing_url(
    tenancy: Tenancy, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.MMW_BILLING_URL = "https://mmw.example/billing/"
    Subscription.objects.filter(account=tenancy.alice.account).update(
        state=State.GRACE, grace_ends_at=dt.datetime(2030, 1, 31, 17, 5, tzinfo=dt.UTC)
    )
    monkeypatch.setattr(timezone, "now", lambda: dt.datetime(2030, 1, 30, tzinfo=dt.UTC))  # a day before its end
    assert notice_for(tenancy.alice) == (
        "[MMW Notice]: the last payment for this account failed and it is read-only during a grace period "
        "until 2030-01-31 17:05 UTC, after which it will be suspended; search, recall_context, validate_memory "
        "and reading memories still work but remember and forget do not; update the payment method or pay the "
        f"open invoice at https://mmw.example/billing/{tenancy.alice.account.tenant_id}/ to write again"
    )


@pytest.mark.django_db
def test_the_dashboard_banner_follows_the_state_and_usage(tenancy: Tenancy, settings: Any) -> None:
    settings.STRIPE_SECRET_KEY = "sk_test_banner"  # payments on: the buttons lead to paying
    account = tenancy.alice.account
    assert selectors.banner_for(account) is None
    Plan.objects.filter(code="free").update(records_per_project=5)
    api = Api(tenancy.alice.key)
    for i in range(4):
        api.ok_remember(content=f"fact {i}")
    banner = selectors.banner_for(account)
    assert banner is not None
    assert (banner.level, banner.action_label) == ("warning", "Upgrade")
    assert banner.text == "project alpha uses 4 of its 5 records"
    notice = put_in("grace", tenancy.alice)
    banner = selectors.banner_for(account)
    assert banner is not None
    assert banner.level == "warning"
    assert f"[MMW Notice]: {banner.text}" == notice
    assert banner.action_url == selectors.billing_url(account)
    put_in("suspended by staff", tenancy.alice)
    assert (b := selectors.banner_for(account)) is not None
    assert b.level == "danger"
    settings.STRIPE_SECRET_KEY = ""  # payments off: nothing to update, the button only shows billing
    assert (off := selectors.banner_for(account)) is not None
    assert off.action_label == "See billing"


@pytest.mark.slow
def test_mcp_tools_answer_every_notice_and_the_rate_limit(
    live_server: LiveServer, tenancy: Tenancy, clock: Clock
) -> None:
    url, key = live_server.url, tenancy.alice.key
    is_error, kept = mcp_call(url, key, "remember", {"content": "the VPN config lives in vault", "source_id": "vpn"})
    assert not is_error
    assert isinstance(kept, dict)
    for state in STATES:
        notice = put_in(state, tenancy.alice)
        assert mcp_call(url, key, "remember", {"content": "refused"}) == (
            True,
            f"Error executing tool remember: {notice}",
        )
        assert mcp_call(url, key, "forget", {"memory_id": kept["id"]}) == (
            True,
            f"Error executing tool forget: {notice}",
        )
        is_error, found = mcp_call(url, key, "search", {"query": "VPN config"})
        assert not is_error
        assert isinstance(found, dict)
        assert found["notice"] == notice
        assert [r["id"] for r in found["results"]] == [kept["id"]]
        staff = User.objects.get(email="support@mmw.example")
        services.subscription_reinstate(account=tenancy.alice.account, actor=staff)
        if state == "no subscription":
            services.subscription_change_plan(
                account=tenancy.alice.account, plan=Plan.objects.get(code="free"), actor=staff
            )
        assert notice_for(tenancy.alice) is None

    Plan.objects.filter(code="free").update(calls_per_minute_per_key=1)
    clock.advance(60)
    assert not mcp_call(url, key, "list_workspaces", {})[0]
    assert mcp_call(url, key, "search", {"query": "VPN"}) == (
        True,
        "Error executing tool search: MCP rate limit exceeded",
    )
    Plan.objects.filter(code="free").update(calls_per_minute_per_key=100, calls_per_minute_per_project=1)
    clock.advance(60)
    assert not mcp_call(url, key, "list_workspaces", {})[0]
    assert mcp_call(url, tenancy.bob.key, "search", {"query": "VPN"}) == (
        True,
        "Error executing tool search: project call limit exceeded",
    )
