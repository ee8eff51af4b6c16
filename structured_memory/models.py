"""Tables of the structured track (SQLAlchemy 2 declarative models).

The schema itself is created by Alembic migrations; these models are the
source those migrations are checked against (``tests/test_migrations.py``).
Every user-owned table references ``user_profile`` with ``ON DELETE CASCADE``
so that erasing a user is one statement in one transaction.

``BusinessEntityType`` and ``LinkRole`` are ``policies.business``'s, re-exported
here for one release.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Computed,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from policies.audit import AuditAction
from policies.business import BusinessEntityType, LinkRole
from policies.confidence import MemoryStatus
from policies.lifecycle import LifecyclePolicy
from policies.outbox import OutboxOp
from policies.pii import PiiKind
from policies.ttl import MemoryKind

__all__ = [
    "AuditKey",
    "AuditLog",
    "Base",
    "BusinessEntityType",
    "EmbeddingSpace",
    "FactStatus",
    "FragmentOutbox",
    "LinkRole",
    "MemoryFact",
    "MemoryFragment",
    "PiiDataKey",
    "PiiVaultEntry",
    "ProfileCandidate",
    "RateLimitBucket",
    "RateLimitPeer",
    "RateLimitProcess",
    "RevokedToken",
    "SandboxStatus",
    "SchemaCompat",
    "SessionSandbox",
    "SessionWatermark",
    "UserBusinessLink",
    "UserDevice",
    "UserProfile",
    "table_of",
]


FactStatus = MemoryStatus
"""Lifecycle status of a fact or fragment (``policies.confidence.MemoryStatus``)."""


def _in(column: str, values: type[StrEnum]) -> str:
    return f"{column} IN ({', '.join(repr(v.value) for v in values)})"


NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

DEFAULT_NOTIFICATION_PREFERENCE = '{"email": true, "wechat": false, "sms": false}'

_NOW = sql_text("now()")


class Base(DeclarativeBase):
    """Declarative base with a stable constraint naming convention."""

    metadata = MetaData(naming_convention=NAMING)


def table_of(model: type[Base]) -> Table:
    """The Core ``Table`` of a model, typed as such for statement builders."""
    table = model.__table__
    assert isinstance(table, Table)
    return table


def _user_fk() -> Mapped[str]:
    return mapped_column(
        String(128), ForeignKey("user_profile.user_id", ondelete="CASCADE"), nullable=False
    )


class UserProfile(Base):
    """One row per user: preferences, free-form attributes, optimistic-lock version."""

    __tablename__ = "user_profile"

    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    timezone: Mapped[str] = mapped_column(String(64), server_default="Asia/Shanghai")
    language: Mapped[str] = mapped_column(String(16), server_default="zh-CN")
    notification_preference: Mapped[dict[str, Any]] = mapped_column(
        JSONB, server_default=sql_text(f"'{DEFAULT_NOTIFICATION_PREFERENCE}'::jsonb")
    )
    attributes: Mapped[dict[str, Any]] = mapped_column(
        JSONB, server_default=sql_text("'{}'::jsonb")
    )
    profile_summary: Mapped[str] = mapped_column(Text, server_default="")
    version: Mapped[int] = mapped_column(Integer, server_default="1")

    __table_args__ = (
        CheckConstraint("version >= 1", name="version_positive"),
        CheckConstraint("jsonb_typeof(attributes) = 'object'", name="attributes_object"),
        CheckConstraint(
            "jsonb_typeof(notification_preference) = 'object'", name="notification_object"
        ),
    )


class UserDevice(Base):
    """A device seen for a user, identified by a fingerprint: an HMAC keyed for the user
    (``fingerprint_keyed``), or the plain SHA-256 of a row written before revision 0013
    and not yet re-keyed (``structured_memory.repositories.device``)."""

    __tablename__ = "user_device"

    id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=sql_text("gen_random_uuid()")
    )
    user_id: Mapped[str] = _user_fk()
    fingerprint: Mapped[str] = mapped_column(String(64))
    os: Mapped[str] = mapped_column(String(64))
    browser: Mapped[str] = mapped_column(String(64))
    first_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    last_active: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    verified_count: Mapped[int] = mapped_column(Integer, server_default="0")
    is_trusted: Mapped[bool] = mapped_column(Boolean, server_default=sql_text("false"))
    fingerprint_keyed: Mapped[bool] = mapped_column(Boolean, server_default=sql_text("false"))

    __table_args__ = (
        UniqueConstraint("user_id", "fingerprint"),
        CheckConstraint("fingerprint ~ '^[0-9a-f]{64}$'", name="fingerprint_sha256"),
        CheckConstraint("verified_count >= 0", name="verified_count_nonnegative"),
    )


class UserBusinessLink(Base):
    """A user's role on a business entity, valid in ``[effective_from, effective_to)``.

    ``verified_state`` is the state its system of record last reported (PII
    masked), ``verified_at`` when; ``verification_ok`` whether the latest
    verification succeeded (NULL: never verified).
    """

    __tablename__ = "user_business_link"

    id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=sql_text("gen_random_uuid()")
    )
    user_id: Mapped[str] = _user_fk()
    entity_type: Mapped[str] = mapped_column(String(16))
    entity_id: Mapped[str] = mapped_column(String(128))
    role: Mapped[str] = mapped_column(String(16))
    effective_from: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    effective_to: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), server_default=sql_text("'infinity'")
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    verified_state: Mapped[str | None] = mapped_column(String(128), nullable=True)
    verified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    verification_ok: Mapped[bool | None] = mapped_column(Boolean, nullable=True)

    __table_args__ = (
        CheckConstraint(_in("entity_type", BusinessEntityType), name="entity_type_known"),
        CheckConstraint(_in("role", LinkRole), name="role_known"),
        CheckConstraint("effective_to > effective_from", name="range_nonempty"),
        Index(None, "user_id", "entity_type", "entity_id"),
    )


class MemoryFact(Base):
    """An explicit or implicit structured memory: one key, one JSON value."""

    __tablename__ = "memory_fact"

    id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=sql_text("gen_random_uuid()")
    )
    user_id: Mapped[str] = _user_fk()
    key: Mapped[str] = mapped_column(String(128))
    value: Mapped[Any] = mapped_column(JSONB)
    policy: Mapped[str] = mapped_column(String(16))
    confidence: Mapped[float] = mapped_column(Float, server_default="1.0")
    status: Mapped[str] = mapped_column(String(24), server_default=FactStatus.ACTIVE.value)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    renew_days: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_used_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    last_decayed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    source: Mapped[str] = mapped_column(String(64), server_default="")
    agent_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    version: Mapped[int] = mapped_column(Integer, server_default="1")

    __table_args__ = (
        UniqueConstraint("user_id", "key"),
        CheckConstraint(_in("policy", LifecyclePolicy), name="policy_known"),
        CheckConstraint(_in("status", FactStatus), name="status_known"),
        CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence_unit"),
        Index(None, "expires_at", postgresql_where=sql_text("expires_at IS NOT NULL")),
    )


class PiiVaultEntry(Base):
    """One encrypted PII value (formats in ``structured_memory.pii.cipher``).

    ``dek`` true: sealed with the user's data key (``key_id`` NULL); false: the
    format before revision 0004, sealed with ring key ``key_id``. ``blind_mac``
    is the blind index of the exact value under the ring's blind key, unique per
    user and kind, and ``match_mac`` that of the normalised value, by which any
    spelling finds the entry. Rows written before 0014 (``match_mac`` NULL) hold
    the normalised index in ``blind_mac``, and rows written before 0004 and not
    yet repaired or rotated NULL there, found by ``blind_index`` (under the ring
    key of their time). ``unreadable_since`` is set by rotation or repair when
    the row failed to decrypt.
    """

    __tablename__ = "pii_vault"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    user_id: Mapped[str] = _user_fk()
    kind: Mapped[str] = mapped_column(String(16))
    key_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    nonce: Mapped[bytes] = mapped_column(LargeBinary)
    ciphertext: Mapped[bytes] = mapped_column(LargeBinary)
    blind_index: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    dek: Mapped[bool] = mapped_column(Boolean, server_default=sql_text("false"))
    blind_mac: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    match_mac: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    unreadable_since: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), nullable=True
    )

    __table_args__ = (
        CheckConstraint(_in("kind", PiiKind), name="kind_known"),
        CheckConstraint("octet_length(nonce) = 12", name="nonce_96bit"),
        CheckConstraint("dek = (key_id IS NULL)", name="format_marked"),
        Index(None, "kind", "blind_index"),
        Index(None, "key_id"),
        Index(None, "user_id"),
        Index(
            "uq_pii_vault_kind_blind_mac_user_id",
            "kind",
            "blind_mac",
            "user_id",
            unique=True,
            postgresql_where=sql_text("blind_mac IS NOT NULL"),
        ),
        Index(
            "ix_pii_vault_kind_match_mac_user_id",
            "kind",
            "match_mac",
            "user_id",
            postgresql_where=sql_text("match_mac IS NOT NULL"),
        ),
    )


class PiiDataKey(Base):
    """A user's PII data key, wrapped (AES-256-GCM) by the ring key ``key_id``.

    Deleted with the user: erasure destroys the key, and with it every copy of
    the user's PII ciphertexts.
    """

    __tablename__ = "pii_data_key"

    user_id: Mapped[str] = mapped_column(
        String(128), ForeignKey("user_profile.user_id", ondelete="CASCADE"), primary_key=True
    )
    key_id: Mapped[str] = mapped_column(String(64))
    nonce: Mapped[bytes] = mapped_column(LargeBinary)
    wrapped: Mapped[bytes] = mapped_column(LargeBinary)
    unreadable_since: Mapped[datetime | None] = mapped_column(
        DateTime(timezone=True), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)

    __table_args__ = (
        CheckConstraint("octet_length(nonce) = 12", name="nonce_96bit"),
        CheckConstraint("octet_length(wrapped) = 48", name="wrapped_256bit"),
        Index(None, "key_id"),
    )


class MemoryFragment(Base):
    """The ledger of the unstructured track: one row per fragment, the system of record.

    ``text`` is PII-masked; ``index_text`` holds its space-joined tokens and
    ``tsv`` their lexemes (exactly, no parser in between). The embedding is
    kept here too, so any search index can be rebuilt without re-embedding.
    """

    __tablename__ = "memory_fragment"

    id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=sql_text("gen_random_uuid()")
    )
    user_id: Mapped[str] = _user_fk()
    agent_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    private: Mapped[bool] = mapped_column(Boolean, server_default=sql_text("false"))
    session_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    sandbox_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), nullable=True)
    kind: Mapped[str] = mapped_column(String(24))
    policy: Mapped[str] = mapped_column(String(16))
    text: Mapped[str] = mapped_column(Text)
    index_text: Mapped[str] = mapped_column(Text)
    tsv: Mapped[Any] = mapped_column(
        TSVECTOR, Computed("array_to_tsvector(string_to_array(index_text, ' '))", persisted=True)
    )
    token_count: Mapped[int] = mapped_column(Integer)
    entities: Mapped[list[Any]] = mapped_column(JSONB, server_default=sql_text("'[]'::jsonb"))
    intent: Mapped[str] = mapped_column(String(32), server_default="other")
    confidence: Mapped[float] = mapped_column(Float, server_default="1.0")
    status: Mapped[str] = mapped_column(String(24), server_default=FactStatus.ACTIVE.value)
    occurred_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    last_used_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    last_decayed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    renew_days: Mapped[int | None] = mapped_column(Integer, nullable=True)
    context_ids: Mapped[list[uuid.UUID]] = mapped_column(
        ARRAY(UUID(as_uuid=True)), server_default=sql_text("'{}'::uuid[]")
    )
    metadata_: Mapped[dict[str, Any]] = mapped_column(
        "metadata", JSONB, server_default=sql_text("'{}'::jsonb")
    )
    embedding: Mapped[Any] = mapped_column(Vector(), nullable=True)
    embedding_model: Mapped[str | None] = mapped_column(String(128), nullable=True)
    ann: Mapped[bool] = mapped_column(Boolean, server_default=sql_text("false"))
    """In the approximate (HNSW) index: set by the sweep on the rows of large users,
    never by a write (``cross_user.flag_large_scopes``)."""

    __table_args__ = (
        CheckConstraint(_in("kind", MemoryKind), name="kind_known"),
        CheckConstraint(_in("policy", LifecyclePolicy), name="policy_known"),
        CheckConstraint(_in("status", FactStatus), name="status_known"),
        CheckConstraint("confidence >= 0 AND confidence <= 1", name="confidence_unit"),
        CheckConstraint("jsonb_typeof(metadata) = 'object'", name="metadata_object"),
        Index(None, "user_id", "occurred_at"),
        Index(None, "user_id", "session_id"),
        Index(None, "user_id", postgresql_where=sql_text("NOT ann")),
        Index(None, "tsv", postgresql_using="gin"),
        Index(None, "context_ids", postgresql_using="gin"),
        Index(None, "expires_at", postgresql_where=sql_text("expires_at IS NOT NULL")),
    )


class SandboxStatus(StrEnum):
    """Where a session sandbox stands: one ``active`` per user and session."""

    ACTIVE = "active"
    ARCHIVED = "archived"
    DISCARDED = "discarded"


class SessionSandbox(Base):
    """An agent's working memory in a session: its writes are visible only inside it until
    merged; one active sandbox per user, agent and session."""

    __tablename__ = "session_sandbox"

    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    user_id: Mapped[str] = _user_fk()
    session_id: Mapped[str] = mapped_column(String(128))
    agent_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    status: Mapped[str] = mapped_column(String(16), server_default=SandboxStatus.ACTIVE.value)
    parent_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    closed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    __table_args__ = (
        CheckConstraint(_in("status", SandboxStatus), name="status_known"),
        CheckConstraint("(status = 'active') = (closed_at IS NULL)", name="closed"),
        Index(
            "ix_session_sandbox_user_id_agent_session",
            "user_id",
            sql_text("coalesce(agent_id, '')"),
            "session_id",
            unique=True,
            postgresql_where=sql_text("status = 'active'"),
        ),
        Index(None, "user_id", "session_id", "created_at"),
    )


class RevokedToken(Base):
    """A service token refused before it expires (by its ``jti``); swept after expiry."""

    __tablename__ = "revoked_token"

    jti: Mapped[str] = mapped_column(String(128), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)

    __table_args__ = (Index(None, "expires_at"),)


class RateLimitBucket(Base):
    """A token bucket the service's processes share, keyed by an HMAC of its name."""

    __tablename__ = "rate_limit_bucket"

    key: Mapped[bytes] = mapped_column(LargeBinary, primary_key=True)
    rate: Mapped[float] = mapped_column(Float)
    burst: Mapped[float] = mapped_column(Float)
    tokens: Mapped[float] = mapped_column(Float)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RateLimitProcess(Base):
    """A service process that reconciles its rate limits, and when it last did."""

    __tablename__ = "rate_limit_process"

    process_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class RateLimitPeer(Base):
    """A process that used a bucket lately (the bucket is shared among these)."""

    __tablename__ = "rate_limit_peer"

    key: Mapped[bytes] = mapped_column(LargeBinary, primary_key=True)
    process_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True)
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class EmbeddingSpace(Base):
    """The one embedding model (and its dimension) the stored vectors belong to."""

    __tablename__ = "embedding_space"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, server_default="1")
    model: Mapped[str] = mapped_column(String(128))
    dimensions: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)

    __table_args__ = (
        CheckConstraint("id = 1", name="single_row"),
        CheckConstraint("dimensions > 0", name="dimensions_positive"),
    )


