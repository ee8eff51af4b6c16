"""The SQLAlchemy engine over psycopg 3, and the one place driver errors are translated.

``Database`` owns an engine; ``transaction()`` yields a connection inside a
transaction and turns connection-level failures into
:class:`DatabaseUnavailable`. Timestamps at the open end of a validity range
are stored as PostgreSQL ``infinity`` and read back as :data:`INFINITY`.
"""

from __future__ import annotations

import contextlib
import logging
import random
import select
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
from psycopg.adapt import Buffer
from psycopg.types.datetime import DatetimeDumper, TimestamptzLoader
from sqlalchemy import Connection, Engine, create_engine, event, exc

from policies.errors import (
    AuditLogImmutable,
    DatabaseUnavailable,
    DualtrackError,
    InvalidInput,
    TransientFailure,
    UserNotFound,
)

__all__ = ["INFINITY", "TRANSIENT_ATTEMPTS", "Database"]

_log = logging.getLogger(__name__)

T = TypeVar("T")

TRANSIENT_ATTEMPTS = 4
"""How many times :meth:`Database.retrying` runs a unit of work that keeps deadlocking."""

_TRANSIENT_STATES = {"40001", "40P01"}  # serialization failure, deadlock detected


def _transient() -> DualtrackError:
    return TransientFailure("the write met a concurrent one (deadlock); retry it")


def _append_only() -> DualtrackError:
    return AuditLogImmutable("the audit log is append-only")


_BY_STATE: dict[str, Callable[[], DualtrackError]] = {
    **dict.fromkeys(_TRANSIENT_STATES, _transient),
    "DTA01": _append_only,  # raised by the audit log's triggers (revision 0008)
}

INFINITY = datetime.max.replace(tzinfo=UTC)
"""How PostgreSQL's timestamptz ``infinity`` reads in Python."""


class _InfinityDumper(DatetimeDumper):
    def dump(self, obj: datetime) -> Buffer | None:
        if obj == INFINITY:
            return b"infinity"
        return super().dump(obj)


class _InfinityLoader(TimestamptzLoader):
    def load(self, data: Buffer) -> datetime:
        raw = bytes(data)
        if raw == b"infinity":
            return INFINITY
        try:  # the ISO DateStyle, parsed in C: a tenth of psycopg's parse in a search's rows
            return datetime.fromisoformat(raw.decode())
        except ValueError:  # another DateStyle, a BC or five-digit year
            return super().load(data)


def _register_adapters(dbapi_conn: Any, _record: Any) -> None:
    conn: psycopg.Connection[Any] = dbapi_conn
    conn.adapters.register_dumper(datetime, _InfinityDumper)
    conn.adapters.register_loader("timestamptz", _InfinityLoader)


