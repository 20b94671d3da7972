"""One multi-row INSERT for any model: rows travel as one JSON parameter (``jsonb_to_recordset``).

Django's ``bulk_create`` sends one placeholder per value (16,000 for 500 records), and psycopg's
client-side parsing of such a query text alone took 0.6 s of a 500-record batch (profiled in
docs/ingest.md). Here the statement text is the same for every batch and the values are one
parameter, typed by the model's own column types.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import connection, models
from pgvector.django import VectorField


def insert_rows(model: type[models.Model], objs: Sequence[models.Model], *, keep_times: bool = False) -> None:
    """INSERT ``objs`` in one statement. Generated columns are left to PostgreSQL, and an
    auto-increment primary key that no object carries is left to its sequence.

    ``keep_times=False``: each value is the field's ``pre_save`` (``auto_now_add`` fills
    ``created_at``), as ``save`` would store it. ``keep_times=True``: every value is the object's
    own, times included — a restore (``datarights`` import) keeps a record's original times."""
    if not objs:
        return
    fields = [
        (f, str(f.column))
        for f in model._meta.concrete_fields
        if not f.generated and not (isinstance(f, models.AutoField) and all(o.pk is None for o in objs))
    ]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(column) for _, column in fields)
    types = ", ".join(f"{quote(column)} {f.db_type(connection)}" for f, column in fields)
    rows = [{column: _json_value(f, _value(f, o, keep_times)) for f, column in fields} for o in objs]
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {model._meta.db_table} ({columns}) "  # noqa: S608 - names from the model, values bound
            f"SELECT {columns} FROM jsonb_to_recordset(%s::jsonb) AS r({types})",
            [json.dumps(rows)],
        )


def _value(field: models.Field[Any, Any], obj: models.Model, keep_times: bool) -> Any:
    return getattr(obj, field.attname) if keep_times else field.pre_save(obj, add=True)


def _json_value(model_field: Any, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(model_field, VectorField):
        return "[" + ",".join(repr(float(x)) for x in value) + "]"
    if isinstance(value, list):
        return [str(v) if isinstance(v, uuid.UUID) else v for v in value]
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)  # a JSON string PostgreSQL reads as numeric: exact, never through a float
    return value
