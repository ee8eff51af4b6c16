"""Session watermarks and profile candidates (session end, idle timeout, every N turns).

Expand only, safe beside pods of the previous release, which never touch the
new tables:

- ``session_watermark``: per user and session, the non-empty turns known so
  far, a digest chaining their masked text, the watermark (turns already
  summarised and merged into the profile), the last record written, and when
  and why the session ended. The idle sweep reads the sessions not ended
  through a partial index on ``updated_at``.
- ``profile_candidate``: preference values said in some sessions but not yet
  confirmed often enough to become the stable value (``policies.profile_merge``);
  one row per user, slot and value.

Both cascade from ``user_profile``: an erasure removes them with the user.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None
min_client_revision = "0003"

_TS = sa.DateTime(timezone=True)
_NOW = sa.text("now()")


def _user_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["user_id"],
        ["user_profile.user_id"],
        name=f"fk_{table}_user_id_user_profile",
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "session_watermark",
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("agent_id", sa.String(128), nullable=True),
        sa.Column("turns", sa.Integer(), server_default="0", nullable=False),
        sa.Column("digest", sa.String(64), server_default="", nullable=False),
        sa.Column("processed", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_record_id", sa.Uuid(), nullable=True),
        sa.Column("ended_at", _TS, nullable=True),
        sa.Column("ended_by", sa.String(16), nullable=True),
        sa.Column("created_at", _TS, server_default=_NOW, nullable=False),
        sa.Column("updated_at", _TS, server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "session_id", name="pk_session_watermark"),
        _user_fk("session_watermark"),
        sa.CheckConstraint(
            "processed >= 0 AND processed <= turns",
            name=op.f("ck_session_watermark_watermark_within"),
        ),
        sa.CheckConstraint(
            "(ended_at IS NULL AND ended_by IS NULL) OR "
            "(ended_at IS NOT NULL AND ended_by IN ('explicit', 'idle'))",
            name=op.f("ck_session_watermark_ended_known"),
        ),
    )
    op.create_index(
        "ix_session_watermark_updated_at",
        "session_watermark",
        ["updated_at"],
        postgresql_where=sa.text("ended_at IS NULL"),
    )
    op.create_table(
        "profile_candidate",
        sa.Column("id", sa.Uuid(), server_default=sa.text("gen_random_uuid()"), nullable=False),
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("slot", sa.String(96), nullable=False),
        sa.Column("value", sa.String(256), nullable=False),
        sa.Column(
            "sessions",
            postgresql.ARRAY(sa.String(128)),
            server_default=sa.text("'{}'::varchar[]"),
            nullable=False,
        ),
        sa.Column("first_seen", _TS, server_default=_NOW, nullable=False),
        sa.Column("last_seen", _TS, server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_profile_candidate"),
        _user_fk("profile_candidate"),
        sa.UniqueConstraint(
            "user_id", "slot", "value", name="uq_profile_candidate_user_id_slot_value"
        ),
        sa.CheckConstraint(
            "cardinality(sessions) >= 1", name=op.f("ck_profile_candidate_sessions_nonempty")
        ),
    )


def downgrade() -> None:
    op.drop_table("profile_candidate")
    op.drop_index("ix_session_watermark_updated_at", table_name="session_watermark")
    op.drop_table("session_watermark")
