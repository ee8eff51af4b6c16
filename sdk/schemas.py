"""The values callers hand the SDK and get back from it.

Shared by the in-process client and, later, the REST service and its remote
client, so each shape is written once.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from policies.confidence import FeedbackAction
from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk.verification import Verification
from structured_memory.models import BusinessEntityType, LinkRole
from unstructured_memory.summariser.transcript import Role, Turn

if TYPE_CHECKING:
    from sandbox.repository import Sandbox
    from sdk.context import MemoryContext
    from unstructured_memory.summariser.summary import SessionSummary

__all__ = [
    "ActivityDay",
    "ActivityReport",
    "ConfidenceBucket",
    "ConfidenceReport",
    "ContextBody",
    "ContextItemOut",
    "ContextOut",
    "DecayForecast",
    "DeviceRegister",
    "DeviceVerify",
    "DiscardOut",
    "EntityOut",
    "ExpiryDay",
    "ExpiryReport",
    "ExportOut",
    "ExportedPii",
    "FactPut",
    "FeedbackBody",
    "FeedbackOut",
    "FeedbackResult",
    "ForecastDay",
    "HealthReport",
    "HitOut",
    "KeyAge",
    "KeysReport",
    "LinkCreate",
    "LinkEnd",
    "MemoryHit",
    "MemoryInput",
    "MergeBody",
    "MergeOut",
    "OutboxReport",
    "PendingOut",
    "PolicyTTL",
    "ReadinessReport",
    "RevocationBody",
    "SandboxOut",
    "SearchBody",
    "SearchOut",
    "SearchResults",
    "SessionOut",
    "SessionRecord",
    "TenantsReport",
    "TranscriptBody",
    "TurnIn",
    "TurnsAppended",
    "TurnsAppendedOut",
    "TurnsBody",
    "VerifierDay",
    "VerifiersReport",
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


# --------------------------------------------------------------------------- REST bodies
# Request models forbid unknown fields: a ``user_id`` in a body is 422, never trusted.


class DeviceRegister(BaseModel):
    """``POST /v1/devices``: a sign-in from a device (its fingerprint is derived)."""

    model_config = ConfigDict(extra="forbid")

    device_id: str = Field(min_length=1, max_length=256)
    os: str = Field(max_length=64)
    browser: str = Field(max_length=64)


class DeviceVerify(BaseModel):
    """``POST /v1/devices/{fingerprint}/verify``: the outcome of a verification."""

    model_config = ConfigDict(extra="forbid")

    succeeded: bool


class LinkCreate(BaseModel):
    """``POST /v1/links``: the user's role on a business entity over a validity range."""

    model_config = ConfigDict(extra="forbid")

    entity_type: BusinessEntityType
    entity_id: str = Field(min_length=1, max_length=128)
    role: LinkRole
    effective_from: datetime | None = None
    effective_to: datetime | None = None


class LinkEnd(BaseModel):
    """``POST /v1/links/{link_id}/end``: close the link at ``at`` (default now)."""

    model_config = ConfigDict(extra="forbid")

    at: datetime | None = None


class FactPut(BaseModel):
    """``PUT /v1/facts/{key}``: a JSON value under a required lifecycle policy."""

    model_config = ConfigDict(extra="forbid")

    value: Any
    lifecycle_policy: LifecyclePolicy
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    source: str = Field(default="", max_length=64)


class ContextBody(BaseModel):
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


class TurnsBody(BaseModel):
    """``POST /v1/sessions/{session_id}/turns``: new turns of a long session."""

    model_config = ConfigDict(extra="forbid")

    turns: list[TurnIn] = Field(max_length=1000)


class TranscriptBody(BaseModel):
    """``POST /v1/sessions/{session_id}/end``: the session (or what followed turns given)."""

    model_config = ConfigDict(extra="forbid")

    transcript: list[TurnIn] = Field(max_length=1000)


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


class MergeBody(BaseModel):
    """``POST /v1/sessions/{session_id}/sandbox/merge``: the memories to promote."""

    model_config = ConfigDict(extra="forbid")

    memory_ids: list[uuid.UUID] = Field(max_length=1000)


class MergeOut(BaseModel):
    """The memories promoted into long-term memory."""

    merged: list[uuid.UUID]


class DiscardOut(BaseModel):
    """How many unmerged memories the discard deleted."""

    discarded: int


class FeedbackBody(BaseModel):
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


# -- ops statistics (``MemoryClient.ops``, ``GET /v1/ops/...``): counts only, never texts --


class ExpiryDay(BaseModel):
    """Live memories (every user's) expiring on one UTC day, by policy and by track."""

    day: date
    by_policy: dict[str, int]
    fragments: int
    facts: int
    total: int


