"""Writing an import: every checked line into this server, in one transaction.

A line is read (``reader``), checked (``lines``: the same tables, bounds and Guard as the route
that would write it) and then is one of: *new* (inserted), *unchanged* (a row of the target with
that identity holds exactly this — importing twice adds nothing) or a *collision* (a row of the
target with that identity holds other data). Any error or collision refuses the whole file; the
first ``MAX_REPORTED`` are named with their line numbers.

Two kinds of caller (``Policy``):

- **a member** (``POST /api/v1/import``, the dashboard): the file goes into one project of the
  caller's. Every lookup is scoped to that project, so the answer never depends on another
  tenant's rows: an id the file shares with a row outside the project is given a new id of its
  own (derived from the project and the file's id, so a second import finds it again) and every
  reference to it follows. Authorship is never taken from the file: a row names the caller as its
  author only when the file names the caller; any other author is kept as a label (``AuthorLabel``:
  "imported from <e-mail>"), so no member is impersonated. Audit lines are ignored: the import is
  audited once, as ``data.imported`` by its caller.
- **the operator** (``manage.py import``): the file moves an account between servers it runs.
  Ids are kept and a clash with another account is reported; authors are matched by e-mail with
  the account's members; audit lines are restored with their actors.

The rows of each app are built by a mixin of ``ImporterBase`` (``datarights.restore.base``) in that
app's own ``restore`` module — ``memories.restore`` (records, relations), ``transcripts.restore``
(sessions, turns), ``ledger.restore`` (ledger entries) — which adds its line types to the handler
table and registers itself (``base.register``). The importer asks the app registry for them
(``base.registered``), as the ``/mcp`` server asks for every app's tools, so this app imports no
app's row builders.
"""

from __future__ import annotations

from datarights.restore.base import (
    MAX_REPORTED,
    Collisions,
    ImporterBase,
    ImportReport,
    InvalidLines,
    Policy,
    Progress,
    Quota,
    queue_vectors,
    registered,
)

__all__ = [
    "MAX_REPORTED",
    "Collisions",
    "ImportReport",
    "Importer",
    "InvalidLines",
    "Policy",
    "Progress",
    "Quota",
    "queue_vectors",
]


_CLASS: list[type[ImporterBase]] = []


def Importer(policy: Policy, progress: Progress | None = None) -> ImporterBase:
    """One import (see the module docstring); ``run`` reads, checks and writes a whole file. Its
    class is ``ImporterBase`` with every installed app's rows mixed in (built once)."""
    if not _CLASS:
        _CLASS.append(type("Importer", (*registered(), ImporterBase), {"__module__": __name__}))
    return _CLASS[0](policy, progress=progress)
