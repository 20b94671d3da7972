"""``remember``: one record (``memory_remember``) or up to 500 (``memory_remember_batch``), through
one code path (docs/reference/remember.md, docs/ingest.md).

A call is a ``_Writer``. Each record is *staged* — parsed, checked in the order
docs/reference/remember.md lists, screened by the Guard, given its version, counted against the
quotas — and the staged records are then *inserted* together: one ``INSERT`` for the whole call
(the statement triggers that keep ``LiveCount`` and ``TermStat`` run once), with the ``tsvector``
computed by PostgreSQL in that same statement, so every acknowledged record is found by keywords
as soon as the call returns. What one staged record changes for the next (versions of a
``fact_key``, records counted against the quota and the technical ceilings, idempotency keys,
workspaces created) is kept on the writer, so a batch answers exactly what the same records sent
one ``remember`` at a time would have answered.

Differences of a batch, all per call: the key's scope, the rate limit, the membership and the
billing state are checked once, before any record (an error there is the whole call's); each
record's own errors are its answer alone; each record is staged inside a savepoint, and when the
single ``INSERT`` fails (a database error one record caused) every record is inserted again in
its own savepoint, so one bad record never costs its neighbours their write. Vectors: one
``remember`` embeds its record inside the request (a local model, a few ms); a batch leaves them
to the ``embed_memories`` task, which embeds them with the model's batch call after the commit
(dense search skips a record until its vector is in; keyword search has it at once).

Why one module of this length: one write path for one record and for a batch — staging (parse,
checks, Guard, versions, quotas) and the one-statement insert together, so both calls stay
identical.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import Max
from django.utils import timezone

from accounts.keys import Principal
from accounts.models import SCOPE_WRITE, Workspace
from memories import admission, inputs, presenters, record_rules, sequence, tasks, vectors
from memories.models import IdempotencyRecord, Memory, MemoryRelation, Visibility, live_counts
from memories.vectors import MAX_EMBEDDED_CHARS
from memories.workspaces import WorkspaceState, workspace_state
from mmw import bulk, replicas
from mmw.errors import Conflict, Forbidden, InvalidInput, MMWError
from mmw.locks import advisory_xact_lock

# Parameters added after idempotency records were first stored: left out of a request's
# fingerprint while null, so a replay of an answer stored before they existed still matches.
_ADDED_LATER = ("occurred_at", "position")


@dataclass(frozen=True)
class RememberInput:
    content: str
    workspace: str
    scope: str
    source: str
    source_id: str | None
    source_hash: str | None
    source_revision: str | None
    fact_key: str | None
    confidence: float
    derived_from: list[str] | None
    tags: list[str] | None
    expires_at: str | None
    reason: str | None
    expected_version: int | None
    visibility: str
    occurred_at: str | None
    position: int | None

    def fingerprint(self) -> str:
        """The digest an idempotency key is bound to (every parameter as sent)."""
        values = {k: v for k, v in vars(self).items() if not (k in _ADDED_LATER and v is None)}
        return record_rules.request_hash(values)


@replicas.writes
def memory_remember(
    *, principal: Principal, payload: Mapping[str, Any] | None, idempotency_key: str | None = None
) -> presenters.Remembered:
    """Store one new record (never updating or deleting another) and return the documented answer.

    With ``idempotency_key`` a replay of the same input returns the first answer unchanged, and
    the same key with other input is refused; the key is scoped to (API key, project, workspace).
    """
    writer = _Writer(principal, embed_inline=True, key_label="X-Idempotency-Key")
    data = writer.parse(payload)
    with transaction.atomic():
        item = writer.stage(data, idempotency_key)
        writer.insert([item], isolate=False)
    return writer.answer(item)


@replicas.writes
def memory_remember_batch(*, principal: Principal, payload: Mapping[str, Any] | None) -> presenters.Batch:
    """Store up to ``inputs.MAX_BATCH`` records; ``{"results": [...]}`` has one entry per record,
    in order: the ``remember`` answer, or ``{"error": {"code", "message"}}`` for that record alone."""
    records = _batch_records(payload)
    writer = _Writer(principal, embed_inline=False, key_label="idempotency_key")
    writer.check_call()
    outcomes: list[_Item | MMWError] = []
    with transaction.atomic():
        writer.admitted.hold_quota()
        for raw in records:
            outcomes.append(writer.stage_isolated(raw))
        failures = writer.insert([o for o in outcomes if isinstance(o, _Item)], isolate=True)
    results: list[presenters.Remembered | presenters.ItemError] = []
    for outcome in outcomes:
        if isinstance(outcome, _Item):
            outcome = failures.get(id(outcome.origin()), outcome)
        results.append(_error(outcome) if isinstance(outcome, MMWError) else writer.answer(outcome))
    return {
        **presenters.envelope(principal, "*", writer.admitted.notice()),
        "results": results,
        "queued_for_vectors": writer.queued_for_vectors,
    }


def _batch_records(payload: Mapping[str, Any] | None) -> list[Any]:
    if not isinstance(payload, Mapping):
        raise InvalidInput("the request body must be a JSON object")
    unknown = sorted(k for k in payload if k != "records")
    if unknown:
        raise InvalidInput(f"unknown parameter(s): {', '.join(unknown)}")
    records = payload.get("records")
    if not isinstance(records, list):
        raise InvalidInput("records must be a list of remember payloads")
    if not records:
        raise InvalidInput("records must not be empty")
    if len(records) > inputs.MAX_BATCH:
        raise InvalidInput(f"records accepts at most {inputs.MAX_BATCH} items per call")
    return records


def _error(exc: MMWError) -> presenters.ItemError:
    return {"error": {"code": exc.code, "message": exc.message}}


class WriteFailed(MMWError):
    """A record the database refused although every check passed (reported for that record only)."""

    code = "write_failed"
    http_status = 500


@dataclass(eq=False)
class _Item:
    """One staged record: a row to insert, or a replay of an answer already given."""

    data: RememberInput
    key: str | None
    memory: Memory | None = None
    redactions: list[presenters.Redaction] = field(default_factory=list)
    derived: list[uuid.UUID] = field(default_factory=list)
    supersedes: bool = False  # older live versions of its fact_key (before this call) become superseded
    replay: presenters.Remembered | None = None  # an answer stored by an earlier call
    same_as: _Item | None = None  # an earlier record of this call with the same key and input

    def origin(self) -> _Item:
        return self.same_as.origin() if self.same_as is not None else self


class _Writer:
    """What one ``remember`` call knows beyond each record (see the module docstring)."""

    def __init__(self, principal: Principal, *, embed_inline: bool, key_label: str) -> None:
        self.principal = principal
        self.admitted = admission.admit(principal)
        self.embed_inline = embed_inline
        self.key_label = key_label
        self.now = timezone.now()
        self._done: set[str] = set()  # the per-call checks already passed
        self._states: dict[str, WorkspaceState] = {}
        self._live: dict[str, int] = {}  # live-count scope -> count read once in this call
        self.queued_for_vectors = 0  # records inserted by this call that wait for the worker's vector
        self._pending = 0  # records staged in this call (not yet inserted)
        self._pending_in: Counter[int] = Counter()  # ... per workspace
        self._versions: dict[tuple[int, str], tuple[int, _Item]] = {}  # (workspace, fact_key) -> newest staged
        self._keys: dict[tuple[str, str], _Item] = {}  # (workspace name, key) -> the record that used it

    # --- checks ----------------------------------------------------------------------------

    def _once(self, name: str, check: Any) -> None:
        if name not in self._done:
            check()
            self._done.add(name)

    def _check_scope(self) -> None:
        if SCOPE_WRITE not in self.principal.scopes:
            raise Forbidden("403 Forbidden: key lacks memory:write")

    def _check_membership(self) -> None:
        if not self.principal.membership.may_write:
            raise Forbidden("membership may not write in this organization")

    def check_call(self) -> None:
        """A batch's per-call checks, before any record: scope, rate (one call), membership, billing."""
        self._once("scope", self._check_scope)
        self._once("rate", self.admitted.check_rate)
        self._once("membership", self._check_membership)
        self._once("billing", self.admitted.ensure_may_write)

    def parse(self, payload: Mapping[str, Any] | None) -> RememberInput:
        data = RememberInput(**inputs.parse(inputs.REMEMBER, payload))
        check_fields(data)
        return data

    # --- staging ---------------------------------------------------------------------------

    def stage_isolated(self, raw: Any) -> _Item | MMWError:
        """One batch record staged in a savepoint when it runs SQL: its error (domain or
        database) is its own. A record that runs none (a plain record in a workspace this call
        has already resolved: ``_runs_sql``) needs no savepoint, and saves two round trips."""
        try:
            key = _item_key(raw)
            data = self.parse({k: v for k, v in raw.items() if k != "idempotency_key"})
            if not self._runs_sql(data, key):
                return self.stage(data, key)
            with transaction.atomic():
                return self.stage(data, key)
        except MMWError as exc:
            return exc
        except DatabaseError:
            return WriteFailed("this record could not be stored (a database error); retry it")

    def _runs_sql(self, data: RememberInput, key: str | None) -> bool:
        """Whether staging ``data`` may query the database (and so fail in it): a key to look up,
        ids to check, a version to read, a workspace to resolve or create, a count not yet read."""
        state = self._states.get(data.workspace)
        if key is not None or data.derived_from or data.fact_key is not None or state is None:
            return True
        account = f"a:{self.principal.account.pk}"
        return state.workspace is None or f"w:{state.workspace.pk}" not in self._live or account not in self._live

    def stage(self, data: RememberInput, key: str | None) -> _Item:
        """Every check of one record, in docs/reference/remember.md's order; the row is built,
        not inserted. Raises the record's first error."""
        principal = self.principal
        derived = _check_derived_from(principal, data.derived_from)
        item = _Item(data, key, derived=derived)
        if key is not None:
            earlier = self._idempotent(item)
            if earlier is not None:
                return earlier
        expires_at = record_rules.parse_expires_at(data.expires_at, now=self.now) if data.expires_at else None
        occurred_at = record_rules.parse_occurred_at(data.occurred_at, now=self.now) if data.occurred_at else self.now
        state = self._state(data.workspace)
        version = self._next_version(state, item)
        self._once("scope", self._check_scope)
        clean, item.redactions = _screen(principal, data)
        self.admitted.check_quota(pending=self._pending)
        self._check_technical_limits(state)
        self._once("rate", self.admitted.check_rate)
        state.raise_problem()
        self._once("membership", self._check_membership)
        self._once("billing", self.admitted.ensure_may_write)
        workspace = state.workspace or self._create_workspace(data.workspace)
        item.memory = Memory(
            account=principal.account,
            project=principal.project,
            workspace=workspace,
            content=clean["content"],
            scope=data.scope,
            source=data.source,
            source_id=clean["source_id"],
            source_hash=data.source_hash,
            source_revision=clean["source_revision"],
            fact_key=clean["fact_key"],
            version=version,
            expected_version=data.expected_version,
            confidence=data.confidence,
            importance=record_rules.importance_from_tags(clean["tags"] or []),
            derived_from=derived,
            tags=clean["tags"] or [],
            reason=clean["reason"],
            expires_at=expires_at,
            visibility=data.visibility,
            department_ids=sorted(principal.department_ids) if data.visibility == Visibility.DEPARTMENT else [],
            author=principal.user,
            api_key=principal.api_key,
            device_label=principal.device_label,
            occurred_at=occurred_at,
            position=data.position,
        )
        if self.embed_inline:
            previous = sequence.previous_content(item.memory)
            text = sequence.contextual_text(clean["content"], previous, MAX_EMBEDDED_CHARS)
            item.memory.embedding, item.memory.embedding_model = vectors.embed_for_write(text)
        self._accept(item, workspace)
        return item

    def _idempotent(self, item: _Item) -> _Item | None:
        """The item answering for an idempotent replay (of this call or an earlier one), or None."""
        key = item.key
        assert key is not None
        if not record_rules.valid_idempotency_key(key):
            raise InvalidInput(f"invalid {self.key_label}")
        fingerprint = item.data.fingerprint()
        earlier = self._keys.get((item.data.workspace, key))
        if earlier is not None:
            if earlier.data.fingerprint() != fingerprint:
                raise Conflict("409 Conflict: idempotency key was used with different input")
            return _Item(item.data, key, same_as=earlier)
        api_key = self.principal.api_key
        if api_key is None:
            return None
        project = self.principal.project
        # Serialise concurrent requests with the same key; the loser sees the winner's record.
        advisory_xact_lock("idem", f"{api_key.pk}:{project.pk}:{item.data.workspace}:{key}")
        record = IdempotencyRecord.objects.filter(
            api_key=api_key, project=project, workspace_name=item.data.workspace, key=key
        ).first()
        if record is None:
            return None
        if record.request_hash != fingerprint:
            raise Conflict("409 Conflict: idempotency key was used with different input")
        replay = _Item(item.data, key, replay=cast(presenters.Remembered, dict(record.response)))  # stored from one
        self._keys[(item.data.workspace, key)] = replay
        return replay

    def _state(self, name: str) -> WorkspaceState:
        state = self._states.get(name)
        if state is None:
            state = self._states[name] = workspace_state(self.principal, name)
        return state

    def _create_workspace(self, name: str) -> Workspace:
        return Workspace.objects.get_or_create(project=self.principal.project, name=name)[0]

    def _next_version(self, state: WorkspaceState, item: _Item) -> int:
        """The version the new record gets; enforces ``expected_version`` under a per-key lock.

        Numbers are never reused (forgotten and hidden versions keep theirs, so numbering may
        show gaps); ``expected_version`` is compared with the newest live version *the caller
        can read*, the one they can have seen, so another member's draft is neither revealed nor
        in the way. A version staged earlier in this call is the caller's own, so it is both."""
        data = item.data
        if data.fact_key is None:
            return 1
        latest_seen = latest_any = 0
        staged = self._versions.get((state.workspace.pk, data.fact_key)) if state.workspace is not None else None
        if staged is not None:
            latest_seen = latest_any = staged[0]
        elif state.workspace is not None:
            advisory_xact_lock("fact", f"{state.workspace.pk}:{data.fact_key}")
            versions = Memory.objects.filter(workspace=state.workspace, fact_key=data.fact_key)
            latest_any = versions.aggregate(m=Max("version"))["m"] or 0
            seen = (
                Memory.objects.visible_to(self.principal)
                .live()
                .filter(workspace=state.workspace, fact_key=data.fact_key)
            )
            latest_seen = seen.aggregate(m=Max("version"))["m"] or 0
            item.supersedes = latest_any > 0
        if data.expected_version is not None and data.expected_version != latest_seen:
            raise Conflict(
                f"version conflict: expected version {data.expected_version} but the latest is {latest_seen}"
            )
        return latest_any + 1

    def _counts(self, *scopes: str) -> list[int]:
        """The live counts of ``scopes``, read once per call: the ones not read yet in one query."""
        missing = [s for s in scopes if s not in self._live]
        if missing:
            self._live.update(live_counts(missing))
        return [self._live[s] for s in scopes]

    def _check_technical_limits(self, state: WorkspaceState) -> None:
        """The operator's ceilings (settings), from the trigger-kept ``LiveCount`` rows in O(1),
        plus the records this call has staged."""
        workspace = state.workspace
        account = f"a:{self.principal.account.pk}"
        if workspace is None:
            [in_account] = self._counts(account)
            in_workspace = 0
        else:
            in_account, in_workspace = self._counts(account, f"w:{workspace.pk}")
            in_workspace += self._pending_in[workspace.pk]
        if in_workspace >= settings.MMW_MAX_MEMORIES_PER_WORKSPACE:
            raise Forbidden("maximum number of memories exceeded for workspace", code="limit_exceeded")
        if in_account + self._pending >= settings.MMW_MAX_MEMORIES_PER_TENANT:
            raise Forbidden("maximum number of memories exceeded for tenant", code="limit_exceeded")

    def _accept(self, item: _Item, workspace: Workspace) -> None:
        """What a staged record changes for the next ones of the call."""
        memory = item.memory
        assert memory is not None
        self._pending += 1
        self._pending_in[workspace.pk] += 1
        state = self._states[item.data.workspace]
        if state.workspace is None:
            self._states[item.data.workspace] = WorkspaceState(state.name, workspace)
        if memory.fact_key is not None:
            previous = self._versions.get((workspace.pk, memory.fact_key))
            if previous is not None and previous[1].memory is not None:
                previous[1].memory.superseded_at = self.now  # a newer version in the same call
            self._versions[(workspace.pk, memory.fact_key)] = (memory.version, item)
        if item.key is not None:
            self._keys[(item.data.workspace, item.key)] = item

    # --- inserting -------------------------------------------------------------------------

    def insert(self, items: list[_Item], *, isolate: bool) -> dict[int, MMWError]:
        """Insert the staged rows (one statement) and their relations and idempotency records.

        With ``isolate``, a database error falls back to one savepoint per record; the records
        that still fail are returned (by ``id`` of their item) and the others are stored."""
        rows = [i for i in items if i.memory is not None]
        if not rows:
            return {}
        if not isolate:
            self._insert(rows)
            return {}
        try:
            with transaction.atomic():
                self._insert(rows)
            return {}
        except DatabaseError:
            pass
        failed: dict[int, MMWError] = {}
        for item in rows:
            try:
                with transaction.atomic():
                    self._insert([item])
            except DatabaseError:
                failed[id(item)] = WriteFailed("this record could not be stored (a database error); retry it")
        return failed

    def _insert(self, rows: list[_Item]) -> None:
        memories = [r.memory for r in rows if r.memory is not None]
        for item in rows:
            if item.supersedes and item.memory is not None:  # the versions stored before this call
                Memory.objects.filter(
                    workspace=item.memory.workspace, fact_key=item.memory.fact_key, superseded_at__isnull=True
                ).update(superseded_at=self.now)
        bulk.insert_rows(Memory, memories)
        MemoryRelation.objects.bulk_create(
            [
                MemoryRelation(from_memory=r.memory, to_memory_id=i, relation="derived_from", score=1.0)
                for r in rows
                for i in r.derived
            ],
            ignore_conflicts=True,
        )
        api_key = self.principal.api_key
        if api_key is not None:
            IdempotencyRecord.objects.bulk_create(
                [
                    IdempotencyRecord(
                        api_key=api_key,
                        project=self.principal.project,
                        workspace_name=r.data.workspace,
                        key=r.key,
                        request_hash=r.data.fingerprint(),
                        response=self.answer(r),
                    )
                    for r in rows
                    if r.key is not None
                ]
            )
        ids = [m.id for m in memories]
        relinked = sequence.link(memories)
        if relinked:
            transaction.on_commit(lambda: tasks.enqueue_embedding(relinked))
        if self.embed_inline:
            transaction.on_commit(lambda: [tasks.enqueue_archive(i) for i in ids])
            unembedded = [m.id for m in memories if m.embedding_model is None]
        else:
            transaction.on_commit(lambda: tasks.enqueue_embedding(ids))
            unembedded = ids
        # Last: a statement above that fails rolls this insert back and its rows are not counted.
        self.queued_for_vectors += len(set(unembedded) | set(relinked))

    def answer(self, item: _Item) -> presenters.Remembered:
        origin = item.origin()
        if origin.replay is not None:
            return origin.replay
        assert origin.memory is not None
        return presenters.remembered(self.principal, origin.memory, origin.redactions, self.admitted.notice())


