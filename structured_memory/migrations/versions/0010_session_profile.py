"""RESERVED: Session watermarks and profile candidates (session-end engineer).
Its owner replaces this whole file with the real migration, keeping revision "0010"
and down_revision "0009".

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30
"""

from __future__ import annotations

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing yet."""


def downgrade() -> None:
    """Nothing yet."""
