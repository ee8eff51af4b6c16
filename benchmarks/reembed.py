"""``dualtrack reembed`` from ``hashing`` to ``wordvectors``: rows/s of the first run
(every row embedded again, with its session context) and of a second run (nothing left:
the cost of resuming or of picking up what old pods wrote meanwhile).

The ledger is written by a client pinned to ``hashing``, in sessions of 10 (a fifth of
the rows Chinese), then moved by ``mem.admin.reembed()`` as the command does. The
embedding space is set back to ``hashing`` first, so the benchmark can be run again on
its data dir.

Usage: ``python -m benchmarks.reembed [--quick]`` (10,000 rows over 100 users; 2,000
with --quick).
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from benchmarks.common import bench_client, fresh_users, print_table, write_result
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from structured_memory.embedding_space import set_embedding_space
from values.inputs import MemoryInput

_EN = [
    "We went camping with the kids near the lakes last weekend",
    "She asked whether the blender could be exchanged for a quieter one",
]
_ZH = [
    "订单 88231 的扫地机不回充，申请退款 RF20260629001",
    "用户说周末带女儿去公园玩得很开心，想买一辆儿童自行车",
    "客服说退款预计 1-3 个工作日到账，用户希望以后微信通知",
]
_PER_USER = 100


def _hashed_ledger(mem: MemoryClient, rows: int) -> None:
    """``rows`` memories written with the hashing embedder (sessions of 10)."""
    ids = [f"reembed-{u:05d}" for u in range(rows // _PER_USER)]
    fresh_users(mem, ids)
    rng = random.Random(7)
    mem.write_many(
        [
            MemoryInput(
                user_id=user,
                text=rng.choice(_EN if n % 5 == 4 else _ZH) + f" #{n}",
                lifecycle_policy=LifecyclePolicy.IMPLICIT,
                session_id=f"s-{n // 10}",
            )
            for user in ids
            for n in range(_PER_USER)
        ],
        batch_size=500,
        progress=False,
    )


def _run(mem: MemoryClient) -> dict[str, Any]:
    t0 = time.perf_counter()
    report = mem.admin.reembed()
    seconds = time.perf_counter() - t0
    return {
        "users": report.users,
        "embedded": report.embedded,
        "seconds": round(seconds, 2),
        "rows_per_s": round(report.embedded / seconds) if report.embedded else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2,000 rows instead of 10,000")
    args = parser.parse_args()
    total = 2_000 if args.quick else 10_000
    with bench_client("reembed", embedder="hashing") as old:
        set_embedding_space(old.admin.database, old.admin.embedder.name, 1024)
        with old.admin.database.transaction() as conn:  # only this run's rows are present
            conn.exec_driver_sql("TRUNCATE memory_fragment, fragment_outbox")
        _hashed_ledger(old, total)
    with bench_client("reembed", embedder="wordvectors") as new:
        first, second = _run(new), _run(new)
    rows = [
        [name, r["embedded"], r["seconds"], r["rows_per_s"] or "-"]
        for name, r in (("first (every row)", first), ("second (nothing left)", second))
    ]
    print_table(
        "dualtrack reembed, hashing -> wordvectors (pgvector)",
        ["run", "rows embedded", "s", "rows/s"],
        rows,
    )
    write_result(
        "reembed-quick" if args.quick else "reembed",
        {"rows": total, "first": first, "second": second},
    )


if __name__ == "__main__":
    main()
