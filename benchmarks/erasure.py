"""What an erasure leaves in PostgreSQL's files, and what ``forget_user`` costs.

Residue: background users and one erased user whose every value is a rare string
(memory words, a keyword term, a session id, a fact, an attribute, a link id, a metadata value, the
user id). After each step, a ``CHECKPOINT``, then every file of every user table is
read: the heap's tuples (what a page's line pointers give storage to, live or dead),
the rest of the heap's bytes (free space), the TOAST table, each index, and
``pg_wal``. The table counts the erased values found in each, of 8:

1. before the erasure (the needles are real);
2. right after ``forget_user`` (its own vacuum: heap pruned, indexes untouched);
3. after other users wrote as many rows again (free space reused);
4. after ``dualtrack sweep``'s vacuum (``VACUUM (ANALYZE)``, indexes cleaned);
5. after ``REINDEX TABLE CONCURRENTLY`` of the user tables.

Cost: ``forget_user`` latency p50/p95 with its vacuum on and off
(``erasure_vacuum_timeout_s=0``), erasing users of ``--memories`` memories each from
a ledger of the background users.

    python -m benchmarks.erasure [--quick]
"""

from __future__ import annotations

import argparse
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import text

from benchmarks.common import (
    bench_client,
    console,
    elapsed_ms,
    latency_stats,
    print_table,
    write_result,
)
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from structured_memory.cross_user import USER_TABLES
from values.inputs import MemoryInput

__all__ = ["file_tuples", "main", "page_tuples", "relation_files"]

PAGE_HEADER = 24  # PageHeaderData
LP_NORMAL = 1  # a line pointer whose tuple has storage (live, or dead until pruned)
EXPLICIT = LifecyclePolicy.EXPLICIT


def page_tuples(page: bytes) -> Iterator[bytes]:
    """The tuples of one heap page that have storage (``LP_NORMAL`` line pointers)."""
    lower = struct.unpack_from("<H", page, 12)[0]
    for at in range(PAGE_HEADER, lower, 4):
        (item,) = struct.unpack_from("<I", page, at)
        offset, flags, length = item & 0x7FFF, (item >> 15) & 0x3, item >> 17
        if flags == LP_NORMAL and length:
            yield page[offset : offset + length]


def _segments(base: Path) -> Iterator[Path]:
    yield base
    n = 1
    while (segment := base.with_name(f"{base.name}.{n}")).exists():
        yield segment
        n += 1


def relation_files(mem: MemoryClient, tables: list[str]) -> tuple[int, dict[str, list[Path]]]:
    """After a CHECKPOINT: the block size, and the files of ``tables`` by place
    (``heap:<table>``, ``toast:<table>``, ``index:<table>:<index>:<method>``)."""
    with mem.admin.database.transaction() as conn:
        conn.execute(text("CHECKPOINT"))
        data_dir = Path(conn.execute(text("SHOW data_directory")).scalar_one())
        block = int(conn.execute(text("SHOW block_size")).scalar_one())
        rows = conn.execute(
            text(
                """
                SELECT 'heap:' || c.relname AS place, pg_relation_filepath(c.oid) AS path
                FROM pg_class c WHERE c.relname = ANY(:tables)
                  AND c.relnamespace = current_schema()::regnamespace
                UNION ALL
                SELECT 'toast:' || c.relname, pg_relation_filepath(c.reltoastrelid)
                FROM pg_class c WHERE c.relname = ANY(:tables) AND c.reltoastrelid <> 0
                  AND c.relnamespace = current_schema()::regnamespace
                UNION ALL
                SELECT 'index:' || c.relname || ':' || i.relname || ':' || a.amname,
                       pg_relation_filepath(i.oid)
                FROM pg_class c JOIN pg_index x ON x.indrelid = c.oid
                JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am a ON a.oid = i.relam
                WHERE c.relname = ANY(:tables)
                  AND c.relnamespace = current_schema()::regnamespace
                """
            ),
            {"tables": tables},
        ).all()
    return block, {r.place: list(_segments(data_dir / r.path)) for r in rows}


def wal_files(mem: MemoryClient) -> list[Path]:
    with mem.admin.database.transaction() as conn:
        data_dir = Path(conn.execute(text("SHOW data_directory")).scalar_one())
    return sorted(p for p in (data_dir / "pg_wal").iterdir() if p.is_file())


def _needles(tag: str) -> dict[str, str]:
    """One erased user's values, each a string no other row holds."""
    return {
        "user id": f"erase-{tag}-buyer",
        "memory word": f"鸢尾{tag}花瓣",
        "keyword term": f"iris{tag}petal".replace("-", ""),
        "session id": f"sess-{tag}-erase",
        "fact value": f"菜鸟驿站{tag}号柜",
        "attribute": f"铂金{tag}会员",
        "link id": f"ORD-{tag}-88231",
        "metadata": f"渠道{tag}小程序",
    }


def _populate(mem: MemoryClient, values: dict[str, str], memories: int) -> None:
    user = values["user id"]
    profile = mem.profiles.ensure(user)
    mem.profiles.update(
        user, expected_version=profile.version, attributes={"等级": values["attribute"]}
    )
    mem.links.add(user, entity_type="order", entity_id=values["link id"], role="owner")
    mem.facts.put(user, "送货偏好", values["fact value"], lifecycle_policy=EXPLICIT)
    mem.write_many(
        [
            MemoryInput(
                user_id=user,
                text=f"第 {i} 次咨询：{values['memory word']} 的包裹 {values['keyword term']}",
                lifecycle_policy=EXPLICIT,
                session_id=values["session id"],
                metadata={"渠道": values["metadata"]},
            )
            for i in range(memories)
        ],
        progress=False,
    )