def _item_key(raw: Any) -> str | None:
    if not isinstance(raw, Mapping):
        raise InvalidInput("each record must be a JSON object (a remember payload)")
    parsed = inputs.parse((inputs.IDEMPOTENCY_KEY,), {"idempotency_key": raw.get("idempotency_key")})
    key: str | None = parsed["idempotency_key"]
    return key


def check_fields(data: RememberInput) -> None:
    """The product rules of one record after ``inputs.parse`` (remember, batch and import)."""
    if data.source_hash is not None and data.source_id is None:
        raise InvalidInput("source_id is required when source_hash is provided")
    if data.visibility not in Visibility.values:
        raise InvalidInput(f"visibility must be one of {', '.join(Visibility.values)}")
    if data.expected_version is not None and data.fact_key is None:
        raise InvalidInput("expected_version requires fact_key")


def _check_derived_from(principal: Principal, ids: list[str] | None) -> list[uuid.UUID]:
    """Every id must name a live record the caller can read; the answer is sorted and unique."""
    if not ids:
        return []
    try:
        wanted = sorted({uuid.UUID(i) for i in ids})
    except ValueError:
        raise InvalidInput("derived_from contains unknown memory ids") from None
    found = Memory.objects.visible_to(principal).live().filter(id__in=wanted).count()
    if found != len(wanted):
        raise InvalidInput("derived_from contains unknown memory ids")
    return wanted


def _screen(principal: Principal, data: RememberInput) -> tuple[dict[str, Any], list[presenters.Redaction]]:
    """Memory Guard over every text field; refusals become the documented error."""
    fields: dict[str, Any] = {name: getattr(data, name) for name in record_rules.SCREENED_FIELDS}
    clean, redactions = record_rules.guarded(fields, secrets_mode=principal.project.guard_secrets_mode)
    return dict(clean), [{"field": r.field, "rule": r.rule_id} for r in redactions]
