"""Business links to returns, exchanges and work orders; each link's last verification.

Expand only, safe beside pods of the previous release:

- ``user_business_link.entity_type`` also admits ``return``, ``exchange`` and
  ``work_order``. The CHECK constraint is replaced by a wider one (now named by
  the naming convention: revision 0001 prefixed its name twice): every value
  the old one allowed is still allowed, and pods of the previous release only
  write those. The wider check is added ``NOT VALID`` and
  validated afterwards (a scan of the table, no row can fail it).
- ``verified_state`` (the state the system of record last reported, PII
  masked), ``verified_at`` (when it did) and ``verification_ok`` (whether the
  latest verification succeeded; NULL: never verified): new nullable columns,
  no table rewrite; older pods never select or write them.

Downgrading refuses (:class:`Conflict`) while links of the new types exist:
the narrower check would reject them.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from policies.errors import Conflict

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None
min_client_revision = "0003"

_TABLE = "user_business_link"
_CHECK = "ck_user_business_link_entity_type_known"
_OLD_CHECK = "ck_user_business_link_ck_user_business_link_entity_type_known"
"""The name revision 0001 gave it (the naming convention applied to a full name)."""
_OLD_TYPES = ("supplier", "warehouse", "contract", "order", "refund", "ticket")
_NEW_TYPES = ("return", "exchange", "work_order")


def _types_check(types: tuple[str, ...]) -> str:
    return "entity_type IN (" + ", ".join(f"'{t}'" for t in types) + ")"


def upgrade() -> None:
    op.execute(f"ALTER TABLE {_TABLE} DROP CONSTRAINT {_OLD_CHECK}")
    op.execute(
        f"ALTER TABLE {_TABLE} ADD CONSTRAINT {_CHECK} "
        f"CHECK ({_types_check(_OLD_TYPES + _NEW_TYPES)}) NOT VALID"
    )
    op.execute(f"ALTER TABLE {_TABLE} VALIDATE CONSTRAINT {_CHECK}")
    op.add_column(_TABLE, sa.Column("verified_state", sa.String(128), nullable=True))
    op.add_column(_TABLE, sa.Column("verified_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column(_TABLE, sa.Column("verification_ok", sa.Boolean(), nullable=True))


def downgrade() -> None:
    newer = (
        op.get_bind()
        .execute(
            sa.text(f"SELECT count(*) FROM {_TABLE} WHERE entity_type = ANY(:types)"),
            {"types": list(_NEW_TYPES)},
        )
        .scalar()
    )
    if newer:
        raise Conflict(
            f"{newer} business links are of types revision 0008 does not know "
            "(return, exchange, work_order); downgrading would refuse them",
            links=newer,
        )
    op.drop_column(_TABLE, "verification_ok")
    op.drop_column(_TABLE, "verified_at")
    op.drop_column(_TABLE, "verified_state")
    op.execute(f"ALTER TABLE {_TABLE} DROP CONSTRAINT {_CHECK}")
    op.execute(
        f"ALTER TABLE {_TABLE} ADD CONSTRAINT {_OLD_CHECK} CHECK ({_types_check(_OLD_TYPES)})"
    )
