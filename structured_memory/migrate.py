"""Alembic migrations run programmatically: upgrade, downgrade, current and head.

Used by ``dualtrack migrate`` and, when the schema is behind, at client start.
Concurrent starters serialise on a PostgreSQL advisory lock, so several
processes of one deployment can start together.
"""

from __future__ import annotations

from importlib import resources

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text

from structured_memory.database import Database

__all__ = ["current_revision", "downgrade", "head_revision", "is_current", "upgrade"]

_MIGRATION_LOCK = 0x6475616C  # "dual": the advisory lock key of migrations


def _config(conn: Connection | None = None) -> Config:
    cfg = Config()
    location = resources.files("structured_memory").joinpath("migrations")
    cfg.set_main_option("script_location", str(location))
    if conn is not None:
        cfg.attributes["connection"] = conn
    return cfg


def head_revision() -> str:
    """The newest revision shipped with this version of the code."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(db: Database) -> str | None:
    """The revision the database is at, or ``None`` for an empty database."""
    with db.transaction() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def is_current(db: Database) -> bool:
    """Whether the database is at the head revision."""
    return current_revision(db) == head_revision()


def upgrade(db: Database, revision: str = "head") -> None:
    """Upgrade to ``revision`` under the migration advisory lock."""
    with db.transaction() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
        command.upgrade(_config(conn), revision)


def downgrade(db: Database, revision: str) -> None:
    """Downgrade to ``revision`` (``base`` removes every table) under the lock."""
    with db.transaction() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
        command.downgrade(_config(conn), revision)
