"""PII vault: one entry per exact value, found by its normalised value (``match_mac``).

Before, the unique blind index (``blind_mac``, the HMAC of the *normalised* value)
kept one entry per normalised value, so ``"13812345678"`` stored after
``"+86 138-1234-5678"`` got the first entry, revealed as the first string. From
here on, an entry's ``blind_mac`` is the HMAC of its exact value (the same key and
formula: for a value already in normal form the two are equal), which the unique
index now keeps once per exact value, and ``match_mac`` holds the HMAC of its
normalised value, by which every spelling is found.

Expand only: a nullable column and an index partial on it. Existing rows keep
``match_mac`` NULL: their ``blind_mac`` is still the normalised HMAC, and a store
meeting one decrypts it and indexes it exactly; ``dualtrack repair-vault`` does so
for all (it needs the key ring, so it is a command). Clients of earlier releases
never set ``match_mac``, so their rows are read as such rows; they find what this
release writes in normal form, by ``blind_mac``.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None
min_client_revision = "0003"


def upgrade() -> None:
    op.add_column("pii_vault", sa.Column("match_mac", sa.LargeBinary(), nullable=True))
    op.create_index(
        "ix_pii_vault_kind_match_mac_user_id",
        "pii_vault",
        ["kind", "match_mac", "user_id"],
        postgresql_where=sa.text("match_mac IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_pii_vault_kind_match_mac_user_id", table_name="pii_vault")
    op.drop_column("pii_vault", "match_mac")
