"""Unstructured track: the fragment ledger with keyword lexemes and embeddings.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from pgvector.sqlalchemy import Vector
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)
_NOW = sa.text("now()")


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.create_table(
        "memory_fragment",
        sa.Column("id", sa.Uuid(), server_default=sa.text("gen_random_uuid()"), nullable=False),
        sa.Column(
            "user_id",
            sa.String(128),
            sa.ForeignKey(
                "user_profile.user_id",
                ondelete="CASCADE",
                name="fk_memory_fragment_user_id_user_profile",
            ),
            nullable=False,
        ),
        sa.Column("agent_id", sa.String(128), nullable=True),
        sa.Column("private", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=True),
        sa.Column("sandbox_id", sa.Uuid(), nullable=True),
        sa.Column("kind", sa.String(24), nullable=False),
        sa.Column("policy", sa.String(16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("index_text", sa.Text(), nullable=False),
        sa.Column(
            "tsv",
            postgresql.TSVECTOR(),
            sa.Computed("array_to_tsvector(string_to_array(index_text, ' '))", persisted=True),
            nullable=False,
        ),
        sa.Column("token_count", sa.Integer(), nullable=False),
        sa.Column(
            "entities", postgresql.JSONB(), server_default=sa.text("'[]'::jsonb"), nullable=False
        ),
        sa.Column("intent", sa.String(32), server_default="other", nullable=False),
        sa.Column("confidence", sa.Float(), server_default="1.0", nullable=False),
        sa.Column("status", sa.String(24), server_default="active", nullable=False),
        sa.Column("occurred_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("created_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("last_used_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("expires_at", _TS, nullable=True),
        sa.Column(
            "metadata", postgresql.JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False
        ),
        sa.Column("embedding", Vector(), nullable=True),
        sa.Column("embedding_model", sa.String(128), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_memory_fragment"),
        sa.CheckConstraint(
            "kind IN ('fact', 'note', 'session_summary', 'interaction_record')",
            name="ck_memory_fragment_kind_known",
        ),
        sa.CheckConstraint(
            "policy IN ('explicit', 'implicit', 'sensitive', 'business')",
            name="ck_memory_fragment_policy_known",
        ),
        sa.CheckConstraint(
            "status IN ('active', 'pending_confirmation', 'needs_review')",
            name="ck_memory_fragment_status_known",
        ),
        sa.CheckConstraint(
            "confidence >= 0 AND confidence <= 1", name="ck_memory_fragment_confidence_unit"
        ),
        sa.CheckConstraint(
            "jsonb_typeof(metadata) = 'object'", name="ck_memory_fragment_metadata_object"
        ),
    )
    op.create_index(
        "ix_memory_fragment_user_id_occurred_at", "memory_fragment", ["user_id", "occurred_at"]
    )
    op.create_index(
        "ix_memory_fragment_user_id_session_id", "memory_fragment", ["user_id", "session_id"]
    )
    op.create_index("ix_memory_fragment_tsv", "memory_fragment", ["tsv"], postgresql_using="gin")
    op.create_index(
        "ix_memory_fragment_expires_at",
        "memory_fragment",
        ["expires_at"],
        postgresql_where=sa.text("expires_at IS NOT NULL"),
    )

    op.create_table(
        "embedding_space",
        sa.Column("id", sa.Integer(), server_default="1", nullable=False),
        sa.Column("model", sa.String(128), nullable=False),
        sa.Column("dimensions", sa.Integer(), nullable=False),
        sa.Column("updated_at", _TS, server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_embedding_space"),
        sa.CheckConstraint("id = 1", name="ck_embedding_space_single_row"),
        sa.CheckConstraint("dimensions > 0", name="ck_embedding_space_dimensions_positive"),
    )


def downgrade() -> None:
    op.drop_table("embedding_space")
    op.drop_table("memory_fragment")
