"""A sandbox belongs to a user, an agent and a session: one active sandbox per agent.

The unique partial index on ``(user_id, session_id)`` of active sandboxes becomes one on
``(user_id, coalesce(agent_id, ''), session_id)`` (an agent id is never empty, so a
sandbox without an agent stays apart from every agent's).

Expand only for the previous release (schema head 0003), which has no sandboxes.
Code of revisions 0007 to 0012 would find two active sandboxes of a session (one
per agent) where it expects one: this code refuses those schemas
(``OLDEST_SUPPORTED``), and none of them was released.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None
min_client_revision = "0003"

_ACTIVE = sa.text("status = 'active'")


def upgrade() -> None:
    op.create_index(
        "ix_session_sandbox_user_id_agent_session",
        "session_sandbox",
        ["user_id", sa.text("coalesce(agent_id, '')"), "session_id"],
        unique=True,
        postgresql_where=_ACTIVE,
    )
    op.drop_index("ix_session_sandbox_user_id_session_id", table_name="session_sandbox")


def downgrade() -> None:
    # two agents' active sandboxes of one session cannot both stay active under the old
    # index: the younger ones are archived, as a fork would leave them
    op.execute(
        "UPDATE session_sandbox AS s SET status = 'archived', closed_at = now() "
        "WHERE status = 'active' AND EXISTS (SELECT FROM session_sandbox o "
        "WHERE o.user_id = s.user_id AND o.session_id = s.session_id "
        "AND o.status = 'active' AND (o.created_at, o.id) < (s.created_at, s.id))"
    )
    op.create_index(
        "ix_session_sandbox_user_id_session_id",
        "session_sandbox",
        ["user_id", "session_id"],
        unique=True,
        postgresql_where=_ACTIVE,
    )
    op.drop_index("ix_session_sandbox_user_id_agent_session", table_name="session_sandbox")
