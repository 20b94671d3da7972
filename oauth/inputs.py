"""The parameters of the OAuth routes, declared once: length and allowed characters.

Every route checks what it receives against these before the database, a digest lookup or an
outbound fetch sees it (``oauth.endpoints`` at the door, ``oauth.provider`` and
``oauth.services`` again where a value is used), so an out-of-bounds value is a 4xx naming its
rule — never a database error, never silently cut. The alphabets are the RFCs': RFC 6749
Appendix A (``client_id``, ``state``, ``code``, tokens are VSCHAR, ``scope`` is NQCHAR words) and
RFC 7636 §4.1–4.2 (PKCE values are 43 to 128 unreserved characters). The lengths are MMW's
columns, or — for values only ever hashed — generous bounds well above what MMW issues.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from oauth.models import MAX_CLIENT_ID

VSCHAR = re.compile(r"[\x20-\x7e]*")  # RFC 6749 Appendix A: visible ASCII and space
NQCHAR_WORDS = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]*")  # scope tokens (NQCHAR) and spaces
UNRESERVED = re.compile(r"[A-Za-z0-9\-._~]*")  # RFC 7636 §4.1
MAX_SECRET = 200  # codes, tokens and client secrets MMW issues are under 70 characters
MAX_STATE = 500  # PendingAuthorization.state
MAX_URI = 2000  # redirect URIs (Client.redirect_uris, PendingAuthorization.redirect_uri)
MAX_SCOPE = 500


@dataclass(frozen=True)
class Param:
    """One OAuth parameter: ``min_length`` to ``max_length`` characters, each matching
    ``alphabet`` (or printable text when ``alphabet`` is ``None``); ``rule`` is the refusal's
    text, stating both."""

    name: str
    max_length: int
    rule: str
    alphabet: re.Pattern[str] | None = VSCHAR
    min_length: int = 0


def _visible(name: str, max_length: int) -> Param:
    return Param(name, max_length, f"{name} must be at most {max_length} visible ASCII characters")


def _pkce(name: str) -> Param:
    rule = f"{name} must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~ (RFC 7636)"
    return Param(name, 128, rule, UNRESERVED, min_length=43)


CLIENT_ID = _visible("client_id", MAX_CLIENT_ID)
CLIENT_SECRET = _visible("client_secret", MAX_SECRET)
STATE = _visible("state", MAX_STATE)
CODE = _visible("code", MAX_SECRET)
REFRESH_TOKEN = _visible("refresh_token", MAX_SECRET)
TOKEN = _visible("token", MAX_SECRET)  # /oauth/revoke: an access or refresh token
ACCESS_TOKEN = _visible("access token", MAX_SECRET)  # Authorization: Bearer on /mcp
CODE_CHALLENGE = _pkce("code_challenge")
CODE_VERIFIER = _pkce("code_verifier")
REDIRECT_URI = Param("redirect_uri", MAX_URI, f"redirect_uri must be at most {MAX_URI} printable characters", None)
SCOPE = Param(
    "scope", MAX_SCOPE, f"scope must be at most {MAX_SCOPE} characters: scope names separated by spaces", NQCHAR_WORDS
)

ALL: tuple[Param, ...] = (
    CLIENT_ID, CLIENT_SECRET, STATE, CODE, REFRESH_TOKEN, TOKEN, ACCESS_TOKEN, CODE_CHALLENGE, CODE_VERIFIER,
    REDIRECT_URI, SCOPE,
)  # fmt: skip
# What each route reads, each to be sent at most once (RFC 6749 §3.1; MMW is one resource, so
# ``resource`` too), and what it bounds before anything else runs. ``resource`` is checked by
# value: it must be this server's (RFC 8707). ``code_challenge`` is bounded where the request is
# parked (``services.authorization_begin``), so its refusal goes back to the client's redirect URI.
AUTHORIZE_READS = (
    "response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method",
    "resource",
)  # fmt: skip
AUTHORIZE_BEFORE_REDIRECT: tuple[Param, ...] = (CLIENT_ID, REDIRECT_URI, STATE)
TOKEN_READS = (
    "grant_type", "client_id", "client_secret", "code", "code_verifier", "redirect_uri", "refresh_token", "scope",
    "resource",
)  # fmt: skip
TOKEN_GRANT: tuple[Param, ...] = (CODE, CODE_VERIFIER, REDIRECT_URI, REFRESH_TOKEN, SCOPE)
REVOKE_READS = ("client_id", "client_secret", "token", "token_type_hint")


def problem(param: Param, value: str) -> str | None:
    """``param.rule`` when ``value`` is out of bounds, else ``None``."""
    if not param.min_length <= len(value) <= param.max_length:
        return param.rule
    if param.alphabet is None:
        return None if value.isprintable() else param.rule
    return None if param.alphabet.fullmatch(value) else param.rule


def sent_twice(name: str) -> str:
    """RFC 6749 §3.1: request parameters must not be included more than once."""
    return f"{name} must be sent once"


class MultiValues(Protocol):
    """A query string or form: Starlette's ``QueryParams`` and ``FormData``."""

    def getlist(self, key: Any) -> list[Any]: ...


def first_problem(values: MultiValues, reads: Iterable[str], bounded: Iterable[Param]) -> str | None:
    """The first refusal of a request: a parameter of ``reads`` sent twice, or a ``bounded``
    one out of bounds (a form's file upload is never a valid value); ``None`` when it passes."""
    for name in reads:
        if len(values.getlist(name)) > 1:
            return sent_twice(name)
    for param in bounded:
        for value in values.getlist(param.name):
            problem_text = problem(param, value) if isinstance(value, str) else param.rule
            if problem_text:
                return problem_text
    return None
