from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection


@pytest.mark.django_db
def test_models_and_migrations_agree() -> None:
    call_command("makemigrations", "--check", "--dry-run", stdout=StringIO())


@pytest.mark.slow  # rebuilds the schema: every migration backwards, then forwards
@pytest.mark.django_db(transaction=True)
def test_memory_migrations_run_backwards_to_zero_and_forwards_again() -> None:
    call_command("migrate", "memories", "zero", stdout=StringIO())
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('memories_memory')")
        assert cursor.fetchone() == (None,)
    call_command("migrate", stdout=StringIO())
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
        assert row is not None
        assert row[0] >= "0.8"
        cursor.execute("SELECT to_regclass('memories_memory')")
        assert cursor.fetchone() == ("memories_memory",)
