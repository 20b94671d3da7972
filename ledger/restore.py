"""An import's ledger entries (``ledger``'s rows): ``datarights.restore.importer``; each line first
passes its door (``check_entry`` below: ``datarights.restore.lines``' field rules with this app's
own parameter table, product rules and Guard).

This module sits in the data rights layer although the app is ledger: it extends the importer
(``datarights.restore.base.ImporterBase``) and registers itself with it (``register``), as an
app's ``mcp`` module registers its tools; ``datarights`` finds it by the app registry and never
imports it (tests/architecture/test_imports.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from accounts.models import Project
from datarights import format as fmt
from datarights.restore.base import ImporterBase, Rows, register
from datarights.restore.lines import (
    _HEX64,
    AUTHOR,
    CREATED_AT,
    ID,
    LATEST_DUE,
    PROJECT,
    Door,
    _department_ids,
    _email,
    _fields,
    _guarded,
    _time,
    _time_param,
    past,
    uuid_of,
)
from ledger import inputs as ledger_inputs
from ledger import services as ledger_services
from ledger.currencies import format_amount
from ledger.models import Entry
from memories.inputs import ID_CHARS, NAME_CHARS, Param
from mmw.errors import Forbidden, InvalidInput

_ENTRY_NOT_COLUMNS = frozenset({"id", "project", "author", "reverses", "completes", "amount_text"})


# --- the door of ledger entries (``datarights.restore.lines``' rules, this app's tables) ---

ENTRY_LINE: tuple[Param, ...] = (
    ID,
    PROJECT,
    *ledger_inputs.RECORD,
    Param("content_digest", "string", "The entry's digest.", max_length=64),
    Param("device_label", "string", "The device label.", max_length=NAME_CHARS),
    Param("reverses", "string", "The entry it reverses.", max_length=ID_CHARS),
    Param("completes", "string", "The reminder it completes.", max_length=ID_CHARS),
    _time_param("completes_due_at"),
    AUTHOR,
    CREATED_AT,
)


def check_entry(number: int, line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    """A ledger entry through ``ledger_record``'s table, Guard and product rules."""
    values = _fields(line, ENTRY_LINE)
    for name in ("repeat", "counterparty", "category", "memo"):
        values[name] = values[name] or None  # "" in the file is "none", as the route reads it
    values = _guarded(door, number, values, ledger_services.SCREENED)
    fields = ledger_services.entry_fields(values, door.now)
    if values["content_digest"] is not None and not _HEX64.match(values["content_digest"]):
        raise InvalidInput("content_digest must be 64 lower-case hex digits")
    return {
        **fields,
        "amount_text": format_amount(fields["amount"], fields["currency"]),
        "id": uuid_of("id", values["id"]),
        "project": values["project"],
        "content_digest": values["content_digest"] or ledger_services.content_digest(fields),
        "department_ids": _department_ids(line),
        "device_label": values["device_label"] or "",
        "reverses": uuid_of("reverses", values["reverses"]) if values["reverses"] else None,
        "completes": uuid_of("completes", values["completes"]) if values["completes"] else None,
        "completes_due_at": _time("completes_due_at", values["completes_due_at"], latest=LATEST_DUE),
        "author": _email(values["author"]),
        "created_at": past("created_at", values["created_at"], door, required=True),
    }


class LedgerRows(ImporterBase):
    def _handlers(self) -> dict[str, Callable[[Rows], None]]:
        return {**super()._handlers(), "ledger_entry": self._ledger_entries}

    def _ledger_entries(self, rows: Rows) -> None:
        """Entries keep their amounts, links and times; one already here with the same line is
        unchanged, with another a collision. The ledger is append-only: an import only adds."""
        if not self.policy.ledger_allowed:
            raise Forbidden("403 Forbidden: key lacks ledger:write")
        checked = self._checked(rows, lambda n, line: check_entry(n, line, self.door))
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
