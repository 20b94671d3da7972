"""The one family of domain errors. Each carries the exact user-facing message and a code.

Services raise these; every interface translates them the same way: REST answers
``{"error": {"code", "message"}}`` with ``http_status``; MCP answers an ``isError`` tool result
``Error executing tool <name>: <message>``.
"""

from __future__ import annotations


class MMWError(Exception):
    """Base of every error a caller may see. ``message`` is shown verbatim."""

    code = "error"
    http_status = 400

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InvalidInput(MMWError):
    code = "invalid_input"
    http_status = 400


class PayloadTooLarge(MMWError):
    code = "payload_too_large"
    http_status = 413


class NotAuthenticated(MMWError):
    code = "not_authenticated"
    http_status = 401


class Forbidden(MMWError):
    code = "forbidden"
    http_status = 403


class NotFound(MMWError):
    code = "not_found"
    http_status = 404


class Conflict(MMWError):
    code = "conflict"
    http_status = 409


class BillingNotice(MMWError):
    code = "billing_notice"
    http_status = 402


class RateLimited(MMWError):
    code = "rate_limited"
    http_status = 429

    def __init__(self, message: str, *, retry_after: int, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after
