"""Fusion of a vector result list and a keyword result list, as Weaviate does it.

* :func:`relative_score_fusion` (Weaviate ``relativeScoreFusion``): each list's
  scores are min-max normalised to [0, 1] (a list whose scores are all equal
  normalises to 1), then ``fused = alpha * vector + (1 - alpha) * keyword``,
  a result missing from a list counting 0 there.
* :func:`ranked_fusion` (Weaviate ``rankedFusion``, reciprocal rank):
  ``fused = alpha / (60 + rank_v) + (1 - alpha) / (60 + rank_k)``, ranks from 0.

Callers pass each backend's top-N candidates (N usually ``max(limit, 100)``);
these functions do no I/O and are generic in the result key.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

__all__ = ["RANK_CONSTANT", "min_max_normalise", "ranked_fusion", "relative_score_fusion"]

K = TypeVar("K", bound=Hashable)

RANK_CONSTANT = 60
"""The ``k`` of reciprocal-rank fusion (Weaviate and the RRF paper use 60)."""


def _check_alpha(alpha: float) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")


def min_max_normalise(results: Sequence[tuple[K, float]]) -> dict[K, float]:
    """Scores of ``results`` mapped onto [0, 1]; all-equal scores map to 1.

    A key listed twice keeps its first (best-ranked) score.
    """
    if not results:
        return {}
    scores = [s for _, s in results]
    low, high = min(scores), max(scores)
    span = high - low
    out: dict[K, float] = {}
    for key, score in results:
        if key not in out:
            out[key] = (score - low) / span if span > 0.0 else 1.0
    return out


def _rank(fused: dict[K, float], order: dict[K, int], limit: int) -> list[tuple[K, float]]:
    ranked = sorted(fused.items(), key=lambda kv: (-kv[1], order[kv[0]]))
    return ranked[: max(limit, 0)]


def _first_seen(*lists: Sequence[tuple[K, float]]) -> dict[K, int]:
    order: dict[K, int] = {}
    for results in lists:
        for key, _ in results:
            order.setdefault(key, len(order))
    return order


def relative_score_fusion(
    vector: Sequence[tuple[K, float]],
    keyword: Sequence[tuple[K, float]],
    *,
    alpha: float,
    limit: int,
) -> list[tuple[K, float]]:
    """The best ``limit`` ``(key, fused score)`` pairs, highest first.

    ``vector`` and ``keyword`` are ``(key, score)`` lists where higher is better
    (pass similarities, not distances). Ties keep the order in which keys first
    appear, vector list first. Raises ``ValueError`` for alpha outside [0, 1].
    """
    _check_alpha(alpha)
    vec = min_max_normalise(vector)
    kw = min_max_normalise(keyword)
    order = _first_seen(vector, keyword)
    fused = {k: alpha * vec.get(k, 0.0) + (1.0 - alpha) * kw.get(k, 0.0) for k in order}
    return _rank(fused, order, limit)


def ranked_fusion(
    vector: Sequence[tuple[K, float]],
    keyword: Sequence[tuple[K, float]],
    *,
    alpha: float,
    limit: int,
    k: int = RANK_CONSTANT,
) -> list[tuple[K, float]]:
    """Reciprocal-rank fusion of the two lists (each given best first); see the module."""
    _check_alpha(alpha)
    order = _first_seen(vector, keyword)
    fused = dict.fromkeys(order, 0.0)
    for weight, results in ((alpha, vector), (1.0 - alpha, keyword)):
        seen: set[K] = set()
        for rank, (key, _) in enumerate(results):
            if key not in seen:
                seen.add(key)
                fused[key] += weight / (k + rank)
    return _rank(fused, order, limit)