def _background(mem: MemoryClient, round_: str, users: int, memories: int) -> None:
    for u in range(users):
        _populate(mem, _needles(f"bg{round_}x{u}"), memories)


def file_tuples(paths: list[Path], block: int) -> Iterator[bytes]:
    """The tuples with storage in a heap's files."""
    for path in paths:
        raw = path.read_bytes()
        for start in range(0, len(raw), block):
            yield from page_tuples(raw[start : start + block])


def _scan(mem: MemoryClient, needles: list[bytes]) -> dict[str, int]:
    """How many of ``needles`` each place holds."""
    block, files = relation_files(mem, USER_TABLES)
    found: dict[str, set[bytes]] = {}
    for place, paths in files.items():
        raw = b"".join(p.read_bytes() for p in paths)
        kind = place.split(":")[0]
        if kind == "heap":
            tuples = b"\x00".join(file_tuples(paths, block))
            found.setdefault("heap tuples", set()).update(n for n in needles if n in tuples)
            kind, raw = "heap free space", _outside(raw, block)
        if kind == "index":
            kind = f"{place.split(':')[3]} indexes"
        found.setdefault(kind, set()).update(n for n in needles if n in raw)
    wal = wal_files(mem)
    found["pg_wal"] = {n for n in needles if any(n in p.read_bytes() for p in wal)}
    return {place: len(hits) for place, hits in found.items()}


def _outside(raw: bytes, block: int) -> bytes:
    """A heap file's bytes with its tuples' bytes blanked (what is left: free space)."""
    out = bytearray(raw)
    for start in range(0, len(raw), block):
        page = raw[start : start + block]
        lower = struct.unpack_from("<H", page, 12)[0]
        for at in range(PAGE_HEADER, lower, 4):
            (item,) = struct.unpack_from("<I", page, at)
            offset, flags, length = item & 0x7FFF, (item >> 15) & 0x3, item >> 17
            if flags == LP_NORMAL and length:
                out[start + offset : start + offset + length] = bytes(length)
    return bytes(out)


def _residue(mem: MemoryClient, users: int, memories: int) -> list[tuple[str, dict[str, int]]]:
    with mem.admin.database.transaction() as conn:
        conn.exec_driver_sql("CHECKPOINT")
    _background(mem, "a", users, memories)
    erased = _needles("target")
    _populate(mem, erased, memories)
    needles = [v.encode() for v in erased.values()]
    steps = [("1 before", _scan(mem, needles))]
    mem.forget_user(erased["user id"])
    steps.append(("2 forget_user", _scan(mem, needles)))
    _background(mem, "b", users, memories)
    steps.append(("3 others wrote", _scan(mem, needles)))
    mem.admin.sweep()
    steps.append(("4 sweep vacuum", _scan(mem, needles)))
    with mem.admin.database.engine.connect() as conn:
        auto = conn.execution_options(isolation_level="AUTOCOMMIT")
        for table in USER_TABLES:
            auto.exec_driver_sql(f"REINDEX TABLE CONCURRENTLY {table}")
    steps.append(("5 reindex", _scan(mem, needles)))
    return steps


def _erase_cost(mem: MemoryClient, users: int, memories: int) -> dict[str, Any]:
    samples: list[float] = []
    for u in range(users):
        values = _needles(f"cost{u}-{time.time_ns()}")
        _populate(mem, values, memories)
        started = time.perf_counter()
        mem.forget_user(values["user id"])
        samples.append(elapsed_ms(started))
    return latency_stats(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="60 background users, not 300")
    parser.add_argument("--memories", type=int, default=20, help="memories per user")
    args = parser.parse_args()
    users = 60 if args.quick else 300
    with bench_client("erasure") as mem:
        with mem.admin.database.transaction() as conn:  # only this run's rows are present
            conn.exec_driver_sql(f"TRUNCATE {', '.join(USER_TABLES)} CASCADE")
        steps = _residue(mem, users, args.memories)
        cost = {"vacuum on": _erase_cost(mem, 20, args.memories)}
    with bench_client("erasure", erasure_vacuum_timeout_s=0) as off:
        cost["vacuum off"] = _erase_cost(off, 20, args.memories)
    places = sorted({p for _, found in steps for p in found})
    print_table(
        f"erased values (of 8) found after each step, {users} other users x {args.memories}",
        ["place", *(name for name, _ in steps)],
        [[p, *(found.get(p, 0) for _, found in steps)] for p in places],
    )
    print_table(
        "forget_user latency, ms",
        ["erasure vacuum", "n", "p50", "p95", "mean"],
        [[k, v["n"], v["p50_ms"], v["p95_ms"], v["mean_ms"]] for k, v in cost.items()],
    )
    console.print("heap tuples: live or dead tuples with storage; free space: the rest")
    write_result(
        "erasure-quick" if args.quick else "erasure",
        {"users": users, "memories": args.memories, "steps": dict(steps), "forget_user": cost},
    )


if __name__ == "__main__":
    main()
