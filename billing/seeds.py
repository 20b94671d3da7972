"""The plans a fresh deployment starts with (edit them in the admin afterwards).

Pro and Team have no Stripe price id until an operator pastes one in (see docs/billing.md).
The data migration ``0002_seed_plans`` keeps its own frozen copy of these rows.
"""

from __future__ import annotations

from typing import Any

DEFAULT_PLANS: list[dict[str, Any]] = [
    {
        "code": "free",
        "name": "Free",
        "monthly_price_cents": 0,
        "records_per_project": 1_000,
        "turns_per_project": 10_000,
        "ledger_entries_per_project": 1_000,
        "projects_per_account": 3,
        "calls_per_minute_per_key": 60,
        "calls_per_minute_per_project": 120,
        "organization_features": False,
        "is_default": True,
        "sort_order": 0,
    },
    {
        "code": "pro",
        "name": "Pro",
        "monthly_price_cents": 1_900,
        "records_per_project": 50_000,
        "turns_per_project": 1_000_000,
        "ledger_entries_per_project": 100_000,
        "projects_per_account": 20,
        "calls_per_minute_per_key": 300,
        "calls_per_minute_per_project": 600,
        "organization_features": False,
        "is_default": False,
        "sort_order": 10,
    },
    {
        "code": "team",
        "name": "Team",
        "monthly_price_cents": 9_900,
        "records_per_project": 500_000,
        "turns_per_project": 10_000_000,
        "ledger_entries_per_project": 1_000_000,
        "projects_per_account": 100,
        "calls_per_minute_per_key": 600,
        "calls_per_minute_per_project": 3_000,
        "organization_features": True,
        "is_default": False,
        "sort_order": 20,
    },
]
