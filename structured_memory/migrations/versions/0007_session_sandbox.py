"""Per-session sandboxes: one active sandbox per user and session.

Expand only: a new table; fragments already carry ``sandbox_id``. Pods of the
previous release never write a sandbox id, so they are unaffected.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None
min_client_revision = "0003"  # expand-only: clients of 0003 on keep working

_TS = sa.DateTime(timezone=True)
_NOW = sa.text("now()")


def upgrade() -> None:
    op.create_table(
        "session_sandbox",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("agent_id", sa.String(128), nullable=True),
        sa.Column("status", sa.String(16), server_default="active", nullable=False),
        sa.Column("parent_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("closed_at", _TS, nullable=True),
        sa.Column("expires_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_session_sandbox"),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user_profile.user_id"],
            name="fk_session_sandbox_user_id_user_profile",
            ondelete="CASCADE",
        ),
        sa.CheckConstraint(
            "status IN ('active', 'archived', 'discarded')",
            name=op.f("ck_session_sandbox_status_known"),
        ),
        sa.CheckConstraint(
            "(status = 'active') = (closed_at IS NULL)", name=op.f("ck_session_sandbox_closed")
        ),
    )
    op.create_index(
        "ix_session_sandbox_user_id_session_id",
        "session_sandbox",
        ["user_id", "session_id"],
        unique=True,
        postgresql_where=sa.text("status = 'active'"),
    )
    op.create_index(
        "ix_session_sandbox_user_id_session_id_created_at",
        "session_sandbox",
        ["user_id", "session_id", "created_at"],
    )


def downgrade() -> None:
    op.drop_table("session_sandbox")
