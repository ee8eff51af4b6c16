"""Per-agent token buckets: ``rate`` requests a second sustained, ``burst`` at once."""

from __future__ import annotations

import threading
import time

from service.errors import RateLimited

__all__ = ["RateLimiter"]


class RateLimiter:
    """Token buckets by agent id (a token without an agent shares one bucket per user)."""

    def __init__(self, rate: float, burst: int) -> None:
        self._rate = rate
        self._burst = float(burst)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str, now: float | None = None) -> None:
        """Spend one token of ``key``'s bucket or raise :class:`RateLimited` with the wait."""
        at = time.monotonic() if now is None else now
        with self._lock:
            tokens, last = self._buckets.get(key, (self._burst, at))
            tokens = min(self._burst, tokens + (at - last) * self._rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, at)
                wait = (1.0 - tokens) / self._rate
                raise RateLimited("too many requests for this agent", retry_after_s=wait)
            self._buckets[key] = (tokens - 1.0, at)
            if len(self._buckets) > 100_000:  # bounded: forget the fullest (idle) buckets
                for stale in [k for k, (t, _) in self._buckets.items() if t >= self._burst][:1000]:
                    del self._buckets[stale]
