"""The archivist's reading of one record: its content tokens in order — word stems, numbers,
identifiers, names — with the class of value each one is (a number, a weekday, a language, a
name…), where the predicate starts (what comes before it is the subject), and whether the text
negates or announces a change. English, Russian and French, no model. Pure functions: the task
(``memories.archivist``), ``classify`` (``memories.archivist.judge``) and
``bench/archivist/run.py`` use them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from memories.archivist import lexicon
from memories.archivist.lexicon import fold, stem

# --- tokens -------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"[a-z][a-z0-9+.-]*://[^\s,;]+"  # a URL
    r"|[#№@/~]?\w+(?:[-_./:@+]\w+)*"  # a word, number, identifier or path
    r"|[—–:=;,]|[.!?](?=\s|$)",  # separators, commas and sentence ends
    re.UNICODE,
)
_LETTERS = re.compile(r"[^\W\d_]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:\.\d+)*")
_TIME = re.compile(r"\d{1,2}(?::\d{2}|h\d{0,2})")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_CYRILLIC = re.compile("[а-яА-ЯёЁ]")
_LATIN = re.compile("[a-zA-Z]")

NUMBER, NAME, IDENT, WORD = "number", "name", "ident", "word"


@dataclass(frozen=True)
class Token:
    """One content token: ``key`` is what two records are compared by (a stem for a word, the
    text itself for a number or an identifier); ``kind`` is number, name, ident or word; ``value``
    the class of value it is (``number``, ``name``, ``weekday``, ``language``…, or "")."""

    key: str
    kind: str
    value: str
    listed: bool = False  # follows "and", "or" or a comma
    word: str = ""  # the folded word, for the list of opposites


@dataclass(frozen=True)
class Features:
    tokens: tuple[Token, ...]  # content tokens in text order (stop words dropped)
    predicate: int | None  # index of the first token of the predicate: tokens before it are the subject
    negations: tuple[int, ...]  # for each negation word, the index of the token that follows it
    update: bool  # announces a change ("moved to", "теперь", "désormais"…)
    additive: bool  # announces an addition ("also", "ещё", "aussi")
    past: bool = False  # the predicate is in the past: an event
    many_valued: bool = False  # the predicate holds for many values at once ("likes")

    @property
    def stems(self) -> tuple[str, ...]:
        return tuple(t.key for t in self.tokens)

    @property
    def stem_set(self) -> frozenset[str]:
        return frozenset(self.stems)

    @property
    def values(self) -> frozenset[str]:
        """Numbers and versions ("15", "3.11", "02:00")."""
        return frozenset(t.key for t in self.tokens if t.kind == NUMBER)

    @property
    def negated(self) -> bool:
        return bool(self.negations)

    def subject_end(self) -> int:
        """How many leading tokens are the subject: those before the predicate or, when no
        predicate word was found, the first token and the identifiers or numbers that label it."""
        if self.predicate is not None:
            return self.predicate
        end = 1
        while end < len(self.tokens) and self.tokens[end].kind in (IDENT, NUMBER):
            end += 1
        return min(end, len(self.tokens))


def _prepare(text: str) -> str:
    text = text.replace("’", "'").replace("\u00a0", " ").replace("\u202f", " ")
    text = re.sub(r"(?i)\bcan't\b", "can not", text)
    text = re.sub(r"(?i)n't\b", " not", text)
    text = re.sub(r"(?i)\b(n)'(?=\w)", r"\1e ", text)  # French n'est → ne est
    text = re.sub(r"(?i)\b(?:[ldjmstc]|qu)'(?=\w)", " ", text)  # other French elisions
    text = re.sub(r"(?i)'s\b", "", text)  # English possessive
    text = re.sub(r"(\d)[ ,](\d{3})\b", r"\1\2", text)  # 30 000 / 1,000 → 30000 / 1000
    return re.sub(r"(\d),(\d{1,2})\b", r"\1.\2", text)  # 2,5 → 2.5


def features(text: str) -> Features:
    raw = _TOKEN.findall(_prepare(text))
    cyrillic = len(_CYRILLIC.findall(text)) > len(_LATIN.findall(text))
    tokens: list[Token] = []
    negations: list[int] = []
    predicate: int | None = None
    update = additive = past = listed = pronoun = many = False
    sentence_start = True
    for k, surface in enumerate(raw):
        if surface in ".!?;":
            sentence_start, listed = True, False
            continue
        word = fold(surface)
        if word in lexicon.LIST_WORDS:
            listed = True
            continue
        if surface in lexicon.SEPARATORS:
            if predicate is None and tokens:
                predicate = len(tokens)
            continue
        starts = sentence_start
        sentence_start = False
        if word in lexicon.NEGATIONS:
            negations.append(len(tokens))
            continue
        pronoun = pronoun or (not tokens and word in lexicon.PRONOUNS)
        update = update or word in lexicon.UPDATE_WORDS
        additive = additive or word in lexicon.ADDITIVE_WORDS
        if predicate is None and (tokens or pronoun) and _starts_predicate(word, cyrillic):
            predicate = len(tokens)
            following = fold(raw[k + 1]) if k + 1 < len(raw) else ""
            past = _past(word, following, cyrillic)
            many = word in lexicon.MANY_VALUED
        token = _token(surface, word, starts, cyrillic)
        if token is not None:
            tokens.append(replace(token, listed=listed) if listed else token)
            listed = False
    return Features(tuple(tokens), predicate, tuple(negations), update, additive, past, many)


def _past(word: str, following: str, cyrillic: bool) -> bool:
    """Whether the predicate starting with ``word`` (followed by ``following``) is in the past."""
    if word in lexicon.PAST_WORDS:
        return True
    if cyrillic:
        return len(word) >= 5 and word.endswith(lexicon.RU_PAST_ENDINGS)
    if word in lexicon.FRENCH_AUXILIARIES:
        return lexicon.FRENCH_PARTICIPLE.fullmatch(following) is not None
    return _english_past(word)


def _english_past(word: str) -> bool:
    return len(word) >= 5 and word.endswith("ed") and not word.endswith("eed")


def _starts_predicate(word: str, cyrillic: bool) -> bool:
    if word in lexicon.PREDICATE_WORDS:
        return True
    if not cyrillic and _english_past(word):
        return True
    if not cyrillic or not _CYRILLIC.search(word) or word in lexicon.RU_NOT_VERBS or len(word) < 4:
        return False
    if word.endswith(lexicon.RU_VERB_ENDINGS) or (len(word) >= 5 and word.endswith(lexicon.RU_PAST_ENDINGS)):
        return True
    return len(word) >= 6 and word.endswith(lexicon.RU_PARTICIPLE_ENDINGS)


def _token(surface: str, word: str, sentence_start: bool, cyrillic: bool) -> Token | None:
    if _DATE.fullmatch(word) or _TIME.fullmatch(word):
        return Token(word, NUMBER, "time")
    if _NUMBER.fullmatch(word):
        return Token(word, NUMBER, "number")
    letters = _LETTERS.fullmatch(word) is not None
    if not letters:
        if "-" in word and all(_LETTERS.fullmatch(p) for p in word.split("-")):
            # A hyphenated word (on-call, e-mail, код-ревью) or a name made of words (app-staging).
            return Token("-".join(stem(p) for p in word.split("-")), IDENT, "name")
        return Token(word, IDENT, "name")
    if word in lexicon.STOP:
        return None
    if len(word) == 1:
        # "pool A" / "pool B": a capital letter inside a sentence is a label, not an article.
        return Token(word, IDENT, "name") if surface.isupper() and not sentence_start else None
    key = stem(word)
    if _is_name(surface, sentence_start, cyrillic):
        return Token(key, NAME, "name", word=word)
    return Token(key, WORD, lexicon.CLASS_LOOKUP.get(key, ""), word=word)


def _is_name(surface: str, sentence_start: bool, cyrillic: bool) -> bool:
    """A proper name: a capital inside the word (PostgreSQL, GKE), a capitalised word inside a
    sentence (Ansible, Kotlin), or a Latin-script word in a Russian text (master, main)."""
    if any(c.isupper() for c in surface[1:]):
        return True
    if surface[0].isupper() and not sentence_start:
        return True
    return cyrillic and _LATIN.match(surface) is not None


def antonyms(left: Sequence[Token], right: Sequence[Token]) -> bool:
    """Whether one side holds a word the other side holds the opposite of."""
    for one, other in lexicon.ANTONYMS:
        if (_has(left, one) and _has(right, other)) or (_has(left, other) and _has(right, one)):
            return True
    return False


def _has(tokens: Sequence[Token], words: frozenset[str]) -> bool:
    return any(t.word in words or any(w.endswith("*") and t.word.startswith(w[:-1]) for w in words) for t in tokens)


def is_entity(token: Token) -> bool:
    """Whether ``token`` is a noun whose following number or identifier names one of many things
    (a ticket, a tenant, a build…)."""
    return token.kind in (WORD, NAME) and token.key in lexicon.ENTITY_STEMS


def dice(a: frozenset[str], b: frozenset[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 0.0


def cosine(a: Sequence[float] | Any, b: Sequence[float] | Any) -> float | None:
    """Cosine of two vectors (``None`` if either is empty or zero)."""
    if a is None or b is None or len(a) == 0 or len(a) != len(b):
        return None
    dot = sum(float(x) * float(y) for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(float(x) ** 2 for x in a)) * math.sqrt(sum(float(y) ** 2 for y in b))
    return dot / norm if norm else None


def content_words(text: str) -> list[str]:
    """The folded words of ``text`` that carry meaning (letters only, no stop words, 2+ letters)."""
    return [
        w for w in _LETTERS.findall(fold(text)) if len(w) > 1 and w not in lexicon.STOP and w not in lexicon.NEGATIONS
    ]
