"""The REST contract's bodies: what a request carries and what an answer holds.

Request models forbid unknown fields (``extra="forbid"``): a ``user_id`` in a
body is 422, never trusted. Answer models are built from the SDK's values
(``HitOut.of(hit)``) by the service, and read back into them by the remote
client. Shared by the REST routes, the MCP tools and the remote client.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from policies.business import BusinessEntityType, LinkRole
from policies.confidence import FeedbackAction
from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from values.context import MemoryContext
from values.feedback import FeedbackResult
from values.hits import MemoryHit, SearchResults
from values.sessions import Role, SessionRecord, Turn, TurnsAppended

if TYPE_CHECKING:
    from sandbox.repository import Sandbox

__all__ = [
    "Body",
    "ContextBody",
    "ContextItemOut",
    "ContextOut",
    "DeviceRegister",
    "DeviceVerify",
    "DiscardOut",
    "EndSessionArgs",
    "EntityOut",
    "ExportOut",
    "ExportedPii",
    "FactPut",
    "FeedbackBody",
    "FeedbackOut",
    "ForgetArgs",
    "ForgetOut",
    "HitOut",
    "LinkCreate",
    "LinkEnd",
    "MergeBody",
    "MergeOut",
    "ProfilePatch",
    "RevocationBody",
    "SandboxOut",
    "SearchBody",
    "SearchOut",
    "SessionOut",
    "TranscriptBody",
    "TurnIn",
    "TurnsAppendedOut",
    "TurnsBody",
    "WriteRequest",
    "WriteResponse",
]


class Body(BaseModel):
    """A request model: its fields are the SDK method's keyword arguments."""

    model_config = ConfigDict(extra="forbid")

    def sdk_args(self) -> dict[str, Any]:
        """The SDK method's keyword arguments (the fields as validated)."""
        return {name: getattr(self, name) for name in type(self).model_fields}


class WriteRequest(Body):
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


class SearchBody(Body):
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
    keyword_score: float | None = None
    vector_score: float | None = None

    @classmethod
    def of(cls, hit: MemoryHit) -> HitOut:
        """From an SDK hit."""
        return cls.model_validate(hit, from_attributes=True)


class SearchOut(BaseModel):
    """Hits, best first; ``degraded`` when a fallback index answered."""

    hits: list[HitOut]
    degraded: bool

    @classmethod
    def of(cls, hits: SearchResults) -> SearchOut:
        """From the SDK's hits."""
        return cls(hits=[HitOut.of(h) for h in hits], degraded=hits.degraded)


class DeviceRegister(Body):
    """``POST /v1/devices``: a sign-in from a device (its fingerprint is derived)."""

    model_config = ConfigDict(extra="forbid")

    device_id: str = Field(min_length=1, max_length=256)
    os: str = Field(max_length=64)
    browser: str = Field(max_length=64)


class DeviceVerify(Body):
    """``POST /v1/devices/{fingerprint}/verify``: the outcome of a verification."""

    model_config = ConfigDict(extra="forbid")

    succeeded: bool


class LinkCreate(Body):
    """``POST /v1/links``: the user's role on a business entity over a validity range."""

    model_config = ConfigDict(extra="forbid")

    entity_type: BusinessEntityType
    entity_id: str = Field(min_length=1, max_length=128)
    role: LinkRole
    effective_from: datetime | None = None
    effective_to: datetime | None = None


class LinkEnd(Body):
    """``POST /v1/links/{link_id}/end``: close the link at ``at`` (default now)."""

    model_config = ConfigDict(extra="forbid")

    at: datetime | None = None


class FactPut(Body):
    """``PUT /v1/facts/{key}``: a JSON value under a required lifecycle policy."""

    model_config = ConfigDict(extra="forbid")

    value: Any
    lifecycle_policy: LifecyclePolicy
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    source: str = Field(default="", max_length=64)


class ContextBody(Body):
    """``POST /v1/context``: the memory block for a prompt about ``query``."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4096)
    max_tokens: int = Field(default=600, ge=1, le=32_000)
    records: int = Field(default=5, ge=1, le=100)


class ContextItemOut(BaseModel):
    """One line of the block and where it came from (a memory, fact or link)."""

    section: str
    text: str
    ref: str | None
    status: str


class ContextOut(BaseModel):
    """The block, its estimated tokens, what the budget left out, and its items."""

    text: str
    tokens: int
    omitted: int
    degraded: bool
    items: list[ContextItemOut]

    @classmethod
    def of(cls, context: MemoryContext) -> ContextOut:
        """From the SDK's context."""
        return cls(
            text=context.text,
            tokens=context.tokens,
            omitted=context.omitted,
            degraded=context.degraded,
            items=[
                ContextItemOut(section=i.section.value, text=i.text, ref=i.ref, status=i.status)
                for i in context.items
            ],
        )


class TurnIn(BaseModel):
    """One turn of a transcript; a naive ``time`` is read as UTC."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    text: str = Field(max_length=65536)
    time: datetime | None = None

    def to_turn(self) -> Turn:
        """The SDK's turn."""
        return Turn(role=self.role, text=self.text, time=self.time)


class TurnsBody(Body):
    """``POST /v1/sessions/{session_id}/turns``: new turns of a long session."""

    model_config = ConfigDict(extra="forbid")

    turns: list[TurnIn] = Field(max_length=1000)

    def sdk_args(self) -> dict[str, Any]:
        """The turns as the SDK's :class:`Turn` values."""
        return {"turns": [t.to_turn() for t in self.turns]}


