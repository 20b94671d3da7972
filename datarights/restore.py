"""Import: an export file into another MMW (docs/export-format.md, "Importing").

The whole file is one transaction: either every record is in, or nothing is. Each line is either
new (inserted with its ids, versions and times), already there with the same bytes (skipped:
importing twice adds nothing), or a collision — a row with that identity and other data — and any
collision refuses the whole import with a report naming each (the first ``MAX_REPORTED``).

"The same bytes" is decided by ``datarights.format``: the existing row is rendered as an export
line and compared with the file's line, so import and export cannot disagree about equality.
Authors are mapped by e-mail to members of the target account; others are kept as a label
(``AuthorLabel``). Records get their vectors afterwards, from the worker (``queue_vectors``)."""

from __future__ import annotations

import gzip
import io
import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, NoReturn

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from accounts.keys import Principal
from accounts.models import SCOPE_LEDGER_WRITE, SCOPE_WRITE, Account, AuditEvent, Project, User, Workspace
from accounts.services import audit_record
from datarights import format as fmt
from datarights.models import AuthorLabel
from ledger import services as ledger_services
from ledger.currencies import check_currency, parse_amount
from ledger.models import Entry
from memories import admission, record_rules, sequence
from memories import tasks as memory_tasks
from memories.models import Memory, MemoryRelation
from mmw import bulk
from mmw.errors import Conflict, Forbidden, InvalidInput
from orgs.models import Membership
from transcripts.models import Session, Turn
from transcripts.services import TURN_LIMIT_TEXT

BATCH = 1000
MAX_REPORTED = 50
PROGRESS_EVERY = 5000
MANAGERS_ONLY = "403 Forbidden: only owners and admins can import"
NOT_EMPTY = (
    "the key's project already holds other records: import into an empty project, the exported one, "
    "or one this export was imported into before"
)


class Collisions(Conflict):
    """The file would overwrite other data; nothing was imported. ``report`` names each."""

    def __init__(self, report: list[str], total: int) -> None:
        more = f" (and {total - len(report)} more)" if total > len(report) else ""
        super().__init__(f"import refused: {total} record(s) collide with other data{more}: " + "; ".join(report))
        self.report = report
        self.total = total


@dataclass
class ImportReport:
    created: Counter[str] = field(default_factory=Counter)
    unchanged: Counter[str] = field(default_factory=Counter)
    lines: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"lines": self.lines, "created": dict(self.created), "unchanged": dict(self.unchanged)}


Progress = Callable[[ImportReport], None]


