"""Mixed load: under concurrent writes, searches, structured writes, deletes and erasures
of overlapping users, does every failure stay typed, how often does a call meet a
deadlock, and do the stores stay consistent?

Several threads run, for a bounded time, a weighted mix over a few users:
``write_many`` batches naming several users in random orders (texts sharing the same
phone numbers and emails, so vault upserts collide), ``search``, ``facts.put`` (plain
and SENSITIVE facts referencing the vault), ``pii.store``, ``memories.delete`` and
``forget_user`` followed by ``profiles.ensure`` (the user is created again). A call for
an erased user raises ``UserNotFound``: an expected typed outcome. Reported: calls per
second and outcomes by error code per operation, the retries the SDK made after a
deadlock, the server's deadlock count, and the consistency checks of
:func:`invariant_violations` (all zero when the stores are consistent).
``tests/drills/test_mixed_load.py`` runs the same mix for a few seconds.

    python -m benchmarks.mixed_load [--quick] [--seconds 15] [--threads 6]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import random
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text

from benchmarks.common import (
    bench_client,
    console,
    elapsed_ms,
    fresh_users,
    latency_stats,
    print_table,
    write_result,
)
from policies.errors import DualtrackError
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from values.inputs import MemoryInput

__all__ = [
    "INVARIANTS",
    "OPERATIONS",
    "USERS",
    "Tally",
    "counting_retries",
    "invariant_violations",
    "main",
    "run_mix",
]

USERS = tuple(f"mix-buyer-{i:02d}" for i in range(4))
PHONES = ("13912345678", "13800000001", "13700000002")
EMAILS = ("refund@example.com", "buyer@example.cn")
TEXTS = (
    "我的手机号是 {phone}，订单 88231 的退款 RF20260629001 到账了吗",
    "换绑手机 {phone}，通知发到邮箱 {email}",
    "Please call {phone} about order 88231, or email {email}",
    "订单 88231 已签收，退款 RF20260629001 请走原路返回",
    "I prefer WeChat notifications and distrust YAML",
)
QUERIES = ("退款到账了吗", "手机号 13912345678 绑定的订单到哪了", "WeChat notifications")
_POLICIES = (LifecyclePolicy.EXPLICIT, LifecyclePolicy.IMPLICIT, LifecyclePolicy.SENSITIVE)

Operation = Callable[[MemoryClient, random.Random, Sequence[str]], None]


def _text(rng: random.Random) -> str:
    return rng.choice(TEXTS).format(phone=rng.choice(PHONES), email=rng.choice(EMAILS))


def _write_many(mem: MemoryClient, rng: random.Random, users: Sequence[str]) -> None:
    chosen = rng.sample(list(users), rng.randint(2, len(users)))  # a random user order
    items = [
        MemoryInput(
            user_id=user,
            text=_text(rng),
            lifecycle_policy=rng.choice(_POLICIES),
            session_id=f"mix-session-{rng.randrange(2)}",
        )
        for user in chosen
        for _ in range(rng.randint(1, 2))
    ]
    mem.write_many(items, progress=False)


def _search(mem: MemoryClient, rng: random.Random, users: Sequence[str]) -> None:
    mem.search(rng.choice(users), rng.choice(QUERIES), limit=3)


def _facts_put(mem: MemoryClient, rng: random.Random, users: Sequence[str]) -> None:
    user = rng.choice(users)
    if rng.random() < 0.5:
        mem.facts.put(
            user, "preferred_channel", "wechat", lifecycle_policy=LifecyclePolicy.EXPLICIT
        )
        return
    ref = mem.pii.store(user, "phone", rng.choice(PHONES))
    mem.facts.put(
        user,
        "contact_phone",
        {"vault_id": str(ref.id), "kind": ref.kind},
        lifecycle_policy=LifecyclePolicy.SENSITIVE,
    )


def _pii_store(mem: MemoryClient, rng: random.Random, users: Sequence[str]) -> None:
    user = rng.choice(users)
    if rng.random() < 0.7:
        mem.pii.store(user, "phone", rng.choice(PHONES))
    else:
        mem.pii.store(user, "email", rng.choice(EMAILS))


def _memories_delete(mem: MemoryClient, rng: random.Random, users: Sequence[str]) -> None:
    user = rng.choice(users)
    listed = mem.memories.list(user, limit=50)
    if listed:
        mem.memories.delete(user, rng.choice(listed).id)


def _forget_user(mem: MemoryClient, rng: random.Random, users: Sequence[str]) -> None:
    user = rng.choice(users)
    mem.forget_user(user)
    mem.profiles.ensure(user)


OPERATIONS: dict[str, tuple[Operation, float]] = {
    "write_many": (_write_many, 5.0),
    "search": (_search, 3.0),
    "facts.put": (_facts_put, 1.5),
    "pii.store": (_pii_store, 1.5),
    "memories.delete": (_memories_delete, 2.0),
    "forget_user": (_forget_user, 0.4),
}
"""Each operation of the mix and its weight (how often a thread picks it)."""


@dataclass
class Tally:
    """Outcomes of the mix: per operation, ``ok`` or a :class:`DualtrackError` code;
    any other exception is ``untyped`` and kept with its traceback."""

    outcomes: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    latencies_ms: defaultdict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    untyped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, op: str, outcome: str, ms: float, trace: str | None = None) -> None:
        """Count one call of ``op``."""
        with self._lock:
            self.outcomes[op][outcome] += 1
            self.latencies_ms[op].append(ms)
            if trace is not None:
                self.untyped.append(trace)

    def count(self, outcome: str) -> int:
        """Calls of every operation that ended with ``outcome``."""
        return sum(c[outcome] for c in self.outcomes.values())

    def codes(self) -> list[str]:
        """Every outcome seen, ``ok`` first."""
        seen = {o for c in self.outcomes.values() for o in c}
        return sorted(seen, key=lambda o: (o != "ok", o))


def run_mix(
    mem: MemoryClient,
    *,
    seconds: float,
    threads: int,
    users: Sequence[str] = USERS,
    seed: int = 8,
) -> Tally:
    """Run the mix on ``threads`` threads until ``seconds`` have passed (each thread
    finishes the call it is in), over ``users``, which must exist; returns the tally."""
    tally = Tally()
    names = list(OPERATIONS)
    weights = [w for _, w in OPERATIONS.values()]
    deadline = time.monotonic() + seconds

    def worker(rng: random.Random) -> None:
        while time.monotonic() < deadline:
            op = rng.choices(names, weights)[0]
            started = time.perf_counter()
            try:
                OPERATIONS[op][0](mem, rng, users)
            except DualtrackError as exc:
                tally.record(op, exc.code, elapsed_ms(started))
            except Exception as exc:  # the drill's subject: counted, and kept for the report
                trace = f"{op}: {type(exc).__module__}.{type(exc).__qualname__}\n"
                tally.record(op, "untyped", elapsed_ms(started), trace + traceback.format_exc())
            else:
                tally.record(op, "ok", elapsed_ms(started))

    started = time.perf_counter()
    workers = [
        threading.Thread(target=worker, args=(random.Random(seed * 1000 + i),), name=f"mix-{i}")
        for i in range(threads)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    tally.seconds = time.perf_counter() - started
    return tally


class _RetryCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.retries = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg.startswith("transient conflict"):
            self.retries += 1


@contextlib.contextmanager
def counting_retries() -> Iterator[_RetryCounter]:
    """Count the SDK's retries after a deadlock or serialization failure
    (``Database.retrying`` logs each one) while the block runs."""
    logger = logging.getLogger("structured_memory.database")
    counter = _RetryCounter()
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(counter)
    try:
        yield counter
    finally:
        logger.removeHandler(counter)
        logger.setLevel(level)


INVARIANTS: dict[str, str] = {
    "fragment_pii_without_vault_entry": """
        SELECT count(*) FROM memory_fragment f
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(f.metadata -> 'pii') = 'array'
                 THEN f.metadata -> 'pii' ELSE '[]'::jsonb END) AS ref
        WHERE NOT EXISTS (
            SELECT 1 FROM pii_vault v
            WHERE v.id::text = ref ->> 'vault_id' AND v.user_id = f.user_id)""",
    "fact_without_vault_entry": """
        SELECT count(*) FROM memory_fact f
        WHERE jsonb_typeof(f.value) = 'object' AND f.value ? 'vault_id'
          AND NOT EXISTS (
            SELECT 1 FROM pii_vault v
            WHERE v.id::text = f.value ->> 'vault_id' AND v.user_id = f.user_id)""",
    "fragment_without_profile": """
        SELECT count(*) FROM memory_fragment f
        WHERE NOT EXISTS (SELECT 1 FROM user_profile p WHERE p.user_id = f.user_id)""",
    "vault_entry_without_profile": """
        SELECT count(*) FROM pii_vault v
        WHERE NOT EXISTS (SELECT 1 FROM user_profile p WHERE p.user_id = v.user_id)""",
    "duplicate_vault_rows": """
        SELECT coalesce(sum(n - 1), 0) FROM (
            SELECT count(*) AS n FROM pii_vault WHERE blind_mac IS NOT NULL
            GROUP BY user_id, kind, blind_mac HAVING count(*) > 1) AS d""",
}
"""Consistency checks over every user, each counting the rows that break it."""


def invariant_violations(mem: MemoryClient) -> dict[str, int]:
    """How many rows break each of :data:`INVARIANTS` (all zero when consistent)."""
    with mem.admin.database.transaction() as conn:
        return {name: int(conn.execute(text(sql)).scalar_one()) for name, sql in INVARIANTS.items()}


def server_deadlocks(mem: MemoryClient) -> int:
    """Deadlocks the server has detected in this database since its statistics were reset
    (pooled connections are closed first, so their backends report what they saw)."""
    mem.admin.database.dispose()
    with mem.admin.database.transaction() as conn:
        return int(
            conn.execute(
                text("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
            ).scalar_one()
        )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the mix for ``--seconds`` and print operations per second and outcomes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a 5 s run")
    parser.add_argument("--seconds", type=float, help="length of the run (15; 5 with --quick)")
    parser.add_argument("--threads", type=int, default=6, help="threads (6)")
    parser.add_argument("--seed", type=int, default=8, help="seed of the threads' choices (8)")
    args = parser.parse_args(argv)
    seconds = args.seconds or (5.0 if args.quick else 15.0)

    with bench_client("mixed-load") as mem:
        fresh_users(mem, USERS)
        mem.search(USERS[0], QUERIES[0])  # loads the analysers before the clock starts
        deadlocks_before = server_deadlocks(mem)
        with counting_retries() as retries:
            tally = run_mix(mem, seconds=seconds, threads=args.threads, seed=args.seed)
        deadlocks = server_deadlocks(mem) - deadlocks_before
        violations = invariant_violations(mem)

    codes = tally.codes()
    rows = []
    for op in OPERATIONS:
        outcomes, stats = tally.outcomes[op], latency_stats(tally.latencies_ms[op])
        calls = sum(outcomes.values())
        rows.append(
            [op, calls, calls / tally.seconds, stats["p50_ms"], stats["p95_ms"]]
            + [outcomes[c] for c in codes]
        )
    total = sum(sum(c.values()) for c in tally.outcomes.values())
    rows.append(["all", total, total / tally.seconds, "", ""] + [tally.count(c) for c in codes])
    print_table(
        f"Mixed load: {args.threads} threads, {tally.seconds:.1f} s, {len(USERS)} users "
        "(outcomes by error code)",
        ["operation", "calls", "calls/s", "p50 ms", "p95 ms", *codes],
        rows,
    )
    print_table(
        "Deadlocks and consistency",
        ["measure", "count"],
        [
            ["SDK retries after a deadlock or serialization failure", retries.retries],
            ["deadlocks detected by the server", deadlocks],
            *([name, n] for name, n in violations.items()),
        ],
    )
    for trace in tally.untyped[:3]:
        console.print(trace)
    report: dict[str, Any] = {
        "seconds": round(tally.seconds, 2),
        "threads": args.threads,
        "users": len(USERS),
        "seed": args.seed,
        "weights": {op: w for op, (_, w) in OPERATIONS.items()},
        "operations": {
            op: {
                "calls": sum(tally.outcomes[op].values()),
                "calls_per_s": round(sum(tally.outcomes[op].values()) / tally.seconds, 2),
                "outcomes": dict(tally.outcomes[op]),
                "latency": latency_stats(tally.latencies_ms[op]),
            }
            for op in OPERATIONS
        },
        "sdk_retries": retries.retries,
        "server_deadlocks": deadlocks,
        "invariant_violations": violations,
        "untyped": tally.untyped[:20],
    }
    write_result("mixed_load-quick" if args.quick else "mixed_load", report)
    return report


if __name__ == "__main__":
    main()
