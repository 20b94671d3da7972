"""Detectors behind the ``redact`` rules.  Each yields spans of the raw text holding a secret.

Speed contract: every regex here either starts with a literal (CPython's ``re`` then skips with
a fast substring search) or is only tried at anchor offsets found by ``bytes.find``; no regex has
a nested unbounded quantifier, and repetitions that could meet a long run are possessive
(``*+``/``{n,}+``) or bounded, so each is linear in the input.

Why one module of this length: one detector per kind of secret, each with its own anchor, all under
the speed contract above.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from memories.guard.lexicon import LEXICON
from memories.guard.textviews import Views, fold_literal, lower_literal
from memories.guard.types import Span
from memories.guard.values import (
    char_classes,
    is_placeholder,
    looks_like_identifier,
    looks_like_password,
    looks_like_strong_password,
    looks_random,
    shannon_bits,
)

# --- provider tokens (raw text, case-sensitive) -------------------------------------------------

ANTHROPIC_KEY = re.compile(r"sk-ant-(?:api|admin|oat|sid)\d\d-[A-Za-z0-9_\-]{20,}+")
OPENAI_KEY = re.compile(r"sk-(?<![A-Za-z0-9_\-]sk-)(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}+")
GITHUB_TOKEN = re.compile(r"gh(?<![A-Za-z0-9_]gh)[pousr]_[A-Za-z0-9]{30,}+")
GITHUB_PAT = re.compile(r"github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{30,}+")


_GITHUB_PREFIXES = LEXICON.words(b"ghp", b"gho", b"ghu", b"ghs", b"ghr")
_GITHUB = LEXICON.words(b"github")


def github_tokens(views: Views) -> Iterator[Span]:
    """``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` tokens and fine-grained ``github_pat_`` tokens."""
    words = views.words
    if not words.isdisjoint(_GITHUB_PREFIXES):
        yield from (m.span() for m in GITHUB_TOKEN.finditer(views.text) if provider_token_ok(m.group()))
    if not words.isdisjoint(_GITHUB):
        yield from (m.span() for m in GITHUB_PAT.finditer(views.text) if provider_token_ok(m.group()))


SLACK_TOKEN = re.compile(r"xox[abprse](?<![A-Za-z0-9_]xox[abprse])-[A-Za-z0-9\-]{10,}+")
SLACK_WEBHOOK = re.compile(r"hooks\.slack\.com/(?:services|workflows)/(?P<secret>[A-Za-z0-9_/]{20,}+)")
STRIPE_KEY = re.compile(r"k_(?<![A-Za-z0-9][sr]k_)(?<=[sr]k_)(?:live|test)_[A-Za-z0-9]{16,}+")
STRIPE_WEBHOOK_SECRET = re.compile(r"whsec_[A-Za-z0-9+/=]{24,}+")


def stripe_keys(views: Views) -> Iterator[Span]:
    """``sk_live_``/``rk_live_``/``sk_test_``/``rk_test_`` keys and ``whsec_`` webhook secrets."""
    text = views.text
    for match in STRIPE_KEY.finditer(text):
        token = text[match.start() - 1 : match.end()]
        if provider_token_ok(token):
            yield match.start() - 1, match.end()
    for match in STRIPE_WEBHOOK_SECRET.finditer(text):
        if provider_token_ok(match.group()):
            yield match.span()


GOOGLE_API_KEY = re.compile(r"AIza(?<![A-Za-z0-9_\-]AIza)[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])")
AWS_ACCESS_KEY_ID = re.compile(r"A(?<![A-Za-z0-9/+]A)(?:KIA|SIA)[A-Z0-9]{16}(?![A-Za-z0-9])")
JWT = re.compile(r"eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{8,}+\.eyJ[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]*+")
_VENDOR_TOKENS = (  # (a word of the fold view that every such token contains, pattern)
    (b"glpat", re.compile(r"glpat-[A-Za-z0-9_\-]{20,}+")),
    (b"hf", re.compile(r"hf_(?<![A-Za-z0-9_]hf_)[A-Za-z0-9]{30,}+")),
    (b"npm", re.compile(r"npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    (b"sg", re.compile(r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}")),
    (b"pypi", re.compile(r"pypi-AgE[A-Za-z0-9_\-]{50,}+")),
)
LEXICON.words(*(word for word, _ in _VENDOR_TOKENS))
(_TELEGRAM_GATE,) = LEXICON.parts(b" aa")  # a word starting with "aa": the token's second half
_TELEGRAM = re.compile(r"[0-9]{8,10}(?P<rest>:AA[A-Za-z0-9_\-]{33})(?![A-Za-z0-9_\-])")


def provider_token_ok(token: str) -> bool:
    """A provider-prefixed candidate is real unless it is a placeholder (``sk-...``,
    ``ghp_XXXX``) or prose that happens to share the prefix (``sk-learn-compatible-estimators``)."""
    if is_placeholder(token):
        return False
    body = token.split("_")[-1] if "_" in token[:12] else token.split("-", 1)[-1]
    return char_classes(body) >= 2 and shannon_bits(body) >= 3.0


def vendor_tokens(views: Views) -> Iterator[Span]:
    """GitLab, Hugging Face, npm, SendGrid, PyPI and Telegram bot tokens: fixed prefixes, each
    scanned only when its prefix occurs as a word."""
    text, words = views.text, views.words
    for word, pattern in _VENDOR_TOKENS:
        for match in pattern.finditer(text) if word in words else ():
            if provider_token_ok(match.group()):
                yield match.span()
    if _TELEGRAM_GATE not in views.vocab:
        return
    at = text.find(":AA")
    while at != -1:
        start = at
        while start > 0 and at - start < 11 and text[start - 1].isdigit():
            start -= 1  # back over the bot id
        bot = _TELEGRAM.match(text, start)
        if bot is not None and bot.start("rest") == at:
            yield bot.span()
        at = text.find(":AA", at + 3)


# --- PEM private keys -------------------------------------------------------------------------

_PEM_HEADER = r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,4}PRIVATE KEY(?: BLOCK)?-----"
_PEM_BEGIN = re.compile(_PEM_HEADER)
_PEM_BODY = re.compile(
    r"(?:[ \t]*+(?:\r?\n|\\r?\\n)[ \t]*+(?:[A-Za-z0-9+/=]{16,}+|(?:Proc-Type|DEK-Info|Comment): [^\n]{1,200}))*+"
)
# A block's inside: base64, headers, escaped newlines -- and another BEGIN header (a key pasted
# twice): the outer header then claims the whole block, as a second pass (where the inner block's
# marker is blanked) would, so screening stays idempotent.
_PEM_INNER = re.compile(
    r"(?:[\sA-Za-z0-9+/=\"',]|\\r|\\n|(?:Proc-Type|DEK-Info|Comment|Version):[^\n]{0,200}|" + _PEM_HEADER + r")*+"
)
_PEM_MAX = 16_384


def pem_private_keys(views: Views) -> Iterator[Span]:
    """The whole block from ``-----BEGIN … PRIVATE KEY-----`` to its ``-----END …-----``; a key
    without its END line is redacted up to the end of its base64 body."""
    text = views.text
    resume = 0
    for match in _PEM_BEGIN.finditer(text):
        if match.start() < resume:
            continue
        end_at = text.find("-----END ", match.end(), match.end() + _PEM_MAX)  # bounded: no quadratic scan
        if end_at != -1 and not _PEM_INNER.fullmatch(text, match.end(), end_at):
            end_at = -1  # code between two marker constants is not a key body
        if end_at == -1:
            body = _PEM_BODY.match(text, match.end())
            if body is None or body.end() == match.end():
                continue  # a header alone (a constant in code) holds no key material
            end = body.end()
        else:
            close = text.find("-----", end_at + 9, end_at + 80)
            end = close + 5 if close != -1 else end_at + 9
        yield match.start(), end
        resume = end


def aws_key_ids(views: Views) -> list[re.Match[str]]:
    """AKIA…/ASIA… ids, found once per text and shared by both AWS rules."""
    found = views.memo.get("aws_ids")
    if found is None:
        text = views.text
        found = views.memo["aws_ids"] = (
            list(AWS_ACCESS_KEY_ID.finditer(text)) if "AKIA" in text or "ASIA" in text else []
        )
    return found  # type: ignore[return-value]


def aws_access_key_ids(views: Views) -> Iterator[Span]:
    for match in aws_key_ids(views):
        if not is_placeholder(match.group()):
            yield match.span()


# --- AWS secret access keys -------------------------------------------------------------------

_AWS_SECRET_NAMED = re.compile(
    rb"secret(?:[_\-]?access)?[_\-]?key[\"']?[ \t]*+(?:=|:|,|=>)?[ \t]*+[\"']?(?P<v>[a-z0-9/+]{40})(?![a-z0-9/+=])"
)
_AWS_SECRET_AFTER_ID = re.compile(r"[ \t]*+[,;:|][ \t]*+(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")


(_AWS_SECRET_GATE,) = LEXICON.parts(b"secret")
_AWS_ID_GATES = LEXICON.parts(b" akia", b" asia")


def aws_secret_keys(views: Views) -> Iterator[Span]:
    """40-character AWS secret keys after an ``aws_secret_access_key``-like name, or right after
    an access key id on the same line (the IAM console's CSV)."""
    lower = views.lower
    for match in _AWS_SECRET_NAMED.finditer(lower) if _AWS_SECRET_GATE in views.vocab else ():
        at = match.start()
        name = lower[max(0, at - 8) : at]
        if b"aws" in name or (b"access" in match.group() and b"key" in match.group()):
            start, end = match.span("v")
            if not is_placeholder(views.text[start:end]):
                yield start, end
    text = views.text
    vocab = views.vocab
    for id_match in aws_key_ids(views) if any(gate in vocab for gate in _AWS_ID_GATES) else ():
        follow = _AWS_SECRET_AFTER_ID.match(text, id_match.end())
        if follow is not None and not is_placeholder(follow.group("v")):
            yield follow.span("v")


# --- credentials in URLs, headers and command lines -------------------------------------------

_URL_CREDENTIALS = re.compile(r"://[^\s:/?#@\"'<>\[\]]*+:(?P<secret>[^\s/?#\"'<>]+)@[^\s@/?#\"'<>]")


def url_credentials(views: Views) -> Iterator[Span]:
    """``scheme://user:password@host`` — only the password is redacted, the user and host stay."""
    text = views.text
    at = text.find("://")
    while at != -1:
        match = _URL_CREDENTIALS.match(text, at)
        if (match is not None and looks_like_password(match.group("secret"))) or (
            match is not None and 1 <= len(match.group("secret")) < 4 and not is_placeholder(match.group("secret"))
        ):
            yield match.span("secret")
        at = text.find("://", at + 3)


_BEARER = re.compile(rb"bearer[ \t]++(?P<v>[a-z0-9._~+/=\-]{12,}+)")
_AUTHORIZATION = re.compile(
    rb"authorization[\"']?[ \t]*+[:=][ \t]*+[\"']?[ \t]*+"
    rb"(?:(?:basic|token|digest|apikey|api-key|sso-key|key)[ \t]++)?(?P<v>[a-z0-9._~+/=:\-]{8,}+)"
)


LEXICON.words(b"bearer", b"authorization")


def bearer_tokens(views: Views) -> Iterator[Span]:
    """Tokens after ``Bearer`` and values of ``Authorization:`` headers (Basic, token, …)."""
    lower, text, words = views.lower, views.text, views.words
    for at in views.positions(b"bearer") if b"bearer" in words else ():
        match = _BEARER.match(lower, at)
        if match is not None:
            start, end = match.span("v")
            if looks_random(text[start:end], min_len=12):
                yield start, end
    for at in views.positions(b"authorization") if b"authorization" in words else ():
        match = _AUTHORIZATION.match(lower, at)
        if match is not None and not match.group("v").startswith(b"bearer"):
            start, end = match.span("v")
            value = text[start:end]
            if looks_random(value, min_len=8) and not re.fullmatch(r"[a-z0-9]*_[a-z0-9_]*", value):
                yield start, end  # (a snake_case value is a variable: {'Authorization': v4auth_header})


_CURL_USER = re.compile(r"(?:-u|--user)[ =]++[\"']?[^\s:\"']{1,64}:(?P<secret>[^\s\"']{1,128})")
_MYSQL_P = re.compile(
    r"(?<!\S)-p(?:'(?P<sq>[^'\n]{1,128})'|\"(?P<dq>[^\"\n]{1,128})\"|(?P<bare>[^\s'\"\-][^\s'\"]{0,127}))"
)
_SSHPASS = re.compile(
    r"sshpass[ \t]++-p[ \t]*+(?:'(?P<sq>[^'\n]{1,128})'|\"(?P<dq>[^\"\n]{1,128})\"|(?P<bare>\S{1,128}))"
)


_CLI_WORDS = LEXICON.words(b"curl", b"wget", b"mysql", b"mysqldump", b"mysqladmin", b"mariadb", b"sshpass")
_CURL_WORDS = LEXICON.words(b"curl", b"wget")
_MYSQL_WORDS = LEXICON.words(b"mysql", b"mysqldump", b"mysqladmin")


def _has_mysql(words: frozenset[bytes]) -> bool:
    return not words.isdisjoint(_MYSQL_WORDS)


def _lines(views: Views, needle: bytes) -> list[tuple[int, int, list[int]]]:
    """(start, end, offsets) of each line holding ``needle``, in order.  Each line's bounds are
    searched once, from its first occurrence (``rfind`` back to the previous line's end at most,
    ``find`` forward), so a long line with many occurrences is not rescanned, and a text with
    many lines costs no list of every newline."""
    lower = views.lower
    lines: list[tuple[int, int, list[int]]] = []
    end = -1  # the newline (or the end of the text) closing the current line
    for at in views.positions(needle):
        if at < end:
            lines[-1][2].append(at)
            continue
        start = lower.rfind(b"\n", max(end, 0), at) + 1
        end = lower.find(b"\n", at)
        if end == -1:
            end = len(lower)
        lines.append((start, end, [at]))
    return lines


def cli_credentials(views: Views) -> Iterator[Span]:
    """``curl -u user:password``, ``mysql -pPASSWORD`` and ``sshpass -p PASSWORD``."""
    text, lower, words = views.text, views.lower, views.words
    if words.isdisjoint(_CLI_WORDS):
        return
    if not words.isdisjoint(_CURL_WORDS):
        for needle in (b"-u ", b"--user"):
            for start, end, offsets in _lines(views, needle):
                line = lower[start:end]
                if b"curl" in line or b"wget" in line or b"http" in line:
                    for at in offsets:
                        match = _CURL_USER.match(text, at)
                        if match is not None and looks_like_password(match.group("secret")):
                            yield match.span("secret")
    for needle in (b"mysql", b"mariadb", b"sshpass"):
        if needle not in words and not (needle == b"mysql" and _has_mysql(words)):
            continue
        pattern = _SSHPASS if needle == b"sshpass" else _MYSQL_P
        for _start, end, offsets in _lines(views, needle):
            for match in pattern.finditer(text, offsets[0], end):  # each line scanned once
                group = next(g for g in ("sq", "dq", "bare") if match.group(g) is not None)
                if looks_like_password(match.group(group)):
                    yield match.span(group)


# --- name = value assignments -------------------------------------------------------------------

_SEP = (
    rb"(?P<close>[\"'`]?\]?)"
    rb"(?P<sep>[ \t]*+(?::=|=>|==|=|:|->|,)[ \t]*+|>"
    rb"|[ \t]++(?:is|was|est|ist|es|equals|is set to)[ \t]++:?[ \t]*+"
    rb"|(?(dash)[ \t]++|(?!)))"  # a bare space separates a value only after a --flag
)

