"""Session-aware re-ranking of search candidates (pure functions, no I/O).

An index ranks each memory alone. In a conversation the answer to a question
often spans several turns of one session, and a turn whose session matches the
query as a whole is a better bet than an isolated near-match. :func:`rerank`
adds to each candidate's score a *session prior* (``session_weight`` times the
sum of the ``session_top`` best scores of its session among the candidates,
divided by ``session_top``, so one lone match earns little) and, where the
memory records who spoke it (``metadata["speaker"]``) and the query names that
speaker, a *speaker boost*. Scores are taken relative to the best candidate, so
the same weights fit relative-score and reciprocal-rank fusion; the results are
scaled so the first keeps the best score given.

Tuned on the LoCoMo tuning split (conv-26, -30, -41, -42, -43) only; see
``benchmarks/locomo.py``.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["DEFAULT_RERANK", "SPEAKER_KEY", "Candidate", "RerankConfig", "names", "rerank"]

K = TypeVar("K", bound=Hashable)

SPEAKER_KEY = "speaker"
"""The metadata key naming who said a memory (a person, or a role such as ``客服``)."""


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """Weights of the re-ranking and how many candidates it looks at."""

    depth: int = 30
    """Candidates taken from the index (at least the caller's ``limit``)."""
    session_weight: float = 0.6
    session_top: int = 3
    speaker_boost: float = 0.4


DEFAULT_RERANK = RerankConfig()


@dataclass(frozen=True, slots=True)
class Candidate(Generic[K]):
    """One index hit as the re-ranking sees it."""

    key: K
    score: float
    session: str | None = None
    speaker: str | None = None


_ASCII_WORD = "A-Za-z0-9"


def names(query: str, speaker: str) -> bool:
    """Whether ``query`` names ``speaker``: case-insensitive, as a whole word for
    Latin letters and digits (``Al`` is not in ``also``), as a substring between
    CJK characters (``张伟`` in ``张伟说的退款``)."""
    name = speaker.strip()
    if not name:
        return False
    pattern = rf"(?<![{_ASCII_WORD}]){re.escape(name)}(?![{_ASCII_WORD}])"
    return re.search(pattern, query, flags=re.IGNORECASE) is not None


def rerank(
    query: str, candidates: Sequence[Candidate[K]], config: RerankConfig = DEFAULT_RERANK
) -> list[tuple[K, float]]:
    """``(key, score)`` of ``candidates``, best first, after the session prior and the
    speaker boost; ties keep the given order. A candidate without a session forms
    a session of its own."""
    if not candidates:
        return []
    best = max(c.score for c in candidates)
    if best <= 0.0:
        return [(c.key, c.score) for c in candidates]
    relative = [c.score / best for c in candidates]
    by_session: dict[object, list[float]] = {}
    for i, (c, s) in enumerate(zip(candidates, relative, strict=True)):
        by_session.setdefault(c.session if c.session is not None else ("#", i), []).append(s)
    top = max(config.session_top, 1)
    prior = {key: sum(heapq.nlargest(top, scores)) / top for key, scores in by_session.items()}
    spoken: dict[str, bool] = {}
    scored: list[tuple[float, int, K]] = []
    for i, (c, s) in enumerate(zip(candidates, relative, strict=True)):
        value = s + config.session_weight * prior[c.session if c.session is not None else ("#", i)]
        if c.speaker and config.speaker_boost:
            if c.speaker not in spoken:
                spoken[c.speaker] = names(query, c.speaker)
            if spoken[c.speaker]:
                value += config.speaker_boost
        scored.append((-value, i, c.key))
    scored.sort(key=lambda t: (t[0], t[1]))
    scale = best / -scored[0][0]  # the first keeps the best score given
    return [(key, -neg * scale) for neg, _, key in scored]
