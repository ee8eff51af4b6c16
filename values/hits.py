"""Search hits: what ``mem.search`` returns, best first."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from values.verification import Verification

__all__ = ["MemoryHit", "SearchResults"]


@dataclass(frozen=True)
class MemoryHit:
    """A search result: the masked text and what the track knows about it."""

    memory_id: uuid.UUID
    text: str
    score: float
    intent: str
    entities: list[dict[str, Any]]
    occurred_at: datetime
    metadata: dict[str, Any]
    policy: str
    kind: str
    session_id: str | None
    keyword_score: float | None
    vector_score: float | None
    status: str = "active"
    confidence: float = 1.0
    verifications: tuple[Verification, ...] = ()
    """With ``search(..., verify=True)``: the live state of each business entity the
    memory names (see ``sdk.verification``); empty otherwise."""


class SearchResults(list[MemoryHit]):
    """Hits, best first; ``degraded`` is true when a fallback index answered."""

    degraded: bool = False
