"""The outbox worker: applies pending ledger changes to a derived index.

``drain_once`` claims one batch, turns it into index operations and applies
them; ``drain`` repeats until the outbox is empty or a deadline passes;
``start``/``stop`` run it on a daemon thread (the embedded default), and
``dualtrack worker`` runs the same loop in its own process. Every operation is
idempotent (objects are keyed by fragment id), so a batch applied twice after
a crash does no harm. An upsert whose fragment is gone from the ledger is
applied as a delete, so batches racing between workers cannot resurrect a
deleted fragment. Failures back off exponentially with jitter, capped.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from policies.errors import StoreUnavailable
from policies.outbox import OutboxOp
from policies.scope import UserScope
from unstructured_memory.index.base import (
    Delete,
    DropUser,
    FragmentIndex,
    IndexedFragment,
    IndexOp,
    Upsert,
)

__all__ = ["DrainReport", "OutboxWorker"]

_log = logging.getLogger(__name__)


class Entry(Protocol):
    """One outbox entry as the queue hands it out."""

    @property
    def op(self) -> OutboxOp: ...
    @property
    def user_id(self) -> str: ...
    @property
    def fragment_id(self) -> uuid.UUID | None: ...
    @property
    def attempts(self) -> int: ...


class Batch(Protocol):
    """A claimed batch: its entries, and how to settle it."""

    @property
    def entries(self) -> Sequence[Entry]: ...
    def done(self) -> None: ...
    def failed(self, error: str, retry_in_s: float) -> None: ...


class Queue(Protocol):
    """Where entries come from (``structured_memory.repositories.outbox.Outbox``)."""

    def claim(self, limit: int) -> AbstractContextManager[Batch]: ...


Loader = Callable[[Sequence[uuid.UUID]], Mapping[uuid.UUID, IndexedFragment]]
"""Reads the ledger rows of fragment ids (absent ids: the fragment is gone)."""


@dataclass(frozen=True)
class _Immediate:
    """A change applied at once, outside the queue (its queued entry follows)."""

    op: OutboxOp
    user_id: str
    fragment_id: uuid.UUID | None
    attempts: int = 0


@dataclass(frozen=True)
class DrainReport:
    """What one drain did."""

    applied: int
    failed: int


class OutboxWorker:
    """Moves outbox entries into a derived ``FragmentIndex``."""

    def __init__(
        self,
        queue: Queue,
        load: Loader,
        index: FragmentIndex,
        *,
        batch_size: int = 200,
        base_delay_s: float = 0.5,
        max_delay_s: float = 60.0,
    ) -> None:
        self._queue = queue
        self._load = load
        self._index = index
        self._batch_size = batch_size
        self._base_delay_s = base_delay_s
        self._max_delay_s = max_delay_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def drain_once(self) -> DrainReport:
        """Claim one batch and apply it; never raises for an unreachable index."""
        with self._queue.claim(self._batch_size) as batch:
            entries = list(batch.entries)
            if not entries:
                return DrainReport(0, 0)
            try:
                self._index.apply(self._ops(entries))
            except StoreUnavailable as exc:
                attempts = max(e.attempts for e in entries) + 1
                delay = min(self._max_delay_s, self._base_delay_s * 2**attempts)
                batch.failed(f"{exc.code}: {exc.message}", delay * random.uniform(0.5, 1.0))
                _log.warning(
                    "outbox batch of %d failed (%s); retry #%d", len(entries), exc.code, attempts
                )
                return DrainReport(0, len(entries))
            batch.done()
            return DrainReport(len(entries), 0)

    def apply_now(self, changes: Sequence[tuple[OutboxOp, str, uuid.UUID | None]]) -> None:
        """Apply ``(op, user_id, fragment_id)`` changes at once, as a batch would (their
        queued entries still follow, idempotent); raises :class:`StoreUnavailable`."""
        if changes:
            self._index.apply(self._ops([_Immediate(*change) for change in changes]))

    def drain(self, *, deadline_s: float = 30.0) -> DrainReport:
        """Drain until the outbox has nothing due, a batch fails, or ``deadline_s`` passes."""
        applied = failed = 0
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            report = self.drain_once()
            applied += report.applied
            failed += report.failed
            if report.applied == 0:
                break
        return DrainReport(applied, failed)

    def _ops(self, entries: Sequence[Entry]) -> list[IndexOp]:
        wanted = [
            e.fragment_id for e in entries if e.op is OutboxOp.UPSERT and e.fragment_id is not None
        ]
        rows = self._load(wanted)
        ops: list[IndexOp] = []
        for e in entries:
            scope = UserScope(e.user_id)
            if e.op is OutboxOp.DROP_USER:
                ops.append(DropUser(scope))
            elif e.fragment_id is None:
                continue
            elif e.op is OutboxOp.UPSERT and e.fragment_id in rows:
                ops.append(Upsert(scope, rows[e.fragment_id]))
            else:
                ops.append(Delete(scope, e.fragment_id))
        return ops

    def wake(self) -> None:
        """Ask the background thread to drain now (after a write)."""
        self._wake.set()

    def start(self, *, interval_s: float = 1.0) -> None:
        """Run ``drain`` on a daemon thread every ``interval_s`` or when woken."""
        if self._thread is not None:
            return
        self._stop.clear()

        def loop() -> None:
            while not self._stop.is_set():
                try:
                    self.drain(deadline_s=interval_s * 5)
                except Exception:  # the thread must survive a bad batch or a dead database
                    _log.exception("outbox worker iteration failed")
                self._wake.wait(interval_s)
                self._wake.clear()

        self._thread = threading.Thread(target=loop, name="dualtrack-outbox", daemon=True)
        self._thread.start()

    def stop(self, *, timeout_s: float = 10.0) -> bool:
        """Stop the thread; returns whether it ended within ``timeout_s``."""
        thread = self._thread
        if thread is None:
            return True
        self._stop.set()
        self._wake.set()
        thread.join(timeout_s)
        self._thread = None
        return not thread.is_alive()
