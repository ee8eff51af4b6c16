"""Rate-limit buckets shared by the service's processes: one statement reconciles them.

Each process limits requests with buckets of its own (``service.ratelimit``) and,
once a second, hands this module what it spent per bucket since it last did;
:meth:`RateLimitStore.reconcile` applies that to the shared buckets (each refilled
for the time since its last update, capped at its burst, less what was spent),
marks the process alive and a peer of every bucket it used, deletes what has been
idle for a minute, and returns every bucket's level with the number of other
processes using it, the number of live processes and the oldest last
reconciliation among the others: all in **one statement**.
Buckets are keyed by an HMAC of their name (a name may hold a user id or an
address), under a key the caller derives from the ring. Holds no user data.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text

from structured_memory.database import Database

__all__ = ["BucketLevel", "RateLimitStore", "Reconciled", "Spend"]

IDLE_S = 60.0
"""Rows untouched for this long (and buckets full again, and processes that stopped
reconciling) are deleted, at the least; ``live_s`` longer if that is longer."""


@dataclass(frozen=True)
class Spend:
    """What one process spent from one bucket since its last reconciliation."""

    name: str
    spent: float
    rate: float
    burst: float
    used: bool
    """Asked for since the last reconciliation (the process is a peer of the bucket)."""


@dataclass(frozen=True)
class BucketLevel:
    """A shared bucket after a reconciliation: its tokens, and how many other live
    processes used it lately (reconciled it as used within ``live_s``)."""

    tokens: float
    others: int


@dataclass(frozen=True)
class Reconciled:
    """What a reconciliation returns: when it ran (the database's clock), the live
    processes (this one included), the oldest last reconciliation among the others
    (``None`` without others), and the level of every bucket it was handed, by name."""

    at: datetime
    processes: int
    others_seen: datetime | None
    buckets: dict[str, BucketLevel]


_RECONCILE = text(
    """
WITH batch AS (
    SELECT * FROM unnest(
        CAST(:keys AS bytea[]), CAST(:spent AS float8[]), CAST(:rates AS float8[]),
        CAST(:bursts AS float8[]), CAST(:used AS boolean[])
    ) AS t(key, spent, rate, burst, used)
), alive AS (
    INSERT INTO rate_limit_process (process_id, seen_at) VALUES (:process, now())
    ON CONFLICT (process_id) DO UPDATE SET seen_at = EXCLUDED.seen_at
), peers AS (
    INSERT INTO rate_limit_peer (key, process_id, seen_at)
    SELECT key, :process, now() FROM batch WHERE used ORDER BY key
    ON CONFLICT (key, process_id) DO UPDATE SET seen_at = EXCLUDED.seen_at
), bucket AS (
    -- the proposed row carries burst - spent as its tokens (a new bucket's level; a
    -- refund, spent < 0, only follows a claim, so its bucket is there to update)
    INSERT INTO rate_limit_bucket AS b (key, rate, burst, tokens, updated_at)
    SELECT key, rate, burst, burst - spent, now() FROM batch ORDER BY key
    ON CONFLICT (key) DO UPDATE SET
        rate = EXCLUDED.rate,
        burst = EXCLUDED.burst,
        tokens = LEAST(
            EXCLUDED.burst,
            LEAST(EXCLUDED.burst,
                  b.tokens + EXTRACT(EPOCH FROM now() - b.updated_at) * EXCLUDED.rate)
            - (EXCLUDED.burst - EXCLUDED.tokens)
        ),
        updated_at = now()
    RETURNING b.key, b.tokens
), idle_processes AS (
    DELETE FROM rate_limit_process WHERE process_id IN (
        SELECT process_id FROM rate_limit_process
        WHERE seen_at < now() - make_interval(secs => :idle_s) FOR UPDATE SKIP LOCKED)
), idle_peers AS (
    DELETE FROM rate_limit_peer WHERE (key, process_id) IN (
        SELECT key, process_id FROM rate_limit_peer
        WHERE seen_at < now() - make_interval(secs => :idle_s) FOR UPDATE SKIP LOCKED)
), full_buckets AS (
    DELETE FROM rate_limit_bucket WHERE key IN (
        SELECT key FROM rate_limit_bucket
        WHERE updated_at < now() - make_interval(secs => :idle_s)
          AND tokens + EXTRACT(EPOCH FROM now() - updated_at) * rate >= burst
          AND key NOT IN (SELECT key FROM batch)
        FOR UPDATE SKIP LOCKED)
)
SELECT live.processes, live.others_seen, now() AS at, bucket.key, bucket.tokens,
       (SELECT count(*) FROM rate_limit_peer p
        WHERE p.key = bucket.key AND p.process_id <> :process
          AND p.seen_at > now() - make_interval(secs => :live_s)) AS others
FROM (SELECT count(*) + 1 AS processes, min(seen_at) AS others_seen FROM rate_limit_process
      WHERE process_id <> :process AND seen_at > now() - make_interval(secs => :live_s)) AS live
LEFT JOIN bucket ON true
"""
)

_LEAVE = text(
    """
WITH peers AS (DELETE FROM rate_limit_peer WHERE process_id = :process)
DELETE FROM rate_limit_process WHERE process_id = :process
"""
)


class RateLimitStore:
    """The shared buckets, reconciled one statement at a time (ops work, no user data)."""

    def __init__(self, db: Database, key: bytes) -> None:
        self._db = db
        self._key = key

    def _digest(self, name: str) -> bytes:
        return hmac.new(self._key, name.encode("utf-8"), hashlib.sha256).digest()[:16]

    def reconcile(
        self, process_id: uuid.UUID, spends: Sequence[Spend], *, live_s: float
    ) -> Reconciled:
        """Apply ``spends`` and return the live processes (those that reconciled within
        ``live_s``) and each bucket's level: one statement, deleting idle rows on the way."""
        names = {self._digest(s.name): s.name for s in spends}
        with self._db.transaction() as conn:
            rows = conn.execute(
                _RECONCILE,
                {
                    "process": process_id,
                    "keys": list(names),
                    "spent": [s.spent for s in spends],
                    "rates": [s.rate for s in spends],
                    "bursts": [s.burst for s in spends],
                    "used": [s.used for s in spends],
                    "live_s": live_s,
                    "idle_s": max(IDLE_S, 2 * live_s),
                },
            ).all()
        first = rows[0]
        levels = {
            names[bytes(r.key)]: BucketLevel(float(r.tokens), int(r.others))
            for r in rows
            if r.key is not None
        }
        return Reconciled(first.at, int(first.processes), first.others_seen, levels)

    def leave(self, process_id: uuid.UUID) -> None:
        """Forget the process (it stops): its peers get its share at their next
        reconciliation."""
        with self._db.transaction() as conn:
            conn.execute(_LEAVE, {"process": process_id})
