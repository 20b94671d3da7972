"""Export: a project or a whole account as JSON Lines (docs/export-format.md), streamed.

Every read goes through the owning app's scoping rule — ``Memory.objects.visible_to`` and
``Session.objects.visible_to`` for a principal — so a key exports exactly what that key can read.
Only the operator's ``manage.py export`` reads without a principal (everything of the account).

Rows come from server-side cursors (``iterator(chunk_size=…)``) and leave as gzip chunks, so the
memory an export needs does not grow with the project (BENCHMARKS.md)."""

from __future__ import annotations

import datetime as dt
import uuid
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import TypeVar

from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils import timezone

from accounts.keys import Principal, principal_for
from accounts.models import SCOPE_LEDGER_READ, SCOPE_READ, Account, AuditEvent, Project, User, Workspace
from datarights import format as fmt
from datarights.models import AuthorLabel
from ledger.models import Entry
from memories.models import Memory, MemoryRelation
from memories.selectors import begin_read
from mmw import streaming
from mmw.errors import Forbidden, NotFound
from orgs.models import Membership
from orgs.selectors import acting_membership
from transcripts.models import Session, Turn

CHUNK = 2000
GZIP_FLUSH_BYTES = 256 * 1024
OWNER_ONLY = "403 Forbidden: only an owner can export the whole account"
MANAGERS_ONLY = "only owners and admins can export"

# A project export carries the audit rows about its data; keys, access and the account's own
# events come with the account export.
PROJECT_AUDIT_TARGETS = ("memory", "session", "workspace", "ledger_entry")
# A person in the dashboard reads both kinds of data; a key, what its scopes allow.
MEMBER_SCOPES = frozenset({SCOPE_READ, SCOPE_LEDGER_READ})

_T = TypeVar("_T")


@dataclass(frozen=True)
class ExportScope:
    """What one export covers: projects, each read as ``principal`` (None: the operator, who
    reads everything), and whether the account line and the account's audit log come along."""

    account: Account
    projects: tuple[tuple[Project, Principal | None], ...]
    whole_account: bool
    with_audit: bool


def scope_for_key(*, principal: Principal, whole_account: bool) -> ExportScope:
    """A key's export: its project, or (an owner's key) every live project of its account, each
    read as the key's holder would read it. Needs ``memory:read`` and counts as one read call."""
    begin_read(principal)
    membership = principal.membership
    if not whole_account:
        return ExportScope(principal.account, ((principal.project, principal),), False, membership.manages)
    if membership.role != Membership.Role.OWNER:
        raise Forbidden(OWNER_ONLY)
    scopes = frozenset({SCOPE_READ}) | (principal.scopes & {SCOPE_LEDGER_READ})
    return _account_scope(principal.account, principal.user, scopes, membership.manages)


def scope_for_member(*, user: User, account: Account, project: Project | None) -> ExportScope:
    """The dashboard's export: owners and admins, one project or (owners) the whole account."""
    membership = acting_membership(account=account, user=user, manage=True, refusal=MANAGERS_ONLY)
    if project is None:
        if membership.role != Membership.Role.OWNER:
            raise Forbidden(OWNER_ONLY)
        return _account_scope(account, user, MEMBER_SCOPES, True)
    principal = principal_for(user=user, project=project, scopes=MEMBER_SCOPES)
    if principal is None or project.account_id != account.pk:
        raise Forbidden(MANAGERS_ONLY)
    return ExportScope(account, ((project, principal),), False, True)


def scope_for_operator(*, account: Account, project: Project | None) -> ExportScope:
    """``manage.py export``: everything of the project or account, whoever wrote it."""
    projects = [project] if project is not None else list(_live_projects(account))
    return ExportScope(account, tuple((p, None) for p in projects), project is None, True)


def _account_scope(account: Account, user: User, scopes: frozenset[str], with_audit: bool) -> ExportScope:
    pairs = []
    for project in _live_projects(account):
        principal = principal_for(user=user, project=project, scopes=scopes)
        if principal is not None:
            pairs.append((project, principal))
    return ExportScope(account, tuple(pairs), True, with_audit)


