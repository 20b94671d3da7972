"""The one family of domain errors. Each carries the exact user-facing message and a code.

Services raise these; every interface translates them the same way: REST answers
``{"error": {"code", "message"}}`` with ``http_status``; MCP answers an ``isError`` tool result
``Error executing tool <name>: <message>``.

A text a page may show a person (the dashboard) is raised from a ``Template`` with its values:
``Conflict(PROJECT_EXISTS, name=repr(name))``. Its ``message`` is the template's English text with
the values put in (what agents read, unchanged), and the page translates it by the template it was
raised from (``interfaces.people_errors``), never by reading its English words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one template, one meaning
class Template:
    """An error's English text with named values as ``%(name)s``; ``text % values`` is the message."""

    text: str

    def render(self, values: Mapping[str, object]) -> str:
        return self.text % values


class MMWError(Exception):
    """Base of every error a caller may see. ``message`` is shown verbatim.

    Raised with a ``Template`` and its values (keyword arguments), the error keeps both
    (``template``, ``values``) beside the message they render; raised with a plain text,
    ``template`` is None."""

    code = "error"
    http_status = 400

    def __init__(self, message: str | Template, *, code: str | None = None, **values: object) -> None:
        if isinstance(message, Template):
            template: Template | None = message
            text = message.render(values)
        elif values:
            raise TypeError("values are only given with a Template")
        else:
            template, text = None, message
        super().__init__(text)
        self.message = text
        self.template = template
        self.values: Mapping[str, object] = values
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

    def __init__(self, message: str | Template, *, retry_after: int, code: str | None = None, **values: object) -> None:
        super().__init__(message, code=code, **values)
        self.retry_after = retry_after
