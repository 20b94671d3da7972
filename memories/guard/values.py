"""Is this candidate value a real secret?  Placeholders, references and names are not.

These checks run only on candidates (a few per text), so they may be written for clarity.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9_]{1,40}:[0-9a-f]{8}\]")

_PLACEHOLDER_WORDS = frozenset(
    [
        "changeme",
        "change_me",
        "change-me",
        "changeit",
        "changethis",
        "password",
        "passwd",
        "pass",
        "pwd",
        "secret",
        "secrets",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "key",
        "example",
        "sample",
        "placeholder",
        "dummy",
        "test",
        "testing",
        "todo",
        "tbd",
        "fixme",
        "none",
        "null",
        "nil",
        "undefined",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "required",
        "optional",
        "empty",
        "hidden",
        "masked",
        "redacted",
        "removed",
        "omitted",
        "sensitive",
        "string",
        "str",
        "text",
        "value",
        "values",
        "default",
        "unset",
        "notset",
        "not_set",
        "blank",
        "foo",
        "bar",
        "baz",
        "foobar",
        "qwerty",
        "yourpassword",
        "your_password",
        "your-password",
        "mypassword",
        "my_password",
        "my-password",
        "yoursecret",
        "your_secret",
        "yourtoken",
        "your_token",
        "yourkey",
        "your_key",
        "your_api_key",
        "your-api-key",
        "mysecret",
        "my_secret",
        "mytoken",
        "my_token",
        "xxx",
        "...",
        "***",
        "???",
        "enabled",
        "disabled",
        "auto",
        "none_set",
        "tokenhere",
        "keyhere",
        "<none>",
        "n/a",
        "na",
    ]
)
_PLACEHOLDER_PARTS = (
    "xxxx",
    "****",
    "...",
    "\u2026",
    "••",
    "____",
    "----",
    "????",
    "0000000",
    "example",
    "placeholder",
    "changeme",
    "change_me",
    "change-me",
    "redacted",
    "dummy",
    "your_",
    "your-",
    "yourkey",
    "yoursecret",
    "yourtoken",
    "_here",
    "-here",
    "here>",
    "insert",
    "replace_me",
    "replace-me",
    "replaceme",
    "fill_in",
    "fill-in",
    "todo",
    "<",
    ">",
    "{{",
    "}}",
    "${",
    "$(",
    "%(",
    "<%",
    "os.environ",
    "getenv",
    "process.env",
    "env(",
    "env[",
    "env.",
    "secrets.",
    "vault:",
    "vault(",
    "op://",
    "ref+",
    "!ref",
    "!sub",
    "!getatt",
    "arn:aws:",
    "secretsmanager",
    "keyring",
    "from_env",
    "config(",
    "config[",
    "settings.",
    "lookup(",
    "aws_ssm",
    "ssm:/",
)
_REFERENCE_START = ("/", "~/", "./", "../", "file:", "http://", "https://", "env:", "\\")
_VARIABLE = re.compile(r"\$(?:\{[^}]*\}|\([^)]*\)|env:[A-Za-z_]\w*|[A-Za-z_]\w*)|%[A-Za-z_]\w*%|%\([a-z_]+\)s")
# an identifier-like segment: snake_case, CamelCase (digits only at the end) or ALL_CAPS
_SEGMENT = r"(?:_?[a-z][a-z0-9_]*|[A-Z]?[a-z]+(?:[A-Z][a-z]+)*[A-Z]*[0-9]*|[A-Z][A-Z0-9_]*)"
_DOTTED_NAME = re.compile(  # settings.DB_PASSWORD, Name.Builtin, rust_openssl.hpke.X25519PrivateKey
    _SEGMENT + r"(?:\." + _SEGMENT + r")+(?:\(\))?|_?[a-z][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?:\(\))?"
)
_TEMPLATE_NAME = re.compile(r"[A-Z][A-Z_]{2,}")  # USER:PASSWORD@HOST, SAS_POLICY:SAS_KEY@NAMESPACE
_NAME_WORDS = ("pass", "secret", "token", "key", "pwd", "cred", "auth")
_TYPE_NAME = re.compile(
    r"(?:string|str|boolean|bool|number|int|integer|float|double|object|array|null|none|any|bytes|text|list|dict"
    r"|map|date|datetime|uuid|secret|secretstr|password)\??(?:\[\])?",
    re.IGNORECASE,
)
_SEQUENCES = ("abcdefghijklmnopqrstuvwxyz", "0123456789", "qwertyuiop", "asdfghjkl", "zxcvbnm")
_WORDY = re.compile(r"[a-z]+(?:[-_. ][a-z]+)*|[A-Z][a-z]+(?:[A-Z][a-z]+)*|[A-Z]+(?:_[A-Z]+)*")


def is_placeholder(value: str) -> bool:
    """True for values that stand in for a secret: ``<your-key>``, ``xxx``, ``changeme``,
    ``${VAR}``, ``$VAR``, ``****``, ``...``, ``your_password_here``, env/vault references,
    ``AKIAIOSFODNN7EXAMPLE``-style documentation examples and already-redacted markers."""
    stripped = value.strip().strip("\"'`")
    low = stripped.lower()
    if not low or low in _PLACEHOLDER_WORDS:
        return True
    if MARKER_RE.search(stripped) or stripped.endswith(("EXAMPLE", "EXAMPLEKEY")):
        return True
    if (
        _VARIABLE.fullmatch(stripped)
        or low.startswith(_REFERENCE_START)
        or any(part in low for part in _PLACEHOLDER_PARTS)
    ):
        return True
    if len(set(low)) == 1 or _TYPE_NAME.fullmatch(stripped) or _is_sequential(low):
        return True  # "aaaaaa", "string?", "abcdef123456"
    if stripped[:1] in "[({" and stripped[-1:] in "])}":
        return True  # "[secret key]", "(hidden)", "{self.password}"
    if _TEMPLATE_NAME.fullmatch(stripped):
        return True
    if looks_like_identifier(stripped) and any(w in low for w in _NAME_WORDS):
        return True  # "challengePassword", "key_password": a name, not a value
    return bool(_DOTTED_NAME.fullmatch(stripped))  # settings.DB_PASSWORD, Name.Builtin, self.token


def _is_sequential(low: str) -> bool:
    """Keyboard or alphabet runs ("abcdef123456", "qwerty123", "0123456789abcdef")."""
    if len(low) < 6:
        return False
    breaks = 0
    for a, b in itertools.pairwise(low):
        if not any(a + b in seq for seq in _SEQUENCES):
            breaks += 1
    return breaks <= 1


def shannon_bits(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def char_classes(value: str) -> int:
    """How many of lower / upper / digit / symbol (other than ``-_.``) occur in ``value``."""
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() and c not in "-_." for c in value)
    )


def looks_random(value: str, *, min_len: int = 12) -> bool:
    """A high-entropy token: long enough, not words, mixed character classes or very diverse.
    Used where the *name* next to a value is the only evidence that it is a secret."""
    if len(value) < min_len or is_placeholder(value) or _WORDY.fullmatch(value):
        return False
    bits = shannon_bits(value)
    if char_classes(value) >= 2 and bits >= 3.0:
        return True
    return len(value) >= 20 and bits >= 3.5


def looks_like_password(value: str) -> bool:
    """A value given to a password-named key: anything that is not a placeholder, a reference or
    a too-short stub.  Passwords may be plain words, so no entropy test here."""
    return len(value) >= 4 and not is_placeholder(value)


def looks_like_strong_password(value: str) -> bool:
    """For prose ("the password is …"), ``--flag value`` and positional forms: the value must
    not read as a word or an identifier -- a digit or a symbol and two character classes."""
    return (
        looks_like_password(value)
        and len(value) >= 6
        and char_classes(value) >= 2
        and any(not c.isalpha() for c in value)
        and not _WORDY.fullmatch(value)
    )


_IDENTIFIER = re.compile(
    r"_?[a-z]+(?:_[a-z]+)*"  # snake_case
    r"|[a-z]+(?:[A-Z][a-z]+)+"  # camelCase
    r"|[A-Z]*(?:[A-Z][a-z]+)+[A-Z]*"  # CamelCase, DHPrivateKey
    r"|[A-Z]+(?:_[A-Z]+)*"  # ALL_CAPS
)


def looks_like_identifier(value: str) -> bool:
    """A name made of words (``raw_password``, ``httpCredentials``, ``DHPrivateKey``,
    ``upass``): in code this is a variable, not a literal.  Random letters
    (``DGgditUXuHhURtfF``) are not."""
    return bool(_IDENTIFIER.fullmatch(value))