class PolicyTTL(BaseModel):
    """How long memories of one policy live (``policies.ttl``), for some kinds and users."""

    policy: str
    kinds: list[str] | None
    """The memory kinds this lifetime applies to; ``None``: every kind."""
    frequent_user: bool | None
    """Only for a frequent user's memories (``true``), only for the others' (``false``),
    or for both (``null``)."""
    days: int | None
    """Days until it expires; ``None``: never."""
    renewed_on_use: bool


class ExpiryReport(BaseModel):
    """``GET /v1/ops/expiry``: memories expiring per day, today to ``horizon_days`` ahead,
    the lifetime of each policy and the live memories that never expire."""

    as_of: datetime
    horizon_days: int
    policies: list[str]
    days: list[ExpiryDay]
    total: int
    ttl: list[PolicyTTL]
    never_expiring: dict[str, int]
    """Memories without an expiry, by policy (every policy listed)."""
    never_expiring_total: int


class ConfidenceBucket(BaseModel):
    """Live memories whose confidence is in ``[lower, upper)`` (the last bucket closed)."""

    lower: float
    upper: float
    by_status: dict[str, int]
    fragments: int
    facts: int
    total: int


class PendingOut(BaseModel):
    """The pending-confirmation queue: counts and the longest wait (no texts)."""

    fragments: int
    facts: int
    total: int
    oldest_since: datetime | None
    oldest_age_s: float | None


class ForecastDay(BaseModel):
    """Memories whose decay is expected to cross the pending threshold on one UTC day."""

    day: date
    fragments: int
    facts: int
    total: int


class DecayForecast(BaseModel):
    """Inferred memories the daily decay is expected to take below ``pending_below`` from
    today to ``horizon_days`` ahead if nobody uses them (a step already due counts today)."""

    horizon_days: int
    days: list[ForecastDay]
    fragments: int
    facts: int
    total: int


class ConfidenceReport(BaseModel):
    """``GET /v1/ops/confidence``: the confidence histogram, the pending queue and the
    decay forecast."""

    as_of: datetime
    pending_below: float
    statuses: list[str]
    buckets: list[ConfidenceBucket]
    total: int
    pending: PendingOut
    forecast: DecayForecast


class ActivityDay(BaseModel):
    """What the lifecycle did on one UTC day: confidence decays, memories swept, renewals
    (memories whose latest use fell on that day)."""

    day: date
    decays: int
    sweeps: int
    renewals: int


class ActivityReport(BaseModel):
    """``GET /v1/ops/activity``: decays, sweeps and renewals per day, oldest first."""

    as_of: datetime
    days: list[ActivityDay]
    decays: int
    sweeps: int
    renewals: int


class OutboxReport(BaseModel):
    """``GET /v1/ops/outbox``: how far a derived index is behind the ledger."""

    index: str
    derived: bool
    pending: int
    oldest_age_s: float
    failing: int


class TenantsReport(BaseModel):
    """``GET /v1/ops/tenants``: an index's tenants hot (active), cold (inactive) and
    offloaded; ``applicable`` is false for an index without tenants."""

    index: str
    applicable: bool
    reachable: bool | None
    hot: int
    cold: int
    offloaded: int
    total: int
    by_status: dict[str, int]
    cold_after_days: int
    note: str | None = None


class KeyAge(BaseModel):
    """One PII ring key and its age."""

    key_id: str
    age_days: int
    active: bool


class KeysReport(BaseModel):
    """``GET /v1/ops/keys``: the active PII key's age against its rotation period."""

    active_key_id: str
    active_key_age_days: int
    rotation_days: int
    days_left: int
    stale: bool
    entries_pending_rotation: int
    entries_unreadable: int
    keys: list[KeyAge]


class VerifierDay(BaseModel):
    """Verification changes recorded on one UTC day, by outcome."""

    day: date
    by_outcome: dict[str, int]
    total: int


class VerifiersReport(BaseModel):
    """``GET /v1/ops/verifiers``: business links by their latest check (``ok``,
    ``failing``, ``unchecked``) and the verification changes audited per day by outcome
    (``verified``, ``unknown``, ``verifier_timeout``, ``verifier_unavailable``)."""

    as_of: datetime
    links: dict[str, int]
    outcomes: dict[str, int]
    days: list[VerifierDay]


class ReadinessReport(BaseModel):
    """``GET /readyz``: PostgreSQL answers and its schema is one this code serves."""

    ready: bool
    database: bool
    schema_revision: str | None
    schema_head: str
    schema_supported: bool


class HealthReport(BaseModel):
    """``GET /healthz``: every dependency, in numbers and booleans only."""

    status: str
    """``ok``, ``degraded`` (the index, the outbox or the key needs attention) or ``down``
    (the database does not answer, or its schema is not served)."""
    database: bool
    schema_supported: bool
    index: str
    index_reachable: bool
    outbox_pending: int
    outbox_oldest_age_s: float
    outbox_failing: int
    key_age_days: int
    key_rotation_days: int
    key_stale: bool
