"""``dualtrack retokenise`` over a ledger of the previous release: rows/s of the first run
(every English row rewritten) and of a second run (nothing to write: the cost of resuming
or re-running, which is what a migration marker would save).

Rows of the previous release are written with stemming switched off (its write path:
keyword terms were the plain tokens), in sessions, so contexts are recomputed too. Two
layouts of the same row count: 100 rows per user, and 10 rows per user.

Usage: ``python -m benchmarks.retokenise [--quick]`` (10,000 rows; 2,000 with --quick).
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from benchmarks.common import bench_client, console, fresh_users, print_table, write_result
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from unstructured_memory import tokenize
from values.inputs import MemoryInput

_EN = [
    "We went camping with the kids near the lakes last weekend",
    "She started painting sunsets after her classes ended",
    "He was running three marathons and training every morning",
    "They adopted two puppies and named them after the planets",
    "I'm travelling to Hangzhou and checking the shipments tomorrow",
]
_ZH = [
    "订单 88231 的扫地机不回充，申请退款 RF20260629001",
    "客服说退款预计 1-3 个工作日到账",
]


def _old_ledger(mem: MemoryClient, users: int, per_user: int, tag: str) -> None:
    """``users`` × ``per_user`` rows as the previous release wrote them (sessions of 10)."""
    ids = [f"retok-{tag}-{u:05d}" for u in range(users)]
    fresh_users(mem, ids)
    rng = random.Random(7)
    items = [
        MemoryInput(
            user_id=user,
            text=rng.choice(_ZH if n % 5 == 4 else _EN) + f" #{n}",
            lifecycle_policy=LifecyclePolicy.IMPLICIT,
            session_id=f"s-{n // 10}",
        )
        for user in ids
        for n in range(per_user)
    ]
    stem = tokenize.stem
    setattr(tokenize, "stem", lambda word: word)  # noqa: B010  (the previous release)
    try:
        mem.write_many(items, batch_size=500, progress=False)
    finally:
        setattr(tokenize, "stem", stem)  # noqa: B010


def _run(mem: MemoryClient) -> dict[str, Any]:
    t0 = time.perf_counter()
    report = mem.admin.retokenise()
    seconds = time.perf_counter() - t0
    return {
        "users": report.users,
        "examined": report.examined,
        "changed": report.changed,
        "seconds": round(seconds, 2),
        "rows_per_s": round(report.examined / seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2,000 rows instead of 10,000")
    args = parser.parse_args()
    total = 2_000 if args.quick else 10_000
    results: dict[str, Any] = {}
    rows = []
    with bench_client("retokenise") as mem:
        for per_user in (100, 10):
            users = total // per_user
            with mem.admin.database.transaction() as conn:  # only this layout's rows are present
                conn.exec_driver_sql("TRUNCATE memory_fragment, fragment_outbox")
            _old_ledger(mem, users, per_user, str(per_user))
            layout = f"{users} users x {per_user}"
            first, second = _run(mem), _run(mem)
            results[layout] = {"first": first, "second": second}
            for name, r in (("first (rewrite)", first), ("second (no-op)", second)):
                rows.append(
                    [layout, name, r["examined"], r["changed"], r["seconds"], r["rows_per_s"]]
                )
    print_table(
        "dualtrack retokenise (pgvector, the default embedder)",
        ["ledger", "run", "rows", "changed", "s", "rows/s"],
        rows,
    )
    console.print("first: every English row's terms rewritten; second: read and compared only")
    write_result(
        "retokenise-quick" if args.quick else "retokenise", {"rows": total, "results": results}
    )


if __name__ == "__main__":
    main()
