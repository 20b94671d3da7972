"""The error family: one exception class per code MMW's REST API answers.

Every error answer is ``{"error": {"code", "message"}}`` with an HTTP status. ``error_for`` picks
the class of the code, else the class of the status, else ``MMWError``; each carries ``status``,
``code``, ``message`` (the server's text, verbatim) and ``retry_after`` (seconds, from the
``Retry-After`` header, or None). ``TransportError`` is the one error that is not an answer: no
connection, a timeout, or a connection dropped before the answer arrived.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from mmw_client.types import ItemError, RememberAnswer


class MMWError(Exception):
    """Base of every error the client raises. ``message`` is shown verbatim."""

    status: int = 0
    code: str = "error"

    def __init__(
        self, message: str, *, status: int | None = None, code: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, message={self.message!r})"


class TransportError(MMWError):
    """No answer: the connection failed, timed out, or was dropped before the answer was read."""

    code = "transport_error"


# --- by status ---------------------------------------------------------------------------------


class BadRequest(MMWError):
    status, code = 400, "bad_request"


class NotAuthenticated(MMWError):
    status, code = 401, "not_authenticated"


class BillingNotice(MMWError):
    """402: no subscription, a grace period (read-only) or a suspended account: ``[MMW Notice]: …``."""

    status, code = 402, "billing_notice"


class Forbidden(MMWError):
    status, code = 403, "forbidden"


class NotFound(MMWError):
    status, code = 404, "not_found"


class MethodNotAllowed(MMWError):
    status, code = 405, "method_not_allowed"


class Conflict(MMWError):
    """409: an idempotency key reused with other input, ``expected_version`` not the newest, a
    deleted workspace's name, a ledger reference reused with other content, ..."""

    status, code = 409, "conflict"


class PayloadTooLarge(MMWError):
    status, code = 413, "payload_too_large"


class UnsupportedMediaType(MMWError):
    status, code = 415, "unsupported_media_type"


class RateLimited(MMWError):
    """429: ``retry_after`` says when to try again (the client already retried until its budget)."""

    status, code = 429, "rate_limited"


class InternalError(MMWError):
    """500: ``internal error (request <id>)``; quote the id to support."""

    status, code = 500, "internal_error"


class ServiceUnavailable(MMWError):
    """503: the database is unreachable or the server is overloaded; retried with ``Retry-After``."""

    status, code = 503, "service_unavailable"


# --- by code (each a kind of its status) --------------------------------------------------------


class InvalidInput(BadRequest):
    code = "invalid_input"


class InvalidCharacters(BadRequest):
    code = "invalid_characters"


class InvalidName(BadRequest):
    code = "invalid_name"


class ParseError(BadRequest):
    """The body is not JSON."""

    code = "parse_error"


class GuardRejected(BadRequest):
    """``Memory rejected by Security Guard: <reason>``: text aimed at agents, role tags, invisible characters."""

    code = "guard_rejected"


class LimitExceeded(Forbidden):
    """A plan limit or a technical ceiling (records per project, turns, ledger entries)."""

    code = "limit_exceeded"


class PlanFeature(Forbidden):
    code = "plan_feature"


class WorkspaceDeleted(Conflict):
    code = "workspace_deleted"


class ImportTooSlow(PayloadTooLarge):
    code = "import_too_slow"


class ImportBusy(RateLimited):
    """Two imports of the account are already running."""

    code = "import_busy"


class WriteFailed(InternalError):
    """A batch record the database refused although its checks passed: send that record again."""

    code = "write_failed"


_BY_STATUS: dict[int, type[MMWError]] = {
    cls.status: cls
    for cls in (
        BadRequest,
        NotAuthenticated,
        BillingNotice,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        Conflict,
        PayloadTooLarge,
        UnsupportedMediaType,
        RateLimited,
        InternalError,
        ServiceUnavailable,
    )
}
_CODED: tuple[type[MMWError], ...] = (
    *_BY_STATUS.values(),
    InvalidInput,
    InvalidCharacters,
    InvalidName,
    ParseError,
    GuardRejected,
    LimitExceeded,
    PlanFeature,
    WorkspaceDeleted,
    ImportTooSlow,
    ImportBusy,
    WriteFailed,
)
_BY_CODE: dict[str, type[MMWError]] = {cls.code: cls for cls in _CODED}


def error_for(status: int, body: Any, retry_after: float | None = None) -> MMWError:
    """The exception for an error answer: by its code, else by its status."""
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str):
        message = f"HTTP {status}"
    cls = _BY_CODE.get(code) if isinstance(code, str) else None
    if cls is None or cls.status != status:  # a code this client does not know with this status
        cls = _BY_STATUS.get(status, MMWError)
    return cls(message, status=status, code=code if isinstance(code, str) else None, retry_after=retry_after)


def item_error(result: Any) -> MMWError | None:
    """The error of one result of a batch or of a session's turns (``{"error": {...}}``), as the
    exception its code names (with that code's status); None for a success."""
    if isinstance(result, dict) and isinstance(result.get("error"), dict):
        cls = _BY_CODE.get(result["error"].get("code"), BadRequest)
        return error_for(cls.status, result)
    return None


def stored(result: RememberAnswer | ItemError) -> RememberAnswer:
    """One result of ``remember_batch``: the record's answer, or its error raised (as its class)."""
    error = item_error(result)
    if error is not None:
        raise error
    return cast("RememberAnswer", result)