def _refuse_ended_connection(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
    """At checkout, discard a pooled connection the server has ended, without a round trip.

    An idle connection has nothing to read unless the server ended it (a restart,
    ``pg_terminate_backend``, an idle timeout): its socket then holds the server's
    last message or end of file. ``select`` with no timeout sees that; the pool then
    opens a fresh connection in its place (SQLAlchemy's custom pessimistic disconnect
    handling). ``pool_pre_ping`` would pay a ``SELECT 1`` round trip per checkout.
    """
    conn: psycopg.Connection[Any] = dbapi_conn
    if conn.closed or conn.broken:
        raise exc.DisconnectionError("the connection is closed")
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    if readable:
        raise exc.DisconnectionError("the server ended the connection")


def _is_connection_failure(orig: BaseException | None) -> bool:
    """A failure to reach the server, as opposed to an error of the statement."""
    if not isinstance(orig, psycopg.OperationalError):
        return False
    state = orig.sqlstate
    # No SQLSTATE: the client could not connect. 08: connection exception.
    # 57P01-57P03: admin shutdown, crash shutdown, cannot connect now.
    return state is None or state.startswith("08") or state in {"57P01", "57P02", "57P03"}


def _translate(err: exc.DBAPIError, owner: str | None) -> DualtrackError:
    """The typed error for a driver error (messages carry no parameter values)."""
    orig = err.orig
    state = getattr(orig, "sqlstate", None)
    if owner is not None and isinstance(orig, psycopg.errors.ForeignKeyViolation):
        return UserNotFound("no profile for this user")
    if err.connection_invalidated or _is_connection_failure(orig):
        return DatabaseUnavailable("PostgreSQL is unreachable or dropped the connection")
    if state in _BY_STATE:
        return _BY_STATE[state]()
    if state == "23514":
        constraint = getattr(getattr(orig, "diag", None), "constraint_name", None)
        return InvalidInput(f"a value breaks the schema rule {constraint}", constraint=constraint)
    if state is not None and state.startswith("22"):
        return InvalidInput(f"PostgreSQL refused a value (SQLSTATE {state})", sqlstate=state)
    return DualtrackError(f"PostgreSQL error (SQLSTATE {state})", sqlstate=state)


class Database:
    """An engine plus the transaction boundary that translates driver errors."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def from_dsn(
        cls, dsn: str, *, pool_size: int = 5, statement_timeout_ms: int = 30_000
    ) -> Database:
        """Build (without connecting) a database for a ``postgresql+psycopg://`` DSN.

        A plain ``postgresql://`` DSN is switched to the psycopg 3 driver.
        """
        if dsn.startswith("postgresql://") or dsn.startswith("postgres://"):
            dsn = "postgresql+psycopg://" + dsn.split("://", 1)[1]
        options = f"-c statement_timeout={statement_timeout_ms} -c timezone=UTC"
        engine = create_engine(
            dsn,
            pool_size=pool_size,
            max_overflow=pool_size * 2,
            connect_args={"options": options, "connect_timeout": 10},
        )
        event.listen(engine, "connect", _register_adapters)
        event.listen(engine, "checkout", _refuse_ended_connection)
        return cls(engine)

    @contextlib.contextmanager
    def transaction(
        self, join: Connection | None = None, *, owner: str | None = None
    ) -> Iterator[Connection]:
        """A connection in a transaction: committed on success, rolled back on error.

        With ``join``, the caller's connection is used as it is, so several
        repository calls form one unit of work. Driver errors are translated
        here, never echoing a statement's parameters (they may hold PII):

        - a foreign-key violation with ``owner`` set (the user has no
          profile): :class:`UserNotFound`;
        - a server that cannot be reached or drops the connection:
          :class:`DatabaseUnavailable`;
        - a deadlock or serialization failure: :class:`TransientFailure`
          (see :meth:`retrying`);
        - an UPDATE, DELETE or TRUNCATE of the audit log: :class:`AuditLogImmutable`;
        - a value the server refuses (SQLSTATE class 22) or a CHECK constraint
          refuses: :class:`InvalidInput`;
        - anything else: :class:`DualtrackError` naming the SQLSTATE.
        """
        try:
            if join is not None:
                yield join
            else:
                with self.engine.begin() as conn:
                    yield conn
        except exc.DBAPIError as err:
            raise _translate(err, owner) from err

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        """A connection in autocommit mode, for work that only reads.

        Every statement is its own snapshot and no ``BEGIN``/``COMMIT`` round
        trips are paid; a statement that needs a transaction (``SET LOCAL``)
        must open one itself (``conn.begin()``). Errors are translated as in
        :meth:`transaction`.
        """
        try:
            with self.engine.connect() as conn:
                yield conn.execution_options(isolation_level="AUTOCOMMIT")
        except exc.DBAPIError as err:
            raise _translate(err, None) from err

    def retrying(self, work: Callable[[], T], *, attempts: int = TRANSIENT_ATTEMPTS) -> T:
        """Run ``work`` (which opens its own transaction) again after a deadlock or
        serialization failure, up to ``attempts`` times with jittered backoff; the last
        :class:`TransientFailure` propagates."""
        for attempt in range(1, attempts + 1):
            try:
                return work()
            except TransientFailure:
                if attempt == attempts:
                    raise
                _log.info("transient conflict, retry %d of %d", attempt, attempts - 1)
                time.sleep(random.uniform(0, 0.01 * 2**attempt))
        raise AssertionError("unreachable")

    def ping(self) -> None:
        """Run ``SELECT 1``; raise :class:`DatabaseUnavailable` if it fails."""
        from sqlalchemy import text

        with self.transaction() as conn:
            conn.execute(text("SELECT 1"))

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()
