"""Ledger principals: Alice and Bob (her organisation) and Charlie, with keys that carry the
ledger scopes, plus a memory-only key of Alice's."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from accounts.keys import Principal, resolve_key
from accounts.models import ALL_SCOPES
from tests.conftest import Tenancy
from tests.factories import issue_key


@dataclass
class Ledgers:
    alice: Principal
    bob: Principal
    charlie: Principal
    alice_memory_only: Principal
    alice_key: str
    alice_memory_key: str
    charlie_key: str


def _principal(raw: str) -> Principal:
    principal = resolve_key(raw)
    assert principal is not None
    return principal


@pytest.fixture
def ledgers(tenancy: Tenancy) -> Ledgers:
    keys = {
        name: issue_key(actor.user, actor.project, scopes=ALL_SCOPES, device_label=f"{name}-ledger")
        for name, actor in (("alice", tenancy.alice), ("bob", tenancy.bob), ("charlie", tenancy.charlie))
    }
    return Ledgers(
        alice=_principal(keys["alice"]),
        bob=_principal(keys["bob"]),
        charlie=_principal(keys["charlie"]),
        alice_memory_only=_principal(tenancy.alice.key),
        alice_key=keys["alice"],
        alice_memory_key=tenancy.alice.key,
        charlie_key=keys["charlie"],
    )