class SchemaCompat(Base):
    """The schema's revision and the oldest code revision that still runs on it
    (written by ``structured_memory.migrate``, read by clients of earlier releases)."""

    __tablename__ = "schema_compat"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, server_default="1")
    revision: Mapped[str] = mapped_column(String(32))
    min_client_revision: Mapped[str] = mapped_column(String(32))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)

    __table_args__ = (CheckConstraint("id = 1", name="single_row"),)


class FragmentOutbox(Base):
    """Index operations waiting to be applied to a derived search index.

    Written in the same transaction as the ledger change it mirrors; no
    foreign keys, so a delete outlives the fragment and a user drop the user.
    """

    __tablename__ = "fragment_outbox"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    op: Mapped[str] = mapped_column(String(16))
    user_id: Mapped[str] = mapped_column(String(128))
    fragment_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    attempts: Mapped[int] = mapped_column(Integer, server_default="0")
    next_attempt_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)

    __table_args__ = (
        CheckConstraint(_in("op", OutboxOp), name="op_known"),
        CheckConstraint(
            f"(op = '{OutboxOp.DROP_USER.value}') = (fragment_id IS NULL)",
            name="fragment_for_fragment_ops",
        ),
        Index(None, "next_attempt_at", "id"),
    )


class AuditKey(Base):
    """A user's random key for the audit pseudonym (``policies.audit.pseudonym``).

    Deleted with the user: erasure destroys it, and the audit entries naming the
    user by that pseudonym no longer identify anyone.
    """

    __tablename__ = "audit_key"

    user_id: Mapped[str] = mapped_column(
        String(128), ForeignKey("user_profile.user_id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)

    __table_args__ = (CheckConstraint("octet_length(key) = 32", name="key_256bit"),)


class AuditLog(Base):
    """The append-only audit log (triggers refuse UPDATE, DELETE and TRUNCATE).

    No ``user_id`` and no foreign key to ``user_profile``: entries outlive an
    erasure. ``subject`` is the user's pseudonym, ``details`` ids, codes and
    numbers only (``policies.audit.check_details``).
    """

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    action: Mapped[str] = mapped_column(String(32))
    agent_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    subject: Mapped[str | None] = mapped_column(String(64), nullable=True)
    memory_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), nullable=True)
    details: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=sql_text("'{}'::jsonb"))

    __table_args__ = (
        CheckConstraint(_in("action", AuditAction), name="action_known"),
        CheckConstraint("subject ~ '^[0-9a-f]{64}$'", name="subject_hmac"),
        CheckConstraint("jsonb_typeof(details) = 'object'", name="details_object"),
        Index(None, "at"),
        Index(None, "action", "at"),
        Index(None, "subject", "at"),
        Index(None, "memory_id"),
    )


