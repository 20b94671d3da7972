"""What every import shares (``datarights.restore.importer`` explains an import): the reports and
refusals, the callers' ``Policy``, and ``ImporterBase`` — the driving, the checks, the ids and
authors, and the rows of the tenancy and of data rights themselves (projects, workspaces, audit
rows). Each other app's rows are a mixin in that app's ``restore`` module (``memories.restore``,
``transcripts.restore``, ``ledger.restore``), registered here with ``register``.

Why one module of this length: the helpers every mixin calls (ids renewed per project, authors
and their labels, collisions and invalid lines with their line numbers, the one-statement insert)
and the driving that calls the mixins are one contract: a line is checked, then new, unchanged or
a collision, the same way for every type."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Any, NoReturn

from django.apps import apps
from django.db import IntegrityError, transaction
from django.db.models import Model
from django.utils import timezone
from django.utils.module_loading import autodiscover_modules

from accounts.models import Account, ApiKey, AuditEvent, Project, User, Workspace
from accounts.services import audit_record
from datarights import format as fmt
from datarights.models import AuthorLabel
from datarights.restore import lines as door
from datarights.restore import reader
from ledger.models import Entry
from memories import tasks as memory_tasks
from memories.models import Memory
from mmw import bulk
from mmw.errors import Conflict, InvalidInput, MMWError
from orgs.models import Membership
from transcripts import tasks as session_tasks
from transcripts.models import Session

BATCH = 1000
MAX_REPORTED = 50
PROGRESS_EVERY = 2000
NOT_EMPTY = (
    "the key's project already holds other records: import into an empty project, the exported one, "
    "or one this export was imported into before"
)
_REMAP = uuid.UUID("6f1b3a52-4f0e-4a57-9d43-3c8f5e0b7a11")  # namespace of ids an import had to renew


def _listed(total: int, report: list[str]) -> str:
    more = f" (and {total - len(report)} more)" if total > len(report) else ""
    return f"{more}: " + "; ".join(report)


class Collisions(Conflict):
    """The file would overwrite other data of the target; nothing was imported. ``report`` names
    each collision (the first ``MAX_REPORTED``)."""

    def __init__(self, report: list[str], total: int) -> None:
        super().__init__(f"import refused: {total} record(s) collide with other data" + _listed(total, report))
        self.report = report
        self.total = total


class InvalidLines(InvalidInput):
    """Some lines break the rules their write route enforces; nothing was imported. ``report``
    names each (the first ``MAX_REPORTED``)."""

    def __init__(self, report: list[str], total: int) -> None:
        super().__init__(f"import refused: {total} line(s) are invalid" + _listed(total, report))
        self.report = report
        self.total = total


@dataclass
class ImportReport:
    created: Counter[str] = field(default_factory=Counter)
    unchanged: Counter[str] = field(default_factory=Counter)
    ignored: Counter[str] = field(default_factory=Counter)
    redacted: int = 0
    lines: int = 0
    bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "created": dict(self.created),
            "unchanged": dict(self.unchanged),
            "ignored": dict(self.ignored),
            "redacted": self.redacted,
        }


Progress = Callable[[ImportReport], None]
Quota = Callable[[str, list[Any]], None]


@dataclass(frozen=True)
class Policy:
    """Who imports, and so what the file may decide (module docstring)."""

    operator: bool
    account: Account
    actor: User | None = None
    actor_key: ApiKey | None = None
    target: Project | None = None
    ledger_allowed: bool = True
    quota: Quota | None = None
    limits: reader.Limits = field(default_factory=reader.Limits)


Rows = list[tuple[int, dict[str, Any]]]

_ROWS: dict[str, type[ImporterBase]] = {}  # app label -> the mixin building that app's rows


def register(app_label: str, rows: type[ImporterBase]) -> None:
    """An app's rows (its ``restore`` module calls this once, when imported): a subclass of
    ``ImporterBase`` whose ``_handlers`` adds the line types it builds."""
    _ROWS[app_label] = rows


def registered() -> tuple[type[ImporterBase], ...]:
    """Every app's rows, in the order of ``INSTALLED_APPS``; each app's ``restore`` module is
    found as the admin finds ``admin`` modules, so this app imports none of them."""
    autodiscover_modules("restore")
    return tuple(_ROWS[config.label] for config in apps.get_app_configs() if config.label in _ROWS)


class ImporterBase:
    """One import (``datarights.restore.importer``): the driving, the shared checks and ids, and the
    rows that are this app's and the tenancy's (projects, workspaces, audit rows). The rows of each
    other app are built by its mixin, in that app's ``restore`` module (``register``)."""

    def __init__(self, policy: Policy, progress: Progress | None = None) -> None:
        self.policy = policy
        self.progress = progress
        self.report = ImportReport()
        self.door = door.Door(now=timezone.now())
        self.errors: list[str] = []
        self.error_count = 0
        self.collisions: list[str] = []
        self.collision_count = 0
        self.projects: dict[str, Project] = {}  # the file's project id → the project written into
        self.workspaces: dict[uuid.UUID, Workspace] = {}  # the file's public id → the workspace
        self.ids: dict[tuple[str, uuid.UUID], uuid.UUID] = {}  # (kind, file id) → stored id
        self.pending: dict[str, Rows] = {}
        self.members = self._members()
        self.sessions_touched: dict[uuid.UUID, int] = {}  # session → lowest new turn position
        self.accepted: set[tuple[str, uuid.UUID]] = set()  # (kind, stored id) of rows this run adds
        self.first_lines: dict[tuple[str, str], int] = {}  # (kind, file id) → the line that held it first
        self._last_progress = 0.0

    # --- driving -------------------------------------------------------------------------------

    def run(self, stream: IO[bytes]) -> ImportReport:
        seen = reader.Progress()
        numbered = reader.lines(stream, self.policy.limits, seen)
        number, first = next(numbered, (0, {}))
        self._check_header(first)
        with transaction.atomic():
            for number, line in numbered:
                self.report.lines, self.report.bytes = seen.lines, seen.bytes
                self._take(number, line)
            self._flush_all()
            self._refuse_if_any()
            self._finish()
            audit_record(
                action="data.imported",
                account=self.policy.account,
                actor_user=self.policy.actor,
                actor_key=self.policy.actor_key,
                target_type="import",
                data={
                    "from_projects": sorted(self.projects),
                    "into_projects": sorted({str(p.pk) for p in self.projects.values()}),
                    **self.report.as_dict(),
                },
            )
            touched = list(self.sessions_touched)
            transaction.on_commit(lambda: _queue_vectors(self.projects.values(), touched))
        self.report.lines, self.report.bytes = seen.lines, seen.bytes
        return self.report

    def _check_header(self, line: dict[str, Any]) -> None:
        if line.get("type") != "header" or line.get("format") != fmt.FORMAT:
            raise InvalidInput("not an MMW export: the first line must be its header")
        version = line.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= fmt.FORMAT_VERSION:
            raise InvalidInput(
                f"export format version {version!r} is not supported (this MMW reads 1 to {fmt.FORMAT_VERSION})"
            )
        if self.policy.target is not None and line.get("scope") != "project":
            raise InvalidInput("a project takes a project export; import an account export with manage.py import")

    def _take(self, number: int, line: dict[str, Any]) -> None:
        kind = line["type"]
        handler = self._handlers().get(kind)
        if handler is None:
            raise InvalidInput(f"line {number}: unknown type {kind!r}")
        if kind not in self.pending and self.pending:
            self._flush_all()  # a new type: what it refers to (rows of earlier types) is in
        if kind in ("project", "account"):
            handler([(number, line)])
        else:
            self.pending.setdefault(kind, []).append((number, line))
            if len(self.pending[kind]) >= BATCH:
                self._flush(kind)
        self._tick()

    def _tick(self) -> None:
        if self.progress is None or self.report.lines % PROGRESS_EVERY:
            return
        now = time.monotonic()
        if now - self._last_progress >= 1.0:
            self._last_progress = now
            self.progress(self.report)

    def _handlers(self) -> dict[str, Callable[[Rows], None]]:
        """Line type → its rows' builder: these here, each app's mixin adds its own."""
        return {
            "account": lambda rows: None,  # the target account is chosen by the caller
            "project": self._projects,
            "workspace": self._workspaces,
            "audit_event": self._audit_events,
        }

    def _finish(self) -> None:
        """After every row is in, before the audit row: what a mixin completes (sessions' counts)."""

    def _flush_all(self) -> None:
        for kind in list(self.pending):
            self._flush(kind)

    def _flush(self, kind: str) -> None:
        rows = self.pending.pop(kind, [])
        if rows:
            self._handlers()[kind](rows)

    # --- errors and collisions ---------------------------------------------------------------

    def _checked(self, rows: Rows, check: Callable[[int, dict[str, Any]], dict[str, Any]]) -> Rows:
        """Each line through its door; an invalid one is noted and left out."""
        checked: Rows = []
        for number, line in rows:
            before = len(self.door.redacted)
            try:
                values = check(number, line)
            except MMWError as exc:
                self._invalid(number, exc.message)
            else:
                first = self._first_line_of(line["type"], values, number)
                if first is None:
                    checked.append((number, values))
                else:  # two rows of one id would clash at the insert, far from the line to blame
                    self._invalid(number, f"repeats the id of line {first}")
            self.report.redacted += len(self.door.redacted) - before
        return checked

    def _first_line_of(self, kind: str, values: dict[str, Any], number: int) -> int | None:
        """The earlier line of this file holding the same ``kind`` and id, or None (and this line
        is remembered as the first)."""
        identity = values.get("id", values.get("public_id"))
        if identity is None:
            return None
        first = self.first_lines.setdefault((kind, str(identity)), number)
        return None if first == number else first

    def _invalid(self, number: int, what: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_REPORTED:
            self.errors.append(f"line {number}: {what}")

    def _collide(self, number: int, what: str) -> None:
        self.collision_count += 1
        if len(self.collisions) < MAX_REPORTED:
            self.collisions.append(f"line {number}: {what}")

    def _fatal(self, number: int, what: str) -> NoReturn:
        """A clash the rest of the file depends on (a project): refuse at once."""
        self._collide(number, what)
        raise Collisions(self.collisions, self.collision_count)

    def _refuse_if_any(self) -> None:
        if self.error_count:
            raise InvalidLines(self.errors, self.error_count)
        if self.collision_count:
            raise Collisions(self.collisions, self.collision_count)

    def _same(self, number: int, kind: str, label: str, existing: fmt.Line, line: fmt.Line) -> bool:
        """True when ``existing`` is ``line`` (then it counts as unchanged); a collision otherwise.
        Both are rows of the target, rendered by ``datarights.format``."""
        if existing == line:
            self.report.unchanged[kind] += 1
            return True
        fields = sorted(k for k in set(existing) | set(line) if existing.get(k) != line.get(k))
        self._collide(number, f"{label} exists with other data ({', '.join(fields)})")
        return False

    # --- ids, projects, authors ----------------------------------------------------------------

    def _members(self) -> dict[str, User]:
        """Who a row's author may be: the operator maps every member by e-mail; a member's import
        maps only the caller (anyone else would be impersonated)."""
        if not self.policy.operator:
            actor = self.policy.actor
            return {actor.email.lower(): actor} if actor is not None else {}
        rows = Membership.objects.filter(account_id=self.policy.account.pk).select_related("user")
        return {m.user.email.lower(): m.user for m in rows}

    def _user(self, email: str | None) -> User | None:
        return self.members.get(email) if email is not None else None

    def _project_of(self, number: int, value: object) -> Project:
        project = self.projects.get(str(value))
        if project is None:
            raise InvalidInput(f"line {number}: names project {value!r}, not in the file before it")
        return project

    def _own_ids(self, kind: str, model: type[Model], ids: Iterable[uuid.UUID], *, key: str = "pk") -> None:
        """Decide the stored id of each file id of ``kind``: its own, or — in a member's import,
        when a row outside the target project already has it — a new one derived from the project
        and the file id. The rows found outside are never reported: the answer is the same as for
        an id nobody has (module docstring)."""
        wanted = [i for i in ids if (kind, i) not in self.ids]
        if not wanted:
            return
        target = self.policy.target
        if self.policy.operator or target is None:
            self.ids.update({(kind, i): i for i in wanted})
            return
        pending = {i: i for i in wanted}  # file id → the id tried for it
        while pending:  # one query a round; a second round only for a renewed id taken as well
            tried = list(pending.values())
            manager = model._default_manager
            taken = set(manager.filter(**{f"{key}__in": tried}).exclude(project=target).values_list(key, flat=True))
            for file_id, stored in list(pending.items()):
                if stored in taken:
                    pending[file_id] = uuid.uuid5(_REMAP, f"{target.pk}:{kind}:{stored}")
                else:
                    self.ids[(kind, file_id)] = stored
                    del pending[file_id]

    def _id(self, kind: str, file_id: uuid.UUID) -> uuid.UUID:
        return self.ids.get((kind, file_id), file_id)

    def _labels(self, kind: str, pairs: list[tuple[Any, str | None]]) -> None:
        labels = [
            AuthorLabel(account_id=self.policy.account.pk, kind=kind, object_id=str(pk), email=email)
            for pk, email in pairs
            if email is not None and self._user(email) is None
        ]
        AuthorLabel.objects.bulk_create(labels, ignore_conflicts=True)

    def _insert(self, model: type[Model], objs: list[Any], kind: str) -> None:
        if not objs:
            return
        if self.policy.quota is not None:
            self.policy.quota(kind, objs)
        try:
            with transaction.atomic():
                bulk.insert_rows(model, objs, keep_times=True)
        except IntegrityError:
            # Every identity was checked above; a clash now is a row written meanwhile by another
            # import or write. Named without the database's text, which would quote other rows.
            raise Conflict(
                f"import refused: {len(objs)} {kind}(s) clashed with rows written meanwhile; retry"
            ) from None
        self.report.created[kind] += len(objs)

    # --- projects and workspaces -------------------------------------------------------------

    def _projects(self, rows: Rows) -> None:
        for number, line in self._checked(rows, lambda n, line: door.check_project(line, self.door)):
            file_id = str(line["id"])
            if self.policy.target is not None:
                self._into_target(number, file_id)
                continue
            existing = Project.objects.filter(pk=line["id"]).first()
            if existing is not None and existing.account_id != self.policy.account.pk:
                self._fatal(number, f"project {file_id} exists in another account")
            project = existing or self._new_project(line)
            self.projects[file_id] = project
            self.door = door.Door(
                now=self.door.now, secrets_mode=project.guard_secrets_mode, redacted=self.door.redacted
            )
            if existing is not None:
                self._same(
                    number,
                    "project",
                    f"project {file_id}",
                    fmt.project_line(existing),
                    fmt.project_line(Project(**{**line, "account_id": self.policy.account.pk})),
                )

    def _into_target(self, number: int, file_id: str) -> None:
        target = self.policy.target
        assert target is not None
        if self.projects:
            raise InvalidInput(f"line {number}: a project export holds one project")
        empty = not (
            Memory.objects.filter(project=target).exists()
            or Session.objects.filter(project=target).exists()
            or Entry.objects.filter(project=target).exists()
        )
        earlier = AuditEvent.objects.filter(
            account_id=self.policy.account.pk,
            action="data.imported",
            data__into_projects__contains=[str(target.pk)],
            data__from_projects__contains=[file_id],
        )
        if file_id != str(target.pk) and not empty and not earlier.exists():
            raise Conflict(NOT_EMPTY)
        self.projects[file_id] = target
        self.projects[str(target.pk)] = target
        self.door = door.Door(now=self.door.now, secrets_mode=target.guard_secrets_mode, redacted=self.door.redacted)

    def _new_project(self, values: dict[str, Any]) -> Project:
        project = Project(**values, account_id=self.policy.account.pk)
        self._insert(Project, [project], "project")
        return project

    def _workspaces(self, rows: Rows) -> None:
        checked = self._checked(rows, lambda n, line: door.check_workspace(line, self.door))
        self._own_ids("workspace", Workspace, (v["public_id"] for _, v in checked), key="public_id")
        projects = {p.pk for p in self.projects.values()}
        found = {
            w.public_id: w
            for w in Workspace.objects.filter(
                public_id__in=[self._id("workspace", v["public_id"]) for _, v in checked], project_id__in=projects
            )
        }
        new = []
        for number, values in checked:
            project = self._project_of(number, values["project"])
            file_id = values["public_id"]
            stored = self._id("workspace", file_id)
            existing = found.get(stored)
            if existing is None and self.policy.operator and Workspace.objects.filter(public_id=stored).exists():
                self._fatal(number, f"workspace {file_id} exists in another project")
            workspace = Workspace(**{**values, "public_id": stored, "project": project})
            if existing is not None:
                self.workspaces[file_id] = existing
                self._same(
                    number,
                    "workspace",
                    f"workspace {file_id}",
                    fmt.workspace_line(existing, str(project.pk)),
                    fmt.workspace_line(workspace, str(project.pk)),
                )
                continue
            if Workspace.objects.filter(project=project, name=workspace.name).exists():
                self._collide(number, f"workspace name {workspace.name!r} is taken in this project")
                continue
            new.append(workspace)
            self.workspaces[file_id] = workspace
        self._insert(Workspace, new, "workspace")
        file_ids = {self._id("workspace", v["public_id"]): v["public_id"] for _, v in checked}
        for workspace in Workspace.objects.filter(public_id__in=[w.public_id for w in new]):
            self.workspaces[file_ids[workspace.public_id]] = workspace  # with their primary keys

    def _all_in_project(self, kind: str, model: type[Model], ids: list[uuid.UUID]) -> bool:
        """Whether every id is a row of the target projects, already there or added by this run."""
        rest = {i for i in ids if (kind, i) not in self.accepted}
        projects = {p.pk for p in self.projects.values()}
        return not rest or model._default_manager.filter(pk__in=rest, project_id__in=projects).count() == len(rest)

    def _elsewhere(self, model: type[Model], ids: list[uuid.UUID]) -> set[Any]:
        """The operator's clashes: ids of ``model`` held outside the target projects (a member's
        import never has any: ``_own_ids`` renewed them)."""
        if not self.policy.operator:
            return set()
        projects = {p.pk for p in self.projects.values()}
        return set(
            model._default_manager.filter(pk__in=ids).exclude(project_id__in=projects).values_list("pk", flat=True)
        )

    def _authored(
        self,
        checked: Rows,
        model: type[Session] | type[Entry],
        kind: str,
        line_of: Callable[..., fmt.Line],
        build: Callable[[int, dict[str, Any], Project], Any],
    ) -> None:
        """Rows that keep their ids and their author (sessions, ledger entries): one of the target
        with the same line (``line_of``) is unchanged, with another a collision; the rest are
        built (``build``) and inserted, an author who is not mapped kept as a label."""
        self._own_ids(kind, model, (v["id"] for _, v in checked))
        projects = {p.pk for p in self.projects.values()}
        ids = [self._id(kind, v["id"]) for _, v in checked]
        found = {
            o.pk: o for o in model._default_manager.filter(pk__in=ids, project_id__in=projects).select_related("author")
        }
        labels = _labels_of(kind, found)
        elsewhere = self._elsewhere(model, ids)
        new: list[tuple[Any, str | None]] = []
        for number, values in checked:
            try:
                project = self._project_of(number, values["project"])
                obj = build(number, values, project)
            except InvalidInput as exc:
                self._invalid(number, exc.message.removeprefix(f"line {number}: "))
                continue
            existing = found.get(obj.pk)
            if existing is not None:
                author = existing.author.email if existing.author else labels.get(str(existing.pk))
                self._same(
                    number,
                    kind,
                    f"{kind.replace('_', ' ')} {existing.pk}",
                    line_of(existing, author=author),
                    line_of(obj, author=values["author"]),
                )
                continue
            if obj.pk in elsewhere:
                self._collide(number, f"{kind.replace('_', ' ')} {obj.pk} exists in another project")
                continue
            found[obj.pk] = obj
            new.append((obj, values["author"]))
            self.accepted.add((kind, obj.pk))
        self._labels(kind, [(o.pk, email) for o, email in new if o.author_id is None])
        self._insert(model, [o for o, _ in new], kind)

    # --- audit rows ----------------------------------------------------------------------------

    def _audit_events(self, rows: Rows) -> None:
        """The operator restores audit rows; a member's import never writes one from the file
        (it is audited once, by its caller): such lines are counted as ignored."""
        if not self.policy.operator:
            self.report.ignored["audit_event"] += len(rows)
            return
        checked = self._checked(rows, lambda n, line: door.check_audit(line, self.door))
        renames = {old: str(p.pk) for old, p in self.projects.items() if old != str(p.pk)}
        new = []
        for _, values in checked:
            data = values["data"]
            if data.get("project") in renames:
                data = {**data, "project": renames[data["project"]]}
            values = {**values, "data": data}
            same = list(
                AuditEvent.objects.filter(
                    account_id=self.policy.account.pk,
                    **{k: values[k] for k in ("action", "target_type", "target_id", "created_at")},
                ).select_related("actor_user")
            )
            labels = _labels_of("audit_event", {e.pk: e for e in same})
            line = fmt.audit_line(
                AuditEvent(**{k: v for k, v in values.items() if k != "actor"}), actor=values["actor"]
            )
            if any(fmt.audit_line(e, actor=_actor(e, labels)) == line for e in same):
                self.report.unchanged["audit_event"] += 1
                continue
            event = AuditEvent(
                account_id=self.policy.account.pk,
                actor_user=self._user(values["actor"]),
                **{k: values[k] for k in ("action", "target_type", "target_id", "data")},
            )
            new.append((event, values["created_at"], values["actor"]))
        self._insert_audit(new)

    def _insert_audit(self, new: list[tuple[AuditEvent, Any, str | None]]) -> None:
        """Audit rows need their ids (for the actor's label): ``bulk_create`` returns them, and the
        original times are written back after it (``auto_now_add`` would stamp now)."""
        if not new:
            return
        AuditEvent.objects.bulk_create([event for event, _, _ in new])
        for event, created, _ in new:
            AuditEvent.objects.filter(pk=event.pk).update(created_at=created)
        self._labels("audit_event", [(event.pk, actor) for event, _, actor in new if event.actor_user_id is None])
        self.report.created["audit_event"] += len(new)


def _labels_of(kind: str, found: dict[Any, Any]) -> dict[str, str]:
    ids = [str(pk) for pk in found]
    return dict(AuthorLabel.objects.filter(kind=kind, object_id__in=ids).values_list("object_id", "email"))


def _actor(event: AuditEvent, labels: dict[str, str]) -> str | None:
    return event.actor_user.email if event.actor_user is not None else labels.get(str(event.pk))


def _queue_vectors(projects: Iterable[Project], sessions: list[uuid.UUID]) -> None:
    """After the commit: the imported records' and turns' vectors, by the worker."""
    for project in {p.pk: p for p in projects}.values():
        queue_vectors(project)
    for session_id in sessions:
        session_tasks.enqueue_embedding(session_id)


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
