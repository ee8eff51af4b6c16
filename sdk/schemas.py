"""The values callers hand the SDK and get back from it.

Shared by the in-process client and, later, the REST service and its remote
client, so each shape is written once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk.verification import Verification

if TYPE_CHECKING:
    from unstructured_memory.summariser.summary import SessionSummary

__all__ = [
    "FeedbackResult",
    "HitOut",
    "MemoryHit",
    "MemoryInput",
    "SearchBody",
    "SearchOut",
    "SearchResults",
    "SessionRecord",
    "TurnsAppended",
    "WriteRequest",
    "WriteResponse",
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


class WriteRequest(BaseModel):
    """``POST /v1/memories``: one memory; ``lifecycle_policy`` is required (422 without)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=65536)
    lifecycle_policy: LifecyclePolicy
    session_id: str | None = Field(default=None, max_length=128)
    occurred_at: datetime | None = None
    metadata: dict[str, Any] | None = None
    kind: MemoryKind = MemoryKind.NOTE
    private: bool = False


class WriteResponse(BaseModel):
    """The id of the memory written."""

    memory_id: uuid.UUID


class SearchBody(BaseModel):
    """``POST /v1/search``: a hybrid search of the token's user."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4096)
    limit: int = Field(default=5, ge=1, le=100)
    alpha: float | None = Field(default=None, ge=0.0, le=1.0)
    preset: str | None = Field(default=None, max_length=64)
    intents: list[str] | None = Field(default=None, max_length=32)
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    session_id: str | None = Field(default=None, max_length=128)


class HitOut(BaseModel):
    """One search hit as the REST API returns it."""

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
    status: str
    confidence: float

    @classmethod
    def of(cls, hit: MemoryHit) -> HitOut:
        """From an SDK hit."""
        return cls(
            memory_id=hit.memory_id,
            text=hit.text,
            score=hit.score,
            intent=hit.intent,
            entities=hit.entities,
            occurred_at=hit.occurred_at,
            metadata=hit.metadata,
            policy=hit.policy,
            kind=hit.kind,
            session_id=hit.session_id,
            status=hit.status,
            confidence=hit.confidence,
        )


class SearchOut(BaseModel):
    """Hits, best first; ``degraded`` when a fallback index answered."""

    hits: list[HitOut]
    degraded: bool
