"""Import: an export file into this server (docs/export-format.md, "Importing").

- ``reader``: the file's lines, every cost bounded while reading;
- ``lines``: the door each line passes (the write routes' tables, bounds and Guard);
- ``importer``: the rows written, in one transaction, with collisions and errors reported;
- ``jobs``: a member's import as a job (inline when small, else on the ``imports`` worker).

``import_for_operator`` is ``manage.py import``'s entry; members start with ``jobs.import_start``.
"""

from __future__ import annotations

from typing import IO

from accounts.models import Account, User
from datarights.restore import reader
from datarights.restore.importer import (
    Collisions,
    Importer,
    ImportReport,
    InvalidLines,
    Policy,
    Progress,
    queue_vectors,
)

__all__ = ["Collisions", "ImportReport", "InvalidLines", "import_for_operator", "queue_vectors"]


def import_for_operator(
    *,
    stream: IO[bytes],
    account: Account,
    actor: User | None = None,
    progress: Progress | None = None,
    limits: reader.Limits | None = None,
) -> ImportReport:
    """``manage.py import``: projects keep their ids (created in ``account`` when absent), authors
    are matched with the account's members, audit rows are restored."""
    policy = Policy(operator=True, account=account, actor=actor, limits=limits or reader.Limits())
    return Importer(policy, progress=progress).run(stream)
