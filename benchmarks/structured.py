"""Structured track: profile reads, optimistic updates, and a hot user under contention.

Measures, in one run on one server:
- profile read latency p50/p95 (single thread, random users);
- optimistic update throughput (threads updating distinct users);
- a hot user updated at a paced ~200 updates/s by several threads, once with
  optimistic locking plus the retry helper (conflict rate, attempts needed)
  and once with ``SELECT ... FOR UPDATE`` (time spent waiting for the lock).

Usage: ``python -m benchmarks.structured [--quick]``.
"""

from __future__ import annotations

import argparse
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.dialects.postgresql import JSONB

from benchmarks.common import (
    bench_client,
    console,
    elapsed_ms,
    percentile,
    print_table,
    write_result,
)
from sdk.client import MemoryClient
from values.records import Profile

_SELECT_FOR_UPDATE = text("SELECT attributes FROM user_profile WHERE user_id = :u FOR UPDATE")
_UPDATE = text(
    "UPDATE user_profile SET attributes = :a, version = version + 1, updated_at = now() "
    "WHERE user_id = :u"
).bindparams(bindparam("a", type_=JSONB))


def _bump(p: Profile) -> dict[str, object]:
    return {"attributes": {**p.attributes, "counter": p.attributes.get("counter", 0) + 1}}


def read_latency(mem: MemoryClient, users: list[str], reads: int) -> dict[str, float]:
    """p50/p95 of ``profiles.get`` over random users, in milliseconds."""
    samples = []
    for _ in range(reads):
        uid = random.choice(users)
        t0 = time.perf_counter()
        mem.profiles.get(uid)
        samples.append(elapsed_ms(t0))
    return {"reads": reads, "p50_ms": percentile(samples, 50), "p95_ms": percentile(samples, 95)}


def update_throughput(
    mem: MemoryClient, users: list[str], threads: int, per_thread: int
) -> dict[str, float]:
    """Optimistic read-modify-write updates per second, each thread on its own users."""

    def work(i: int) -> None:
        mine = users[i::threads]
        for n in range(per_thread):
            mem.profiles.update_with_retry(mine[n % len(mine)], _bump)

    t0 = time.perf_counter()
    _run_threads(threads, work)
    elapsed = time.perf_counter() - t0
    total = threads * per_thread
    return {"threads": threads, "updates": total, "updates_per_s": total / elapsed}


@dataclass
class _HotStats:
    latencies_ms: list[float] = field(default_factory=list)
    attempts: list[int] = field(default_factory=list)
    lock_wait_ms: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _paced(rate: float, duration: float, threads: int, op: Callable[[], None]) -> float:
    """Run ``op`` from ``threads`` threads at ``rate`` ops/s in total; return elapsed seconds."""
    interval = threads / rate
    deadline = time.perf_counter() + duration

    def work(i: int) -> None:
        next_at = time.perf_counter() + i * interval / threads
        while next_at < deadline:
            delay = next_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            op()
            next_at += interval

    t0 = time.perf_counter()
    _run_threads(threads, work)
    return time.perf_counter() - t0


def hot_optimistic(
    mem: MemoryClient, uid: str, rate: float, duration: float, threads: int
) -> dict[str, Any]:
    """A hot user at ``rate`` updates/s through the optimistic retry helper."""
    stats = _HotStats()

    def op() -> None:
        t0 = time.perf_counter()
        result = mem.profiles.update_with_retry(uid, _bump)
        ms = elapsed_ms(t0)
        with stats.lock:
            stats.latencies_ms.append(ms)
            stats.attempts.append(result.attempts)

    elapsed = _paced(rate, duration, threads, op)
    n = len(stats.attempts)
    conflicts = sum(a - 1 for a in stats.attempts)
    return {
        "mode": "optimistic + retry",
        "updates": n,
        "achieved_per_s": n / elapsed,
        "conflict_rate": conflicts / (n + conflicts),
        "updates_retried_share": sum(1 for a in stats.attempts if a > 1) / n,
        "attempts_p50": percentile([float(a) for a in stats.attempts], 50),
        "attempts_p95": percentile([float(a) for a in stats.attempts], 95),
        "attempts_max": max(stats.attempts),
        "latency_p50_ms": percentile(stats.latencies_ms, 50),
        "latency_p95_ms": percentile(stats.latencies_ms, 95),
        "lock_wait_p50_ms": 0.0,
        "lock_wait_p95_ms": 0.0,
    }


