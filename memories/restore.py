"""An import's records and relations (``memories``' rows), built and compared as the import route would
write them: ``datarights.restore.importer``; each line first passes its door (``check_<type>``
below: ``datarights.restore.lines``' field rules with this app's own parameter tables and Guard).

This module sits in the data rights layer although the app is memories: it extends the importer
(``datarights.restore.base.ImporterBase``) and registers itself with it (``register``), as an
app's ``mcp`` module registers its tools; ``datarights`` finds it by the app registry and never
imports it (tests/architecture/test_imports.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from datarights import format as fmt
from datarights.restore.base import ImporterBase, Rows, _labels_of, register
from datarights.restore.lines import (
    AUTHOR,
    CREATED_AT,
    EMAIL_CHARS,
    FORGOTTEN,
    FORGOTTEN_AT,
    ID,
    PROJECT,
    Door,
    _department_ids,
    _email,
    _expiry,
    _fields,
    _guarded,
    _time_param,
    past,
    uuid_of,
)
from memories import inputs, record_rules, sequence
from memories.inputs import ID_CHARS, MAX_INT, NAME_CHARS, Param
from memories.models import Memory, MemoryRelation, RelationType, Visibility
from memories.remember import RememberInput, check_fields
from mmw.errors import InvalidInput

_NOT_COLUMNS = frozenset({"project", "workspace", "author", "forgotten", "forgotten_by", "derived_from"})


# --- the door of records and relations (``datarights.restore.lines``' rules, this app's tables) ---

_FROM_REMEMBER = (
    "content",
    "scope",
    "source",
    "source_id",
    "source_hash",
    "source_revision",
    "fact_key",
    "confidence",
    "derived_from",
    "tags",
    "reason",
    "expected_version",
    "visibility",
    "position",
)
_REMEMBER = {p.name: p for p in inputs.REMEMBER}
MEMORY_COMMON: tuple[Param, ...] = (
    ID,
    PROJECT,
    Param("workspace", "string", "The workspace's id.", required=True, nullable=False, max_length=ID_CHARS),
    Param("version", "integer", "The version.", required=True, nullable=False, minimum=1, maximum=MAX_INT),
    Param("visibility", "string", "Who may see it.", default="project", nullable=False, enum=tuple(Visibility.values)),
    AUTHOR,
    CREATED_AT,
    _time_param("occurred_at"),
    FORGOTTEN,
    FORGOTTEN_AT,
)
MEMORY_STUB: tuple[Param, ...] = (
    *MEMORY_COMMON,
    Param("forgotten_by", "string", "Who forgot it.", max_length=EMAIL_CHARS),
)
MEMORY_LIVE: tuple[Param, ...] = (
    *(p for p in MEMORY_COMMON if p.name != "visibility"),
    *(_REMEMBER[name] for name in _FROM_REMEMBER),
    _time_param("superseded_at"),
    _time_param("expires_at"),
    _time_param("archived_at"),
    Param("importance", "number", "Importance, 0..1.", default=0.5, nullable=False, minimum=0.0, maximum=1.0),
    Param("device_label", "string", "The device label.", max_length=NAME_CHARS),
)


def check_memory(number: int, line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    """A record version (or a forgotten record's stub) as it will be stored."""
    if line.get("forgotten"):
        return _memory_stub(line, door)
    values = _fields(line, MEMORY_LIVE)
    check_fields(
        RememberInput(
            **{
                **{k: None for k in RememberInput.__dataclass_fields__},
                **{k: values[k] for k in _FROM_REMEMBER},
                "workspace": "imported",
            }
        )
    )
    values = _guarded(door, number, values, record_rules.SCREENED_FIELDS)
    common = _memory_common(values, door)
    if common["forgotten_at"] is not None:
        raise InvalidInput("a live record (forgotten: false) must have forgotten_at null")
    return {
        **common,
        **{name: values[name] for name in _FROM_REMEMBER if name != "derived_from"},
        "tags": values["tags"] or [],
        "derived_from": [uuid_of("derived_from", i) for i in values["derived_from"] or []],
        "importance": values["importance"],
        "superseded_at": past("superseded_at", values["superseded_at"], door),
        "archived_at": past("archived_at", values["archived_at"], door),
        "expires_at": _expiry(values["expires_at"], door),
        "department_ids": _department_ids(line),
        "device_label": values["device_label"] or "",
    }


def _memory_stub(line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    values = _fields(line, MEMORY_STUB)
    common = _memory_common(values, door)
    if common["forgotten_at"] is None:
        raise InvalidInput("a forgotten record's stub needs forgotten_at")
    return {**common, "forgotten_by": _email(values["forgotten_by"])}


def _memory_common(values: dict[str, Any], door: Door) -> dict[str, Any]:
    created = past("created_at", values["created_at"], door, required=True)
    return {
        "id": uuid_of("id", values["id"]),
        "project": values["project"],
        "workspace": uuid_of("workspace", values["workspace"]),
        "version": values["version"],
        "visibility": values.get("visibility", "project"),
        "author": _email(values["author"]),
        "created_at": created,
        "occurred_at": past("occurred_at", values["occurred_at"], door) or created,
        "forgotten": bool(values["forgotten"]),
        "forgotten_at": past("forgotten_at", values["forgotten_at"], door),
    }


RELATION_LINE: tuple[Param, ...] = (
    Param("from", "string", "The record it starts at.", required=True, nullable=False, max_length=ID_CHARS),
    Param("to", "string", "The record it points to.", required=True, nullable=False, max_length=ID_CHARS),
    Param("relation", "string", "The kind.", required=True, nullable=False, enum=tuple(RelationType.values)),
    Param("score", "number", "Its strength, 0..1.", required=True, nullable=False, minimum=0.0, maximum=1.0),
    CREATED_AT,
)


def check_relation(line: Mapping[str, Any], door: Door) -> dict[str, Any]:
    values = _fields(line, RELATION_LINE)
    if values["relation"] not in RelationType.values:
        raise InvalidInput(f"relation must be one of {', '.join(RelationType.values)}")
    start, end = uuid_of("from", values["from"]), uuid_of("to", values["to"])
    if start == end:
        raise InvalidInput("a relation must join two different records")
    return {
        "from": start,
        "to": end,
        "relation": values["relation"],
        "score": values["score"],
        "created_at": past("created_at", values["created_at"], door, required=True),
    }


class MemoryRows(ImporterBase):
    def _handlers(self) -> dict[str, Callable[[Rows], None]]:
        return {**super()._handlers(), "memory": self._memories, "relation": self._relations}

    def _memories(self, rows: Rows) -> None:
        checked = self._checked(rows, lambda n, line: check_memory(n, line, self.door))
        self._own_ids("memory", Memory, (v["id"] for _, v in checked))
        projects = {p.pk for p in self.projects.values()}
        stored_ids = [self._id("memory", v["id"]) for _, v in checked]
        found = {
            m.pk: m
            for m in Memory.objects.filter(pk__in=stored_ids, project_id__in=projects)
            .select_related("author", "forgotten_by", "workspace")
            .defer("embedding")
        }
        labels = _labels_of("memory", found)
        elsewhere = self._elsewhere(Memory, stored_ids)
        new: list[tuple[Memory, str | None]] = []
        for number, values in checked:
            memory = self._build_memory(number, values)
            if memory is None:
                continue
            existing = found.get(memory.pk)
            if existing is not None:
                self._compare_memory(number, existing, memory, values, labels)
            elif memory.pk in elsewhere:
                self._collide(number, f"memory {memory.pk} exists in another project")
            else:
                new.append((memory, values["author"]))
                found[memory.pk] = memory  # a later line of this batch with the same id is compared
                self.accepted.add(("memory", memory.pk))
        self._labels("memory", [(m.pk, email) for m, email in new if m.author_id is None])
        self._insert(Memory, [m for m, _ in new], "memory")
        # The predecessors' words, as remember's write path adds them (their vectors come from
        # the queue after the commit, which embeds a sequence member with its predecessor's tail).
        sequence.link([m for m, _ in new])

    def _build_memory(self, number: int, values: dict[str, Any]) -> Memory | None:
        try:
            project = self._project_of(number, values["project"])
        except InvalidInput as exc:
            self._invalid(number, exc.message.removeprefix(f"line {number}: "))
            return None
        workspace = self.workspaces.get(values["workspace"])
        if workspace is None or workspace.project_id != project.pk:
            self._invalid(number, f"names workspace {str(values['workspace'])!r}, not in the file before it")
            return None
        common = {
            "id": self._id("memory", values["id"]),
            "account_id": self.policy.account.pk,
            "project": project,
            "workspace": workspace,
            "author": self._user(values["author"]),
            **{k: values[k] for k in ("version", "visibility", "created_at", "occurred_at", "forgotten_at")},
        }
        if values["forgotten"]:
            return Memory(**common, content=fmt.PURGED_CONTENT, forgotten_by=self._user(values["forgotten_by"]))
        derived = [self._id("memory", i) for i in values["derived_from"]]
        if derived and not self._all_in_project("memory", Memory, derived):
            self._invalid(number, "derived_from names records not in this project")
            return None
        rest = {k: v for k, v in values.items() if k not in common and k not in _NOT_COLUMNS}
        return Memory(**common, **rest, derived_from=derived)

    def _compare_memory(
        self, number: int, existing: Memory, memory: Memory, values: dict[str, Any], labels: dict[str, str]
    ) -> None:
        workspace = str(existing.workspace.public_id)
        mine = fmt.memory_line(
            existing,
            workspace_id=workspace,
            author=existing.author.email if existing.author else labels.get(str(existing.pk)),
            forgotten_by=existing.forgotten_by.email if existing.forgotten_by else None,
        )
        theirs = fmt.memory_line(
            memory,
            workspace_id=str(memory.workspace.public_id),
            author=values["author"],
            forgotten_by=values.get("forgotten_by"),
        )
        self._same(number, "memory", f"memory {existing.pk}", mine, theirs)

    def _relations(self, rows: Rows) -> None:
        checked = self._checked(rows, lambda n, line: check_relation(line, self.door))
        ends = {self._id("memory", v[k]) for _, v in checked for k in ("from", "to")}
        projects = {p.pk for p in self.projects.values()}
        known = set(Memory.objects.filter(pk__in=ends, project_id__in=projects).values_list("id", flat=True))
        existing = {
            (r.from_memory_id, r.to_memory_id, r.relation): r
            for r in MemoryRelation.objects.filter(from_memory_id__in=known, to_memory_id__in=known)
        }
        new = []
        for number, values in checked:
            start, end = self._id("memory", values["from"]), self._id("memory", values["to"])
            if not {start, end} <= known:
                self._invalid(number, "a relation between records not in this project")
                continue
            relation = MemoryRelation(
                from_memory_id=start,
                to_memory_id=end,
                relation=values["relation"],
                score=values["score"],
                created_at=values["created_at"],
            )
            found = existing.get((start, end, values["relation"]))
            if found is not None:
                label = f"relation {start} {end} {values['relation']}"
                self._same(number, "relation", label, fmt.relation_line(found), fmt.relation_line(relation))
                continue
            existing[(start, end, values["relation"])] = relation
            new.append(relation)
        self._insert(MemoryRelation, new, "relation")


register("memories", MemoryRows)
