"""Audit log and confidence decay: what an audit entry costs, and how fast the decay runs.

Measures, in one run on one server:
- a transaction appending one audit entry against the same transaction without it
  (p50/p95), so the difference is what auditing adds to a single change;
- ``record_many`` of a write batch's entries (256) in one transaction, against
  ``write_many`` of 256 memories, so the audit's share of a batch is visible;
- ``decay_inferred`` over inferred facts unused for ten days (rows/s), and the same
  run again on the same day (idempotent: nothing to do).

Usage: ``python -m benchmarks.audit [--quick]``.
"""

from __future__ import annotations

import argparse
import time
import uuid
from datetime import UTC, datetime, timedelta
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
from policies.audit import AuditAction
from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from sdk.client import MemoryClient
from structured_memory.audit import record, record_many
from values.inputs import MemoryInput

BATCH = 256


def single_entry(mem: MemoryClient, user: str, rounds: int) -> dict[str, Any]:
    """One ``UPDATE`` of the profile per transaction, with and without one audit entry."""
    scope = UserScope(user, "bench")
    touch = text("UPDATE user_profile SET updated_at = now() WHERE user_id = :u")
    samples: dict[str, list[float]] = {"without": [], "with": []}
    for _ in range(rounds):  # alternated, so load on the machine hits both alike
        for name, values in samples.items():
            t0 = time.perf_counter()
            with mem.admin.database.transaction() as conn:
                conn.execute(touch, {"u": user})
                if name == "with":
                    record(conn, scope, AuditAction.PROFILE_UPDATE, details={"version": 1})
            values.append(elapsed_ms(t0))
    return {name: latency_stats(values) for name, values in samples.items()}


def batch_share(mem: MemoryClient, user: str, batches: int) -> dict[str, Any]:
    """``record_many`` of 256 entries against ``write_many`` of 256 memories."""
    scope = UserScope(user, "bench")
    audit_ms, write_ms = [], []
    for b in range(batches):
        entries = [(uuid.uuid4(), {"kind": "note", "policy": "implicit"}) for _ in range(BATCH)]
        t0 = time.perf_counter()
        with mem.admin.database.transaction() as conn:
            record_many(conn, scope, AuditAction.WRITE, entries)
        audit_ms.append(elapsed_ms(t0))
        items = [
            MemoryInput(
                user_id=user,
                text=f"订单 8823{i % 10} 第 {b}-{i} 次咨询退款进度",
                lifecycle_policy=LifecyclePolicy.IMPLICIT,
            )
            for i in range(BATCH)
        ]
        t0 = time.perf_counter()
        mem.write_many(items, batch_size=BATCH, progress=False)
        write_ms.append(elapsed_ms(t0))
    audit, write = latency_stats(audit_ms), latency_stats(write_ms)
    return {"record_many": audit, "write_many": write, "share": audit["p50_ms"] / write["p50_ms"]}


def decay_run(mem: MemoryClient, users: list[str], per_user: int) -> dict[str, Any]:
    """Decay ``per_user`` IMPLICIT facts of each user, last used ten days ago."""
    now = datetime.now(UTC)
    rows = [
        {
            "u": u,
            "k": f"偏好.{i}",
            "used": now - timedelta(days=10),
            "exp": now + timedelta(days=20),
        }
        for u in users
        for i in range(per_user)
    ]
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text(
                "INSERT INTO memory_fact (user_id, key, value, policy, renew_days, "
                "last_used_at, expires_at) VALUES (:u, :k, '\"图文\"', 'implicit', 30, :used, :exp)"
            ),
            rows,
        )
    t0 = time.perf_counter()
    report = mem.admin.decay(now=now)
    first_s = (time.perf_counter() - t0) or 1e-9
    t0 = time.perf_counter()
    again = mem.admin.decay(now=now)
    second_ms = elapsed_ms(t0)
    return {
        "rows": len(rows),
        "decayed": report.decayed,
        "rows_per_s": report.decayed / first_s,
        "first_run_s": first_s,
        "second_run_decayed": again.decayed,
        "second_run_ms": second_ms,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run every measurement, print tables, write ``results/audit[-quick].json``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="Smaller, faster run.")
    args = parser.parse_args(argv)
    rounds, batches, n_users, per_user = (200, 3, 50, 20) if args.quick else (2000, 10, 200, 50)

    with bench_client("audit") as mem:
        users = [f"bench-audit-{i:04d}" for i in range(n_users)]
        console.print(f"preparing {n_users} users…")
        fresh_users(mem, ["bench-audit-writer", *users])
        single = single_entry(mem, "bench-audit-writer", rounds)
        share = batch_share(mem, "bench-audit-writer", batches)
        decay = decay_run(mem, users, per_user)

    print_table(
        "one audited change (ms)",
        ["transaction", "p50", "p95", "mean"],
        [[k, v["p50_ms"], v["p95_ms"], v["mean_ms"]] for k, v in single.items()],
    )
    print_table(
        f"a write batch of {BATCH} (ms)",
        ["call", "p50", "p95"],
        [
            [
                "record_many (audit only)",
                share["record_many"]["p50_ms"],
                share["record_many"]["p95_ms"],
            ],
            [
                "write_many (audit included)",
                share["write_many"]["p50_ms"],
                share["write_many"]["p95_ms"],
            ],
        ],
    )
    print_table(
        "decay",
        ["measure", "value"],
        [
            ["inferred facts", decay["rows"]],
            ["decayed", decay["decayed"]],
            ["rows/s", decay["rows_per_s"]],
            ["same-day rerun: decayed", decay["second_run_decayed"]],
            ["same-day rerun (ms)", decay["second_run_ms"]],
        ],
    )
    payload = {"quick": args.quick, "single_entry": single, "batch": share, "decay": decay}
    write_result("audit-quick" if args.quick else "audit", payload)
    return payload


if __name__ == "__main__":
    main()