_VALUE = (
    rb"(?:\"(?P<dq>[^\"\n]{1,256})\"|'(?P<sq>[^'\n]{1,256})'|`(?P<bq>[^`\n]{1,256})`"
    rb"|(?P<bare>[^\s\"'`,;&<>(){}\[\]]{1,256}))"
)
_PROSE_SEPS = frozenset({b"is", b"was", b"est", b"ist", b"es", b"equals", b"is set to"})
_REST_OF_LINE_OK = re.compile(r"[ \t]*+(?:#|\r?\n|$|[,}])")  # a comment, the end of the line, or a flow map


_NAME_BACKWARDS = re.compile(rb"[a-z0-9_.$@ \-]{0,24}")


def _name_prefix(views: Views, at: int) -> bytes:
    """The identifier characters right before offset ``at`` (at most 24, spaces allowed, so
    "the api key" yields ``the api ``); matched forwards on the reversed view, in C."""
    match = _NAME_BACKWARDS.match(views.lower_reversed, len(views.lower) - at)
    assert match is not None  # {0,24} always matches
    return views.lower[at - (match.end() - match.start()) : at]


@dataclass(frozen=True)
class _Names:
    """One family of secret-ish names: a regex per literal anchor (``finditer`` then skips the
    text in C), plus the same with a bare-space separator for ``--flag value``."""

    family: str
    gates: tuple[bytes, ...]  # the anchor as it appears in the fold view's vocabulary
    patterns: tuple[re.Pattern[bytes], ...]

    @classmethod
    def of(cls, family: str, names: tuple[tuple[str, bytes], ...]) -> _Names:
        """``names``: (anchor word, regex of the whole name starting with that anchor)."""
        patterns = []
        for anchor, name in names:
            literal = re.escape(lower_literal(anchor))
            dash = b"(?P<dash>(?<=-" + literal + b"))?"
            patterns.append(re.compile(b"(?P<name>" + literal + dash + name + rb")(?:[_\-]?\d)?" + _SEP + _VALUE))
        return cls(family, LEXICON.parts(*(fold_literal(a) for a, _ in names)), tuple(patterns))

    def spans(self, views: Views) -> Iterator[Span]:
        lower, text, vocab = views.lower, views.text, views.vocab
        for gate, pattern in zip(self.gates, self.patterns, strict=True):
            if gate not in vocab:
                continue
            for match in pattern.finditer(lower):
                at = match.start()
                if not _window_ok(self.family, match.group("name"), lower, at):
                    continue
                prefix = _name_prefix(views, at)
                if _prefix_ok(self.family, prefix, match.group("name"), text, at):
                    span = _value_span(match, text, prefix, at - len(prefix), self.family)
                    if span is not None:
                        yield span


