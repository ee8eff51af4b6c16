"""Alembic migrations run programmatically, and the range of schemas this code serves.

Used by ``dualtrack migrate`` (the deploy step of a service) and, when
``auto_migrate`` is on (the embedded default), at client start. Concurrent
migrators serialise on a PostgreSQL advisory lock.

**Expand, then contract.** During a rolling upgrade pods of two releases share
one database, so a release's migrations only *expand*: new tables, nullable
columns or columns with a constant default, indexes that rows written by the
previous release cannot violate (partial, over a new column), constraints added
``NOT VALID`` and validated afterwards, data backfills the old code ignores.
They never drop, rename, narrow or re-type what the previous release reads or
writes. The *contract* step (drop the old column, make a column ``NOT NULL``,
stop reading an old format) ships in a later release, once no pod of the
release before it runs, and says so by raising ``min_client_revision``.

**The declared range.** A client serves a schema when

- it knows the revision and it is :data:`OLDEST_SUPPORTED` or later (the code
  reads columns added up to there); an older schema is migrated at start with
  ``auto_migrate``, otherwise the client refuses to start with
  :class:`SchemaMismatch`: run ``dualtrack migrate``;
- or the revision is newer than its head (a later release migrated) and that
  schema declares this client compatible.

Each migration script states ``min_client_revision``: the head revision of the
oldest code that still runs on the schema it leaves (an expand-only migration
names the previous release's head; without it, only code that knows the
migration may run). :func:`upgrade` and :func:`downgrade` record it with the
revision in the one-row table ``schema_compat`` (revision 0006 on), where code
of an older release reads it: it serves if it knows that revision. Clients
without this check (revision 0003 and older) must run with
``auto_migrate`` off beside a newer schema: their start-up upgrade would fail on
the revision they do not know.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text

from policies.errors import SchemaMismatch
from structured_memory.database import Database

__all__ = [
    "OLDEST_SUPPORTED",
    "SchemaState",
    "current_revision",
    "downgrade",
    "head_revision",
    "is_current",
    "min_client_revision",
    "prepare",
    "require_supported",
    "revisions",
    "schema_state",
    "schema_supported",
    "upgrade",
]

OLDEST_SUPPORTED = "0016"
"""The oldest schema this code runs on: it reads what migrations 0004 to 0016 add.
Raise it when code starts using what a newer migration adds."""

_MIGRATION_LOCK = 0x6475616C  # "dual": the advisory lock key of migrations


def _config(conn: Connection | None = None) -> Config:
    cfg = Config()
    location = resources.files("structured_memory").joinpath("migrations")
    cfg.set_main_option("script_location", str(location))
    if conn is not None:
        cfg.attributes["connection"] = conn
    return cfg


@cache
def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(_config())


@cache
def revisions() -> tuple[str, ...]:
    """Every revision this code knows, oldest first (the history is linear)."""
    head = _scripts().get_current_head()  # raises if the history has several heads
    assert head is not None
    return tuple(reversed([s.revision for s in _scripts().walk_revisions(base="base", head=head)]))


def min_client_revision(revision: str) -> str:
    """The ``min_client_revision`` the script of a known ``revision`` declares; by
    default the revision itself (only code that knows it may run on it)."""
    script = _scripts().get_revision(revision)
    assert script is not None
    declared: str = getattr(script.module, "min_client_revision", revision)
    return declared


def head_revision() -> str:
    """The newest revision shipped with this version of the code."""
    return revisions()[-1]


def schema_supported(revision: str | None, min_client_revision: str | None = None) -> bool:
    """Whether this code may serve a database at ``revision``.

    A known revision must be :data:`OLDEST_SUPPORTED` or later. An unknown one
    was written by a later release, which recorded ``min_client_revision``: the
    schema is served when this code knows that revision (it is at most its head).
    """
    chain = revisions()
    if revision in chain:
        return chain.index(revision) >= chain.index(OLDEST_SUPPORTED)
    return revision is not None and min_client_revision in chain


@dataclass(frozen=True)
class SchemaState:
    """The database's revision, and what a later release declared about it."""

    revision: str | None
    min_client_revision: str | None
    """Recorded in ``schema_compat``; read only for a revision newer than this code."""

    @property
    def supported(self) -> bool:
        """Whether this code may serve this schema (:func:`schema_supported`)."""
        return schema_supported(self.revision, self.min_client_revision)

    @property
    def behind(self) -> bool:
        """Empty, or older than this code's head: ``upgrade`` would apply migrations."""
        return self.revision is None or (
            self.revision in revisions() and self.revision != head_revision()
        )


