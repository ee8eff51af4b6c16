"""Fragments of large scopes are flagged for approximate (HNSW) search.

``memory_fragment.ann``: the row is in the HNSW index (which
``PgVectorIndex.setup`` now creates partial on ``ann``), set by the sweep on
the rows of users holding more than the index's exact-scan limit; writes leave
it false, so maintaining HNSW is off the write path. The partial index on
``user_id`` over the rows not flagged serves the exact KNN that a large scope's
search runs over them beside the HNSW leg.

Expand only: a column with a constant default and a new index. Clients of
earlier releases never set ``ann`` and their searches ignore it (correct, an
old large-scope search just finds no full HNSW index once a new client has
replaced it and scans instead).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None
min_client_revision = "0003"


def upgrade() -> None:
    op.add_column(
        "memory_fragment",
        sa.Column("ann", sa.Boolean(), server_default=sa.text("false"), nullable=False),
    )
    op.create_index(
        "ix_memory_fragment_user_id",
        "memory_fragment",
        ["user_id"],
        postgresql_where=sa.text("NOT ann"),
    )


def downgrade() -> None:
    op.drop_index("ix_memory_fragment_user_id", table_name="memory_fragment")
    op.drop_column("memory_fragment", "ann")