_KEY_PREFIX = re.compile(
    rb"(?:api|access|secret|private|master|encryption|encrypt|signing|sign|account|shared[_\-]?access|subscription"
    rb"|app|client|service|auth|hmac|aes|jwt|session|license|licence|admin|write|read|deploy|ingest|sdk|server"
    rb"|consumer|webhook|storage|crypto|cipher|openai|stripe|sendgrid|mailgun|twilio|algolia|mapbox|google|gcp"
    rb"|azure|aws|x-api|x_api|dd_api|dd_app)[_.\- ]?$"
)
_PASSWORD_PREFIX_NOT_SECRET = re.compile(
    rb"(?<![a-z0-9])(?:reset|change|forgot|forgotten|update|verify|validate|check|hash|hashed|encrypt|encrypted|is|has|use|require"
    rb"|show|hide|min|max|set|get|send|no)[_\-]?$"
)
_TOKEN_PREFIX_NOT_SECRET = re.compile(
    rb"(?<![a-z0-9])(?:page|next|prev|csrf|xsrf|continuation|sync|cursor|pagination|resume|start|end|stop|eos|bos|pad|unk|sep"
    rb"|public|publickey|public_key|out|in"
    rb"|cls|mask|special|max|num|total|input|output|completion|prompt|cache|split|per|each|a|the|one|this|that"
    rb"|your|an|every|design|long|short|random|unique)[_.\- ]?$"
)


