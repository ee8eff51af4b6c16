"""Drill: about 200 optimistic profile updates per second on one user lose no update.

Issue 11 ("200 optimistic profile updates per second on one user"). Threads run
``profiles.update_with_retry`` on one user, each call a read-modify-write that
increments ``attributes["counter"]``, paced to a schedule of about 200 calls per
second for about 5 s. The loop is bounded by a count and a deadline; its rate is
printed, never asserted. Asserted: the final counter equals the number of calls that
succeeded (no lost update, no double apply), the version moved by the same number,
and every failure is a :class:`DualtrackError`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

from policies.errors import DualtrackError
from sdk import MemoryClient
from values.records import Profile

USER = "hot-buyer-88231"
THREADS = 4
RATE_PER_S = 200
SECONDS = 5.0
DEADLINE_S = 20.0
"""Stops issuing calls after this long even if the schedule is behind (2-core machines)."""


def _bump(p: Profile) -> dict[str, object]:
    return {"attributes": {**p.attributes, "counter": p.attributes.get("counter", 0) + 1}}


def test_two_hundred_updates_per_second_on_one_user_lose_nothing(mem: MemoryClient) -> None:
    start_version = mem.profiles.ensure(USER).version
    total = int(RATE_PER_S * SECONDS)
    interval = THREADS / RATE_PER_S
    attempts: list[int] = []
    failures: Counter[str] = Counter()
    untyped: list[BaseException] = []
    lock = threading.Lock()
    t0 = time.monotonic()

    def worker(offset: int) -> None:
        for i in range(total // THREADS):
            due = t0 + (offset / RATE_PER_S) + i * interval
            now = time.monotonic()
            if now - t0 > DEADLINE_S:
                return
            if due > now:
                time.sleep(due - now)
            try:
                result = mem.profiles.update_with_retry(USER, _bump)
            except DualtrackError as exc:
                with lock:
                    failures[exc.code] += 1
            except BaseException as exc:  # surfaced by the assertion below
                with lock:
                    untyped.append(exc)
            else:
                with lock:
                    attempts.append(result.attempts)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0

    final = mem.profiles.get(USER)
    succeeded = len(attempts)
    calls = succeeded + sum(failures.values()) + len(untyped)
    retries = sum(a - 1 for a in attempts)
    print(
        f"\ncalls {calls} in {elapsed:.1f} s ({calls / elapsed:.0f}/s, target {RATE_PER_S}/s), "
        f"succeeded {succeeded}, attempts {sum(attempts)}, retries {retries}, "
        f"max attempts {max(attempts, default=0)}, failures {dict(failures)}"
    )
    assert untyped == [], repr(untyped[:3])
    assert succeeded > 0, "no update succeeded: the drill proves nothing"
    assert final.attributes["counter"] == succeeded
    assert final.version == start_version + succeeded