def _live_projects(account: Account) -> QuerySet[Project]:
    return Project.objects.filter(account=account, deleted_at__isnull=True).order_by("created_at", "id")


def export_lines(scope: ExportScope, *, now: dt.datetime | None = None) -> Iterator[str]:
    """The export's lines, in the documented order, one at a time."""
    only = None if scope.whole_account or not scope.projects else str(scope.projects[0][0].pk)
    yield fmt.dumps(
        fmt.header(
            scope="account" if scope.whole_account else "project",
            exported_at=now or timezone.now(),
            project_id=only,
            tenant_id=scope.account.tenant_id,
        )
    )
    if scope.whole_account:
        yield fmt.dumps(fmt.account_line(scope.account))
    for project, principal in scope.projects:
        yield from _project_lines(scope.account, project, principal)
        if scope.with_audit and not scope.whole_account:
            about = AuditEvent.objects.filter(account=scope.account, data__project=str(project.pk))
            yield from _audit_lines(about.filter(target_type__in=PROJECT_AUDIT_TARGETS))
    if scope.with_audit and scope.whole_account:
        yield from _audit_lines(AuditEvent.objects.filter(account=scope.account))


def _project_lines(account: Account, project: Project, principal: Principal | None) -> Iterator[str]:
    pid = str(project.pk)
    yield fmt.dumps(fmt.project_line(project))
    workspaces = {w.pk: str(w.public_id) for w in Workspace.objects.filter(project=project)}
    for workspace in Workspace.objects.filter(project=project).order_by("created_at", "id"):
        yield fmt.dumps(fmt.workspace_line(workspace, pid))
    memories = memories_of(account, project, principal)
    for chunk in _chunks(
        memories.select_related("author", "forgotten_by")
        .defer("embedding", "search_document", "recency_document")
        .iterator(CHUNK)
    ):
        labels = _labels(AuthorLabel.Kind.MEMORY, [m.pk for m in chunk if m.author_id is None])
        for m in chunk:
            author = m.author.email if m.author is not None else labels.get(str(m.pk))
            by = m.forgotten_by.email if m.forgotten_by is not None else None
            yield fmt.dumps(fmt.memory_line(m, workspace_id=workspaces[m.workspace_id], author=author, forgotten_by=by))
    visible = memories.values("id")
    relations = MemoryRelation.objects.filter(from_memory__in=visible, to_memory__in=visible)
    for relation in relations.order_by("from_memory_id", "to_memory_id", "relation").iterator(CHUNK):
        yield fmt.dumps(fmt.relation_line(relation))
    sessions = sessions_of(account, project, principal)
    for batch in _chunks(sessions.select_related("author").iterator(CHUNK)):
        labels = _labels(AuthorLabel.Kind.SESSION, [s.pk for s in batch if s.author_id is None])
        for s in batch:
            author = s.author.email if s.author is not None else labels.get(str(s.pk))
            yield fmt.dumps(fmt.session_line(s, author=author))
    turns = Turn.objects.filter(session__in=sessions.filter(forgotten_at__isnull=True).values("id"))
    ordered = turns.defer("embedding", "search_document", "context_document").order_by(
        "session__created_at", "session_id", "position"
    )
    for turn in ordered.iterator(CHUNK):
        yield fmt.dumps(fmt.turn_line(turn))
    entries = ledger_entries_of(account, project, principal).select_related("author")
    for entry_batch in _chunks(entries.iterator(CHUNK)):
        labels = _labels(AuthorLabel.Kind.LEDGER_ENTRY, [e.pk for e in entry_batch if e.author_id is None])
        for entry in entry_batch:
            author = entry.author.email if entry.author is not None else labels.get(str(entry.pk))
            yield fmt.dumps(fmt.ledger_entry_line(entry, author=author))


