"""Checks every text input passes before anything else is done with it (docs/reliability.md, "Input bounds").

PostgreSQL cannot store NUL in text, and an unpaired surrogate cannot be encoded as UTF-8: either
reaching the database is an exception, not an answer. Lengths are the columns' limits, checked
here with a clear text instead of being hit as a database error or silently cut. One module, so
the memory input table (``memories.inputs``), names of projects, keys and accounts, and dashboard
forms refuse the same things with the same words.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from mmw.errors import InvalidInput, Template

# NUL, and UTF-16 surrogate code points (only unpaired ones can occur in a Python str).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# Names people and agents pick (workspaces, projects, keys): printable text. str.isprintable()
# refuses control (Cc), format (Cf: bidi controls, zero-width characters), separators other than
# the ASCII space, surrogates, private-use and unassigned code points.
WILDCARD = "*"

# The texts of the refusals below, ``field`` the name of what is refused ("project name").
EMPTY = Template("%(field)s must not be empty")
TOO_LONG = Template("%(field)s exceeds maximum length of %(limit)s")
UNSTORABLE = Template("%(field)s must not contain NUL or unpaired surrogate characters")
WILDCARD_IN_NAME = Template("%(field)s must not contain '*'")
UNPRINTABLE_NAME = Template("%(field)s must be printable text without control or bidi characters")
INVALID_EMAIL = Template("invalid e-mail address: %(email)s")


def check_text(field: str, value: str, max_length: int | None = None) -> str:
    """Return ``value`` if it can be stored as it is; refuse NUL, unpaired surrogates and text
    longer than ``max_length`` characters (never truncated)."""
    if _UNSTORABLE.search(value):
        raise InvalidInput(UNSTORABLE, code="invalid_characters", field=field)
    if max_length is not None and len(value) > max_length:
        raise InvalidInput(TOO_LONG, code="too_long", field=field, limit=max_length)
    return value


def name_problem(value: str, *, wildcard_ok: bool = False) -> Template | None:
    """Why ``value`` cannot be a name people read (a workspace, project, key or account name), or
    None: printable text without control or bidi characters — and, for workspaces, without ``*``
    (which reads take as "every workspace")."""
    if not wildcard_ok and WILDCARD in value:
        return WILDCARD_IN_NAME
    if not value.isprintable():
        return UNPRINTABLE_NAME
    return None


def check_name(field: str, value: str, max_length: int, *, wildcard_ok: bool = False) -> str:
    """``check_text`` plus ``name_problem``: for names created by a write."""
    check_text(field, value, max_length)
    problem = name_problem(value, wildcard_ok=wildcard_ok)
    if problem is not None:
        raise InvalidInput(problem, code="invalid_name", field=field)
    return value


def clean_label(kind: str, raw: str, max_length: int = 200) -> str:
    """A project, department, account or key name as stored: stripped, not empty, at most
    ``max_length`` characters of printable text (``*`` allowed; only workspaces reserve it)."""
    value = raw.strip()
    if not value:
        raise InvalidInput(EMPTY, field=kind)
    return check_name(kind, value, max_length, wildcard_ok=True)


def sha256_hex(value: str) -> str:
    """The SHA-256 digest of ``value`` (UTF-8) in hex: how keys and invitation nonces are stored."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def clean_email(email: str) -> str:
    """``email`` stripped and lower-cased, or ``invalid e-mail address: …`` (the one e-mail check)."""
    normalized = email.strip().lower()
    try:
        validate_email(normalized)
    except ValidationError:
        raise InvalidInput(INVALID_EMAIL, email=repr(email)) from None
    return normalized


def strip_marks(text: str) -> str:
    """``text`` decomposed (NFKD) without its combining marks: ``é`` → ``e``, ``й`` → ``и``.
    The one accent folder of the Python side (the archivist's features, the n-gram embedder);
    PostgreSQL's keyword side uses ``mmw_unaccent``. Callers recompose or case-fold as they need."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
