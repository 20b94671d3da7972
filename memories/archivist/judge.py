"""``classify``: the relation between a newer and an older record, by aligning their tokens.

Two records are compared slot by slot: the tokens they share are the frame, the tokens only one
of them has are the slots that differ. A contradiction is the same subject with an incompatible
value, so it needs all three:

- **the same subject**: every differing slot lies after the predicate in at least one of the two
  texts ("the database port is 5432" / "… 6432"), never a slot both texts hold before it
  ("module m7 owns /api/m7" / "module m8 owns /api/m8": two modules, consistent), and never a
  number or identifier labelled by a noun such as ticket, tenant or PR (two tickets);
- **a frame**: most of both texts is shared;
- **incompatible values**: both sides of a slot hold values of one class (numbers, times,
  weekdays, months, languages, periods, names) or opposite words (enabled / disabled); or one
  text negates what the other states; or the newer announces a change ("moved to", "теперь",
  "désormais") and replaces a value of the older's.

Anything else that shares enough is ``refines`` (the newer keeps the older and adds detail) or
``related``. Scores are strengths: the share of the two texts that aligns for ``contradicts``, the
share of the older record the newer keeps for ``refines``, the similarity for ``related``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memories.archivist.text import IDENT, NAME, NUMBER, Features, Token, antonyms, dice, is_entity
from memories.models import RelationType

RELATED_DICE = 0.25  # keyword similarity (Dice over tokens) from which two records are related
RELATED_COSINE = 0.45  # cosine of same-model embeddings from which two records are related (calibrated on "use")
CONTRADICTS_FRAME = 0.5  # share of both texts that must align around the differing values
REFINE_COVERAGE = 0.9  # share of the older record's tokens the newer one keeps (all of a short one)
REFINE_ADDED = 2  # new tokens the newer one must add
MAX_SLOT = 3  # tokens one side of a differing slot may hold
MAX_SLOTS = 2  # differing slots a contradiction may have
KEPT_FOR_CHANGE = 0.5  # share of the older record a newer one announcing a change must repeat

UNRELATED = "unrelated"


@dataclass(frozen=True)
class Verdict:
    relation: str  # contradicts | refines | related | unrelated
    score: float
    why: str = ""


@dataclass(frozen=True)
class _Slot:
    """A run of consecutive tokens of one text that the other text lacks."""

    start: int
    tokens: tuple[Token, ...]


def classify(newer: Features, older: Features, *, vector_cosine: float | None = None) -> Verdict:
    """How ``newer`` stands to ``older``; a heuristic that needs no model."""
    a, b = older.stem_set, newer.stem_set
    shared = a & b
    sim = dice(a, b)
    if vector_cosine is not None:
        sim = max(sim, vector_cosine)
    # Short notes share few words: one shared token is enough when either has at most two.
    enough_shared = bool(a and b) and len(shared) >= (1 if min(len(a), len(b)) <= 2 else 2)
    if enough_shared:
        why, strength = contradiction(newer, older)
        if why:
            return Verdict(RelationType.CONTRADICTS, round(strength, 4), why)
    coverage = len(shared) / len(a) if a else 0.0
    if (
        enough_shared
        and len(a - b) <= int(len(a) * (1 - REFINE_COVERAGE) + 1e-9)
        and len(b - a) >= REFINE_ADDED
        and len(newer.tokens) > len(older.tokens)
        and older.values <= newer.values
        and older.negated == newer.negated
    ):
        return Verdict(RelationType.REFINES, round(coverage, 4), "adds detail")
    close = vector_cosine is not None and vector_cosine >= RELATED_COSINE
    if (dice(a, b) >= RELATED_DICE and enough_shared) or close:
        return Verdict(RelationType.RELATED, round(sim, 4), "similar")
    return Verdict(UNRELATED, round(sim, 4))


def contradiction(newer: Features, older: Features) -> tuple[str, float]:
    """Why the two cannot both be current ("" if nothing says so) and how much of them aligns."""
    a_keys, b_keys = older.stem_set, newer.stem_set
    removed = _slots(older, b_keys)
    added = _slots(newer, a_keys)
    shared = len(a_keys & b_keys)
    gone = sum(len(s.tokens) for s in removed)
    new = sum(len(s.tokens) for s in added)
    frame = shared / (shared + max(gone, new, 1))
    if older.negated != newer.negated:
        why = _negation(newer, older, gone, new)
        if why:
            return why, frame
    if newer.additive:
        return "", frame  # "also …": an addition, not a change
    if 0 < len(removed) <= MAX_SLOTS and 0 < len(added) <= MAX_SLOTS and antonyms(_flat(removed), _flat(added)):
        return "opposite words", frame
    if (
        frame >= CONTRADICTS_FRAME
        and older.negated == newer.negated
        and _same_subject_head(newer, older)
        and _values_swapped(newer, older, removed, added)
    ):
        return "different values", frame
    return _update(newer, older, added), frame


def _slots(features: Features, other: frozenset[str]) -> list[_Slot]:
    slots: list[_Slot] = []
    for i, token in enumerate(features.tokens):
        if token.key in other:
            continue
        if slots and slots[-1].start + len(slots[-1].tokens) == i:
            last = slots.pop()
            slots.append(_Slot(last.start, (*last.tokens, token)))
        else:
            slots.append(_Slot(i, (token,)))
    return slots


def _flat(slots: Sequence[_Slot]) -> list[Token]:
    return [t for s in slots for t in s.tokens]


def _same_subject_head(newer: Features, older: Features) -> bool:
    """The first token of each text appears in the other (the subject both talk about)."""
    if not newer.tokens or not older.tokens:
        return False
    return older.tokens[0].key in newer.stem_set or newer.tokens[0].key in older.stem_set


def _negation(newer: Features, older: Features, gone: int, new: int) -> str:
    """One text negates what the other states: the same words apart from the negation (and a
    value or a helper verb), or a negation right next to a value the other one states."""
    negating = newer if newer.negated else older
    helpers = new if negating is newer else gone  # "does not *need* to pass"
    dropped = gone if negating is newer else new  # "retried *5 times*" / "never retried"
    if helpers <= 1 and dropped <= 2 and helpers + dropped <= 2 and len(older.stem_set & newer.stem_set) >= 2:
        return "negation"
    stating = older if negating is newer else newer
    if _kept(older, newer) < KEPT_FOR_CHANGE:
        return ""
    stated = {t.key for t in stating.tokens[stating.subject_end() :] if t.kind in (NAME, IDENT, NUMBER)}
    for at in negating.negations:
        near = negating.tokens[max(at - 2, negating.subject_end()) : at + 2]
        if any(t.key in stated for t in near):
            return "negates a value"
    return ""


def _kept(older: Features, newer: Features) -> float:
    """The share of the older record's tokens the newer one repeats."""
    a = older.stem_set
    return len(a & newer.stem_set) / len(a) if a else 0.0


