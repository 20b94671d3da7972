"""The visibility matrix as data, and one runner per surface that turns an operation on one
record into an outcome word, so the service layer, REST and MCP are held to the same table.

A record is written by a member of department ``red``; the reader has a role, is in ``red``
(same department) or ``blue`` (other department), and is active or deactivated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from accounts.keys import Principal
from memories import presenters, selectors, services
from memories.models import Memory
from mmw.errors import MMWError
from tests.orgs.world import VISIBILITIES, Org, Person, make_org, write

OPERATIONS = ("search", "get", "forget_by_id", "forget_by_source", "derived_from", "recall_context")

# Can the reader read a record of this visibility written by a member of "red"?
#                 reader in red   reader in blue
READABLE = {
    "author": (False, False),  # a draft: its author only, whatever the reader's role
    "department": (True, False),
    "project": (True, True),
    "org": (True, True),
}

# Reading operations share one set of records; each destructive one gets its own, so that no
# operation sees another's effects. Each set has its own search word.
RECORD_SET = {
    "search": "read",
    "get": "read",
    "derived_from": "read",
    "recall_context": "read",
    "forget_by_id": "forget_by_id",
    "forget_by_source": "forget_by_source",
}
WORD = {"read": "amber", "forget_by_id": "cobalt", "forget_by_source": "dolomite"}

MAY_NOT_WRITE = "membership may not write in this organization"
UNKNOWN_IDS = "derived_from contains unknown memory ids"


def expected(*, role: str, visibility: str, operation: str, same_department: bool, active: bool) -> str:
    """The outcome the rules (README, "Who sees what") require for one cell."""
    readable = active and READABLE[visibility][0 if same_department else 1]
    may_write = active and role != "auditor"
    if operation in ("search", "recall_context"):
        return "listed" if readable else "absent"
    if operation == "get":
        return "returned" if readable else "not found"
    if operation in ("forget_by_id", "forget_by_source"):
        if not may_write:
            return "refused"
        return "forgotten" if readable else "untouched"
    assert operation == "derived_from"
    if not readable:
        return "unknown id"  # checked before the write permission: a hidden id is just unknown
    return "accepted" if may_write else "refused"


def content_of(record_set: str, visibility: str) -> str:
    return f"{WORD[record_set]} note kept as {visibility}"


def source_of(record_set: str, visibility: str) -> str:
    return f"docs/{record_set}/{visibility}.md"


def write_matrix_records(writer: Person) -> dict[tuple[str, str], str]:
    """The record each (operation, visibility) cell acts on (see ``RECORD_SET``)."""
    ids = {
        (group, vis): write(writer, vis, content_of(group, vis), source_id=source_of(group, vis))
        for group in set(RECORD_SET.values())
        for vis in VISIBILITIES
    }
    return {(op, vis): ids[(RECORD_SET[op], vis)] for op in OPERATIONS for vis in VISIBILITIES}


def reader_setup(role: str, same_department: bool) -> tuple[Org, Person, Person]:
    org = make_org()
    writer = org.add("writer@acme.test", "member", departments=["red"])
    reader = org.add(f"{role}@acme.test", role, departments=["red" if same_department else "blue"])
    return org, writer, reader


# --- inputs and outcomes, shared by every surface ------------------------------


def arguments(operation: str, visibility: str, memory_id: str) -> dict[str, Any]:
    """The operation's input: the same payload for the services, REST bodies and MCP tools."""
    word, record_set = WORD[RECORD_SET[operation]], RECORD_SET[operation]
    payloads: dict[str, dict[str, Any]] = {
        "search": {"query": word},
        "recall_context": {"task": word},
        "get": {"memory_id": memory_id},
        "forget_by_id": {"memory_id": memory_id},
        "forget_by_source": {"source_id": source_of(record_set, visibility)},
        "derived_from": {"content": f"summary of a {visibility} record", "derived_from": [memory_id]},
    }
    return payloads[operation]


