"""A simulated system of record (orders, refunds, returns, tickets) and its verifier.

States change outside any conversation (a refund arrives, a merchant cancels an
order) through :meth:`SystemOfRecord.apply`; an outage makes every entity of a type
unanswerable, as a refunds service that is down would. The object is the verifier
``mem.register_verifier`` takes (thread-safe: verifiers run in a pool).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from benchmarks.scenarios.model import SorChange, SorState
from values.verification import BusinessState

__all__ = ["VERIFIED_TYPES", "SystemOfRecord", "SystemOfRecordDown"]

VERIFIED_TYPES = ("order", "refund", "return", "exchange", "ticket", "work_order")
"""The link types the simulated system of record answers for."""


class SystemOfRecordDown(RuntimeError):
    """The simulated service of an entity type is down."""


class SystemOfRecord:
    """Entity states by (type, id); ``None`` for an entity it does not know."""

    def __init__(self) -> None:
        self._states: dict[tuple[str, str], str] = {}
        self._down: set[str] = set()
        self._lock = threading.Lock()

    def reset(self, states: Iterable[SorState]) -> None:
        """Start over with ``states`` and every type answering."""
        with self._lock:
            self._states = {(s.entity_type, s.entity_id): s.state for s in states}
            self._down.clear()

    def apply(self, changes: Iterable[SorChange]) -> None:
        """Apply changes made outside the conversation."""
        with self._lock:
            for change in changes:
                if change.outage is not None:
                    if change.outage:
                        self._down.add(change.entity_type)
                    else:
                        self._down.discard(change.entity_type)
                    continue
                assert change.entity_id is not None  # SorChange checks it
                key = (change.entity_type, change.entity_id)
                if change.state is None:
                    self._states.pop(key, None)
                else:
                    self._states[key] = change.state

    def state(self, entity_type: str, entity_id: str) -> str | None:
        """The state now (``None``: unknown); ignores outages, as the truth does."""
        with self._lock:
            return self._states.get((entity_type, entity_id))

    def down(self, entity_type: str) -> bool:
        """Whether the type's service is down now."""
        with self._lock:
            return entity_type in self._down

    def __call__(self, entity_type: str, entity_id: str, /) -> BusinessState | None:
        """The verifier: the live state, ``None`` if unknown; raises while down."""
        if self.down(entity_type):
            raise SystemOfRecordDown(entity_type)
        state = self.state(entity_type, entity_id)
        return None if state is None else BusinessState(state)
