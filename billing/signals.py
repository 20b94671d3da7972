"""Receivers connected in ``BillingConfig.ready``.

- Every new account gets its subscription row at once (the default plan, or none), so support
  staff find every account in the admin's Subscriptions list.
- After ``migrate`` (and ``flush``, which emits the same signal): the database cache table is
  created when ``CACHES`` uses one, and the default plans are seeded when the plan table is empty
  (a flushed test database, or a deployment that deleted every plan and re-migrated).
"""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.apps import apps as global_apps
from django.apps.registry import Apps
from django.core.management import call_command

from accounts.models import Account
from billing.seeds import DEFAULT_PLANS


def account_created(sender: type[Account], instance: Account, created: bool, raw: bool = False, **_: Any) -> None:
    if created and not raw:
        from billing.services import subscription_open  # services import models of other apps

        subscription_open(account=instance)


def after_migrate(sender: AppConfig, using: str, apps: Apps | None = None, **_: Any) -> None:
    call_command("createcachetable", database=using, verbosity=0)
    try:  # migrate passes the migrated state's apps; flush passes none (the models are current)
        plan_model = (apps or global_apps).get_model("billing", "Plan")
    except LookupError:  # billing's tables are not migrated (yet)
        return
    if not plan_model.objects.using(using).exists():
        plan_model.objects.using(using).bulk_create([plan_model(**row) for row in DEFAULT_PLANS])
