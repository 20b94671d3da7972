"""An import's sessions and turns (``transcripts``' rows): ``datarights.restore.importer``.

This module sits in the data rights layer although the app is transcripts: it extends the importer
(``datarights.restore.base.ImporterBase``) and registers itself with it (``register``), as an
app's ``mcp`` module registers its tools; ``datarights`` finds it by the app registry and never
imports it (tests/architecture/test_imports.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Count

from accounts.models import Project
from datarights import format as fmt
from datarights.restore import lines as door
from datarights.restore.base import ImporterBase, Rows, register
from transcripts import indexing
from transcripts.models import Session, Turn


class SessionRows(ImporterBase):
    def _handlers(self) -> dict[str, Callable[[Rows], None]]:
        return {**super()._handlers(), "session": self._sessions, "turn": self._turns}

    def _sessions(self, rows: Rows) -> None:
        checked = self._checked(rows, lambda n, line: door.check_session(n, line, self.door))
        self._authored(checked, Session, "session", fmt.session_line, self._new_session)

    def _new_session(self, number: int, values: dict[str, Any], project: Project) -> Session:
        stub = values["forgotten"]
        fields = {k: v for k, v in values.items() if k not in ("id", "project", "author", "forgotten")}
        if stub:
            fields["client_session_id"] = f"forgotten-{values['id']}"
            fields["updated_at"] = values["created_at"]
        return Session(
            id=self._id("session", values["id"]),
            account_id=self.policy.account.pk,
            project=project,
            author=self._user(values["author"]),
            **fields,
        )

    def _turns(self, rows: Rows) -> None:
        checked = self._checked(rows, lambda n, line: door.check_turn(n, line, self.door))
        projects = {p.pk for p in self.projects.values()}
        sessions = {self._id("session", v["session"]) for _, v in checked}
        known = dict(
            Session.objects.filter(pk__in=sessions, project_id__in=projects, forgotten_at__isnull=True).values_list(
                "id", "project_id"
            )
        )
        existing = {(t.session_id, t.position): t for t in Turn.objects.filter(session_id__in=known).defer("embedding")}
        new = []
        for number, values in checked:
            session_id = self._id("session", values["session"])
            if session_id not in known:
                self._invalid(number, "a turn of a session not in this project")
                continue
            turn = Turn(
                session_id=session_id,
                project_id=known[session_id],
                **{k: v for k, v in values.items() if k != "session"},
            )
            found = existing.get((session_id, values["position"]))
            if found is not None:
                label = f"turn {session_id}#{values['position']}"
                self._same(number, "turn", label, fmt.turn_line(found), fmt.turn_line(turn))
                continue
            existing[(session_id, values["position"])] = turn
            new.append(turn)
            low = self.sessions_touched.get(session_id, values["position"])
            self.sessions_touched[session_id] = min(low, values["position"])
        self._insert(Turn, new, "turn")

    def _finish_sessions(self) -> None:
        """Sessions given turns: their neighbours' words (as an upload does) and a true count."""
        if not self.sessions_touched:
            return
        counts = dict(
            Turn.objects.filter(session_id__in=self.sessions_touched)
            .values_list("session_id")
            .annotate(n=Count("id"))
            .values_list("session_id", "n")
        )
        for session_id, low in self.sessions_touched.items():
            indexing.refresh_context(session_id, low)
            Session.objects.filter(pk=session_id).update(turn_count=counts.get(session_id, 0))

    def _finish(self) -> None:
        super()._finish()
        self._finish_sessions()


register("transcripts", SessionRows)
