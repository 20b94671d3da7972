"""What the sync and async clients share: a call described once (``Call``), the retry rule, and
the translation of an answer into a value or an exception.

The retry rule (``Retries``) — a call is tried again only when that cannot write twice:

- **429** (a rate limit: the server did not do the work): always, after ``Retry-After`` (else
  exponential backoff with jitter); a ``Retry-After`` longer than ``max_wait`` is not waited for —
  the error is raised with it.
- **no connection** (connect refused or timed out: nothing was sent): always, with backoff.
- **503, 502/504, a read timeout, a connection dropped after the request was sent** (the server
  may have done the work: MMW answers 503 to a request past its deadline, ``MMW_REQUEST_DEADLINE``,
  while that request may still commit), after ``Retry-After`` when sent: only when the call is
  *retry-safe* — a read, or a write the server
  recognises when it comes again. Writes are made retry-safe by an idempotency key generated
  once per logical call and sent unchanged on every attempt (``X-Idempotency-Key`` on
  ``remember``, ``idempotency_key`` on each record of a batch), by their own identity (a session
  turn's position, a ledger entry's ``reference``, a reversal or a completion that can happen only
  once), or because they are idempotent (forget, a session's metadata, an import).
"""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, Generic, TypeVar

import httpx

from mmw_client.errors import MMWError, TransportError, error_for

T = TypeVar("T")

DEFAULT_URL = "http://127.0.0.1:8000"
USER_AGENT = "mmw-client-python/0.1.0"
IDEMPOTENCY_HEADER = "X-Idempotency-Key"
_ALWAYS = frozenset({429})  # the server did not do the work
_MAYBE_DONE = frozenset({502, 503, 504})  # the server (or a gateway) may have done it


def new_idempotency_key() -> str | None:
    """A fresh key for one logical write (reused on each of its retries)."""
    return f"mmw-py-{uuid.uuid4()}"


@dataclass(frozen=True)
class Retries:
    """How many times a call is tried (``attempts``, the first included) and how long to wait
    between tries: ``Retry-After`` when the server sends it (up to ``max_wait`` seconds), else
    ``backoff`` × 2ⁿ with jitter, at most ``max_backoff``."""

    attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 8.0
    max_wait: float = 60.0

    def pause(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or None when no attempt is left."""
        if attempt >= self.attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_wait else None
        base = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
        return base * (0.5 + random.random() / 2)  # jitter: clients told to wait do not all return at once


NO_RETRIES = Retries(attempts=1)


@dataclass(frozen=True)
class Call(Generic[T]):
    """One REST call, built once and sent as many times as the retry rule allows: its headers
    (an idempotency key among them) are the same on every attempt."""

    method: str
    path: str
    json: Any = None
    params: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes | None = None
    retry_safe: bool = True
    raw: bool = False  # the answer's bytes, not JSON (the export)

    def request(self, client: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        params = {k: _query_value(v) for k, v in (self.params or {}).items() if v is not None}
        if self.content is not None:
            return client.build_request(
                self.method, self.path, params=params, headers=self.headers, content=self.content
            )
        return client.build_request(self.method, self.path, params=params, headers=self.headers, json=self.json)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def body(params: dict[str, Any], **required: Any) -> dict[str, Any]:
    """A JSON body: the required values and the optional parameters given (None ones left out,
    so the server applies its defaults)."""
    return {**required, **{k: v for k, v in params.items() if v is not None}}


def retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (a number or an HTTP date), None when absent or unreadable."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def pause_after_answer(call: Call[Any], response: httpx.Response, attempt: int, retries: Retries) -> float | None:
    """Seconds to wait before trying ``call`` again after this answer, or None to stop here."""
    status = response.status_code
    if status in _ALWAYS:
        return retries.pause(attempt, retry_after(response))
    if status in _MAYBE_DONE and call.retry_safe:
        return retries.pause(attempt, retry_after(response))
    return None


def pause_after_failure(call: Call[Any], exc: httpx.TransportError, attempt: int, retries: Retries) -> float | None:
    """Seconds to wait before trying ``call`` again after no answer came, or None to stop here."""
    unsent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    if unsent or call.retry_safe:
        return retries.pause(attempt, None)
    return None


def outcome(call: Call[T], response: httpx.Response) -> T:
    """The value of a successful answer, or the exception of an error answer (raised)."""
    if response.status_code >= 400:
        raise error_for(response.status_code, _json_or_none(response), retry_after(response))
    if call.raw:
        return response.content  # type: ignore[return-value]  # Call[bytes]: the export
    value = _json_or_none(response)
    if value is None:
        raise MMWError(f"the server answered {response.status_code} without a JSON body", status=response.status_code)
    return value  # type: ignore[no-any-return]  # the server's JSON, typed by the Call


def _json_or_none(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        return None


def no_answer(url: str, exc: httpx.TransportError) -> TransportError:
    reason = "timed out" if isinstance(exc, httpx.TimeoutException) else (str(exc) or type(exc).__name__)
    return TransportError(f"MMW server at {url} gave no answer ({reason})")