class SessionWatermark(Base):
    """How far a session's turns were summarised and merged into the profile (revision 0010).

    ``turns`` counts the session's non-empty turns known so far (appended with
    ``append_turns`` or given to ``end_session``) and ``digest`` chains their
    masked text (SHA-256), so a transcript given again is recognised;
    ``processed`` is the watermark: turns before it were turned into a record
    (``last_record_id`` the latest) and never are again. ``ended_at`` is set by
    an explicit end or the idle sweep (``ended_by``) and cleared by new turns.
    """

    __tablename__ = "session_watermark"

    user_id: Mapped[str] = mapped_column(
        String(128), ForeignKey("user_profile.user_id", ondelete="CASCADE"), primary_key=True
    )
    session_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    agent_id: Mapped[str | None] = mapped_column(String(128), nullable=True)
    turns: Mapped[int] = mapped_column(Integer, server_default="0")
    digest: Mapped[str] = mapped_column(String(64), server_default="")
    processed: Mapped[int] = mapped_column(Integer, server_default="0")
    last_record_id: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True), nullable=True)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    ended_by: Mapped[str | None] = mapped_column(String(16), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)

    __table_args__ = (
        CheckConstraint("processed >= 0 AND processed <= turns", name="watermark_within"),
        CheckConstraint(
            "(ended_at IS NULL AND ended_by IS NULL) OR "
            "(ended_at IS NOT NULL AND ended_by IN ('explicit', 'idle'))",
            name="ended_known",
        ),
        Index(None, "updated_at", postgresql_where=sql_text("ended_at IS NULL")),
    )


class ProfileCandidate(Base):
    """A preference value said in some sessions but not yet stable (revision 0010).

    ``sessions`` lists the distinct sessions that said it; at ``1 +
    confirmations`` it becomes the stable value in ``user_profile.attributes``
    and its rows for the slot are deleted (``policies.profile_merge``).
    ``value`` holds no clear PII.
    """

    __tablename__ = "profile_candidate"

    id: Mapped[uuid.UUID] = mapped_column(
        UUID(as_uuid=True), primary_key=True, server_default=sql_text("gen_random_uuid()")
    )
    user_id: Mapped[str] = _user_fk()
    slot: Mapped[str] = mapped_column(String(96))
    value: Mapped[str] = mapped_column(String(256))
    sessions: Mapped[list[str]] = mapped_column(
        ARRAY(String(128)), server_default=sql_text("'{}'::varchar[]")
    )
    first_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)
    last_seen: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=_NOW)

    __table_args__ = (
        UniqueConstraint("user_id", "slot", "value"),
        CheckConstraint("cardinality(sessions) >= 1", name="sessions_nonempty"),
    )
