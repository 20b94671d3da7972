"""Memory records, their graph relations, and idempotency records.

Records are append-only: a newer ``fact_key`` version is a new row, and ``forget`` only sets
``forgotten_at``. Statuses (unverified / stale / conflict) are computed when read, never stored.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import F, Func, Q, Value
from django.db.models.functions import Now
from django.utils.translation import gettext_lazy
from pgvector.django import VectorField

from accounts.models import Account, ApiKey, Project, Workspace

if TYPE_CHECKING:
    from accounts.keys import Principal


class _ArrayField(ArrayField):  # type: ignore[type-arg]
    """``ArrayField`` whose SQL placeholder is computed once per field, not once per value:
    Django rebuilds the column type for every row of a bulk INSERT (0.5 ms each, three array
    columns: a 500-record batch spent 0.7 s there). Same column, same migrations (``deconstruct``
    names the plain ``ArrayField``)."""

    def get_placeholder(self, value: object, compiler: object, connection: object) -> str:
        placeholder = self.__dict__.get("_mmw_placeholder")
        if placeholder is None:
            placeholder = super().get_placeholder(value, compiler, connection)  # type: ignore[misc]
            self.__dict__["_mmw_placeholder"] = placeholder
        return str(placeholder)

    def deconstruct(self) -> tuple[str, str, Sequence[Any], dict[str, Any]]:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.contrib.postgres.fields.ArrayField", args, kwargs


class Visibility(models.TextChoices):
    AUTHOR = "author", gettext_lazy("Author only (draft)")
    DEPARTMENT = "department", gettext_lazy("Author's departments")
    PROJECT = "project", gettext_lazy("Project members")
    ORG = "org", gettext_lazy("Whole organisation")


class RelationType(models.TextChoices):
    RELATED = "related", "related"
    REFINES = "refines", "refines"
    SUPERSEDES = "supersedes", "supersedes"
    CONTRADICTS = "contradicts", "contradicts"
    DERIVED_FROM = "derived_from", "derived from"


def visibility_rule(principal: Principal) -> Q | None:
    """The filter of what ``principal`` may read among rows carrying ``account``, ``project``,
    ``author``, ``visibility`` and ``department_ids`` (``Memory.objects.visible_to`` explains the
    rule; ledger entries share it), or ``None`` when the principal reads nothing. It reads only
    what ``visibility_key`` lists."""
    membership = principal.membership
    if not membership.is_active or membership.account_id != principal.account.pk:
        return None
    rule = Q(visibility__in=[Visibility.PROJECT, Visibility.ORG]) | Q(author_id=principal.user.pk)
    if principal.department_ids:
        rule |= Q(visibility=Visibility.DEPARTMENT, department_ids__overlap=sorted(principal.department_ids))
    return Q(account_id=principal.account.pk, project_id=principal.project.pk) & rule


def visibility_key(principal: Principal) -> tuple[object, ...]:
    """Everything ``visibility_rule`` reads from ``principal``: two principals with the same key
    have the same rule (``memories.selectors.readable_scope`` keeps compiled rules by it). Change
    both together."""
    membership = principal.membership
    return (
        membership.is_active,
        membership.account_id,
        principal.account.pk,
        principal.project.pk,
        principal.user.pk,
        tuple(sorted(principal.department_ids)),
    )


# Columns no reader of a record as a result needs (the vector and the two keyword indexes: several
# KB per row to send and parse); the rankers read them in SQL, the archivist loads its own rows.
NOT_PRESENTED = ("embedding", "search_document", "context_document", "recency_document")


class MemoryQuerySet(models.QuerySet["Memory"]):
    def live(self) -> MemoryQuerySet:
        """Not forgotten and not past ``expires_at`` (the expiry job forgets those later)."""
        return self.filter(forgotten_at__isnull=True).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=Now()))

    def visible_to(self, principal: Principal) -> MemoryQuerySet:
        """THE scoping rule (README, "Who sees what"), used by every read, ``forget``, ``derived_from`` check and
        the archivist: the caller's account and project, then the record's visibility.

        - ``author``: its author only (a draft; owners and admins do not see others' drafts);
        - ``department``: members of any department named in ``department_ids`` (the author's
          departments when writing), judged by the caller's departments *now*: leaving a
          department loses its records, joining one gains its older records too;
        - ``project`` and ``org``: every member with access to the project. A key is bound to one
          project and ``accounts.keys`` builds no principal without project access, so ``org``
          records, too, are read only inside their project.

        An author always reads their own records. A principal whose membership is inactive (or
        not of this account) reads nothing. Roles do not widen reading: auditors, members, admins
        and owners read the same records; roles only decide who may write."""
        rule = visibility_rule(principal)
        if rule is None:
            return self.none()
        return self.filter(rule)


class Memory(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="memories")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memories")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memories")

    content = models.TextField()
    scope = models.CharField(max_length=200, default="shared")
    source = models.CharField(max_length=200, default="owner")
    source_id = models.CharField(max_length=1000, null=True, blank=True)
    source_hash = models.CharField(max_length=1000, null=True, blank=True)
    source_revision = models.CharField(max_length=1000, null=True, blank=True)
    fact_key = models.CharField(max_length=1000, null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    # The ``expected_version`` the writer named (they read that version and replace it): a
    # deliberate update that supersedes every version up to it, so none of them conflicts with
    # it (``memories.statuses``). None: a blind write.
    expected_version = models.PositiveIntegerField(null=True, blank=True)
    superseded_at = models.DateTimeField(null=True, blank=True)
    confidence = models.FloatField(default=0.5)
    importance = models.FloatField(default=0.5)
    derived_from = _ArrayField(models.UUIDField(), default=list, blank=True)
    tags = _ArrayField(models.CharField(max_length=200), default=list, blank=True)
    reason = models.TextField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    visibility = models.CharField(max_length=16, choices=Visibility.choices, default=Visibility.PROJECT)
    department_ids = _ArrayField(models.BigIntegerField(), default=list, blank=True)

    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    device_label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # When the fact happened or was said (``remember``'s ``occurred_at``; the write time when not
    # given): time filters (``since``/``until``) and time ordering use it, not ``created_at``.
    occurred_at = models.DateTimeField()
    # The record's order within its ``source_id`` (a turn number in a conversation), if any.
    position = models.PositiveIntegerField(null=True, blank=True)
    forgotten_at = models.DateTimeField(null=True, blank=True)
    forgotten_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    archived_at = models.DateTimeField(null=True, blank=True)

    # Untyped vector: the dimension comes with the model. One partial HNSW index per model id
    # (see memories.vector_index), so vectors of different models are never compared.
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=100, null=True, blank=True)

    # Keyword index, filled by PostgreSQL in the same statement as the insert.
    search_document = models.GeneratedField(
        expression=Func(
            F("content"),
            Func(F("fact_key"), Value(""), function="COALESCE"),
            function="mmw_search_document",
            output_field=SearchVectorField(),
        ),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    # A sequence member's predecessor's words (``memories.sequence``): found at a lower weight.
    context_document = SearchVectorField(null=True, blank=True)

    # The creation time as nested time-bucket lexemes (``memories.recency``), indexed beside both
    # documents: a common word's newest matches are found inside the GIN index.
    recency_document = models.GeneratedField(
        expression=Func(F("created_at"), function="mmw_recency_document", output_field=SearchVectorField()),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    objects = MemoryQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "memories"
        constraints = [
            models.CheckConstraint(condition=Q(confidence__gte=0) & Q(confidence__lte=1), name="memory_confidence_0_1"),
            models.CheckConstraint(condition=~Q(content=""), name="memory_content_not_empty"),
            models.CheckConstraint(
                condition=Q(source_hash__isnull=True) | Q(source_id__isnull=False), name="memory_hash_needs_source"
            ),
            models.CheckConstraint(
                condition=Q(position__isnull=True) | Q(position__lte=1_000_000_000), name="memory_position_bounded"
            ),
            models.UniqueConstraint(
                fields=["workspace", "fact_key", "version"],
                condition=Q(fact_key__isnull=False),
                name="memory_fact_key_version_unique",
            ),
        ]
        indexes = [
            GinIndex(fields=["search_document", "recency_document"], name="memory_keyword_gin"),
            GinIndex(
                fields=["context_document", "recency_document"],
                name="memory_context_gin",
                condition=Q(context_document__isnull=False),
            ),
            models.Index(
                fields=["workspace", "source_id", "position"],
                name="memory_sequence",
                condition=Q(position__isnull=False, forgotten_at__isnull=True),
            ),
            GinIndex(fields=["tags"], name="memory_tags_gin"),
            models.Index(
                fields=["workspace", "created_at"], name="memory_ws_created", condition=Q(forgotten_at__isnull=True)
            ),
            models.Index(
                fields=["workspace", "fact_key"], name="memory_ws_fact_key", condition=Q(fact_key__isnull=False)
            ),
            models.Index(
                fields=["workspace", "source_id"], name="memory_ws_source_id", condition=Q(source_id__isnull=False)
            ),
            models.Index(fields=["project", "created_at"], name="memory_project_created"),
            models.Index(
                fields=["workspace", "occurred_at"], name="memory_ws_occurred", condition=Q(forgotten_at__isnull=True)
            ),
            models.Index(fields=["created_at"], name="memory_unarchived", condition=Q(archived_at__isnull=True)),
            models.Index(  # list_workspaces counts only these (memories.selectors.workspaces_with_counts)
                fields=["workspace"],
                name="memory_ws_restricted",
                condition=Q(forgotten_at__isnull=True, visibility__in=["author", "department"]),
            ),
            models.Index(  # records still waiting for their vector (memories.sql.pending_vectors)
                fields=["workspace"],
                name="memory_unembedded",
                condition=Q(embedding_model__isnull=True, forgotten_at__isnull=True),
            ),
            models.Index(
                fields=["expires_at"],
                name="memory_expiring",
                condition=Q(expires_at__isnull=False, forgotten_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.workspace_id})"


class MemoryRelation(models.Model):
    """A typed, scored edge of the memory graph, written by the archivist."""

    from_memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="relations_out")
    to_memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="relations_in")
    relation = models.CharField(max_length=16, choices=RelationType.choices)
    score = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["from_memory", "to_memory", "relation"], name="relation_unique"),
            models.CheckConstraint(condition=~Q(from_memory=F("to_memory")), name="relation_not_self"),
        ]

    def __str__(self) -> str:
        return f"{self.from_memory_id} {self.relation} {self.to_memory_id}"


class IdempotencyRecord(models.Model):
    """The stored answer to a ``remember`` made with ``X-Idempotency-Key``.

    Scoped to (API key, project, workspace name); ``request_hash`` detects reuse with other input."""

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    workspace_name = models.CharField(max_length=200)
    key = models.CharField(max_length=256)
    request_hash = models.CharField(max_length=64)
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["api_key", "project", "workspace_name", "key"], name="idempotency_unique")
        ]

    def __str__(self) -> str:
        return f"idempotency {self.key[:16]} ({self.workspace_name})"


class LiveCount(models.Model):
    """How many live (not forgotten) records a workspace, project or account holds, so limits
    are checked in O(1) instead of a ``count(*)`` over every record on every write.

    Kept by PostgreSQL statement triggers on ``memories_memory`` (migration 0004): every insert,
    update of ``forgotten_at``, delete and truncate, whichever code path issues it, adjusts the
    rows in the same transaction (scopes in sorted order, so concurrent writers cannot deadlock
    on them). Read-only to Python: ``live_count``."""

    scope = models.CharField(primary_key=True, max_length=64)  # "w:<workspace id>", "p:<project id>", "a:<account id>"
    records = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.scope}: {self.records}"


def live_count(
    *, workspace_id: int | None = None, project_id: uuid.UUID | None = None, account_id: int | None = None
) -> int:
    """Live records of exactly one of a workspace, a project or an account (0 if it has none)."""
    given = [(k, v) for k, v in (("w", workspace_id), ("p", project_id), ("a", account_id)) if v is not None]
    if len(given) != 1:
        raise ValueError("name exactly one of workspace_id, project_id, account_id")
    kind, value = given[0]
    scope = f"{kind}:{value}"
    return live_counts([scope])[scope]


def live_counts(scopes: Iterable[str]) -> dict[str, int]:
    """Live records of each ``LiveCount`` scope (``w:<id>``, ``p:<uuid>``, ``a:<id>``), in one
    query (0 for a scope with none)."""
    wanted = list(dict.fromkeys(scopes))
    found = dict(LiveCount.objects.filter(scope__in=wanted).values_list("scope", "records"))
    return {scope: int(found.get(scope, 0)) for scope in wanted}


def project_live_counts(project_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, int]:
    """Live records of each project, in one query over ``LiveCount`` (0 for one with none). THE
    record count of a project wherever one is shown or compared with a plan (usage, quota e-mails,
    the dashboard's project list): all records not forgotten, whoever may read them."""
    wanted = {f"p:{pid}": pid for pid in project_ids}
    counts = live_counts(wanted)
    return {pid: counts[scope] for scope, pid in wanted.items()}


class VectorSum(models.Model):
    """The sum of the vectors of a workspace's shared live records, per embedding model: the
    direction of the workspace's *background*, what its records have in common.

    ``search`` measures how much a record stands out from that background — the sum less the
    record itself, when it is counted (``sql.nearest_statement``) — for a query
    (``memories.search``, "the relevance floor" in docs/search.md): a record that resembles
    everything in its workspace (a "Thanks, sounds great!") is the nearest record to every
    query about nothing stored, and must not make such a query look answered. Only a direction
    is used (a cosine with the sum), so no division by ``docs`` is needed.

    Counts what ``TermStat`` counts (live records of visibility project/org) that carry a vector,
    so it reveals nothing a caller could not read. Kept by PostgreSQL statement triggers on
    ``memories_memory`` (migration 0014) in the writer's transaction; read-only to Python."""

    # The triggers own these rows (as ``TermStat``'s): Django must not cascade.
    workspace = models.ForeignKey(Workspace, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False)
    model = models.CharField(max_length=128)
    total = VectorField()
    docs = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "model"], name="vectorsum_unique")]

    def __str__(self) -> str:
        return f"{self.model}: {self.docs} vectors"


class TermStat(models.Model):
    """Document frequency of each keyword lexeme in a project, for the keyword ranker's IDF.

    Counts the live records every member of the project may read (visibility ``project`` or
    ``org``): drafts and department records never shape what others' rankings weigh, so the
    statistics reveal nothing a caller could not read. ``term = ''`` holds the number of such
    records (the N of IDF). Kept by PostgreSQL statement triggers on ``memories_memory``
    (migration 0005), like ``LiveCount``; ``term`` sorts bytewise ("C") so a prefix is a range."""

    # The triggers own these rows: deleting a project's records brings its counts to zero and
    # the delete branch drops zero rows, so Django must not cascade (it would race the trigger).
    project = models.ForeignKey(Project, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False)
    term = models.TextField(db_collation="C")
    docs = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "term"], name="termstat_unique")]

    def __str__(self) -> str:
        return f"{self.term!r}: {self.docs}"
