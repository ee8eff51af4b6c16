"""Structured track: profile, devices, business links, facts, PII vault.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)
_NOW = sa.text("now()")


def _user_fk(table: str) -> sa.Column[str]:
    return sa.Column(
        "user_id",
        sa.String(128),
        sa.ForeignKey(
            "user_profile.user_id",
            ondelete="CASCADE",
            name=f"fk_{table}_user_id_user_profile",
        ),
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "user_profile",
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("created_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("updated_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("timezone", sa.String(64), server_default="Asia/Shanghai", nullable=False),
        sa.Column("language", sa.String(16), server_default="zh-CN", nullable=False),
        sa.Column(
            "notification_preference",
            postgresql.JSONB(),
            server_default=sa.text('\'{"email": true, "wechat": false, "sms": false}\'::jsonb'),
            nullable=False,
        ),
        sa.Column(
            "attributes", postgresql.JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("profile_summary", sa.Text(), server_default="", nullable=False),
        sa.Column("version", sa.Integer(), server_default="1", nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_user_profile"),
        sa.CheckConstraint("version >= 1", name="ck_user_profile_version_positive"),
        sa.CheckConstraint(
            "jsonb_typeof(attributes) = 'object'", name="ck_user_profile_attributes_object"
        ),
        sa.CheckConstraint(
            "jsonb_typeof(notification_preference) = 'object'",
            name="ck_user_profile_notification_object",
        ),
    )
    op.create_table(
        "user_device",
        sa.Column("id", sa.Uuid(), server_default=sa.text("gen_random_uuid()"), nullable=False),
        _user_fk("user_device"),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("os", sa.String(64), nullable=False),
        sa.Column("browser", sa.String(64), nullable=False),
        sa.Column("first_seen", _TS, server_default=_NOW, nullable=False),
        sa.Column("last_active", _TS, server_default=_NOW, nullable=False),
        sa.Column("verified_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("is_trusted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_user_device"),
        sa.UniqueConstraint("user_id", "fingerprint", name="uq_user_device_user_id_fingerprint"),
        sa.CheckConstraint(
            "fingerprint ~ '^[0-9a-f]{64}$'", name="ck_user_device_fingerprint_sha256"
        ),
        sa.CheckConstraint("verified_count >= 0", name="ck_user_device_verified_count_nonnegative"),
    )
    op.create_table(
        "user_business_link",
        sa.Column("id", sa.Uuid(), server_default=sa.text("gen_random_uuid()"), nullable=False),
        _user_fk("user_business_link"),
        sa.Column("entity_type", sa.String(16), nullable=False),
        sa.Column("entity_id", sa.String(128), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("effective_from", _TS, server_default=_NOW, nullable=False),
        sa.Column("effective_to", _TS, server_default=sa.text("'infinity'"), nullable=False),
        sa.Column("created_at", _TS, server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_user_business_link"),
        sa.CheckConstraint(
            "entity_type IN ('supplier', 'warehouse', 'contract', 'order', 'refund', 'ticket')",
            name="ck_user_business_link_entity_type_known",
        ),
        sa.CheckConstraint(
            "role IN ('admin', 'viewer', 'approver', 'owner')",
            name="ck_user_business_link_role_known",
        ),
        sa.CheckConstraint(
            "effective_to > effective_from", name="ck_user_business_link_range_nonempty"
        ),
    )
    op.create_index(
        "ix_user_business_link_user_id_entity_type_entity_id",
        "user_business_link",
        ["user_id", "entity_type", "entity_id"],
    )
    op.create_table(
        "memory_fact",
        sa.Column("id", sa.Uuid(), server_default=sa.text("gen_random_uuid()"), nullable=False),
        _user_fk("memory_fact"),
        sa.Column("key", sa.String(128), nullable=False),
        sa.Column("value", postgresql.JSONB(), nullable=False),
        sa.Column("policy", sa.String(16), nullable=False),
        sa.Column("confidence", sa.Float(), server_default="1.0", nullable=False),
        sa.Column("status", sa.String(24), server_default="active", nullable=False),
        sa.Column("expires_at", _TS, nullable=True),
        sa.Column("last_used_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("source", sa.String(64), server_default="", nullable=False),
        sa.Column("agent_id", sa.String(128), nullable=True),
        sa.Column("created_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("updated_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("version", sa.Integer(), server_default="1", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_memory_fact"),
        sa.UniqueConstraint("user_id", "key", name="uq_memory_fact_user_id_key"),
        sa.CheckConstraint(
            "policy IN ('explicit', 'implicit', 'sensitive', 'business')",
            name="ck_memory_fact_policy_known",
        ),
        sa.CheckConstraint(
            "status IN ('active', 'pending_confirmation', 'needs_review')",
            name="ck_memory_fact_status_known",
        ),
        sa.CheckConstraint(
            "confidence >= 0 AND confidence <= 1", name="ck_memory_fact_confidence_unit"
        ),
    )
    op.create_index(
        "ix_memory_fact_expires_at",
        "memory_fact",
        ["expires_at"],
        postgresql_where=sa.text("expires_at IS NOT NULL"),
    )
    op.create_table(
        "pii_vault",
        sa.Column("id", sa.Uuid(), nullable=False),
        _user_fk("pii_vault"),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("key_id", sa.String(64), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("blind_index", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("updated_at", _TS, server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_pii_vault"),
        sa.CheckConstraint(
            "kind IN ('phone', 'email', 'id_card', 'bank_card', 'address')",
            name="ck_pii_vault_kind_known",
        ),
        sa.CheckConstraint("octet_length(nonce) = 12", name="ck_pii_vault_nonce_96bit"),
    )
    op.create_index("ix_pii_vault_kind_blind_index", "pii_vault", ["kind", "blind_index"])
    op.create_index("ix_pii_vault_key_id", "pii_vault", ["key_id"])
    op.create_index("ix_pii_vault_user_id", "pii_vault", ["user_id"])


def downgrade() -> None:
    op.drop_table("pii_vault")
    op.drop_table("memory_fact")
    op.drop_table("user_business_link")
    op.drop_table("user_device")
    op.drop_table("user_profile")
