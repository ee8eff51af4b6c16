"""Contextual indexing: a fragment is found through its session, returned as itself.

A turn such as "5 years already!" shares no word with the question it
answers ("How long have you been married?"); the turns before it do. So a
fragment written in a session is indexed with a context: its session date and
the previous turns of the session. The stored and returned text stays the
fragment's own. The keyword side adds each context token not already in the
fragment once, so the fragment's own terms keep their weight; the vector side
adds the context's embedding at a lower weight before normalising.

Measured on the LoCoMo tuning split with the default hashing embedder
(hybrid, α = 0.35): recall@10 58.4 → 70.1 and MRR 45.4 → 49.3 with two
context turns, the date, and a context weight of 0.5 (see the README).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

__all__ = ["CONTEXT_WEIGHT", "combine_tokens", "combine_vectors", "context_text"]

CONTEXT_WEIGHT = 0.5
"""Weight of the context's embedding beside the fragment's own (1.0)."""


def context_text(occurred_at: datetime, previous: Sequence[str]) -> str:
    """The context of a fragment: its date (``08 May 2023``) and the previous turns."""
    return " ".join([f"{occurred_at:%d %B %Y}:", *previous])


def combine_tokens(own: Sequence[str], context: Sequence[str]) -> list[str]:
    """``own`` followed by each context token that ``own`` lacks, once."""
    seen = set(own)
    extra = [t for t in dict.fromkeys(context) if t not in seen]
    return [*own, *extra]


def combine_vectors(
    own: Sequence[float], context: Sequence[float], weight: float = CONTEXT_WEIGHT
) -> list[float]:
    """``own + weight * context``, L2-normalised (``own`` alone if the sum is zero)."""
    mixed = [a + weight * b for a, b in zip(own, context, strict=True)]
    norm = math.sqrt(sum(x * x for x in mixed))
    if norm == 0.0:
        return list(own)
    return [x / norm for x in mixed]
