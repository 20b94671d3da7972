"""oauth 0004/0005 (issue #35): a code issued before them names the family its exchange gave its
tokens, so replaying it revokes the pairs rotated since — which carried no link to the code."""

from __future__ import annotations

import uuid
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from accounts.keys import resolve_key
from oauth import services
from oauth.models import AuthorizationCode
from tests.conftest import Tenancy
from tests.oauth import grants

BEFORE = ("oauth", "0003_client_metadata_document")


@pytest.mark.slow  # changes the schema: oauth back to 0003, then forwards
@pytest.mark.django_db(transaction=True)
def test_a_code_from_before_the_migration_takes_its_tokens_family(tenancy: Tenancy) -> None:
    client = grants.client()
    call_command("migrate", *BEFORE, stdout=StringIO())
    try:
        old = MigrationExecutor(connection).loader.project_state(BEFORE).apps
        grant = old.get_model("oauth", "Grant").objects.create(
            client_id=client.pk,
            user_id=tenancy.alice.user.pk,
            project_id=tenancy.alice.project.pk,
            scopes=["memory:read"],
            resource=grants.RESOURCE,
        )
        now = timezone.now()
        code = old.get_model("oauth", "AuthorizationCode").objects.create(
            grant=grant,
            digest=services.digest("mmwac_old"),
            code_challenge="c" * 43,
            redirect_uri=grants.REDIRECT,
            expires_at=now + timedelta(minutes=2),
            used_at=now,
        )
        never_used = old.get_model("oauth", "AuthorizationCode").objects.create(
            grant=grant, digest=services.digest("mmwac_unused"), code_challenge="c" * 43,
            redirect_uri=grants.REDIRECT, expires_at=now + timedelta(minutes=2),
        )  # fmt: skip
        family = uuid.uuid4()
        token_model = old.get_model("oauth", "Token")
        raw = {"first": "mmwat_first-pair", "rotated": "mmwat_rotated-pair"}
        for name, linked in (("first", code), ("rotated", None)):  # rotation stored code=NULL
            token_model.objects.create(
                grant=grant, kind="access", digest=services.digest(raw[name]), family=family, code=linked,
                scopes=["memory:read"], expires_at=now + timedelta(hours=1),
            )  # fmt: skip
    finally:
        call_command("migrate", "oauth", stdout=StringIO())
    assert AuthorizationCode.objects.get(pk=code.pk).family == family
    assert AuthorizationCode.objects.get(pk=never_used.pk).family not in (None, family)
    assert resolve_key(raw["rotated"]) is not None
    assert services.code_find(client_id=client.client_id, raw_code="mmwac_old") is None  # the replay
    assert resolve_key(raw["rotated"]) is None
    assert resolve_key(raw["first"]) is None
