"""Alembic environment: runs on the connection handed over by ``structured_memory.migrate``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from structured_memory.models import Base

config = context.config
connection: Connection = config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