def _window_ok(family: str, name: bytes, lower: bytes, at: int) -> bool:
    """The same test as :func:`_prefix_ok` for ``key``/``token`` on a fixed window (C only), so
    the many ordinary "key"/"token" words are dropped before any Python-level work."""
    if family == "secret" and name == b"key":
        return _KEY_PREFIX.search(lower, max(0, at - 24), at) is not None
    if family == "secret" and name == b"token":
        return _TOKEN_PREFIX_NOT_SECRET.search(lower, max(0, at - 24), at) is None
    return True


def _prefix_ok(family: str, prefix: bytes, name: bytes, text: str, at: int) -> bool:
    last = prefix.rsplit(b" ", 1)[-1]
    if family == "password":
        if name in (b"pass", b"pwd") and last[-1:].isalpha() and text[at].islower():
            return False  # bypass, compass (but dbPass, DBPASS are names)
        if _PASSWORD_PREFIX_NOT_SECRET.search(prefix):
            return False  # reset_password, is_password, password_min_length's cousins
        return not (name == b"passe" and not prefix.endswith(b"mot de "))
    if name.startswith(b"auth"):
        return prefix.endswith(b"_") and not prefix[-2:-1].isalnum()  # npm's _auth, not OAUTH or oauth:
    if name == b"key":
        return bool(_KEY_PREFIX.search(prefix))
    if name == b"token":
        return not _TOKEN_PREFIX_NOT_SECRET.search(prefix)
    return True


