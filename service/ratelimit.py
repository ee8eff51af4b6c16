"""Rate limits: token buckets local to each process, reconciled through PostgreSQL.

:class:`RateLimits` holds every bucket of the process, each of a :class:`Limit`
(a rate a second sustained, a burst at once). A request spends a token locally,
without I/O. Once a second (``rate_sync_s``) one thread hands what was spent to
:meth:`~structured_memory.repositories.rate_limits.RateLimitStore.reconcile` (one
statement for all buckets, never one per request) and sets each local bucket from
the shared one:

- **shares**: a process holds 1/n of each bucket (of its burst and of its rate), n
  the processes that used the bucket lately, or, for a bucket it has not reconciled
  yet, every live process. The shares add up to one bucket, so N processes admit
  what one would. After a reconciliation a process's level is its share of the
  shared level, less what it spent since; a share shrinks at once and grows (a
  peer went quiet) only when two reconciliations in a row agree.
- **claimed** limits (one export a minute: a bucket too small to split) are
  granted by the shared bucket only: the request waits for the next
  reconciliation (at most ``rate_sync_s``), which takes its token if one is left;
  one request per key waits, others are refused at once.

The slack: between two reconciliations a process knows its peers' spending only
up to the last one, so a deployment may admit about one interval's worth of the
rate more than one bucket would; a process meeting a bucket for the first time
(or again after it refilled) grants its share of the burst before it has
reconciled it, even if other processes have spent the bucket; and a share that
grew may overlap what a peer started spending in the interval before. Anything admitted
beyond the shared bucket is owed: its level goes negative and every process
holding it waits until it refills (a bucket in debt is kept until then). Without
a running reconciler (no lifespan, or the store failing) each process limits
alone, with its last known share.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from service.errors import RateLimited
from structured_memory.repositories.rate_limits import RateLimitStore, Reconciled, Spend

__all__ = ["IDLE_S", "Limit", "RateLimits"]

_log = logging.getLogger(__name__)

IDLE_S = 5.0
"""A local bucket unused this long and full again is dropped (a bucket in debt is kept,
and reconciled, until it has refilled)."""


@dataclass(frozen=True)
class Limit:
    """A kind of bucket: ``rate`` tokens a second sustained, ``burst`` at once; one
    bucket per key (an agent, a user, an address)."""

    name: str
    rate: float
    burst: int
    message: str
    """Said by the 429 ``rate_limited`` answer."""
    claimed: bool = False
    """Granted by the shared bucket only (see the module docstring)."""


@dataclass
class _Claim:
    """A request of a claimed limit waiting for the next reconciliation."""

    done: threading.Event = field(default_factory=threading.Event)
    granted: bool = False
    wait_s: float = 1.0


@dataclass
class _Bucket:
    """This process's part of one shared bucket."""

    limit: Limit
    level: float
    at: float
    share: float
    since: datetime | None
    """When this process last reconciled the bucket, or (not yet) met it: on the
    database's clock, ``None`` before the process ever reconciled."""
    spent: float = 0.0
    used: bool = True
    used_at: float = 0.0
    claim: _Claim | None = None
    refund: float = 0.0

    @property
    def cap(self) -> float:
        return self.limit.burst * self.share

    def refill(self, now: float) -> None:
        rate = self.limit.rate * self.share
        self.level = min(self.cap, self.level + (now - self.at) * rate)
        self.at = now

    def wait_s(self, level: float, share: float) -> float:
        return max(0.0, 1.0 - level) / (self.limit.rate * share)


@dataclass(frozen=True)
class _Report:
    """What one reconciliation reports of a bucket, kept to put back if it fails."""

    bucket: _Bucket
    spend: Spend
    spent: float
    refund: float
    claim: _Claim | None


