"""Rate limits shared by the service's processes.

``rate_limit_bucket``: one token bucket per limited key (an HMAC of its name,
never the name: a key may hold a user id or an address), the state every
process reconciles its local buckets with once a second.
``rate_limit_process``: the live processes (the cold share of a bucket is the
burst divided among them). ``rate_limit_peer``: which process used which key
lately (a bucket's share is divided among those). Rows idle for a minute are
deleted by the reconciling statement itself.

Expand only: new tables that only this release's service reads and writes.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import UUID

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None
min_client_revision = "0003"


def upgrade() -> None:
    op.create_table(
        "rate_limit_bucket",
        sa.Column("key", sa.LargeBinary(), nullable=False),
        sa.Column("rate", sa.Float(), nullable=False),
        sa.Column("burst", sa.Float(), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name="pk_rate_limit_bucket"),
    )
    op.create_table(
        "rate_limit_process",
        sa.Column("process_id", UUID(as_uuid=True), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("process_id", name="pk_rate_limit_process"),
    )
    op.create_table(
        "rate_limit_peer",
        sa.Column("key", sa.LargeBinary(), nullable=False),
        sa.Column("process_id", UUID(as_uuid=True), nullable=False),
        sa.Column("seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", "process_id", name="pk_rate_limit_peer"),
    )


def downgrade() -> None:
    op.drop_table("rate_limit_peer")
    op.drop_table("rate_limit_process")
    op.drop_table("rate_limit_bucket")