def _value_span(match: re.Match[bytes], text: str, prefix: bytes, name_start: int, family: str) -> Span | None:
    """Where the value is, if this name/separator/value triple is a real assignment."""
    sep = match.group("sep").strip()
    group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
    start, end = match.span(group)
    if group == "bare":
        while end > start and text[end - 1] in ".,;:)":
            end -= 1  # sentence punctuation after an unquoted value
        following = text[end : end + 1]
        if following in ("(", "[") or (family == "password" and sep == b":" and not _REST_OF_LINE_OK.match(text, end)):
            return None  # a call or index, or prose after "password:"
        if following in (",", ")") and text[start:end].isidentifier():
            return None  # a variable passed on: f(password=password_from_vault)
    if sep == b">" and (text[name_start - 1 : name_start] != "<" or text[end : end + 2] != "</"):
        return None  # ">" separates only <password>value</password>
    if sep == b"" and not prefix.rsplit(b" ", 1)[-1].startswith(b"-"):
        return None  # a bare space separates a value only after a --flag
    value = text[start:end]
    if sep == b",":  # config.set('auth', 'password', 'value'): quoted pair, password-like literal only
        if family != "password" or not match.group("close") or group == "bare":
            return None
        named = any(w in value.lower() for w in ("pass", "secret", "token", "key", "pwd"))
        shaped = any(c.isdigit() for c in value) and not any(c in value for c in ":/ ")
        return (start, end) if shaped and not named and looks_like_strong_password(value) else None
    if group == "bare" and sep == b":" and re.match(r"[ \t]*(?:[|,)=\]]|->)", text[end : end + 4]):
        return None  # a type annotation: def f(private_key: rsa.RSAPrivateKey, ...) / x: A | B
    if family == "secret" and any(c.isspace() for c in value):
        return None  # tokens have no spaces: "invalid_token": "Invalid token."
    if group == "bare" and looks_like_identifier(value):
        spaced = match.group("sep").startswith((b" ", b"\t")) or following in (",", ")", "}", ";", ".")
        if family == "secret" or spaced or "_" in value or text[end : end + 4] in (" or ", " and", " if "):
            return None  # a variable in code: self.password = raw_password, {"k": httpCredentials}
    if family == "password":
        strict = sep in _PROSE_SEPS or sep == b""  # prose, or "--password value" (prose says "--password options")
        good = looks_like_strong_password(value) if strict else looks_like_password(value)
        if group == "bare" and sep == b":" and value.isalpha() and not value.islower() and not value.isupper():
            good = False  # "password: SecretStr" is a type annotation
    else:
        good = looks_random(value, min_len=16 if sep in _PROSE_SEPS else 12) or (
            group != "bare" and len(value) >= 8 and looks_like_strong_password(value)
        )
    return (start, end) if good else None


