"""The ``score`` a search result shows: how likely it is that the result answers the query (0..1),
calibrated on labelled questions, and never above the score of the result before it.

Why not the rankers' own numbers: a vector match's relevance is clamped at 1.0 from a cosine of
0.29 (USE) on, so on LoCoMo dev 70 % of the top-10 results showed 1.000 and for 98 % of the
questions answered at rank 1 a non-answering record in the top 5 showed the same 1.000; and the
fused score is relative to the other candidates of one query (a best match to nothing still
looks like a best match, and a workspace of four records spreads its z-scores unlike one of
four hundred). The calibrated score reads three signals of a result:

- ``coverage``: the share of the query the record's words cover (``search.coverage``, 0..1);
- ``evidence``: its vector match less the workspace background, in units of the model's cosine
  scale (``dense.CosineScale.units``: 0 at the scale's low end, 1 at its high end, not clamped:
  a cosine far above the scale still counts for more), clipped to ``EVIDENCE_RANGE``;
- ``rank``: its place in the fused order (0 for the first result): the same evidence weighs less
  under a better-ranked result.

``probability = sigmoid(w · (coverage, evidence, ln(1 + rank)) + bias)`` with ``WEIGHTS`` fitted
by logistic regression on half of LoCoMo dev and of the multilingual set (``bench/score_fit.py``,
which reports the other half too). Results keep the fusion's order (re-ranking by this score cost
the multilingual set R@5 0.917 → 0.893 in the same run), and ``descending`` makes each shown score
at most the one before it less ``STEP``: a list reads best first, and no result shows the same
score as the one above it. The best result's score depends on its own match only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# (coverage, evidence, ln(1 + rank)), bias — fitted by `bench/score_fit.py` (docs/search.md, "Scores").
WEIGHTS = (0.875, 0.652, -1.805)
BIAS = -1.295
# A vector match's evidence beyond these scale units says nothing more (and a record the vector
# ranker did not return counts as the low end less one unit).
EVIDENCE_RANGE = (-2.0, 4.0)
NO_VECTOR = -1.0
STEP = 0.001  # how much lower each shown score is than the one before it, at least
DECIMALS = 3


def probability(coverage: float, evidence: float | None, rank: int) -> float:
    """How likely the result at ``rank`` (0: the first) answers the query (module docstring)."""
    units = NO_VECTOR if evidence is None else min(EVIDENCE_RANGE[1], max(EVIDENCE_RANGE[0], evidence))
    linear = WEIGHTS[0] * coverage + WEIGHTS[1] * units + WEIGHTS[2] * math.log1p(rank) + BIAS
    return 1.0 / (1.0 + math.exp(-linear))


def descending(scores: Sequence[float]) -> list[float]:
    """``scores`` (in result order) as shown: rounded to ``DECIMALS``, each at most the one before
    it less ``STEP``, never below 0."""
    shown: list[float] = []
    for score in scores:
        value = round(score, DECIMALS)
        if shown:
            value = min(value, round(shown[-1] - STEP, DECIMALS))
        shown.append(max(0.0, value))
    return shown