def _has_compat_table(conn: Connection) -> bool:
    return conn.execute(text("SELECT to_regclass('schema_compat')")).scalar() is not None


def _read_state(conn: Connection) -> SchemaState:
    revision = MigrationContext.configure(conn).get_current_revision()
    declared = None
    if revision is not None and revision not in revisions() and _has_compat_table(conn):
        declared = conn.execute(
            text("SELECT min_client_revision FROM schema_compat WHERE revision = :r"),
            {"r": revision},
        ).scalar()
    return SchemaState(revision, declared)


def _mismatch(state: SchemaState) -> SchemaMismatch:
    if state.revision is None or state.revision in revisions():
        return SchemaMismatch(
            f"the database schema is at revision {state.revision or 'none'}; this client "
            f"needs {OLDEST_SUPPORTED} or later: run `dualtrack migrate`",
            revision=state.revision,
            needs=OLDEST_SUPPORTED,
        )
    return SchemaMismatch(
        f"the database schema is at revision {state.revision}, written by a later release "
        f"that does not declare this client (head {head_revision()}) compatible: upgrade "
        "this client",
        revision=state.revision,
        head=head_revision(),
        min_client_revision=state.min_client_revision,
    )


def _newer(state: SchemaState) -> SchemaMismatch:
    return SchemaMismatch(
        f"the database schema is at revision {state.revision}, newer than this code (head "
        f"{head_revision()}): migrate it with the release that wrote it",
        revision=state.revision,
        head=head_revision(),
    )


def schema_state(db: Database) -> SchemaState:
    """The database's revision (``None`` when empty) and its compatibility record."""
    with db.transaction() as conn:
        return _read_state(conn)


def require_supported(db: Database) -> SchemaState:
    """The schema state, or :class:`SchemaMismatch` if this code may not serve it."""
    state = schema_state(db)
    if not state.supported:
        raise _mismatch(state)
    return state


def prepare(db: Database, *, auto_migrate: bool) -> SchemaState:
    """What a client does at start: with ``auto_migrate``, upgrade a schema that is
    behind; then :func:`require_supported`. A newer schema is never touched."""
    if auto_migrate and schema_state(db).behind:
        upgrade(db)
    return require_supported(db)


def current_revision(db: Database) -> str | None:
    """The revision the database is at, or ``None`` for an empty database."""
    return schema_state(db).revision


def is_current(db: Database) -> bool:
    """Whether the database is at the head revision."""
    return current_revision(db) == head_revision()


def _record(conn: Connection) -> None:
    """Write the revision and its ``min_client_revision`` to ``schema_compat``."""
    revision = MigrationContext.configure(conn).get_current_revision()
    if revision is None or not _has_compat_table(conn):
        return
    conn.execute(
        text(
            "INSERT INTO schema_compat (id, revision, min_client_revision) VALUES (1, :r, :m) "
            "ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, "
            "min_client_revision = excluded.min_client_revision, updated_at = now()"
        ),
        {"r": revision, "m": min_client_revision(revision)},
    )


def upgrade(db: Database, revision: str = "head") -> None:
    """Upgrade to ``revision`` under the migration advisory lock.

    On a schema a later release wrote, upgrading to ``head`` does nothing when
    that schema declares this code compatible; otherwise :class:`SchemaMismatch`.
    """
    with db.transaction() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
        state = _read_state(conn)
        if state.revision is not None and state.revision not in revisions():
            if revision == "head" and state.supported:
                return
            raise _mismatch(state) if revision == "head" else _newer(state)
        command.upgrade(_config(conn), revision)
        _record(conn)


def downgrade(db: Database, revision: str) -> None:
    """Downgrade to ``revision`` (``base`` removes every table) under the lock.

    A schema a later release wrote is downgraded by that release: :class:`SchemaMismatch`.
    """
    with db.transaction() as conn:
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _MIGRATION_LOCK})
        state = _read_state(conn)
        if state.revision is not None and state.revision not in revisions():
            raise _newer(state)
        command.downgrade(_config(conn), revision)
        _record(conn)