_PASSWORDS = _Names.of(
    "password",
    (
        ("pass", rb"(?:word|wort|wd|phrase|e)?"),
        ("pwd", rb""),
        ("пароль", rb""),
        ("contraseña", rb""),
        ("contrasena", rb""),
    ),
)
_SECRETS = _Names.of(
    "secret",
    (
        ("secret", rb"(?:[_.\-]?(?:access[_.\-]?)?key|[_.\-]?token)?"),
        ("token", rb""),
        ("key", rb""),
        ("credential", rb"s?"),
        ("auth", rb"(?:token)?"),
    ),
)


def password_assignments(views: Views) -> Iterator[Span]:
    """A value given to a password-named key in any common syntax: ``DB_PASSWORD=…``,
    ``"password": "…"``, ``password: …`` (YAML, value alone on its line), ``--password …``,
    ``secret = '…'``, ``<password>…</password>``, ``Password=…;`` and prose
    ("the password is …", only for a value that does not read as a word)."""
    return _PASSWORDS.spans(views)


def secret_assignments(views: Views) -> Iterator[Span]:
    """A *high-entropy* value next to a secret-ish name (``client_secret``, ``api_key``,
    ``X-Api-Key``, ``access_token``, ``credentials``…); names that only look secret-ish
    (``next_page_token``, ``public_key``, ``max_tokens``) are excluded."""
    return _SECRETS.spans(views)