class TranscriptBody(Body):
    """``POST /v1/sessions/{session_id}/end``: the session (or what followed turns given)."""

    model_config = ConfigDict(extra="forbid")

    transcript: list[TurnIn] = Field(max_length=1000)

    def sdk_args(self) -> dict[str, Any]:
        """The transcript as the SDK's :class:`Turn` values (and any other field)."""
        return {**super().sdk_args(), "transcript": [t.to_turn() for t in self.transcript]}


class EndSessionArgs(TranscriptBody):
    """``end_session``: the session (the REST path's ``session_id``) and its transcript."""

    session_id: str = Field(min_length=1, max_length=128)


class ForgetArgs(Body):
    """``forget`` takes no argument: it erases the token's user."""

    model_config = ConfigDict(extra="forbid")


class ForgetOut(BaseModel):
    """Whether the user existed before the erasure."""

    erased: bool


class ProfilePatch(Body):
    """The fields a PATCH may change (all optional)."""

    model_config = ConfigDict(extra="forbid")

    timezone: str | None = Field(default=None, max_length=64)
    language: str | None = Field(default=None, max_length=16)
    notification_preference: dict[str, bool] | None = None
    attributes: dict[str, Any] | None = None
    profile_summary: str | None = Field(default=None, max_length=4096)


class EntityOut(BaseModel):
    """An entity of a session record; a PII entity's ``text`` is masked."""

    type: str
    text: str
    start: int
    end: int


class SessionOut(BaseModel):
    """The record ``end_session`` stored: masked summary, intent, entities.

    Built field by field from the summary, whose ``pii`` (clear values) is
    never carried.
    """

    memory_id: uuid.UUID
    session_id: str
    summary: str
    intent: str
    intent_confidence: float
    entities: list[EntityOut]
    occurred_at: datetime
    language: str
    outcomes: list[str]

    @classmethod
    def of(cls, record: SessionRecord) -> SessionOut:
        """From the SDK's record (its summary's ``pii`` left behind)."""
        s = record.summary
        return cls(
            memory_id=record.memory_id,
            session_id=s.session_id,
            summary=s.summary_text,
            intent=str(s.intent),
            intent_confidence=s.intent_confidence,
            entities=[
                EntityOut(type=e.type, text=e.text, start=e.start, end=e.end) for e in s.entities
            ],
            occurred_at=s.occurred_at,
            language=str(s.language),
            outcomes=[str(o) for o in s.outcomes],
        )


class TurnsAppendedOut(BaseModel):
    """A memory id per non-empty turn, and the record written if the session gathered enough."""

    memory_ids: list[uuid.UUID]
    record: SessionOut | None

    @classmethod
    def of(cls, appended: TurnsAppended) -> TurnsAppendedOut:
        """From the SDK's result."""
        record = None if appended.record is None else SessionOut.of(appended.record)
        return cls(memory_ids=appended.memory_ids, record=record)


class SandboxOut(BaseModel):
    """A session's sandbox (``status`` ``active``, ``archived`` or ``discarded``)."""

    id: uuid.UUID
    session_id: str
    status: str
    parent_id: uuid.UUID | None
    created_at: datetime
    expires_at: datetime

    @classmethod
    def of(cls, box: Sandbox) -> SandboxOut:
        """From the SDK's sandbox."""
        return cls.model_validate(box, from_attributes=True)


class MergeBody(Body):
    """``POST /v1/sessions/{session_id}/sandbox/merge``: the memories to promote."""

    model_config = ConfigDict(extra="forbid")

    memory_ids: list[uuid.UUID] = Field(max_length=1000)


class MergeOut(BaseModel):
    """The memories promoted into long-term memory."""

    merged: list[uuid.UUID]


class DiscardOut(BaseModel):
    """How many unmerged memories the discard deleted."""

    discarded: int


class FeedbackBody(Body):
    """``POST /v1/feedback``: a behaviour event on a memory (fragment or fact) by id."""

    model_config = ConfigDict(extra="forbid")

    memory_id: uuid.UUID
    action: FeedbackAction


class FeedbackOut(BaseModel):
    """Where the feedback left the memory (see :class:`FeedbackResult`)."""

    memory_id: uuid.UUID
    kind: str
    action: str
    confidence: float
    status: str
    previous_confidence: float
    previous_status: str

    @classmethod
    def of(cls, result: FeedbackResult) -> FeedbackOut:
        """From the SDK's result."""
        return cls.model_validate(result, from_attributes=True)


class ExportedPii(BaseModel):
    """A vault entry of the export, decrypted for the user it belongs to."""

    id: uuid.UUID
    kind: str
    value: str


class ExportOut(BaseModel):
    """``GET /v1/export``: everything stored about the token's user.

    Sections the SDK adds later pass through (``extra="allow"``): an export
    never drops data.
    """

    model_config = ConfigDict(extra="allow")

    user_id: str
    exported_at: datetime
    profile: dict[str, Any]
    devices: list[dict[str, Any]]
    links: list[dict[str, Any]]
    facts: list[dict[str, Any]]
    pii: list[ExportedPii]
    memories: list[dict[str, Any]]


class RevocationBody(BaseModel):
    """``POST /v1/ops/revocations``: refuse the token ``jti`` until ``expires_at``."""

    model_config = ConfigDict(extra="forbid")

    jti: str = Field(min_length=1, max_length=128)
    expires_at: datetime
