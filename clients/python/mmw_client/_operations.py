"""Every REST operation as a ``Call`` (route, body, idempotency, retry-safety), built once for the
sync and the async client alike. docs/reference/ names each route; this module only shapes them."""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

from mmw_client import types as t
from mmw_client._core import IDEMPOTENCY_HEADER, Call, body, new_idempotency_key

API = "/api/v1"


def _segment(value: str) -> str:
    return quote(value, safe="")


def _session_path(client: str, session_id: str) -> str:
    return f"{API}/sessions/{_segment(client)}/{_segment(session_id)}"


def _key_header(key: str | None) -> dict[str, str]:
    return {IDEMPOTENCY_HEADER: key} if key is not None else {}


# --- records -------------------------------------------------------------------------------------


def remember(content: str, params: t.RememberParams, idempotency_key: str | None) -> Call[t.RememberAnswer]:
    key = idempotency_key if idempotency_key is not None else new_idempotency_key()
    return Call(
        "POST",
        f"{API}/memories",
        json=body(dict(params), content=content),
        headers=_key_header(key),
        retry_safe=key is not None,
    )


def remember_batch(records: list[t.BatchRecord]) -> Call[t.BatchAnswer]:
    """Each record without an ``idempotency_key`` is given one, kept for every retry of the call."""
    keyed: list[dict[str, Any]] = []
    for record in records:
        item = {k: v for k, v in record.items() if v is not None}
        if "idempotency_key" not in item:
            key = new_idempotency_key()
            if key is not None:
                item["idempotency_key"] = key
        keyed.append(item)
    safe = all("idempotency_key" in item for item in keyed)
    return Call("POST", f"{API}/memories/batch", json={"records": keyed}, retry_safe=safe)


def get_memory(memory_id: str) -> Call[t.MemoryAnswer]:
    return Call("GET", f"{API}/memories/{_segment(memory_id)}")


def search(query: str, params: t.SearchParams) -> Call[t.SearchAnswer]:
    return Call("POST", f"{API}/memories/search", json=body(dict(params), query=query))


def forget(memory_id: str | None, source_id: str | None, workspace: str | None) -> Call[t.ForgetAnswer]:
    params = {"memory_id": memory_id, "source_id": source_id, "workspace": workspace}
    return Call("POST", f"{API}/memories/forget", json=body(params))


def forget_by_id(memory_id: str, workspace: str | None) -> Call[t.ForgetAnswer]:
    return Call("DELETE", f"{API}/memories/{_segment(memory_id)}", params={"workspace": workspace})


def validate(source_id: str, current_source_hash: str, workspace: str | None) -> Call[t.ValidateAnswer]:
    payload = body({"workspace": workspace}, source_id=source_id, current_source_hash=current_source_hash)
    return Call("POST", f"{API}/memories/validate", json=payload)


def history(memory_id: str) -> Call[t.HistoryAnswer]:
    return Call("GET", f"{API}/memories/{_segment(memory_id)}/history")


def history_by_fact_key(fact_key: str, workspace: str | None) -> Call[t.HistoryAnswer]:
    return Call("GET", f"{API}/memories/history", params={"fact_key": fact_key, "workspace": workspace})


def recall(task: str, params: t.RecallParams) -> Call[t.RecallAnswer]:
    return Call("POST", f"{API}/recall-context", json=body(dict(params), task=task))


def workspaces() -> Call[t.WorkspaceList]:
    return Call("GET", f"{API}/workspaces")


# --- sessions ------------------------------------------------------------------------------------


def upsert_session(client: str, session_id: str, fields: t.SessionFields) -> Call[t.SessionAnswer]:
    return Call("PUT", _session_path(client, session_id), json=body(dict(fields)))


def add_turns(client: str, session_id: str, turns: list[t.TurnInput]) -> Call[t.TurnsAnswer]:
    """Turns are idempotent by position: a retry answers ``unchanged`` for the ones stored."""
    return Call("POST", f"{_session_path(client, session_id)}/turns", json={"turns": list(turns)})


def list_sessions(client: str | None, limit: int | None, offset: int | None) -> Call[t.SessionList]:
    return Call("GET", f"{API}/sessions", params={"client": client, "limit": limit, "offset": offset})


def get_session(client: str, session_id: str, after: int | None, limit: int | None) -> Call[t.SessionRead]:
    return Call("GET", _session_path(client, session_id), params={"after": after, "limit": limit})


def forget_session(client: str, session_id: str) -> Call[t.SessionForgetAnswer]:
    return Call("DELETE", _session_path(client, session_id))


def search_sessions(query: str, params: t.SessionSearchParams) -> Call[t.SessionSearchAnswer]:
    return Call("POST", f"{API}/sessions/search", json=body(dict(params), query=query))


# --- ledger --------------------------------------------------------------------------------------


def ledger_record(
    kind: Literal["transaction", "reminder"], amount: str, currency: str, params: t.LedgerRecordParams
) -> Call[t.LedgerRecorded]:
    """Replayable (so retried after a lost answer) only with a ``reference``: without one the
    server cannot tell a retry from a second payment."""
    payload = body(dict(params), kind=kind, amount=amount, currency=currency)
    return Call("POST", f"{API}/ledger/entries", json=payload, retry_safe=params.get("reference") is not None)


def ledger_list(params: t.LedgerListParams) -> Call[t.LedgerListed]:
    return Call("POST", f"{API}/ledger/list", json=body(dict(params)))


def ledger_balance(params: t.LedgerBalanceParams) -> Call[t.LedgerBalances]:
    return Call("POST", f"{API}/ledger/balance", json=body(dict(params)))


def ledger_reverse(entry_id: str, reason: str) -> Call[t.LedgerRecorded]:
    """An entry is reversed once: a retry after a lost answer is refused (409), never doubled."""
    return Call("POST", f"{API}/ledger/reverse", json={"entry_id": entry_id, "reason": reason})


def ledger_upcoming(until: str | None) -> Call[t.LedgerUpcoming]:
    return Call("POST", f"{API}/ledger/upcoming", json=body({"until": until}))


def ledger_complete(entry_id: str, params: t.LedgerCompleteParams) -> Call[t.LedgerRecorded]:
    """An occurrence is completed once: a retry after a lost answer is refused (409), never doubled."""
    return Call("POST", f"{API}/ledger/complete", json=body(dict(params), entry_id=entry_id))


# --- data rights, the agent's consent, health -------------------------------------------------


def export(scope: Literal["project", "account"]) -> Call[bytes]:
    return Call("GET", f"{API}/export", params={"scope": scope if scope != "project" else None}, raw=True)


def import_export(data: bytes, respond_async: bool) -> Call[t.ImportAnswer]:
    """An MMW export into the key's project; importing the same file again adds nothing."""
    headers = {"Content-Type": "application/gzip" if data[:2] == b"\x1f\x8b" else "application/octet-stream"}
    if respond_async:
        headers["Prefer"] = "respond-async"
    return Call("POST", f"{API}/import", content=data, headers=headers)


def import_job(job_id: str) -> Call[t.ImportJobAnswer]:
    return Call("GET", f"{API}/import/{_segment(job_id)}")


def agent_consent(given: bool, sources: list[str] | None) -> Call[t.AgentConsentAnswer]:
    """Each call writes an audit row: not retried once the request may have reached the server."""
    return Call("POST", f"{API}/agent/consent", json=body({"sources": sources}, given=given), retry_safe=False)


def agent_consent_scope() -> Call[t.AgentConsentScope]:
    return Call("GET", f"{API}/agent/consent")


def healthz() -> Call[dict[str, Any]]:
    return Call("GET", "/healthz")
