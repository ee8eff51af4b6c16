"""PII vault: envelope encryption (a data key per user) and a unique blind index.

Expand only, safe over existing data and beside clients of the previous
release:

- ``pii_data_key``: each user's data key, wrapped by a ring key (its id beside
  it), deleted with the user.
- ``pii_vault.dek`` (false for every existing row: the ring format),
  ``key_id`` nullable (NULL for envelope rows, which older clients then skip
  in rotation), ``blind_mac`` (the blind index under the ring's blind key) and
  ``unreadable_since``: new columns, nullable or with a constant default, so
  no table rewrite.
- A unique index on (kind, blind_mac, user_id) for rows whose ``blind_mac``
  is set. Every existing row has NULL there, so duplicates written before
  (by the find-then-insert race) cannot make the migration fail; new rows are
  upserted against it; ``dualtrack repair-vault`` merges the old duplicates
  and fills their ``blind_mac`` (it needs the key ring, so it is a command).
  The index is built in the migration's transaction over an empty predicate
  set: one scan of ``pii_vault`` under a SHARE lock.

The format check is added NOT VALID and validated afterwards, so validation
does not hold the ACCESS EXCLUSIVE lock. ``blind_index`` stays (older clients
look values up by it); a later contract migration drops it.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from policies.errors import Conflict

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)
_NOW = sa.text("now()")


def upgrade() -> None:
    op.create_table(
        "pii_data_key",
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("key_id", sa.String(64), nullable=False),
        sa.Column("nonce", sa.LargeBinary(), nullable=False),
        sa.Column("wrapped", sa.LargeBinary(), nullable=False),
        sa.Column("unreadable_since", _TS, nullable=True),
        sa.Column("created_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("updated_at", _TS, server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_pii_data_key"),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user_profile.user_id"],
            name="fk_pii_data_key_user_id_user_profile",
            ondelete="CASCADE",
        ),
        sa.CheckConstraint("octet_length(nonce) = 12", name=op.f("ck_pii_data_key_nonce_96bit")),
        sa.CheckConstraint(
            "octet_length(wrapped) = 48", name=op.f("ck_pii_data_key_wrapped_256bit")
        ),
    )
    op.create_index("ix_pii_data_key_key_id", "pii_data_key", ["key_id"])

    op.add_column(
        "pii_vault", sa.Column("dek", sa.Boolean(), server_default=sa.text("false"), nullable=False)
    )
    op.add_column("pii_vault", sa.Column("blind_mac", sa.LargeBinary(), nullable=True))
    op.add_column("pii_vault", sa.Column("unreadable_since", _TS, nullable=True))
    op.alter_column("pii_vault", "key_id", existing_type=sa.String(64), nullable=True)
    op.execute(
        "ALTER TABLE pii_vault ADD CONSTRAINT ck_pii_vault_format_marked "
        "CHECK (dek = (key_id IS NULL)) NOT VALID"
    )
    op.execute("ALTER TABLE pii_vault VALIDATE CONSTRAINT ck_pii_vault_format_marked")
    op.create_index(
        "uq_pii_vault_kind_blind_mac_user_id",
        "pii_vault",
        ["kind", "blind_mac", "user_id"],
        unique=True,
        postgresql_where=sa.text("blind_mac IS NOT NULL"),
    )


def downgrade() -> None:
    envelope = op.get_bind().execute(sa.text("SELECT count(*) FROM pii_vault WHERE dek")).scalar()
    if envelope:
        raise Conflict(
            f"{envelope} PII vault entries are in the envelope format, which revision 0003 "
            "cannot read; downgrading would lose them",
            entries=envelope,
        )
    op.drop_index("uq_pii_vault_kind_blind_mac_user_id", table_name="pii_vault")
    op.execute("ALTER TABLE pii_vault DROP CONSTRAINT ck_pii_vault_format_marked")
    op.alter_column("pii_vault", "key_id", existing_type=sa.String(64), nullable=False)
    op.drop_column("pii_vault", "unreadable_since")
    op.drop_column("pii_vault", "blind_mac")
    op.drop_column("pii_vault", "dek")
    op.drop_table("pii_data_key")
