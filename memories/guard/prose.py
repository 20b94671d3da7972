"""Passwords stated in plain language, where no ``name = value`` syntax points at them.

``password_assignment`` (``secrets.py``) finds a value right after a password-named key. People
also write the key's object between the name and the value, and say so in a sentence:

- English: "the password for the db is hunter2secretpass", "password for prod db: s3cr3t!Pass",
  "the root password on db-01 is Zq8!vX3k", "pwd: Xk9#mQ2z for the vpn", "I changed the password
  for grafana to N3wPass!2024", "use Qw3rty!9x as the password";
- Russian: "пароль от базы — hunter2secret", "пароль для сервера: Xyz12345!", "пароль админки:
  Adm1nAdm1n" (the object in the genitive, without a preposition);
- French: "le mot de passe de la base est hunter2secret", "mot de passe du serveur : Xyz12345!",
  "mdp : Zq8!vX3k", "mdp du wifi: chaton2021".

Only the value is redacted. Prose around a password rarely is one, so the value must not read as
a word (``values.looks_like_strong_password``: a digit or a symbol, two character classes, not a
placeholder, a reference or a path): "the password for prod is in the second message", "… is
stored in Vault", "пароль от базы лежит в Vault", "mot de passe : voir 1Password" are kept, and
so is a password made of words alone ("correct horse battery staple") — the honest gap.

Cost: gated on a word starting with ``pass``, ``pw``, ``mdp`` or ``парол``; each pattern starts
with its literal, so ``re`` skips to it in C; the object between name and value is bounded
(60 characters, one line, one clause).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memories.guard.textviews import Views, fold_literal, lower_literal
from memories.guard.types import Span
from memories.guard.values import is_placeholder, looks_like_identifier, looks_like_strong_password

# Any letter of the lower view: ASCII, and the Cyrillic and accented letters mapped to bytes >= 0x80.
_LETTER = rb"a-z0-9\x80-\xff"
_BLANK = rb"[ \t]"
# The object between the name and the value: one clause of one line, at most 60 characters; a dot
# only inside a token (db.example.com, v1.2), never a sentence's end.
# An apostrophe only before a letter (French elision: "de l'ERP", "d’accès", ’ read as ').
_OBJECT_CHAR = rb"(?:[^\n.!?;:=<>\"'`]|\.(?=[^\s.])|'(?=[" + _LETTER + rb"]))"
_OBJECT = rb"(?P<what>" + _OBJECT_CHAR + rb"{1,60}?)"
# The lower view writes every dash as "-" (and ’ as '): a dash separates only before a blank,
# so "X-Password-Reset-Key" is a name, not a separator and a value.
_SYMBOL_SEP = rb"[ \t]*(?:[:=][ \t]*|-[ \t]+)"
_VALUE = (
    rb"(?:\"(?P<dq>[^\"\n]{4,128})\"|'(?P<sq>[^'\n]{4,128})'|`(?P<bq>[^`\n]{4,128})`"
    rb"|(?P<bare>[^\s\"'`,;<>(){}\[\]]{4,128}))"
)


def _compile(
    literal: bytes,
    rest: bytes,
    prepositions: tuple[str, ...],
    words: tuple[str, ...],
    *,
    bare_object: bool,
    symbols: bool = True,
) -> re.Pattern[bytes]:
    """``name [preposition object] separator value``; ``bare_object``: the object may follow the
    name without a preposition (Russian: "пароль админки"); ``symbols``: ``:``, ``=`` and dashes
    separate too, not only the ``words``."""
    preps = b"|".join(re.escape(lower_literal(p)) for p in prepositions)
    obj = rb"(?:" + _BLANK + rb"+(?:" + preps + rb")" + _BLANK + rb"*" + _OBJECT + rb")?"
    if bare_object:
        obj = rb"(?:" + _BLANK + rb"+(?:(?:" + preps + rb")" + _BLANK + rb"+)?" + _OBJECT + rb")?"
    seps = b"|".join(re.escape(lower_literal(w)) for w in words)
    sep = rb"(?P<sep>" + _BLANK + rb"+(?:" + seps + rb")" + _BLANK + rb"+(?::" + _BLANK + rb"*)?"
    sep += (rb"|" + _SYMBOL_SEP + rb")") if symbols else rb")"
    # The name's literal comes first, so re skips to it in C; the look-behind then checks that it
    # starts a word (a pattern opening with a look-behind is tried at every offset: ~1 ms per 100k).
    name = literal + _starts_word(literal) + rest
    return re.compile(rb"(?P<name>" + name + rb")(?![" + _LETTER + rb"_])" + obj + sep + _VALUE)


def _starts_word(literal: bytes) -> bytes:
    return rb"(?<![" + _LETTER + rb"_]" + re.escape(literal) + rb")"


_EN_PREPOSITIONS = ("for", "to", "of", "on", "at")
_EN = (
    _compile(b"pass", rb"(?:word|wd|code|phrase)s?", _EN_PREPOSITIONS, ("is", "was", "will be"), bare_object=False),
    _compile(b"pwd", b"", _EN_PREPOSITIONS, ("is", "was"), bare_object=False),
    # "pw" is too short a name to trust before a colon ("pw:…" in a tag); in a sentence it is one
    _compile(b"pw", b"", _EN_PREPOSITIONS, ("is", "was"), bare_object=False, symbols=False),
)
_RU = (
    _compile(
        lower_literal("парол"),
        rb"(?:" + b"|".join(re.escape(lower_literal(e)) for e in ("ь", "я", "ем", "ю")) + rb")",
        ("от", "для", "к", "на", "у"),
        ("это", "такой"),
        bare_object=True,
    ),
)
_FR_PREPOSITIONS = ("de", "du", "des", "pour", "d'", "à", "a", "sur")
_FR_WORDS = ("est", "était", "sera")
_FR = (
    _compile(b"mot", rb"[ \t\-]de[ \t\-]passe", _FR_PREPOSITIONS, _FR_WORDS, bare_object=False),
    _compile(b"mdp", b"", _FR_PREPOSITIONS, _FR_WORDS, bare_object=False),
)
_PATTERNS = (*_EN, *_RU, *_FR)

# "changed the password for grafana to N3wPass!2024": the name, an object, "to", the value, after a
# verb that sets a password; "use Qw3rty!9x as the password": the value before the name.
_SET_TO = re.compile(
    b"".join((rb"pass(?:word|wd|phrase)(?:", _BLANK, rb"+(?:for|of|on)", _BLANK, _OBJECT, rb")?", _BLANK, rb"+to"))
    + b"".join((_BLANK, rb"+", _VALUE))
)
_SETTING_VERB = re.compile(
    rb"(?:^|[^a-z])(?:set|sets|changed?|changes|reset|resets|updated?|updates|rotated?)"
    rb"(?:[ \t]+[a-z0-9_\-]+){0,3}[ \t]*$"
)
_USE_AS = re.compile(
    b"".join((rb"(?:^|[^a-z])(?:use[sd]?|using)", _BLANK, rb"+", _VALUE, _BLANK, rb"+as", _BLANK, rb"+"))
    + b"".join((rb"(?:(?:the|a|my|our|your|its)", _BLANK, rb"+)?(?:[a-z0-9_\-]+", _BLANK, rb"+)?$"))
)


def _value(match: re.Match[bytes], text: str) -> Span | None:
    group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
    start, end = match.span(group)
    if group == "bare":
        while end > start and text[end - 1] in ".,;:)":
            end -= 1  # the sentence's punctuation after an unquoted value
        if _CODE_AFTER.match(text, end) or text[start] == "_" or looks_like_identifier(text[start:end]):
            return None  # code: "password: _PasswordType | None = None", "pwd: cwd_path"
    value = text[start:end]
    if is_placeholder(value) or not looks_like_strong_password(value) or _ADDRESS.fullmatch(value):
        return None  # a word, a reference, a path, a placeholder, an e-mail address
    return start, end


def password_phrases(views: Views) -> Iterator[Span]:
    """The value of a password stated in a sentence (module docstring), English, Russian, French."""
    lower, text = views.lower, views.text
    for pattern in _PATTERNS:
        for match in pattern.finditer(lower):
            span = _value(match, text)
            if span is not None:
                yield span
    for match in _SET_TO.finditer(lower):
        if _SETTING_VERB.search(lower, max(0, match.start() - 40), match.start()):
            span = _value(match, text)
            if span is not None:
                yield span
    for at in _password_words(lower):
        if not _PASSWORD_ENDS_CLAUSE.match(lower, at):
            continue  # "use 1Password as the password manager": a compound, not the password
        used = _USE_AS.search(lower, max(0, at - 160), at)
        if used is not None:
            span = _value(used, text)
            if span is not None:
                yield span


_PASSWORD_WORD = re.compile(b"pass" + _starts_word(b"pass") + rb"(?:word|wd|phrase)(?![a-z0-9_])")
_PASSWORD_ENDS_CLAUSE = re.compile(rb"pass(?:word|wd|phrase)(?:[ \t]+(?:for|to|on|of|at)[ \t]|[ \t]*(?:[.,;:!?)\n]|$))")
_CODE_AFTER = re.compile(r"[ \t]*(?:[|=]|->)|[(\[]")  # a type union, a default; a call or an index glued on
_ADDRESS = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")


def _password_words(lower: bytes) -> Iterator[int]:
    return (m.start() for m in _PASSWORD_WORD.finditer(lower))


GATE_STARTS = (b"pass", b"pw", b"mdp", fold_literal("парол"))
