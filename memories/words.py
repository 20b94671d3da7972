"""A query's words, as the keyword ranker matches them (``memories.search``): split into words,
stop words dropped, each word's language told from the query (Russian if Cyrillic; French or
English for Latin script), and its tsquery forms (a prefix from 4 letters on, and the Snowball
stem where its language is stemmed). Why these choices: docs/search.md ("Stemming")."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

_WORD = re.compile(r"\w+", re.UNICODE)
_CYRILLIC = re.compile("[а-яё]")
# Function words of the languages MMW serves; the 'simple' configuration keeps them, so they are
# dropped from queries here (OR-ing them would match nearly every record).
STOP_WORDS = frozenset(
    """
    a an and are as at be by for from has have how i in is it its of on or that the this to was
    were what when where which who why will with do does did we our you your they their и в во
    на с со по к о об от для как что это кто где когда какой какая какие ли не да или но а у из
    за же бы был была были быть есть мы наш наша вы ваш они их он она оно le la les un une des
    de du et ou en au aux à a est sont pour par sur dans que qui quoi quel quelle quels quelles
    ce cet cette ces il elle ils elles nous vous on ne pas se sa son ses leur
    """.split()  # noqa: SIM905 - a word list reads better as text
)
# The languages whose query words also match by their Snowball stem (``word_forms``): a Cyrillic
# word is Russian, a Latin-script one French in a query with French marks, else English
# (``latin_language``). English only: Russian and French stems cost the multilingual set recall
# (docs/search.md, "Stemming").
STEM_LANGUAGES: frozenset[str] = frozenset({"english"})
# French function words that are not English words, and letters English hardly uses (not é: café).
FRENCH_MARKS = frozenset(
    """
    le la les l de des du au aux un une qu est sont dans que qui quoi quel quelle quels quelles ont été
    était pourquoi quand où combien avec chez leur leurs notre votre nous vous
    """.split()  # noqa: SIM905 - a word list reads better as text
)
_FRENCH_LETTERS = re.compile("[èêëàâçùûîïôœ]")
# A query's keyword terms are capped: each one is a tsquery test in the scoring expression, and a
# 10,000-character query would otherwise send thousands of them to PostgreSQL.
MAX_QUERY_TERMS = 32


def keyword_terms(query: str) -> list[str]:
    """The query's searchable words as tsquery terms, in order, without repeats: stop words
    dropped, words of 4+ letters prefix-matched (``deploy:*``) and also matched by their Snowball
    stem (``word_forms``: ``studi:*`` finds "study" and "studies"), the first ``MAX_QUERY_TERMS``
    kept. Words are reduced to letters and digits (``_`` splits), so no tsquery syntax gets
    through but the parentheses and ``|`` built here."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    latin = latin_language(words)
    terms: list[str] = []
    for word in words:
        if word in STOP_WORDS:
            continue
        for part in word.replace("_", " ").split():
            forms = word_forms(part, latin)
            terms.append(forms[0] if len(forms) == 1 else "(" + " | ".join(forms) + ")")
    return list(dict.fromkeys(terms))[:MAX_QUERY_TERMS]


def latin_language(words: Sequence[str]) -> str:
    """The language of a query's Latin-script words (lower case): French when one of ``words`` is
    a French function word (``FRENCH_MARKS``) or has a letter English hardly uses, else English."""
    french = any(w in FRENCH_MARKS or _FRENCH_LETTERS.search(w) for w in words)
    return "french" if french else "english"


def word_forms(word: str, latin: str = "english") -> list[str]:
    """The tsquery alternatives one query word matches: itself (a prefix from 4 letters on) and its
    stem (``_stem``: Russian for a Cyrillic word, ``latin`` for another), a prefix from 4 letters
    on, else exact. An alternative a prefix alternative already covers is left out; the word's own
    form comes first."""
    if len(word) < 4:
        return [word]
    stem = _stem(word, latin)
    if stem is None or stem == word:
        return [f"{word}:*"]
    if len(stem) < 4:
        return [f"{word}:*", stem]
    return [f"{stem}:*"] if word.startswith(stem) else [f"{word}:*", f"{stem}:*"]


def _stem(word: str, latin: str) -> str | None:
    """``word``'s Snowball stem in its language (Russian if Cyrillic, else ``latin``), or None: a
    word with digits, or a language not in ``STEM_LANGUAGES``."""
    language = "russian" if _CYRILLIC.search(word) else latin
    if language not in STEM_LANGUAGES or any(c.isdigit() for c in word):
        return None
    return str(_stemmer(language).stemWord(word))


_STEMMERS = threading.local()


def _stemmer(language: str) -> Any:
    """This thread's Snowball stemmer for ``language`` (pure Python, ``snowballstemmer``). One per
    thread: a stemmer keeps the word it works on in itself, so two requests stemming at once with
    one stemmer corrupt each other's words (an IndexError, seen under concurrent searches)."""
    import snowballstemmer

    mine: dict[str, Any] = _STEMMERS.__dict__.setdefault("by_language", {})
    if language not in mine:
        mine[language] = snowballstemmer.stemmer(language)
    return mine[language]