def _values_swapped(newer: Features, older: Features, removed: list[_Slot], added: list[_Slot]) -> bool:
    """The texts differ in 1–2 slots, each after the predicate in one text at least, each holding
    values of one class on both sides, and most of both texts is shared."""
    if not removed or len(removed) != len(added) or len(removed) > MAX_SLOTS:
        return False
    if older.past and newer.past:
        return False  # two events: "went to Paris on 7 May" / "went to Berlin on 8 May"
    if older.many_valued or newer.many_valued:
        return False  # "likes Python" / "likes Rust": both can hold
    for old, new in zip(removed, added, strict=True):
        if len(old.tokens) > MAX_SLOT or len(new.tokens) > MAX_SLOT:
            return False
        if _in_subject(old, older) and _in_subject(new, newer):
            return False  # "module m7 …" / "module m8 …": two subjects
        if _labelled(old, older) or _labelled(new, newer):
            return False  # "ticket OPS-311" / "ticket OPS-318": two things
        if old.tokens[0].listed or new.tokens[0].listed:
            return False  # one item of a list: "uses PostgreSQL and Redis" / "… and Kafka"
        if not _compatible(old.tokens, new.tokens):
            return False
    return True


def _in_subject(slot: _Slot, features: Features) -> bool:
    return slot.start < features.subject_end()


def _labelled(slot: _Slot, features: Features) -> bool:
    """The slot starts with a number or identifier right after a noun that names one of many things."""
    first = slot.tokens[0]
    return first.kind in (NUMBER, IDENT) and slot.start > 0 and is_entity(features.tokens[slot.start - 1])


def _class(token: Token) -> str:
    return "number" if token.value == "time" else token.value


def _compatible(old: Sequence[Token], new: Sequence[Token]) -> bool:
    """Both sides of a slot hold values of one class: token by token when they are as long
    ("9:00 … 18:00" / "8:00 … 17:00"), else the same classes with at most one plain word on
    each side ("Ansible playbooks" / "Terraform")."""
    if len(old) == len(new):
        pairs = list(zip(old, new, strict=True))
        return any(_class(o) for o, _ in pairs) and all(
            o.key == n.key or (_class(o) != "" and _class(o) == _class(n)) for o, n in pairs
        )
    classes_old = {_class(t) for t in old} - {""}
    classes_new = {_class(t) for t in new} - {""}
    plain = max(sum(1 for t in old if not t.value), sum(1 for t in new if not t.value))
    return bool(classes_old) and classes_old == classes_new and plain <= 1


def _update(newer: Features, older: Features, added: list[_Slot]) -> str:
    """The newer announces a change and brings a value of a class the older states after its
    subject, which the newer does not keep (or keeps only as the old one: "from X to Y")."""
    if not newer.update or not added or _kept(older, newer) < KEPT_FOR_CHANGE:
        return ""
    shared = older.stem_set & newer.stem_set
    if not (older.tokens[0].key in shared or len(shared) >= 2):
        return ""
    old_values = [t for t in older.tokens[older.subject_end() :] if t.value]
    if not old_values:
        old_values = [t for t in older.tokens if t.value and t.kind != "word"]
    new_values = [t for t in _flat(added) if t.value]
    for old in old_values:
        for new in new_values:
            if old.key != new.key and _class(old) == _class(new):
                return "announces a change"
    return ""
