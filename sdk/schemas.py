"""The values callers hand the SDK and get back from it.

Shared by the in-process client and, later, the REST service and its remote
client, so each shape is written once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk.verification import Verification

if TYPE_CHECKING:
    from unstructured_memory.summariser.summary import SessionSummary

__all__ = [
    "FeedbackResult",
    "MemoryHit",
    "MemoryInput",
    "SearchResults",
    "SessionRecord",
    "TurnsAppended",
]


class MemoryInput(BaseModel):
    """One memory for :meth:`MemoryClient.write_many`; ``lifecycle_policy`` is required."""

    model_config = ConfigDict(frozen=True)

    user_id: str
    text: str
    lifecycle_policy: LifecyclePolicy
    session_id: str | None = None
    occurred_at: datetime | None = None
    metadata: dict[str, Any] | None = None
    kind: MemoryKind = MemoryKind.NOTE
    private: bool = False


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


@dataclass(frozen=True)
class SessionRecord:
    """What ``end_session`` stored: the record's id and the (masked) summary it came from."""

    memory_id: uuid.UUID
    summary: SessionSummary


@dataclass(frozen=True)
class TurnsAppended:
    """What ``append_turns`` stored: a memory id per non-empty turn, and the record written
    when the session gathered enough unprocessed turns (else ``None``)."""

    memory_ids: list[uuid.UUID]
    record: SessionRecord | None


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
