"""``MMWClient``: every REST operation, synchronous (``AsyncMMWClient`` is the same, awaited)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import IO, Any, Literal, TypeVar

import httpx
from typing_extensions import Unpack

from mmw_client import _operations as ops
from mmw_client import types as t
from mmw_client._core import (
    DEFAULT_URL,
    USER_AGENT,
    Call,
    Retries,
    no_answer,
    outcome,
    pause_after_answer,
    pause_after_failure,
)

T = TypeVar("T")
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)


def settings(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    """The server's URL and the key: as given, else ``MMW_URL`` / ``MMW_API_KEY``."""
    url = (base_url or os.environ.get("MMW_URL") or DEFAULT_URL).rstrip("/")
    key = api_key or os.environ.get("MMW_API_KEY") or ""
    if not key:
        raise ValueError("an API key is needed: pass api_key= or set MMW_API_KEY")
    return url, key


def headers_for(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "User-Agent": USER_AGENT, "Accept": "application/json"}


class MMWClient:
    """A synchronous client of one MMW server, with one key (and so one project).

    ``timeout``: seconds (or an ``httpx.Timeout``) per attempt. ``retries``: see ``Retries``; a
    write is retried only when the server will recognise it (module ``_core``). ``http_client``:
    your own ``httpx.Client`` (its base URL and headers are set by this client). Use it as a
    context manager, or call ``close()``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retries: Retries | None = None,
        http_client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url, key = settings(base_url, api_key)
        self.retries = retries or Retries()
        self._sleep = sleep
        self._http = http_client or httpx.Client(timeout=timeout)
        self._http.base_url = httpx.URL(self.base_url)
        self._http.headers.update(headers_for(key))

    def __enter__(self) -> MMWClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def send(self, call: Call[T]) -> T:
        """Send ``call``, retrying as ``self.retries`` allows; its value or its error (raised)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.send(call.request(self._http))
            except httpx.TransportError as exc:
                pause = pause_after_failure(call, exc, attempt, self.retries)
                if pause is None:
                    raise no_answer(self.base_url, exc) from exc
                self._sleep(pause)
                continue
            pause = pause_after_answer(call, response, attempt, self.retries)
            if pause is None:
                return outcome(call, response)
            self._sleep(pause)

    # --- records ---------------------------------------------------------------------------------

    def remember(
        self, content: str, *, idempotency_key: str | None = None, **params: Unpack[t.RememberParams]
    ) -> t.RememberAnswer:
        """Store one record (docs/reference/remember.md). An idempotency key is generated unless
        you pass yours; every retry sends the same, so a retry never stores it twice."""
        return self.send(ops.remember(content, params, idempotency_key))

    def remember_batch(self, records: list[t.BatchRecord]) -> t.BatchAnswer:
        """Store up to 500 records; one result per record, in order (an error is that record's)."""
        return self.send(ops.remember_batch(records))

    def get_memory(self, memory_id: str) -> t.MemoryAnswer:
        return self.send(ops.get_memory(memory_id))

    def search(self, query: str, **params: Unpack[t.SearchParams]) -> t.SearchAnswer:
        return self.send(ops.search(query, params))

    def forget(
        self, memory_id: str | None = None, *, source_id: str | None = None, workspace: str | None = None
    ) -> t.ForgetAnswer:
        """Forget one record by id, or every record of ``source_id`` you can read (one of the two)."""
        return self.send(ops.forget(memory_id, source_id, workspace))

    def forget_by_id(self, memory_id: str, *, workspace: str | None = None) -> t.ForgetAnswer:
        """``DELETE /api/v1/memories/<id>``: in any workspace unless ``workspace`` names one."""
        return self.send(ops.forget_by_id(memory_id, workspace))

    def validate(self, source_id: str, current_source_hash: str, *, workspace: str | None = None) -> t.ValidateAnswer:
        return self.send(ops.validate(source_id, current_source_hash, workspace))

    def history(self, memory_id: str) -> t.HistoryAnswer:
        return self.send(ops.history(memory_id))

    def history_by_fact_key(self, fact_key: str, *, workspace: str | None = None) -> t.HistoryAnswer:
        return self.send(ops.history_by_fact_key(fact_key, workspace))

    def recall(self, task: str, **params: Unpack[t.RecallParams]) -> t.RecallAnswer:
        """``recall_context``: a token-bounded context pack for ``task``."""
        return self.send(ops.recall(task, params))

    def workspaces(self) -> t.WorkspaceList:
        return self.send(ops.workspaces())

    # --- sessions ----------------------------------------------------------------------------------

    def upsert_session(self, client: str, session_id: str, **fields: Unpack[t.SessionFields]) -> t.SessionAnswer:
        return self.send(ops.upsert_session(client, session_id, fields))

    def add_turns(self, client: str, session_id: str, turns: list[t.TurnInput]) -> t.TurnsAnswer:
        return self.send(ops.add_turns(client, session_id, turns))

    def list_sessions(
        self, *, client: str | None = None, limit: int | None = None, offset: int | None = None
    ) -> t.SessionList:
        return self.send(ops.list_sessions(client, limit, offset))

    def iter_sessions(self, *, client: str | None = None, page_size: int = 100) -> Iterator[t.Session]:
        """Every session you can read, newest first, a page at a time."""
        offset = 0
        while True:
            page = self.list_sessions(client=client, limit=page_size, offset=offset)
            yield from page["sessions"]
            offset += len(page["sessions"])
            if not page["sessions"] or offset >= page["total"]:
                return

    def get_session(
        self, client: str, session_id: str, *, after: int | None = None, limit: int | None = None
    ) -> t.SessionRead:
        return self.send(ops.get_session(client, session_id, after, limit))

    def iter_turns(self, client: str, session_id: str, *, page_size: int = 500) -> Iterator[t.Turn]:
        """Every turn of a session, in order, a page at a time (``next_after``)."""
        after: int | None = None
        while True:
            page = self.get_session(client, session_id, after=after, limit=page_size)
            yield from page["turns"]
            after = page["next_after"]
            if after is None:
                return

    def forget_session(self, client: str, session_id: str) -> t.SessionForgetAnswer:
        return self.send(ops.forget_session(client, session_id))

    def search_sessions(self, query: str, **params: Unpack[t.SessionSearchParams]) -> t.SessionSearchAnswer:
        return self.send(ops.search_sessions(query, params))

    # --- ledger ------------------------------------------------------------------------------------

    def ledger_record(
        self,
        kind: Literal["transaction", "reminder"],
        amount: str,
        currency: str,
        **params: Unpack[t.LedgerRecordParams],
    ) -> t.LedgerRecorded:
        """Append one entry. Give a ``reference`` to make it safe to retry after a lost answer."""
        return self.send(ops.ledger_record(kind, amount, currency, params))

    def ledger_list(self, **params: Unpack[t.LedgerListParams]) -> t.LedgerListed:
        return self.send(ops.ledger_list(params))

    def iter_ledger_entries(self, *, page_size: int = 100, **filters: Unpack[t.LedgerFilters]) -> Iterator[t.Entry]:
        """Every entry you may read, newest first, a page at a time (``next_offset``)."""
        offset: int | None = 0
        while offset is not None:
            page = self.ledger_list(**filters, limit=page_size, offset=offset)
            yield from page["entries"]
            offset = page["next_offset"]

    def ledger_balance(self, **params: Unpack[t.LedgerBalanceParams]) -> t.LedgerBalances:
        return self.send(ops.ledger_balance(params))

    def ledger_reverse(self, entry_id: str, reason: str) -> t.LedgerRecorded:
        return self.send(ops.ledger_reverse(entry_id, reason))

    def ledger_upcoming(self, *, until: str | None = None) -> t.LedgerUpcoming:
        return self.send(ops.ledger_upcoming(until))

    def ledger_complete(self, entry_id: str, **params: Unpack[t.LedgerCompleteParams]) -> t.LedgerRecorded:
        return self.send(ops.ledger_complete(entry_id, params))

    # --- data rights, consent, health --------------------------------------------------------------

    def export(self, *, scope: Literal["project", "account"] = "project") -> bytes:
        """The key's project (or the account: owners) as a gzipped JSON Lines export."""
        return self.send(ops.export(scope))

    def export_to(self, stream: IO[bytes], *, scope: Literal["project", "account"] = "project") -> int:
        """Stream the export into ``stream`` without holding it in memory; the bytes written.
        Not retried once bytes have been written (a partial file is an error, raised)."""
        call = ops.export(scope)
        with self._http.stream(call.method, call.path, params={"scope": scope} if scope != "project" else None) as r:
            if r.status_code >= 400:
                r.read()
                outcome(call, r)
            written = 0
            for chunk in r.iter_bytes():
                stream.write(chunk)
                written += len(chunk)
        return written

    def import_export(self, data: bytes, *, respond_async: bool = False) -> t.ImportAnswer:
        """Import an MMW export into the key's project (owners and admins); again adds nothing."""
        return self.send(ops.import_export(data, respond_async))

    def import_job(self, job_id: str) -> t.ImportJobAnswer:
        return self.send(ops.import_job(job_id))

    def agent_consent(self, given: bool, sources: list[str] | None = None) -> t.AgentConsentAnswer:
        return self.send(ops.agent_consent(given, sources))

    def agent_consent_scope(self) -> t.AgentConsentScope:
        """What a consent given with this key would cover (account, project, user), to show before asking."""
        return self.send(ops.agent_consent_scope())

    def healthz(self) -> dict[str, Any]:
        return self.send(ops.healthz())