def memories_of(account: Account, project: Project, principal: Principal | None) -> QuerySet[Memory]:
    """Every version of every record of ``project`` that ``principal`` reads (forgotten ones
    included: they become stubs), oldest first."""
    base = Memory.objects.visible_to(principal) if principal is not None else Memory.objects.filter(account=account)
    return base.filter(project=project).order_by("created_at", "id")


def ledger_entries_of(account: Account, project: Project, principal: Principal | None) -> QuerySet[Entry]:
    """The project's ledger entries ``principal`` reads (none without ``ledger:read``), oldest
    first: an entry comes after the one it reverses or completes, so an import meets it first."""
    if principal is None:
        base = Entry.objects.filter(account=account)
    elif SCOPE_LEDGER_READ in principal.scopes:
        base = Entry.objects.visible_to(principal)
    else:
        return Entry.objects.none()
    return base.filter(project=project).order_by("created_at", "id")


def sessions_of(account: Account, project: Project, principal: Principal | None) -> QuerySet[Session]:
    base = Session.objects.visible_to(principal) if principal is not None else Session.objects.filter(account=account)
    return base.filter(project=project).order_by("created_at", "id")


def _audit_lines(events: QuerySet[AuditEvent]) -> Iterator[str]:
    for chunk in _chunks(events.select_related("actor_user").order_by("created_at", "id").iterator(CHUNK)):
        labels = _labels(AuthorLabel.Kind.AUDIT_EVENT, [e.pk for e in chunk if e.actor_user_id is None])
        for event in chunk:
            actor = event.actor_user.email if event.actor_user is not None else labels.get(str(event.pk))
            yield fmt.dumps(fmt.audit_line(event, actor=actor))


def _labels(kind: str, ids: list[object]) -> dict[str, str]:
    if not ids:
        return {}
    rows = AuthorLabel.objects.filter(kind=kind, object_id__in=[str(i) for i in ids])
    return dict(rows.values_list("object_id", "email"))


def _chunks(items: Iterable[_T], size: int = CHUNK) -> Iterator[list[_T]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def gzip_chunks(lines: Iterable[str]) -> Iterator[bytes]:
    """The lines as one gzip member, in chunks of about ``GZIP_FLUSH_BYTES`` compressed bytes."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, 31)
    pending: list[bytes] = []
    size = 0
    for line in lines:
        out = compressor.compress(line.encode())
        if out:
            pending.append(out)
            size += len(out)
            if size >= GZIP_FLUSH_BYTES:
                yield b"".join(pending)
                pending, size = [], 0
    pending.append(compressor.flush())
    yield b"".join(pending)


def export_filename(scope: ExportScope, now: dt.datetime) -> str:
    what = scope.account.tenant_id if scope.whole_account else f"project-{scope.projects[0][0].pk}"
    return f"mmw-export-{what}-{now:%Y%m%dT%H%M%SZ}.jsonl.gz"


def account_for_operator(name: str) -> Account:
    """The account a command names: a tenant id, or the e-mail of a user (their personal account)."""
    found = Account.objects.filter(tenant_id=name).first()
    if found is None and "@" in name:
        found = Account.objects.filter(
            kind=Account.Kind.PERSONAL,
            memberships__user__email=name.strip().lower(),
            memberships__role=Membership.Role.OWNER,
        ).first()
    if found is None:
        raise NotFound(f"no account {name!r} (give a tenant id or an owner's e-mail)")
    return found


def project_for_operator(account: Account, name: str) -> Project:
    """A live project of ``account`` by id or name."""
    projects = Project.objects.filter(account=account, deleted_at__isnull=True)
    try:
        found = projects.filter(pk=uuid.UUID(name)).first()
    except ValueError:
        found = projects.filter(name__iexact=name).first()
    if found is None:
        raise NotFound(f"no project {name!r} in account {account.tenant_id}")
    return found


def export_response(scope: ExportScope) -> StreamingHttpResponse:
    """The export as a gzip attachment, streamed (REST and the dashboard alike)."""
    now = timezone.now()
    chunks = gzip_chunks(export_lines(scope, now=now))
    return streaming.download(chunks, content_type="application/gzip", filename=export_filename(scope, now))
