"""Device fingerprints keyed per user: ``user_device.fingerprint_keyed``.

A keyed fingerprint is an HMAC, under a key derived from the ring's blind key
with the user id, of the SHA-256 the row held before
(``structured_memory.repositories.device``). Migrations have no key ring, so
existing rows keep their plain SHA-256, marked false here, and
``dualtrack rekey-devices`` converts them (as ``rotate-keys`` rotates).

Expand only: a column with a constant default. Clients of earlier releases
never set it, so the rows they write are marked as the plain SHA-256 they hold.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None
min_client_revision = "0003"


def upgrade() -> None:
    op.add_column(
        "user_device",
        sa.Column(
            "fingerprint_keyed", sa.Boolean(), server_default=sa.text("false"), nullable=False
        ),
    )


def downgrade() -> None:
    op.drop_column("user_device", "fingerprint_keyed")
