"""Revoked service tokens, by ``jti``, kept until the token would have expired.

Expand only: a new table the service reads; clients of earlier releases never
touch it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None
min_client_revision = "0003"


def upgrade() -> None:
    op.create_table(
        "revoked_token",
        sa.Column("jti", sa.String(128), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "revoked_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("jti", name="pk_revoked_token"),
    )
    op.create_index("ix_revoked_token_expires_at", "revoked_token", ["expires_at"])


def downgrade() -> None:
    op.drop_table("revoked_token")
