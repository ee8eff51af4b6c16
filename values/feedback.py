"""Where a behaviour event (``mem.feedback``) left a memory."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

__all__ = ["FeedbackResult"]


@dataclass(frozen=True)
class FeedbackResult:
    """Where :meth:`MemoryClient.feedback` left a memory.

    ``kind`` is ``"fragment"`` or ``"fact"``; ``status`` is ``active``,
    ``pending_confirmation`` (ask the user before relying on it), ``needs_review``
    or ``retired`` (rejected: no read returns it again).
    """

    memory_id: uuid.UUID
    kind: str
    action: str
    confidence: float
    status: str
    previous_confidence: float
    previous_status: str