def _forget_outcome(memory_id: str, claimed: bool) -> str:
    """The answer's claim, cross-checked with the database."""
    live = Memory.objects.filter(id=memory_id, forgotten_at__isnull=True).exists()
    if claimed and not live:
        return "forgotten"
    if not claimed and live:
        return "untouched"
    return f"inconsistent (claimed={claimed}, live={live})"


def _error_outcome(message: str, memory_id: str) -> str:
    if message == MAY_NOT_WRITE:
        still_live = Memory.objects.filter(id=memory_id, forgotten_at__isnull=True).exists()
        return "refused" if still_live else "refused but forgotten"
    if message == UNKNOWN_IDS:
        return "unknown id"
    if message == "memory not found":
        return "not found"
    return f"error: {message}"


def _success_outcome(operation: str, memory_id: str, answer: Mapping[str, Any]) -> str:
    if operation == "search":
        return "listed" if memory_id in {r["id"] for r in answer["results"]} else "absent"
    if operation == "recall_context":
        return "listed" if memory_id in {r["id"] for r in answer["items"]} else "absent"
    if operation == "get":
        return "returned" if answer["memory"]["id"] == memory_id else "wrong record"
    if operation == "forget_by_id":
        return _forget_outcome(memory_id, answer["forgotten"])
    if operation == "forget_by_source":
        return _forget_outcome(memory_id, answer["forgotten_count"] == 1)
    return "accepted" if answer["derived_from"] == [memory_id] else "wrong derived_from"


# --- one runner per surface ----------------------------------------------------


def run_service(principal: Principal, operation: str, visibility: str, memory_id: str) -> str:
    """One operation through ``memories.services`` / ``memories.selectors``."""
    args = arguments(operation, visibility, memory_id)
    answer: presenters.Answer
    try:
        if operation == "search":
            answer = selectors.memory_search(principal=principal, payload=args)
        elif operation == "recall_context":
            answer = selectors.recall_context(principal=principal, payload=args)
        elif operation == "get":
            answer = selectors.memory_get(principal=principal, memory_id=memory_id)
        elif operation in ("forget_by_id", "forget_by_source"):
            answer = services.memory_forget(principal=principal, payload=args)
        else:
            answer = services.memory_remember(principal=principal, payload=args)
    except MMWError as exc:
        return _error_outcome(exc.message, memory_id)
    return _success_outcome(operation, memory_id, answer)


# (method, path, body) -> (HTTP status, JSON answer)
HttpCall = Callable[[str, str, Any], tuple[int, Any]]


def run_rest(call: HttpCall, operation: str, visibility: str, memory_id: str) -> str:
    """One operation through the REST routes (any HTTP client, via ``call``)."""
    args = arguments(operation, visibility, memory_id)
    method, path, body = {
        "search": ("POST", "/memories/search", args),
        "recall_context": ("POST", "/recall-context", args),
        "get": ("GET", f"/memories/{memory_id}", None),
        "forget_by_id": ("DELETE", f"/memories/{memory_id}", None),
        "forget_by_source": ("POST", "/memories/forget", args),
        "derived_from": ("POST", "/memories", args),
    }[operation]
    status, answer = call(method, path, body)
    if status == 401:
        return "unauthenticated"
    if status >= 400:
        outcome = _error_outcome(answer["error"]["message"], memory_id)
        codes = {"refused": 403, "not found": 404, "unknown id": 400}
        return outcome if codes.get(outcome) == status else f"{outcome} with HTTP {status}"
    return _success_outcome(operation, memory_id, answer)


MCP_TOOL_OF = {
    "search": "search",
    "recall_context": "recall_context",
    "get": "get_memory",
    "forget_by_id": "forget",
    "forget_by_source": "forget",
    "derived_from": "remember",
}


def mcp_outcome(operation: str, memory_id: str, is_error: bool, answer: dict[str, Any] | str) -> str:
    """The outcome of an MCP tool result (``mcp_call``'s pair)."""
    if is_error:
        assert isinstance(answer, str)
        prefix = f"Error executing tool {MCP_TOOL_OF[operation]}: "
        assert answer.startswith(prefix), answer
        return _error_outcome(answer[len(prefix) :], memory_id)
    assert isinstance(answer, dict)
    return _success_outcome(operation, memory_id, answer)