def hot_for_update(
    mem: MemoryClient, uid: str, rate: float, duration: float, threads: int
) -> dict[str, Any]:
    """The same load with ``SELECT ... FOR UPDATE`` then ``UPDATE`` in one transaction."""
    stats = _HotStats()

    def op() -> None:
        t0 = time.perf_counter()
        with mem.admin.database.transaction() as conn:
            w0 = time.perf_counter()
            attrs = conn.execute(_SELECT_FOR_UPDATE, {"u": uid}).scalar_one()
            waited = elapsed_ms(w0)
            attrs = {**attrs, "counter": attrs.get("counter", 0) + 1}
            conn.execute(_UPDATE, {"u": uid, "a": attrs})
        ms = elapsed_ms(t0)
        with stats.lock:
            stats.latencies_ms.append(ms)
            stats.lock_wait_ms.append(waited)

    elapsed = _paced(rate, duration, threads, op)
    n = len(stats.latencies_ms)
    return {
        "mode": "SELECT ... FOR UPDATE",
        "updates": n,
        "achieved_per_s": n / elapsed,
        "conflict_rate": 0.0,
        "updates_retried_share": 0.0,
        "attempts_p50": 1.0,
        "attempts_p95": 1.0,
        "attempts_max": 1,
        "latency_p50_ms": percentile(stats.latencies_ms, 50),
        "latency_p95_ms": percentile(stats.latencies_ms, 95),
        "lock_wait_p50_ms": percentile(stats.lock_wait_ms, 50),
        "lock_wait_p95_ms": percentile(stats.lock_wait_ms, 95),
    }


def _run_threads(n: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def wrapped(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run every measurement, print tables, write ``results/structured[-quick].json``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="Smaller, faster run.")
    args = parser.parse_args(argv)
    n_users, reads, per_thread, duration = (
        (200, 500, 50, 3.0) if args.quick else (1000, 5000, 250, 10.0)
    )
    rate, threads = 200.0, 8

    with bench_client("structured") as mem:
        console.print(f"preparing {n_users} profiles…")
        users = [f"bench-user-{i:05d}" for i in range(n_users)]
        for uid in users:
            mem.forget_user(uid)
            mem.profiles.ensure(uid)
        reads_result = read_latency(mem, users, reads)
        throughput = update_throughput(mem, users, 4, per_thread)
        hot = []
        for runner in (hot_optimistic, hot_for_update):
            mem.forget_user("bench-hot")
            mem.profiles.ensure("bench-hot")
            hot.append(runner(mem, "bench-hot", rate, duration, threads))
            final = mem.profiles.get("bench-hot").attributes["counter"]
            assert final == hot[-1]["updates"], "an update was lost"

    print_table(
        "profile reads and optimistic updates",
        ["measure", "value"],
        [
            ["read p50 (ms)", reads_result["p50_ms"]],
            ["read p95 (ms)", reads_result["p95_ms"]],
            ["optimistic updates/s (4 threads, distinct users)", throughput["updates_per_s"]],
        ],
    )
    measures = [
        ("updates done", "updates"),
        ("achieved updates/s", "achieved_per_s"),
        ("conflict rate (failed writes / writes)", "conflict_rate"),
        ("share of updates retried", "updates_retried_share"),
        ("attempts p50", "attempts_p50"),
        ("attempts p95", "attempts_p95"),
        ("attempts max", "attempts_max"),
        ("latency p50 (ms)", "latency_p50_ms"),
        ("latency p95 (ms)", "latency_p95_ms"),
        ("lock wait p50 (ms)", "lock_wait_p50_ms"),
        ("lock wait p95 (ms)", "lock_wait_p95_ms"),
    ]
    print_table(
        f"hot user: {rate:.0f} updates/s target, {threads} threads, {duration:.0f} s",
        ["measure", *(h["mode"] for h in hot)],
        [[label, *(h[key] for h in hot)] for label, key in measures],
    )
    ratio = hot[0]["latency_p95_ms"] / hot[1]["latency_p95_ms"]
    console.print(f"latency p95 ratio optimistic / FOR UPDATE: {ratio:.2f}")
    result = {
        "reads": reads_result,
        "optimistic_throughput": throughput,
        "hot_user": hot,
        "latency_p95_ratio_optimistic_over_for_update": ratio,
    }
    write_result("structured-quick" if args.quick else "structured", result)
    return result


if __name__ == "__main__":
    main()