class RateLimits:
    """Every bucket of this process, reconciled by :meth:`start`'s thread through ``store``
    (called once the client has started) every ``interval_s`` seconds."""

    def __init__(
        self,
        store: Callable[[], RateLimitStore],
        interval_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._interval = interval_s
        self._clock = clock
        self._process = uuid.uuid4()
        self._processes = 1
        self._last: tuple[datetime, float] | None = None  # last reconciliation: db, local
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def take(self, limit: Limit, key: str) -> None:
        """Spend one token of ``key``'s bucket of ``limit``, or raise :class:`RateLimited`
        with the wait. A claimed limit waits for the next reconciliation."""
        claim = self._spend(limit, key)
        if claim is None:
            return
        if not claim.done.wait(2 * self._interval + 5.0):
            self._withdraw(limit, key, claim)
        if not claim.granted:
            raise RateLimited(limit.message, retry_after_s=claim.wait_s)

    def _withdraw(self, limit: Limit, key: str, claim: _Claim) -> None:
        """A claim no reconciliation answered in time: refused (if not sent yet, taken back)."""
        with self._lock:
            bucket = self._buckets.get((limit.name, key))
            if bucket is not None and bucket.claim is claim:
                bucket.claim = None

    def _spend(self, limit: Limit, key: str) -> _Claim | None:
        now = self._clock()
        with self._lock:
            bucket = self._buckets.get((limit.name, key))
            if bucket is None:
                share = 1.0 / self._processes
                bucket = self._buckets[(limit.name, key)] = _Bucket(
                    limit, limit.burst * share, now, share, self._database_now(now)
                )
            bucket.refill(now)
            bucket.used, bucket.used_at = True, now
            if limit.claimed and self._thread is not None:
                if bucket.claim is not None:
                    raise RateLimited(limit.message, retry_after_s=self._interval)
                bucket.claim = _Claim()
                return bucket.claim
            if bucket.level < 1.0:
                wait = bucket.wait_s(bucket.level, bucket.share)
                raise RateLimited(limit.message, retry_after_s=wait)
            bucket.level -= 1.0
            bucket.spent += 1.0
            return None

    def _database_now(self, now: float) -> datetime | None:
        """``now`` on the database's clock, from the last reconciliation's time."""
        if self._last is None:
            return None
        at, local = self._last
        return at + timedelta(seconds=now - local)

    def start(self) -> None:
        """Reconcile once (so the first requests know the live processes), then every
        interval in a daemon thread until :meth:`stop`."""
        self.reconcile()
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name="rate-limits", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self._interval):
            self.reconcile()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop reconciling, report what was spent last and leave the shared buckets."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping.set()
        thread.join(timeout_s)
        self.reconcile()
        try:
            self._store().leave(self._process)
        except Exception:  # stopping anyway: its rows expire within seconds
            _log.warning("rate limits: could not leave the shared buckets", exc_info=True)

    def reconcile(self) -> None:
        """One reconciliation: what was spent here goes to the shared buckets (one
        statement), each local bucket is set from its shared one."""
        reports = self._reports()
        started = self._clock()
        try:
            result = self._store().reconcile(
                self._process, [r.spend for r in reports], live_s=3 * self._interval
            )
        except Exception:
            self._failed(reports)
            return
        if self._failing:
            _log.info("rate limits: reconciling again")
            self._failing = False
        self._apply(result, reports, started)

    def _reports(self) -> list[_Report]:
        """What each bucket spent since the last reconciliation (reset to nothing)."""
        now = self._clock()
        with self._lock:
            for name, b in list(self._buckets.items()):
                b.refill(now)
                settled = b.claim is None and b.spent == 0.0 and b.refund == 0.0
                if settled and now - b.used_at > IDLE_S and b.level >= b.cap:
                    del self._buckets[name]
            reports = []
            for (kind, key), b in self._buckets.items():
                claimed = 1.0 if b.claim is not None else 0.0
                spend = Spend(
                    f"{kind}\x1f{key}",
                    b.spent + b.refund + claimed,
                    b.limit.rate,
                    b.limit.burst,
                    b.used,
                )
                reports.append(_Report(b, spend, b.spent, b.refund, b.claim))
                b.spent, b.refund, b.used, b.claim = 0.0, 0.0, False, None
            return reports

    def _failed(self, reports: list[_Report]) -> None:
        if not self._failing:
            _log.warning("rate limits: reconciling failed; limiting locally", exc_info=True)
            self._failing = True
        with self._lock:
            for r in reports:
                r.bucket.spent += r.spent
                r.bucket.refund += r.refund
                r.bucket.used = True
        for r in reports:
            if r.claim is not None:
                r.claim.wait_s = self._interval
                r.claim.done.set()

    def _apply(self, result: Reconciled, reports: list[_Report], started: float) -> None:
        now = self._clock()
        with self._lock:
            self._processes = result.processes
            # result.at is when the statement's transaction began, after ``started`` on this
            # clock: times derived from the pair err late, against a share growing
            self._last = (result.at, started)
            # every other process reconciled since: it has told what it used before that
            caught_up = result.others_seen
            for r in reports:
                level, bucket = result.buckets[r.spend.name], r.bucket
                if r.claim is not None:  # its token was taken: a grant if there was one
                    r.claim.granted = level.tokens >= 0.0
                    bucket.refund = 0.0 if r.claim.granted else -1.0
                    r.claim.wait_s = bucket.wait_s(level.tokens + 1.0, 1.0)
                    r.claim.done.set()
                bucket.refill(now)
                share = 1.0 / (level.others + 1)
                if share > bucket.share and not _caught_up(caught_up, bucket.since):
                    share = bucket.share
                gained = max(0.0, share - bucket.share) * bucket.limit.burst
                bucket.level = min(level.tokens * share - bucket.spent, bucket.level + gained)
                bucket.share, bucket.since = share, result.at


def _caught_up(others_seen: datetime | None, since: datetime | None) -> bool:
    """Whether every other live process reconciled after ``since`` (so a peer that used the
    bucket before then is counted): only then may a share grow."""
    return others_seen is None or (since is not None and others_seen > since)
