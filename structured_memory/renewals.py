"""Renewal on use, deferred: a search or a fact read stays a read.

A memory a search returns, or a fact read by its key, is *used*: its
``last_used_at`` becomes the time of the read and, if it is renewable, its
expiry moves to that time plus its own renewal period (``renew_days``, decided
by ``policies.ttl``), never earlier than it was. Writing that on every read
would make every read a write and a commit. Instead the uses are recorded here,
in memory, coalesced per row (the latest use wins), and written by a background
thread every ``interval_s`` in one ``UPDATE`` per batch, with the time of each
use (so the result is the one an immediate renewal would have given), and
``synchronous_commit`` off.

What can go wrong, and why it is safe:

- A memory close to its expiry cannot wait: one that expires within
  :data:`URGENT_WITHIN` is renewed synchronously (``FragmentLedger.used``,
  ``FactRepository.get``), so a pending renewal never concerns a memory a
  sweep could delete before it is written.
- A process that stops cleanly writes what is pending (:meth:`Renewals.close`);
  a sweep in the same process writes it first (:meth:`Renewals.flush`).
- A process that crashes loses at most ``interval_s`` of uses: those memories
  keep their previous expiry (over a day away) and ``last_used_at`` until
  they are used again.
- A memory deleted or erased before its use is written is not revived: the
  ``UPDATE`` matches live rows by id and user only.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import partial
from itertools import groupby
from typing import Any, Literal

from sqlalchemy import DateTime, String, bindparam, case, func, text, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.dialects.postgresql import UUID as PG_UUID

from structured_memory.database import Database
from structured_memory.models import MemoryFact, MemoryFragment, table_of
from structured_memory.scoping import live, owned_by

__all__ = ["FLUSH_BATCH", "URGENT_WITHIN", "Renewable", "Renewals", "renewal"]

_log = logging.getLogger(__name__)

URGENT_WITHIN = timedelta(days=1)
"""A used memory expiring sooner than this is renewed at once, not deferred."""

FLUSH_BATCH = 1000
"""Most uses written by one statement."""

WAKE_AT = 5000
"""Pending uses that wake the writer before its interval ends."""


def renewal(table: Any, now: Any) -> Any:
    """The expiry of a row used at ``now`` (a time or a column of times):
    ``policies.ttl.renewed`` in SQL, never shorter."""
    return case(
        (
            table.c.renew_days.is_not(None) & table.c.expires_at.is_not(None),
            func.greatest(
                table.c.expires_at, now + func.make_interval(0, 0, 0, table.c.renew_days)
            ),
        ),
        else_=table.c.expires_at,
    )


Renewable = Literal["fragment", "fact"]
"""What a use renews: a fragment (``memory_fragment``) or a fact (``memory_fact``)."""

_USES = (
    func.unnest(
        bindparam("users", type_=ARRAY(String)),
        bindparam("ids", type_=ARRAY(PG_UUID(as_uuid=True))),
        bindparam("ats", type_=ARRAY(DateTime(timezone=True))),
    )
    .table_valued("user_id", "id", "at")
    .render_derived("u")
)


def _renew(model: type[MemoryFragment] | type[MemoryFact]) -> Any:
    """Each use ``(user, id, at)`` renews its row as :func:`renewal` at ``at`` (rows deleted
    or expired since are left alone)."""
    t = table_of(model)
    return (
        update(t)
        .where(owned_by(t, _USES.c.user_id), t.c.id == _USES.c.id, live(t, _USES.c.at))
        .values(
            last_used_at=func.greatest(t.c.last_used_at, _USES.c.at),
            expires_at=renewal(t, _USES.c.at),
        )
    )


_RENEW: dict[Renewable, Any] = {"fragment": _renew(MemoryFragment), "fact": _renew(MemoryFact)}

_Use = tuple[tuple[Renewable, str, uuid.UUID], datetime]
"""A pending use: what, whose, which row; when."""


class Renewals:
    """Uses of fragments and facts waiting to be written; see the module docstring."""

    def __init__(self, db: Database, *, interval_s: float = 1.0) -> None:
        self._db = db
        self._interval_s = interval_s
        self._pending: dict[tuple[Renewable, str, uuid.UUID], datetime] = {}
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def pending(self) -> int:
        """Uses recorded and not yet written."""
        return len(self._pending)

    def record(self, of: Renewable, user_id: str, ids: Iterable[uuid.UUID], at: datetime) -> None:
        """Note that ``user_id``'s fragments or facts ``ids`` were used at ``at``."""
        with self._lock:
            for row_id in ids:
                key = (of, user_id, row_id)
                earlier = self._pending.get(key)
                if earlier is None or earlier < at:
                    self._pending[key] = at
            full = len(self._pending) >= WAKE_AT
        if full:
            self._wake.set()

    def flush(self) -> int:
        """Write every pending use now; returns how many rows were renewed.

        A batch that fails (the database is down) goes back to the pending uses,
        unless a later use of the same memory arrived meanwhile, and the error
        propagates.
        """
        with self._flushing:
            with self._lock:
                taken, self._pending = self._pending, {}
            # one lock order: fragments before facts, each by id; a batch renews one table
            items = sorted(taken.items(), key=lambda kv: (kv[0][0] != "fragment", kv[0][2]))
            batches: list[list[_Use]] = []
            for _, group in groupby(items, key=lambda kv: kv[0][0]):
                uses = list(group)
                batches += [uses[i : i + FLUSH_BATCH] for i in range(0, len(uses), FLUSH_BATCH)]
            renewed = 0
            for n, batch in enumerate(batches):
                try:
                    renewed += self._db.retrying(partial(self._write, batch))
                except Exception:
                    self._restore([use for later in batches[n:] for use in later])
                    raise
            return renewed

    def start(self) -> None:
        """Write pending uses on a daemon thread every ``interval_s`` (or when many wait)."""
        if self._thread is not None:
            return
        self._stop.clear()

        def loop() -> None:
            while not self._stop.is_set():
                self._wake.wait(self._interval_s)
                self._wake.clear()
                try:
                    self.flush()
                except Exception:  # the thread must outlive a database that is down
                    _log.warning("deferred renewals not written yet; retrying", exc_info=True)

        self._thread = threading.Thread(target=loop, name="dualtrack-renewals", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread and write what is pending (logged, not raised, if that fails)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            self._wake.set()
            thread.join()
        try:
            self.flush()
        except Exception:
            _log.warning("%d deferred renewals lost at close", self.pending, exc_info=True)

    def _write(self, uses: list[_Use]) -> int:
        of = uses[0][0][0]
        with self._db.transaction() as conn:
            conn.execute(text("SET LOCAL synchronous_commit = off"))
            return int(
                conn.execute(
                    _RENEW[of],
                    {
                        "users": [user for (_, user, _), _ in uses],
                        "ids": [row_id for (_, _, row_id), _ in uses],
                        "ats": [at for _, at in uses],
                    },
                ).rowcount
            )

    def _restore(self, items: list[_Use]) -> None:
        with self._lock:
            for key, at in items:
                if key not in self._pending:
                    self._pending[key] = at
