"""Transactional outbox feeding derived search indexes (Weaviate).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)
_NOW = sa.text("now()")


def upgrade() -> None:
    op.create_table(
        "fragment_outbox",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("op", sa.String(16), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("fragment_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("next_attempt_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_fragment_outbox"),
        sa.CheckConstraint(
            "op IN ('upsert', 'delete', 'drop_user')", name="ck_fragment_outbox_op_known"
        ),
        sa.CheckConstraint(
            "(op = 'drop_user') = (fragment_id IS NULL)",
            name="ck_fragment_outbox_fragment_for_fragment_ops",
        ),
    )
    op.create_index(
        "ix_fragment_outbox_next_attempt_at_id", "fragment_outbox", ["next_attempt_at", "id"]
    )


def downgrade() -> None:
    op.drop_table("fragment_outbox")
