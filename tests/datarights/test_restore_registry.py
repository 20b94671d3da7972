"""The importer asks each app for its rows (issue #39): every installed app's ``restore`` module is
found and mixed in, in the order of INSTALLED_APPS, and every line type of the format has a builder."""

from __future__ import annotations

from datarights.restore import base, importer


def test_each_app_registers_its_rows() -> None:
    assert [rows.__module__ for rows in base.registered()] == [
        "memories.restore",
        "transcripts.restore",
        "ledger.restore",
    ]


def test_the_importer_builds_every_line_type() -> None:
    one = importer.Importer(base.Policy(operator=False, account=None))  # type: ignore[arg-type]
    assert set(one._handlers()) == {
        "account", "project", "workspace", "audit_event", "memory", "relation", "session", "turn", "ledger_entry",
    }  # fmt: skip
