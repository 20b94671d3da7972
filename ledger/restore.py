"""An import's ledger entries (``ledger``'s rows): ``datarights.restore.importer``.

This module sits in the data rights layer although the app is ledger: it extends the importer
(``datarights.restore.base.ImporterBase``) and registers itself with it (``register``), as an
app's ``mcp`` module registers its tools; ``datarights`` finds it by the app registry and never
imports it (tests/architecture/test_imports.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from accounts.models import Project
from datarights import format as fmt
from datarights.restore import lines as door
from datarights.restore.base import ImporterBase, Rows, register
from ledger.models import Entry
from mmw.errors import Forbidden, InvalidInput

_ENTRY_NOT_COLUMNS = frozenset({"id", "project", "author", "reverses", "completes", "amount_text"})


class LedgerRows(ImporterBase):
    def _handlers(self) -> dict[str, Callable[[Rows], None]]:
        return {**super()._handlers(), "ledger_entry": self._ledger_entries}

    def _ledger_entries(self, rows: Rows) -> None:
        """Entries keep their amounts, links and times; one already here with the same line is
        unchanged, with another a collision. The ledger is append-only: an import only adds."""
        if not self.policy.ledger_allowed:
            raise Forbidden("403 Forbidden: key lacks ledger:write")
        checked = self._checked(rows, lambda n, line: door.check_entry(n, line, self.door))
        self._own_ids("ledger_entry", Entry, (v["id"] for _, v in checked))
        self._authored(checked, Entry, "ledger_entry", fmt.ledger_entry_line, self._new_entry)

    def _new_entry(self, number: int, values: dict[str, Any], project: Project) -> Entry:
        links = {}
        for name in ("reverses", "completes"):
            linked = values[name]
            if linked is not None:
                stored = self._id("ledger_entry", linked)
                if not self._all_in_project("ledger_entry", Entry, [stored]):
                    raise InvalidInput(f"{name} names an entry not in this project")
                links[f"{name}_id"] = stored
        fields = {k: v for k, v in values.items() if k not in _ENTRY_NOT_COLUMNS}
        return Entry(
            **fields,
            **links,
            id=self._id("ledger_entry", values["id"]),
            account_id=self.policy.account.pk,
            project=project,
            author=self._user(values["author"]),
        )


register("ledger", LedgerRows)