def open_export(stream: IO[bytes]) -> Iterator[tuple[int, fmt.Line]]:
    """The file's lines as objects (gzip or plain), numbered from 1; a line that is not a JSON
    object is the file's error."""
    head = stream.read(2)
    raw = io.BufferedReader(_Prefixed(head, stream))
    text = gzip.GzipFile(fileobj=raw) if head == b"\x1f\x8b" else raw
    for number, line in enumerate(text, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidInput(f"line {number}: not JSON ({exc})") from exc
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise InvalidInput(f"line {number}: not an object with a type")
        yield number, obj


class _Prefixed(io.RawIOBase):
    """A stream whose first bytes were already read (to sniff gzip's magic number)."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head, self._rest = head, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._head or self._rest.read(len(buffer))
        self._head = b""
        buffer[: len(data)] = data
        return len(data)


def import_for_operator(
    *, stream: IO[bytes], account: Account, actor: User | None = None, progress: Progress | None = None
) -> ImportReport:
    """``manage.py import``: projects keep their ids (created in ``account`` when absent)."""
    return _Importer(account=account, actor=actor, target=None, progress=progress).run(stream)


def import_for_key(*, principal: Principal, stream: IO[bytes]) -> ImportReport:
    """``POST /api/v1/import``: a project export into the key's project — the exported project
    itself, or an empty one (its records then keep their ids under this project). Owners and
    admins with a ``memory:write`` key."""
    if SCOPE_WRITE not in principal.scopes:
        raise Forbidden("403 Forbidden: key lacks memory:write")
    if not principal.membership.manages:
        raise Forbidden(MANAGERS_ONLY)
    return _Importer(
        account=principal.account,
        actor=principal.user,
        target=principal.project,
        progress=None,
        ledger_allowed=SCOPE_LEDGER_WRITE in principal.scopes,
        quota=_plan_quota(admission.admit(principal)),
    ).run(stream)


def _plan_quota(admitted: admission.Admission) -> Callable[[str, list[Any]], None]:
    """A key's import counts against the project's plan like the writes it replays: before each
    batch of records, turns or ledger entries is inserted, the batch must fit under its limit
    (``project memory limit exceeded``, ``project session turn limit exceeded``, ``project ledger
    entry limit exceeded``: 403 ``limit_exceeded``; the whole import is rolled back). Forgotten
    records do not count, as for ``remember``. ``manage.py import`` (the operator) is not bounded."""

    def check(kind: str, objs: list[Any]) -> None:
        if kind == "memory":
            live = sum(1 for m in objs if m.forgotten_at is None)
            if live:
                admitted.check_quota(pending=live - 1)
        elif kind == "turn":
            if admitted.turn_room(len(objs)) < len(objs):
                raise Forbidden(TURN_LIMIT_TEXT, code="limit_exceeded")
        elif kind == "ledger_entry":
            admitted.check_ledger_quota(pending=len(objs) - 1)

    return check


class _Importer:
    def __init__(
        self,
        *,
        account: Account,
        actor: User | None,
        target: Project | None,
        progress: Progress | None,
        ledger_allowed: bool = True,
        quota: Callable[[str, list[Any]], None] | None = None,
    ):
        """``ledger_allowed``: a key's import takes ledger entries only with ``ledger:write``;
        ``quota``: a key's import checks each batch against the plan (``_plan_quota``)."""
        self.account, self.actor, self.target, self.progress = account, actor, target, progress
        self.report = ImportReport()
        self.collisions: list[str] = []
        self.collision_count = 0
        self.projects: dict[str, Project] = {}  # the file's project id → the project written into
        self.workspaces: dict[str, Workspace] = {}  # public id → workspace
        self.pending: dict[str, list[tuple[int, fmt.Line]]] = {}
        self.users = self._members()
        self.ledger_allowed = ledger_allowed
        self.quota = quota

    def _members(self) -> dict[str, User]:
        rows = Membership.objects.filter(account=self.account).select_related("user")
        return {m.user.email.lower(): m.user for m in rows}

    # --- driving -------------------------------------------------------------------------------

    def run(self, stream: IO[bytes]) -> ImportReport:
        lines = open_export(stream)
        _, first = next(lines, (0, {}))
        self._check_header(first)
        with transaction.atomic():
            for number, line in lines:
                self._take(number, line)
            self._flush_all()
            if self.collision_count:
                raise Collisions(self.collisions, self.collision_count)
            audit_record(
                action="data.imported",
                account=self.account,
                actor_user=self.actor,
                target_type="import",
                data={
                    "from_projects": sorted(self.projects),
                    "into_projects": sorted({str(p.pk) for p in self.projects.values()}),
                    **self.report.as_dict(),
                },
            )
        for project in {p.pk: p for p in self.projects.values()}.values():
            queue_vectors(project)
        return self.report

    def _check_header(self, line: fmt.Line) -> None:
        if get(line, "type") != "header" or get(line, "format") != fmt.FORMAT:
            raise InvalidInput("not an MMW export: the first line must be its header")
        version = get(line, "format_version")
        if not isinstance(version, int) or version > fmt.FORMAT_VERSION or version < 1:
            raise InvalidInput(
                f"export format version {version!r} is not supported (this MMW reads 1 to {fmt.FORMAT_VERSION})"
            )
        if self.target is not None and get(line, "scope") != "project":
            raise InvalidInput(
                "POST /api/v1/import takes a project export; import an account export with manage.py import"
            )

    def _take(self, number: int, line: fmt.Line) -> None:
        self.report.lines += 1
        kind = line["type"]
        handler = self._handlers().get(kind)
        if handler is None:
            raise InvalidInput(f"line {number}: unknown type {kind!r}")
        if kind not in self.pending and self.pending:
            self._flush_all()  # a new type: what it refers to (records of earlier types) is in
        if kind in ("project", "account"):
            handler([(number, line)])
        else:
            self.pending.setdefault(kind, []).append((number, line))
            if len(self.pending[kind]) >= BATCH:
                self._flush(kind)
        if self.progress is not None and self.report.lines % PROGRESS_EVERY == 0:
            self.progress(self.report)

    def _handlers(self) -> dict[str, Callable[[list[tuple[int, fmt.Line]]], None]]:
        return {
            "account": lambda rows: None,  # the target account is chosen by the caller
            "project": self._projects,
            "workspace": self._workspaces,
            "memory": self._memories,
            "relation": self._relations,
            "session": self._sessions,
            "turn": self._turns,
            "ledger_entry": self._ledger_entries,
            "audit_event": self._audit_events,
        }

    def _flush_all(self) -> None:
        for kind in list(self.pending):
            self._flush(kind)

    def _flush(self, kind: str) -> None:
        rows = self.pending.pop(kind, [])
        if rows:
            self._handlers()[kind](rows)

    def _collide(self, number: int, what: str) -> None:
        self.collision_count += 1
        if len(self.collisions) < MAX_REPORTED:
            self.collisions.append(f"line {number}: {what}")

    def _fatal(self, number: int, what: str) -> NoReturn:
        """A collision the rest of the file depends on (a project, a workspace): refuse at once."""
        self._collide(number, what)
        raise Collisions(self.collisions, self.collision_count)

    def _same(self, number: int, kind: str, label: str, existing: fmt.Line, line: fmt.Line) -> bool:
        """True when ``existing`` is ``line`` (then it counts as unchanged); a collision otherwise."""
        if existing == line:
            self.report.unchanged[kind] += 1
            return True
        fields = sorted(k for k in set(existing) | set(line) if existing.get(k) != get(line, k))
        self._collide(number, f"{label} exists with other data ({', '.join(fields)})")
        return False

    # --- helpers ------------------------------------------------------------------------------

    def _project_of(self, number: int, line: fmt.Line) -> Project:
        project = self.projects.get(str(get(line, "project")))
        if project is None:
            raise InvalidInput(f"line {number}: names project {get(line, 'project')!r}, not in the file before it")
        return project

    def _user(self, email: object) -> User | None:
        return self.users.get(email.lower()) if isinstance(email, str) else None

    def _mapped(self, line: fmt.Line) -> fmt.Line:
        """The line as this server would write it: the project id it was imported into."""
        project = self.projects.get(str(get(line, "project")))
        return {**line, "project": str(project.pk)} if project is not None and "project" in line else line

    def _check(self, number: int, obj: Any, exclude: list[str]) -> None:
        try:
            obj.clean_fields(exclude=exclude)
        except ValidationError as exc:
            raise InvalidInput(f"line {number}: {'; '.join(exc.messages)}") from exc

    def _labels(self, kind: str, pairs: list[tuple[Any, object]]) -> None:
        labels = [
            AuthorLabel(account=self.account, kind=kind, object_id=str(pk), email=str(email))
            for pk, email in pairs
            if isinstance(email, str) and self._user(email) is None
        ]
        AuthorLabel.objects.bulk_create(labels, ignore_conflicts=True)

    def _insert(self, model: type[Any], objs: list[Any], kind: str) -> None:
        if not objs:
            return
        if self.quota is not None:
            self.quota(kind, objs)
        try:
            with transaction.atomic():
                bulk.insert_rows(model, objs, keep_times=True)
        except IntegrityError as exc:
            self._collide(
                0, f"{len(objs)} {kind}(s) collide with existing rows of this server ({exc.__cause__ or exc})"
            )
            return
        self.report.created[kind] += len(objs)

    # --- each type ----------------------------------------------------------------------------

    def _projects(self, rows: list[tuple[int, fmt.Line]]) -> None:
        for number, line in rows:
            file_id = str(get(line, "id"))
            if self.target is not None:
                self._into_target(number, file_id)
                continue
            try:
                pid = uuid.UUID(file_id)
            except ValueError as exc:
                raise InvalidInput(f"line {number}: project id {file_id!r} is not a UUID") from exc
            existing = Project.objects.filter(pk=pid).first()
            if existing is not None and existing.account_id != self.account.pk:
                self._fatal(number, f"project {file_id} exists in another account")
            self.projects[file_id] = existing or self._new_project(number, pid, line)
            if existing is not None:
                self._same(number, "project", f"project {file_id}", fmt.project_line(existing), line)

    def _into_target(self, number: int, file_id: str) -> None:
        target = self.target
        assert target is not None
        if self.projects:
            raise InvalidInput(f"line {number}: a project export holds one project")
        empty = (
            not Memory.objects.filter(project=target).exists()
            and not Session.objects.filter(project=target).exists()
            and not Entry.objects.filter(project=target).exists()
        )
        earlier = AuditEvent.objects.filter(
            account=self.account, action="data.imported", data__into_projects__contains=[str(target.pk)]
        ).filter(data__from_projects__contains=[file_id])
        if file_id != str(target.pk) and not empty and not earlier.exists():
            raise Conflict(NOT_EMPTY)
        self.projects[file_id] = target
        self.projects[str(target.pk)] = target

    def _new_project(self, number: int, pid: uuid.UUID, line: fmt.Line) -> Project:
        project = Project(
            id=pid,
            account=self.account,
            name=get(line, "name"),
            guard_secrets_mode=get(line, "guard_secrets_mode"),
            created_at=parse_time(get(line, "created_at"), "created_at"),
            deleted_at=parse_time(get(line, "deleted_at"), "deleted_at"),
        )
        self._check(number, project, ["account"])
        self._insert(Project, [project], "project")
        return project

    def _workspaces(self, rows: list[tuple[int, fmt.Line]]) -> None:
        ids = {str(get(line, "id")) for _, line in rows}
        found = {str(w.public_id): w for w in Workspace.objects.filter(public_id__in=_uuids(ids))}
        new = []
        for number, line in rows:
            project = self._project_of(number, line)
            existing = found.get(str(get(line, "id")))
            if existing is not None:
                if existing.project_id != project.pk:
                    self._fatal(number, f"workspace {get(line, 'id')} exists in another project")
                self.workspaces[str(existing.public_id)] = existing
                mine = fmt.workspace_line(existing, str(project.pk))
                self._same(number, "workspace", f"workspace {get(line, 'id')}", mine, self._mapped(line))
                continue
            workspace = Workspace(
                project=project,
                public_id=_uuid(number, get(line, "id")),
                name=get(line, "name"),
                created_at=parse_time(get(line, "created_at"), "created_at"),
                deleted_at=parse_time(get(line, "deleted_at"), "deleted_at"),
            )
            self._check(number, workspace, ["project"])
            if Workspace.objects.filter(project=project, name=workspace.name).exists():
                self._collide(
                    number, f"workspace name {workspace.name!r} is taken in this project by another workspace"
                )
                continue
            new.append(workspace)
            self.workspaces[str(workspace.public_id)] = workspace
        self._insert(Workspace, new, "workspace")
        for workspace in new:  # their primary keys, for the records that follow
            self.workspaces[str(workspace.public_id)] = Workspace.objects.get(public_id=workspace.public_id)

    def _memories(self, rows: list[tuple[int, fmt.Line]]) -> None:
        ids = _uuids(str(get(line, "id")) for _, line in rows)
        found = {
            str(m.pk): m
            for m in Memory.objects.filter(pk__in=ids).select_related("author", "forgotten_by").defer("embedding")
        }
        labels = dict(AuthorLabel.objects.filter(kind="memory", object_id__in=found).values_list("object_id", "email"))
        new: list[tuple[Memory, object]] = []
        for number, line in rows:
            line = self._mapped(line)
            existing = found.get(str(get(line, "id")))
            if existing is not None:
                self._compare_memory(number, existing, line, labels)
                continue
            new.append((self._new_memory(number, line), get(line, "author")))
        self._labels("memory", [(m.pk, email) for m, email in new if m.author_id is None])
        self._insert(Memory, [m for m, _ in new], "memory")
        # The predecessors' words, as remember's write path adds them (their vectors come from
        # queue_vectors, which embeds a sequence member with its predecessor's tail).
        sequence.link([m for m, _ in new])

    def _compare_memory(self, number: int, existing: Memory, line: fmt.Line, labels: dict[str, str]) -> None:
        project = self._project_of(number, line)
        if existing.project_id != project.pk:
            self._collide(number, f"memory {existing.pk} exists in another project")
            return
        workspace = next((k for k, w in self.workspaces.items() if w.pk == existing.workspace_id), None)
        author = existing.author.email if existing.author else labels.get(str(existing.pk))
        by = existing.forgotten_by.email if existing.forgotten_by else None
        mine = fmt.memory_line(existing, workspace_id=str(workspace), author=author, forgotten_by=by)
        self._same(number, "memory", f"memory {existing.pk}", mine, line)

    def _new_memory(self, number: int, line: fmt.Line) -> Memory:
        project = self._project_of(number, line)
        workspace = self.workspaces.get(str(get(line, "workspace")))
        if workspace is None or workspace.project_id != project.pk:
            raise InvalidInput(f"line {number}: names workspace {get(line, 'workspace')!r}, not in the file before it")
        t = parse_time
        common: dict[str, Any] = {
            "id": _uuid(number, get(line, "id")),
            "account": self.account,
            "project": project,
            "workspace": workspace,
            "version": get(line, "version"),
            "visibility": get(line, "visibility"),
            "author": self._user(get(line, "author")),
            "created_at": t(get(line, "created_at"), "created_at"),
            "occurred_at": t(get(line, "occurred_at"), "occurred_at"),
            "forgotten_at": t(get(line, "forgotten_at"), "forgotten_at"),
        }
        if get(line, "forgotten"):
            memory = Memory(**common, content=fmt.PURGED_CONTENT, forgotten_by=self._user(get(line, "forgotten_by")))
        else:
            memory = Memory(
                **common,
                content=get(line, "content"),
                scope=get(line, "scope"),
                source=get(line, "source"),
                source_id=get(line, "source_id"),
                source_hash=get(line, "source_hash"),
                source_revision=get(line, "source_revision"),
                fact_key=get(line, "fact_key"),
                expected_version=get(line, "expected_version"),
                superseded_at=t(get(line, "superseded_at"), "superseded_at"),
                confidence=get(line, "confidence"),
                importance=get(line, "importance"),
                derived_from=[_uuid(number, i) for i in get(line, "derived_from") or []],
                tags=get(line, "tags") or [],
                reason=get(line, "reason"),
                expires_at=t(get(line, "expires_at"), "expires_at"),
                department_ids=get(line, "department_ids") or [],
                device_label=get(line, "device_label") or "",
                position=get(line, "position"),
                archived_at=t(get(line, "archived_at"), "archived_at"),
            )
        if not get(line, "forgotten"):
            _screen(number, memory, record_rules.SCREENED_FIELDS, project.guard_secrets_mode)
        self._check(
            number,
            memory,
            [
                "account",
                "project",
                "workspace",
                "author",
                "api_key",
                "forgotten_by",
                "embedding",
                "search_document",
                "context_document",
                "recency_document",
            ],
        )
        return memory

    def _relations(self, rows: list[tuple[int, fmt.Line]]) -> None:
        project_ids = [p.pk for p in self.projects.values()]
        ends = _uuids(str(get(line, k)) for _, line in rows for k in ("from", "to"))
        known = set(Memory.objects.filter(pk__in=ends, project_id__in=project_ids).values_list("id", flat=True))
        existing = {
            (str(r.from_memory_id), str(r.to_memory_id), r.relation): r
            for r in MemoryRelation.objects.filter(from_memory_id__in=ends, to_memory_id__in=ends)
        }
        new = []
        for number, line in rows:
            key = (str(get(line, "from")), str(get(line, "to")), str(get(line, "relation")))
            found = existing.get(key)
            if found is not None:
                self._same(number, "relation", f"relation {' '.join(key)}", fmt.relation_line(found), line)
                continue
            if not {_uuid(number, key[0]), _uuid(number, key[1])} <= known:
                raise InvalidInput(f"line {number}: a relation between records not in this project")
            relation = MemoryRelation(
                from_memory_id=key[0],
                to_memory_id=key[1],
                relation=key[2],
                score=get(line, "score"),
                created_at=parse_time(get(line, "created_at"), "created_at"),
            )
            self._check(number, relation, ["from_memory", "to_memory"])
            new.append(relation)
        self._insert(MemoryRelation, new, "relation")

    def _sessions(self, rows: list[tuple[int, fmt.Line]]) -> None:
        self._authored(rows, Session, "session", "session", fmt.session_line, self._new_session)

    def _authored(
        self,
        rows: list[tuple[int, fmt.Line]],
        model: type[Session] | type[Entry],
        kind: str,
        noun: str,
        line_of: Callable[..., fmt.Line],
        build: Callable[[int, fmt.Line, Project], Any],
    ) -> None:
        """Rows that keep their ids and their author (sessions, ledger entries): one already here
        in this project with the same line (``line_of``) is unchanged, with another a collision,
        as is one in another project; the rest are built (``build``) and inserted, an author who
        is not a user here kept as a label."""
        ids = _uuids(str(get(line, "id")) for _, line in rows)
        found = {str(o.pk): o for o in model.objects.filter(pk__in=ids).select_related("author")}
        labels = dict(AuthorLabel.objects.filter(kind=kind, object_id__in=found).values_list("object_id", "email"))
        new: list[tuple[Any, object]] = []
        for number, line in rows:
            line = self._mapped(line)
            project = self._project_of(number, line)
            existing = found.get(str(get(line, "id")))
            if existing is not None:
                if existing.project_id != project.pk:
                    self._collide(number, f"{noun} {existing.pk} exists in another project")
                    continue
                author = existing.author.email if existing.author else labels.get(str(existing.pk))
                self._same(number, kind, f"{noun} {existing.pk}", line_of(existing, author=author), line)
                continue
            new.append((build(number, line, project), get(line, "author")))
        self._labels(kind, [(o.pk, email) for o, email in new if o.author_id is None])
        self._insert(model, [o for o, _ in new], kind)

    def _new_session(self, number: int, line: fmt.Line, project: Project) -> Session:
        t = parse_time
        stub = bool(get(line, "forgotten"))
        session = Session(
            id=_uuid(number, get(line, "id")),
            account=self.account,
            project=project,
            author=self._user(get(line, "author")),
            client=get(line, "client"),
            client_session_id=get(line, "client_session_id") or f"forgotten-{get(line, 'id')}"
            if stub
            else get(line, "client_session_id"),
            title="" if stub else get(line, "title"),
            working_directory="" if stub else get(line, "working_directory"),
            device="" if stub else get(line, "device"),
            started_at=None if stub else t(get(line, "started_at"), "started_at"),
            ended_at=None if stub else t(get(line, "ended_at"), "ended_at"),
            shared_with_project=False if stub else get(line, "shared_with_project"),
            turn_count=0 if stub else get(line, "turn_count"),
            created_at=t(get(line, "created_at"), "created_at"),
            updated_at=t(get(line, "updated_at") or get(line, "created_at"), "updated_at"),
            forgotten_at=t(get(line, "forgotten_at"), "forgotten_at"),
        )
        self._check(number, session, ["account", "project", "author", "api_key", "forgotten_by"])
        return session

    def _turns(self, rows: list[tuple[int, fmt.Line]]) -> None:
        sessions = _uuids(str(get(line, "session")) for _, line in rows)
        project_ids = [p.pk for p in self.projects.values()]
        known = {
            s: p
            for s, p in Session.objects.filter(pk__in=sessions, project_id__in=project_ids).values_list(
                "id", "project_id"
            )
        }
        existing = {
            (str(t.session_id), t.position): t for t in Turn.objects.filter(session_id__in=sessions).defer("embedding")
        }
        new = []
        for number, line in rows:
            key = (str(get(line, "session")), get(line, "position"))
            found = existing.get(key)
            if found is not None:
                self._same(number, "turn", f"turn {key[0]}#{key[1]}", fmt.turn_line(found), line)
                continue
            session_id = _uuid(number, key[0])
            if session_id not in known:
                raise InvalidInput(f"line {number}: a turn of a session not in this project")
            turn = Turn(
                session_id=session_id,
                project_id=known[session_id],
                position=get(line, "position"),
                role=get(line, "role"),
                occurred_at=parse_time(get(line, "occurred_at"), "occurred_at"),
                content=get(line, "content"),
                content_hash=get(line, "content_hash"),
                is_stub=bool(get(line, "is_stub")),
                stub_reason=get(line, "stub_reason") or "",
                created_at=parse_time(get(line, "created_at"), "created_at"),
            )
            self._check(number, turn, ["id", "session", "project", "embedding", "search_document", "context_document"])
            new.append(turn)
        self._insert(Turn, new, "turn")

    def _ledger_entries(self, rows: list[tuple[int, fmt.Line]]) -> None:
        """Entries keep their ids, amounts, links (``reverses``, ``completes``) and times; one
        already here with the same line is unchanged, with another a collision. An entry is never
        updated (the ledger is append-only), so an import only ever adds."""
        if not self.ledger_allowed:
            raise Forbidden("403 Forbidden: key lacks ledger:write")
        self._authored(rows, Entry, "ledger_entry", "ledger entry", fmt.ledger_entry_line, self._new_entry)

    def _new_entry(self, number: int, line: fmt.Line, project: Project) -> Entry:
        t = parse_time
        try:
            if not isinstance(get(line, "currency"), str) or not isinstance(get(line, "amount"), str):
                raise InvalidInput("amount and currency must be strings")
            currency = check_currency(get(line, "currency"))
            amount = parse_amount(get(line, "amount"), currency)
        except InvalidInput as exc:
            raise InvalidInput(f"line {number}: {exc.message}") from None
        link = get(line, "reverses"), get(line, "completes")
        entry = Entry(
            id=_uuid(number, get(line, "id")),
            account=self.account,
            project=project,
            kind=get(line, "kind"),
            amount=amount,
            currency=currency,
            occurred_at=t(get(line, "occurred_at"), "occurred_at"),
            due_at=t(get(line, "due_at"), "due_at"),
            repeat=get(line, "repeat") or "",
            counterparty=get(line, "counterparty") or "",
            category=get(line, "category") or "",
            memo=get(line, "memo") or "",
            reference=get(line, "reference"),
            content_digest=get(line, "content_digest"),
            tags=get(line, "tags") or [],
            visibility=get(line, "visibility"),
            department_ids=get(line, "department_ids") or [],
            author=self._user(get(line, "author")),
            device_label=get(line, "device_label") or "",
            reverses_id=_uuid(number, link[0]) if link[0] is not None else None,
            completes_id=_uuid(number, link[1]) if link[1] is not None else None,
            completes_due_at=t(get(line, "completes_due_at"), "completes_due_at"),
            created_at=t(get(line, "created_at"), "created_at"),
        )
        _screen(number, entry, ledger_services.SCREENED, project.guard_secrets_mode)
        self._check(number, entry, ["account", "project", "author", "api_key", "reverses", "completes"])
        return entry

    def _audit_events(self, rows: list[tuple[int, fmt.Line]]) -> None:
        renames = {old: str(p.pk) for old, p in self.projects.items() if old != str(p.pk)}
        new = []
        for number, line in rows:
            data = get(line, "data") if isinstance(get(line, "data"), dict) else {}
            if data.get("project") in renames:
                data = {**data, "project": renames[data["project"]]}
            line = {**line, "data": data}
            created = parse_time(get(line, "created_at"), "created_at")
            same = list(
                AuditEvent.objects.filter(
                    account=self.account,
                    action=get(line, "action"),
                    target_type=get(line, "target_type") or "",
                    target_id=get(line, "target_id") or "",
                    created_at=created,
                ).select_related("actor_user")
            )
            labels = dict(
                AuthorLabel.objects.filter(kind="audit_event", object_id__in=[str(e.pk) for e in same]).values_list(
                    "object_id", "email"
                )
            )
            if any(fmt.audit_line(e, actor=_actor(e, labels)) == line for e in same):
                self.report.unchanged["audit_event"] += 1
                continue
            event = AuditEvent(
                account=self.account,
                actor_user=self._user(get(line, "actor")),
                action=get(line, "action"),
                target_type=get(line, "target_type") or "",
                target_id=get(line, "target_id") or "",
                data=data,
            )
            self._check(number, event, ["account", "actor_user", "actor_key"])
            new.append((event, created, get(line, "actor")))
        self._insert_audit(new)

    def _insert_audit(self, new: list[tuple[AuditEvent, Any, object]]) -> None:
        """Audit rows need their ids (for the actor's label): ``bulk_create`` returns them, and the
        original times are written back after it (``auto_now_add`` would stamp now)."""
        if not new:
            return
        AuditEvent.objects.bulk_create([event for event, _, _ in new])
        for event, created, _ in new:
            AuditEvent.objects.filter(pk=event.pk).update(created_at=created)
        self._labels("audit_event", [(event.pk, actor) for event, _, actor in new if event.actor_user_id is None])
        self.report.created["audit_event"] += len(new)


def _actor(event: AuditEvent, labels: dict[str, str]) -> str | None:
    return event.actor_user.email if event.actor_user is not None else labels.get(str(event.pk))


def _screen(number: int, obj: Memory | Entry, fields: tuple[str, ...], secrets_mode: str) -> None:
    """Memory Guard over an imported record's or entry's text ``fields``, as ``remember`` and
    ``ledger_record`` screen them: a file is not trusted because it looks like an export. One the
    Guard refuses, or would change (a secret to redact), is refused with its line — an MMW export
    passes unchanged (redaction markers are stable), so the round trip stays byte-identical."""
    values: dict[str, Any] = {name: getattr(obj, name) for name in fields}
    values["tags"] = list(obj.tags)
    try:
        _, redactions = record_rules.guarded(values, secrets_mode=secrets_mode)
    except InvalidInput as exc:
        raise InvalidInput(f"line {number}: {exc.message}") from None
    if redactions:
        rules = ", ".join(sorted({f"{r.field}: {r.rule_id}" for r in redactions}))
        raise InvalidInput(f"line {number}: holds a secret Memory Guard redacts ({rules}); import refused")


def queue_vectors(project: Project) -> int:
    """Ask the worker to embed the project's live records that have no vector (an import's);
    ids go out in batches, so the memory used does not grow with the project."""
    ids = Memory.objects.filter(project=project, forgotten_at__isnull=True, embedding__isnull=True).values_list(
        "id", flat=True
    )
    count = 0
    batch: list[uuid.UUID] = []
    for memory_id in ids.iterator(BATCH):
        batch.append(memory_id)
        if len(batch) == BATCH:
            memory_tasks.enqueue_embedding(batch)
            count, batch = count + len(batch), []
    if batch:
        memory_tasks.enqueue_embedding(batch)
    return count + len(batch)


def get(line: fmt.Line, name: str) -> Any:
    """A line's field as the file has it (checked by the model's ``clean_fields`` before use)."""
    return line.get(name)


def parse_time(value: object, name: str) -> Any:
    return fmt.parse_time(value, name)


def _uuid(number: int, value: object) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError as exc:
        raise InvalidInput(f"line {number}: {value!r} is not a UUID") from exc


def _uuids(values: Any) -> list[uuid.UUID]:
    found = []
    for value in values:
        try:
            found.append(uuid.UUID(str(value)))
        except ValueError:
            continue
    return found
