"""Schema compatibility for rolling upgrades: the one-row table ``schema_compat``.

It holds the schema's revision and ``min_client_revision``, the head revision
of the oldest code that still runs on it (``structured_memory.migrate`` writes
it after every upgrade or downgrade, from the ``min_client_revision`` each
migration script declares). A client of an earlier release that finds a
revision it does not know reads this row to decide whether it may serve.

Expand-only: a new table, which clients of revision 0003 never touch.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None
min_client_revision = "0003"


def upgrade() -> None:
    op.create_table(
        "schema_compat",
        sa.Column("id", sa.Integer(), server_default="1", nullable=False),
        sa.Column("revision", sa.String(32), nullable=False),
        sa.Column("min_client_revision", sa.String(32), nullable=False),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name="pk_schema_compat"),
        sa.CheckConstraint("id = 1", name=op.f("ck_schema_compat_single_row")),
    )


def downgrade() -> None:
    op.drop_table("schema_compat")
