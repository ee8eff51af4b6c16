"""The mark every cross-user statement carries, and what the cross-user jobs share.

A statement on a user table must carry the user predicate (``structured_memory.scoping``)
unless it runs on a connection from :func:`cross_user_transaction` or
:func:`cross_user_autocommit`, which set the :data:`CROSS_USER` execution option:
the only statements allowed to lack it (``tests/test_user_filter.py`` checks).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from sqlalchemy import Connection

from structured_memory.database import Database

__all__ = ["CROSS_USER", "Progress", "cross_user_autocommit", "cross_user_transaction"]

CROSS_USER = "dualtrack_cross_user"
"""The execution option marking a statement as cross-user work."""

Progress = Callable[[int], None] | None
"""What a batched job calls with the rows it handled per batch (none: not called)."""


@contextlib.contextmanager
def cross_user_transaction(db: Database) -> Iterator[Connection]:
    """A transaction whose statements are marked as spanning users on purpose."""
    with db.transaction() as conn:
        yield conn.execution_options(**{CROSS_USER: True})


@contextlib.contextmanager
def cross_user_autocommit(db: Database) -> Iterator[Connection]:
    """A connection outside any transaction block (what ``VACUUM`` needs), its statements
    marked as spanning users; driver errors are translated as in a transaction."""
    options = {"isolation_level": "AUTOCOMMIT", CROSS_USER: True}
    with Database(db.engine.execution_options(**options)).transaction() as conn:
        yield conn
