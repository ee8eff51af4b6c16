"""Alembic migrations: up, down, up again; the models match the migrated schema."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, make_url

from structured_memory import migrate
from structured_memory.database import Database
from structured_memory.models import Base


@pytest.fixture
def scratch_db(dsn: str) -> Iterator[Database]:
    """A fresh, empty database on the test server, dropped afterwards."""
    url = make_url(dsn)
    host = url.query.get("host") or url.host
    admin = f"host={host} user={url.username or 'postgres'} dbname={url.database}"
    if url.port:
        admin += f" port={url.port}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS dualtrack_migrations")
        conn.execute("CREATE DATABASE dualtrack_migrations")
    db = Database.from_dsn(url.set(database="dualtrack_migrations").render_as_string(False))
    yield db
    db.dispose()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE dualtrack_migrations WITH (FORCE)")


def _tables(db: Database) -> set[str]:
    with db.transaction() as conn:
        return set(inspect(conn).get_table_names())


def test_up_down_up(scratch_db: Database) -> None:
    assert migrate.current_revision(scratch_db) is None
    migrate.upgrade(scratch_db)
    assert migrate.is_current(scratch_db)
    assert {t.name for t in Base.metadata.sorted_tables} <= _tables(scratch_db)
    migrate.downgrade(scratch_db, "base")
    assert migrate.current_revision(scratch_db) is None
    assert _tables(scratch_db) <= {"alembic_version"}
    migrate.upgrade(scratch_db)
    assert migrate.current_revision(scratch_db) == migrate.head_revision()


def test_models_match_migrations(scratch_db: Database) -> None:
    migrate.upgrade(scratch_db)
    with scratch_db.transaction() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        diffs = compare_metadata(ctx, Base.metadata)
    assert diffs == []


def test_concurrent_upgrades_serialise(scratch_db: Database) -> None:
    import threading

    errors: list[BaseException] = []

    def run() -> None:
        try:
            migrate.upgrade(scratch_db)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert migrate.is_current(scratch_db)
