"""Append-only audit log, per-user audit keys, retired memories, the decay watermark.

Expand only, safe beside clients of the previous release:

- ``audit_key``: each user's random key for the audit pseudonym, deleted with
  the user (``ON DELETE CASCADE``), so erasure destroys it.
- ``audit_log``: no ``user_id`` and no foreign key, so entries survive an
  erasure; a statement-level trigger refuses ``UPDATE``, ``DELETE`` and
  ``TRUNCATE`` with SQLSTATE ``DTA01`` (``AuditLogImmutable``). Indexed by time,
  by action and time (the dashboard's decays and status changes per day), by
  pseudonym and by memory.
- ``memory_fact.last_decayed_at`` and ``memory_fragment.last_decayed_at``:
  nullable, no table rewrite; the day of the last scheduled decay, so a second
  run on the same day decays nothing.
- The ``status_known`` checks of both tables also admit ``retired`` (a memory
  its user rejected). The wider check is added NOT VALID and validated
  afterwards, so validation does not hold the ACCESS EXCLUSIVE lock; it takes
  the name the models give it (``ck_<table>_status_known``; 0001 and 0002
  doubled the prefix). Clients of the previous release never write
  ``retired``; a retired row is also expired (``expires_at`` set when it is
  retired), so they do not serve it either.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from policies.errors import Conflict

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None
min_client_revision = "0003"

_TS = sa.DateTime(timezone=True)
_NOW = sa.text("now()")
_MEMORY_TABLES = ("memory_fact", "memory_fragment")
_STATUSES_BEFORE = "'active', 'pending_confirmation', 'needs_review'"
_STATUSES = _STATUSES_BEFORE + ", 'retired'"
_ACTIONS = (
    "'write', 'delete', 'merge', 'fork', 'discard', 'feedback', 'decay', 'status_change', "
    "'verification_change', 'profile_update', 'export', 'erasure'"
)

_REFUSE = """
CREATE FUNCTION audit_log_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = 'DTA01';
END
$$
"""


def _replace_status_check(table: str, old: str, new: str, statuses: str) -> None:
    op.execute(f"ALTER TABLE {table} DROP CONSTRAINT {old}")
    op.execute(f"ALTER TABLE {table} ADD CONSTRAINT {new} CHECK (status IN ({statuses})) NOT VALID")
    op.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {new}")


def _names(table: str) -> tuple[str, str]:
    """The check's name before (0001 and 0002 doubled the prefix) and from here on."""
    return f"ck_{table}_ck_{table}_status_known", f"ck_{table}_status_known"


def upgrade() -> None:
    op.create_table(
        "audit_key",
        sa.Column("user_id", sa.String(128), nullable=False),
        sa.Column("key", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", _TS, server_default=_NOW, nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_audit_key"),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["user_profile.user_id"],
            name="fk_audit_key_user_id_user_profile",
            ondelete="CASCADE",
        ),
        sa.CheckConstraint("octet_length(key) = 32", name=op.f("ck_audit_key_key_256bit")),
    )
    op.create_table(
        "audit_log",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("at", _TS, server_default=_NOW, nullable=False),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("agent_id", sa.String(128), nullable=True),
        sa.Column("subject", sa.String(64), nullable=True),
        sa.Column("memory_id", sa.Uuid(), nullable=True),
        sa.Column(
            "details",
            postgresql.JSONB(),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
        sa.CheckConstraint(f"action IN ({_ACTIONS})", name=op.f("ck_audit_log_action_known")),
        sa.CheckConstraint("subject ~ '^[0-9a-f]{64}$'", name=op.f("ck_audit_log_subject_hmac")),
        sa.CheckConstraint(
            "jsonb_typeof(details) = 'object'", name=op.f("ck_audit_log_details_object")
        ),
    )
    op.create_index("ix_audit_log_at", "audit_log", ["at"])
    op.create_index("ix_audit_log_action_at", "audit_log", ["action", "at"])
    op.create_index("ix_audit_log_subject_at", "audit_log", ["subject", "at"])
    op.create_index("ix_audit_log_memory_id", "audit_log", ["memory_id"])
    op.execute(_REFUSE)
    op.execute(
        "CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE OR TRUNCATE "
        "ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse()"
    )

    for table in _MEMORY_TABLES:
        op.add_column(table, sa.Column("last_decayed_at", _TS, nullable=True))
        before, after = _names(table)
        _replace_status_check(table, before, after, _STATUSES)


def downgrade() -> None:
    bind = op.get_bind()
    count = "SELECT count(*) FROM {} WHERE status = 'retired'"
    retired = sum(int(bind.execute(sa.text(count.format(t))).scalar_one()) for t in _MEMORY_TABLES)
    if retired:
        raise Conflict(
            f"{retired} memories are retired, a status revision 0007 does not know; "
            "delete them before downgrading",
            memories=retired,
        )
    for table in _MEMORY_TABLES:
        before, after = _names(table)
        _replace_status_check(table, after, before, _STATUSES_BEFORE)
        op.drop_column(table, "last_decayed_at")
    op.drop_table("audit_log")
    op.execute("DROP FUNCTION audit_log_refuse()")
    op.drop_table("audit_key")
