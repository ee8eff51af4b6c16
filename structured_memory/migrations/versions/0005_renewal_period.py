"""Each memory stores its renewal period; only IMPLICIT memories expire; each
fragment names the fragments whose words its index context borrowed.

``renew_days`` is the TTL decision of ``policies.ttl`` kept beside the row, so
a read renews a memory by its own period (30 days for a frequent user's, none
for an interaction record) instead of a global one. Expand-only: clients of
the previous release ignore the column.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_TABLES = ("memory_fact", "memory_fragment")


def upgrade() -> None:
    for table in _TABLES:
        op.add_column(table, sa.Column("renew_days", sa.Integer(), nullable=True))
    # ``context_ids``: deleting or expiring a fragment re-indexes the ones that borrowed
    # its words. Rows written before have none recorded (their context stays as it is).
    op.add_column(
        "memory_fragment",
        sa.Column(
            "context_ids",
            postgresql.ARRAY(sa.Uuid()),
            server_default=sa.text("'{}'::uuid[]"),
            nullable=False,
        ),
    )
    op.create_index(
        "ix_memory_fragment_context_ids",
        "memory_fragment",
        ["context_ids"],
        postgresql_using="gin",
    )
    # Rows written before: renewable IMPLICIT memories get the default 7 days; other
    # policies never expire (EXPLICIT means "until changed or deleted").
    op.execute(
        "UPDATE memory_fragment SET renew_days = 7 "
        "WHERE policy = 'implicit' AND kind <> 'interaction_record' AND expires_at IS NOT NULL"
    )
    op.execute(
        "UPDATE memory_fact SET renew_days = 7 WHERE policy = 'implicit' AND expires_at IS NOT NULL"
    )
    for table in _TABLES:
        op.execute(f"UPDATE {table} SET expires_at = NULL WHERE policy <> 'implicit'")


def downgrade() -> None:
    op.drop_index("ix_memory_fragment_context_ids", table_name="memory_fragment")
    op.drop_column("memory_fragment", "context_ids")
    for table in _TABLES:
        op.drop_column(table, "renew_days")
