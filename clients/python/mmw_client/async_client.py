"""``AsyncMMWClient``: every REST operation, awaited (``MMWClient`` is the same, synchronous)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import IO, Any, Literal, TypeVar

import httpx
from typing_extensions import Unpack

from mmw_client import _operations as ops
from mmw_client import types as t
from mmw_client._core import (
    Call,
    Retries,
    no_answer,
    outcome,
    pause_after_answer,
    pause_after_failure,
)
from mmw_client.client import DEFAULT_TIMEOUT, headers_for, settings

T = TypeVar("T")


class AsyncMMWClient:
    """An asynchronous client of one MMW server, with one key (and so one project).

    ``timeout``: seconds (or an ``httpx.Timeout``) per attempt. ``retries``: see ``Retries``; a
    write is retried only when the server will recognise it (module ``_core``). ``http_client``:
    your own ``httpx.AsyncClient`` (its base URL and headers are set by this client). Use it as an
    async context manager, or await ``close()``.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retries: Retries | None = None,
        http_client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.base_url, key = settings(base_url, api_key)
        self.retries = retries or Retries()
        self._sleep = sleep
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._http.base_url = httpx.URL(self.base_url)
        self._http.headers.update(headers_for(key))

    async def __aenter__(self) -> AsyncMMWClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def send(self, call: Call[T]) -> T:
        """Send ``call``, retrying as ``self.retries`` allows; its value or its error (raised)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self._http.send(call.request(self._http))
            except httpx.TransportError as exc:
                pause = pause_after_failure(call, exc, attempt, self.retries)
                if pause is None:
                    raise no_answer(self.base_url, exc) from exc
                await self._sleep(pause)
                continue
            pause = pause_after_answer(call, response, attempt, self.retries)
            if pause is None:
                return outcome(call, response)
            await self._sleep(pause)

    # --- records ---------------------------------------------------------------------------------

    async def remember(
        self, content: str, *, idempotency_key: str | None = None, **params: Unpack[t.RememberParams]
    ) -> t.RememberAnswer:
        """Store one record (docs/reference/remember.md). An idempotency key is generated unless
        you pass yours; every retry sends the same, so a retry never stores it twice."""
        return await self.send(ops.remember(content, params, idempotency_key))

    async def remember_batch(self, records: list[t.BatchRecord]) -> t.BatchAnswer:
        """Store up to 500 records; one result per record, in order (an error is that record's)."""
        return await self.send(ops.remember_batch(records))

    async def get_memory(self, memory_id: str) -> t.MemoryAnswer:
        return await self.send(ops.get_memory(memory_id))

    async def search(self, query: str, **params: Unpack[t.SearchParams]) -> t.SearchAnswer:
        return await self.send(ops.search(query, params))

    async def forget(
        self, memory_id: str | None = None, *, source_id: str | None = None, workspace: str | None = None
    ) -> t.ForgetAnswer:
        """Forget one record by id, or every record of ``source_id`` you can read (one of the two)."""
        return await self.send(ops.forget(memory_id, source_id, workspace))

    async def forget_by_id(self, memory_id: str, *, workspace: str | None = None) -> t.ForgetAnswer:
        """``DELETE /api/v1/memories/<id>``: in any workspace unless ``workspace`` names one."""
        return await self.send(ops.forget_by_id(memory_id, workspace))

    async def validate(
        self, source_id: str, current_source_hash: str, *, workspace: str | None = None
    ) -> t.ValidateAnswer:
        return await self.send(ops.validate(source_id, current_source_hash, workspace))

    async def history(self, memory_id: str) -> t.HistoryAnswer:
        return await self.send(ops.history(memory_id))

    async def history_by_fact_key(self, fact_key: str, *, workspace: str | None = None) -> t.HistoryAnswer:
        return await self.send(ops.history_by_fact_key(fact_key, workspace))

    async def recall(self, task: str, **params: Unpack[t.RecallParams]) -> t.RecallAnswer:
        """``recall_context``: a token-bounded context pack for ``task``."""
        return await self.send(ops.recall(task, params))

    async def workspaces(self) -> t.WorkspaceList:
        return await self.send(ops.workspaces())

    # --- sessions ----------------------------------------------------------------------------------

    async def upsert_session(self, client: str, session_id: str, **fields: Unpack[t.SessionFields]) -> t.SessionAnswer:
        return await self.send(ops.upsert_session(client, session_id, fields))

    async def add_turns(self, client: str, session_id: str, turns: list[t.TurnInput]) -> t.TurnsAnswer:
        return await self.send(ops.add_turns(client, session_id, turns))

    async def list_sessions(
        self, *, client: str | None = None, limit: int | None = None, offset: int | None = None
    ) -> t.SessionList:
        return await self.send(ops.list_sessions(client, limit, offset))

    async def iter_sessions(self, *, client: str | None = None, page_size: int = 100) -> AsyncIterator[t.Session]:
        """Every session you can read, newest first, a page at a time."""
        offset = 0
        while True:
            page = await self.list_sessions(client=client, limit=page_size, offset=offset)
            for session in page["sessions"]:
                yield session
            offset += len(page["sessions"])
            if not page["sessions"] or offset >= page["total"]:
                return

    async def get_session(
        self, client: str, session_id: str, *, after: int | None = None, limit: int | None = None
    ) -> t.SessionRead:
        return await self.send(ops.get_session(client, session_id, after, limit))

    async def iter_turns(self, client: str, session_id: str, *, page_size: int = 500) -> AsyncIterator[t.Turn]:
        """Every turn of a session, in order, a page at a time (``next_after``)."""
        after: int | None = None
        while True:
            page = await self.get_session(client, session_id, after=after, limit=page_size)
            for turn in page["turns"]:
                yield turn
            after = page["next_after"]
            if after is None:
                return

    async def forget_session(self, client: str, session_id: str) -> t.SessionForgetAnswer:
        return await self.send(ops.forget_session(client, session_id))

    async def search_sessions(self, query: str, **params: Unpack[t.SessionSearchParams]) -> t.SessionSearchAnswer:
        return await self.send(ops.search_sessions(query, params))

    # --- ledger ------------------------------------------------------------------------------------

    async def ledger_record(
        self,
        kind: Literal["transaction", "reminder"],
        amount: str,
        currency: str,
        **params: Unpack[t.LedgerRecordParams],
    ) -> t.LedgerRecorded:
        """Append one entry. Give a ``reference`` to make it safe to retry after a lost answer."""
        return await self.send(ops.ledger_record(kind, amount, currency, params))

    async def ledger_list(self, **params: Unpack[t.LedgerListParams]) -> t.LedgerListed:
        return await self.send(ops.ledger_list(params))

    async def iter_ledger_entries(
        self, *, page_size: int = 100, **filters: Unpack[t.LedgerFilters]
    ) -> AsyncIterator[t.Entry]:
        """Every entry you may read, newest first, a page at a time (``next_offset``)."""
        offset: int | None = 0
        while offset is not None:
            page = await self.ledger_list(**filters, limit=page_size, offset=offset)
            for entry in page["entries"]:
                yield entry
            offset = page["next_offset"]

    async def ledger_balance(self, **params: Unpack[t.LedgerBalanceParams]) -> t.LedgerBalances:
        return await self.send(ops.ledger_balance(params))

    async def ledger_reverse(self, entry_id: str, reason: str) -> t.LedgerRecorded:
        return await self.send(ops.ledger_reverse(entry_id, reason))

    async def ledger_upcoming(self, *, until: str | None = None) -> t.LedgerUpcoming:
        return await self.send(ops.ledger_upcoming(until))

    async def ledger_complete(self, entry_id: str, **params: Unpack[t.LedgerCompleteParams]) -> t.LedgerRecorded:
        return await self.send(ops.ledger_complete(entry_id, params))

    # --- data rights, consent, health --------------------------------------------------------------

    async def export(self, *, scope: Literal["project", "account"] = "project") -> bytes:
        """The key's project (or the account: owners) as a gzipped JSON Lines export."""
        return await self.send(ops.export(scope))

    async def export_to(self, stream: IO[bytes], *, scope: Literal["project", "account"] = "project") -> int:
        """Stream the export into ``stream`` without holding it in memory; the bytes written.
        Not retried once bytes have been written (a partial file is an error, raised)."""
        call = ops.export(scope)
        async with self._http.stream(
            call.method, call.path, params={"scope": scope} if scope != "project" else None
        ) as r:
            if r.status_code >= 400:
                await r.aread()
                outcome(call, r)
            written = 0
            async for chunk in r.aiter_bytes():
                stream.write(chunk)
                written += len(chunk)
        return written

    async def import_export(self, data: bytes, *, respond_async: bool = False) -> t.ImportAnswer:
        """Import an MMW export into the key's project (owners and admins); again adds nothing."""
        return await self.send(ops.import_export(data, respond_async))

    async def import_job(self, job_id: str) -> t.ImportJobAnswer:
        return await self.send(ops.import_job(job_id))

    async def agent_consent(self, given: bool, sources: list[str] | None = None) -> t.AgentConsentAnswer:
        return await self.send(ops.agent_consent(given, sources))

    async def agent_consent_scope(self) -> t.AgentConsentScope:
        """What a consent given with this key would cover (account, project, user), to show before asking."""
        return await self.send(ops.agent_consent_scope())

    async def healthz(self) -> dict[str, Any]:
        return await self.send(ops.healthz())
