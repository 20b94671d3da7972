"""The archivist's text judgement: word stems, numbers and negations (English, Russian, French,
no model), and ``classify``, which names the relation between a newer and an older record.
Pure functions: the task (``memories.archivist``) and ``bench/archivist/run.py`` use them."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memories import search
from memories.models import RelationType
from mmw.text import strip_marks

RELATED_DICE = 0.25  # keyword similarity (Dice over stems) from which two records are related
RELATED_COSINE = 0.45  # cosine of same-model embeddings from which two records are related (calibrated on "use")
TOPIC_DICE = 0.4  # "same subject" for the contradiction rules
TOPIC_COSINE = 0.85
REFINE_COVERAGE = 0.6  # share of the older record's stems the newer one keeps
REFINE_ADDED = 2  # new stems the newer one must add

# --- text features (pure; used by the task and by bench/archivist/run.py) ----------------------

_LETTERS = re.compile(r"[^\W\d_]+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_VOWELS = frozenset("aeiouyаеёиоуыэюяйь")
_NEGATION = re.compile(
    r"\b(?:not|no|never|cannot|can't|won't|without|none|nobody|nothing)\b|n't\b"
    r"|(?<!\w)(?:не|нет|никогда|нельзя|без|ни)(?!\w)"
    r"|\b(?:ne|pas|jamais|aucun|aucune|sans|personne|rien)\b|\bn'",
    re.UNICODE,
)
_STOP = search.STOP_WORDS | frozenset(
    """
    also just only very more most much many some any all each every can could should would must may
    might shall now then there here into onto over under about after before via per than such
    other same new old one two still yet again not no never none cannot
    это также тоже уже ещё еще очень всё все весь вся надо нужно можно должен должна через при
    над под после перед между про будет будут был не нет никогда нельзя без ни
    aussi très plus tout tous toute toutes avec chez entre après avant sous être avoir fait faut
    doit peut encore déjà deja ici là ne pas jamais aucun aucune sans
    """.split()  # noqa: SIM905 - a word list reads better as text
)
# Stems of words with opposite meaning; a pair of facts that differ by one of these disagree.
_ANTONYMS: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(a.split()), frozenset(b.split()))
    for a, b in [
        ("enabl activ включ actif", "disab deact выклю отклю desac inact"),
        ("allow permi разре autor", "forbi prohi запре"),
        ("requi manda обяза oblig", "optio необя facul"),
        ("true", "false"),
        ("publi публи", "priva прива"),
        ("sync synch синхр", "async асинх"),
    ]
)


def fold(text: str) -> str:
    """Lower case without accents (``é`` → ``e``, ``ё`` → ``е``); Cyrillic otherwise kept."""
    text = text.replace("’", "'").replace("ё", "е").replace("Ё", "Е")
    return unicodedata.normalize("NFC", strip_marks(text.lower()))


def stem(word: str) -> str:
    """A crude language-neutral stem: five letters for long words; short words lose a plural ``s``
    and one final vowel. Good enough to match ``deploy``/``deployment``, ``сервер``/``сервера``,
    ``déploiement``/``déployer``, ``rate``/``rates``."""
    if len(word) >= 6:
        return word[:5]
    if len(word) > 3 and word.endswith("s"):
        word = word[:-1]
    if len(word) > 3 and word[-1] in _VOWELS:
        word = word[:-1]
    return word


@dataclass(frozen=True)
class Features:
    stems: tuple[str, ...]  # content-word stems in text order (stop words dropped)
    values: frozenset[str]  # numbers and versions ("15", "3.11", "0.5")
    negated: bool

    @property
    def stem_set(self) -> frozenset[str]:
        return frozenset(self.stems)


def features(text: str) -> Features:
    folded = fold(text)
    words = [w for w in _LETTERS.findall(folded) if len(w) > 1 and w not in _STOP]
    values = frozenset(v.replace(",", ".") for v in _NUMBER.findall(folded))
    return Features(stems=tuple(stem(w) for w in words), values=values, negated=bool(_NEGATION.search(folded)))


def dice(a: frozenset[str], b: frozenset[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 0.0


def cosine(a: Sequence[float] | Any, b: Sequence[float] | Any) -> float | None:
    """Cosine of two vectors (``None`` if either is empty or zero)."""
    if a is None or b is None or len(a) == 0 or len(a) != len(b):
        return None
    dot = sum(float(x) * float(y) for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(float(x) ** 2 for x in a)) * math.sqrt(sum(float(y) ** 2 for y in b))
    return dot / norm if norm else None


@dataclass(frozen=True)
class Verdict:
    relation: str  # contradicts | refines | related | unrelated
    score: float
    why: str = ""


UNRELATED = "unrelated"


def classify(
    newer: Features, older: Features, *, same_fact_key: bool = False, vector_cosine: float | None = None
) -> Verdict:
    """How ``newer`` stands to ``older``; a heuristic that needs no model."""
    a, b = older.stem_set, newer.stem_set
    shared = a & b
    sim = dice(a, b)
    if vector_cosine is not None:
        sim = max(sim, vector_cosine)
    # Short notes share few words: one shared stem is enough when either has at most two.
    enough_shared = len(shared) >= (1 if min(len(a), len(b)) <= 2 else 2)
    same_topic = same_fact_key or (enough_shared and (dice(a, b) >= TOPIC_DICE or _cos(vector_cosine, TOPIC_COSINE)))
    score = round(max(sim, 0.5) if same_fact_key else sim, 4)
    if same_topic:
        why = _incompatible(newer, older)
        if why:
            return Verdict(RelationType.CONTRADICTS, score, why)
    coverage = len(shared) / len(a) if a else 0.0
    added = b - a
    if (
        coverage >= REFINE_COVERAGE
        and len(added) >= REFINE_ADDED
        and len(b) > len(a)
        and older.values <= newer.values
        and (same_topic or enough_shared)
    ):
        return Verdict(RelationType.REFINES, round(coverage, 4), "adds detail")
    if same_fact_key and (b != a or newer.values != older.values):
        return Verdict(RelationType.CONTRADICTS, score, "same fact_key, different content")
    if (dice(a, b) >= RELATED_DICE and enough_shared) or _cos(vector_cosine, RELATED_COSINE):
        return Verdict(RelationType.RELATED, round(sim, 4), "similar")
    return Verdict(UNRELATED, round(sim, 4))


def _cos(value: float | None, threshold: float) -> bool:
    return value is not None and value >= threshold


def _incompatible(newer: Features, older: Features) -> str:
    """Why two records on one subject cannot both be true, or "" if nothing says so."""
    a, b = older.stem_set, newer.stem_set
    # The subject is (crudely) the first content word: "the web service has 4 replicas" and "the
    # worker service has 8 replicas" are about two things, not one thing twice.
    same_subject = bool(older.stems and newer.stems and (older.stems[0] in b or newer.stems[0] in a))
    if older.values - newer.values and newer.values - older.values and same_subject:
        return "different numbers"
    for left, right in _ANTONYMS:
        if (a & left and b & right and not a & right) or (a & right and b & left and not a & left):
            return "opposite words"
    if newer.negated != older.negated:
        return "negation"
    removed, added = a - b, b - a
    if (
        1 <= len(removed) <= 2
        and 1 <= len(added) <= 2
        and older.stems
        and newer.stems
        and older.stems[0] in b
        and newer.stems[0] in a
        and len(a & b) / len(a) >= 0.5
    ):
        return "a name swapped"
    return ""


def content_words(text: str) -> list[str]:
    """The folded words of ``text`` that carry meaning (letters only, no stop words, 2+ letters)."""
    return [w for w in _LETTERS.findall(fold(text)) if len(w) > 1 and w not in _STOP]
