"""Write throughput: ``write_many`` memories/s, a single ``mem.write``'s latency, peak memory
and the time of each stage of the write path.

Realistic memories from a fixed seed: Chinese e-commerce fragments with PII (phones,
e-mail addresses, order, refund and tracking ids; :class:`benchmarks.unstructured.Generator`)
and, one in four, English ones of the same kind. Everything the defaults turn on is
on: the rule summariser (entities, intent), PII masking and vaulting, contextual
indexing (two embeddings per fragment in a session), the hashing embedder, the pgvector
index (the ledger is the index: a write is searchable when ``write_many`` returns;
a derived index's catch-up is added to the time).

In one run:

- a warm-up write (pipelines and caches loaded, not timed);
- ``write_many`` throughput at the default batch size (256) and at 2,000, on fresh
  memories each; the stages of the default-batch run, as the write path names them
  (:func:`sdk.write_path.observe_stages`), in ms, µs per memory and share of the wall
  time; ``other`` is what no stage holds (profile locks, commits); and this process's
  CPU time per memory (PostgreSQL's is not in it);
- a searchable check: a sample of the written memories searched for by their own text
  (share found in the top 10);
- single ``mem.write`` latency p50/p95;
- ``end_session`` of 6-turn transcripts (sessions/s and latency; record, profile merge,
  instructions and links in one transaction each), Chinese and English in the same share;
- peak memory: the process's RSS high-water mark (``getrusage``, the whole run,
  pipelines and caches included) and the Python heap peak (``tracemalloc``) of a
  separate, untimed ``write_many`` of 1,000 memories (500 with ``--quick``).

    python -m benchmarks.writes [--quick]
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
import tracemalloc
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from benchmarks.common import (
    bench_client,
    console,
    elapsed_ms,
    fresh_users,
    latency_stats,
    print_table,
    wait_for_index,
    write_result,
)
from benchmarks.unstructured import BASE_TIME, Generator
from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk.client import MemoryClient
from sdk.write_path import STAGES, observe_stages
from values.inputs import MemoryInput
from values.sessions import Turn

__all__ = ["Mixed", "main"]

SEED = 20260705
USERS = 200
MEMORIES = 10_000
QUICK_MEMORIES = 2_000
BATCH_SIZES = (256, 2_000)
SINGLE_WRITES = 300
QUICK_SINGLE_WRITES = 100
ENGLISH_SHARE = 0.25
SEARCH_CHECKS = 50
SESSIONS = 300
QUICK_SESSIONS = 100

_ZH_SESSION = (
    ("user", "订单 {order} 的{product}用了几天就{problem}，能退款吗"),
    ("assistant", "非常抱歉，已为您提交退款，退款编号 {refund}。"),
    ("user", "多久能到账？以后有事{channel}通知我"),
    ("assistant", "预计 1-3 个工作日原路退回。"),
    ("user", "好的，快递放{dropoff}就行，不是 {wrong} 是 {order}"),
    ("assistant", "收到，已备注。"),
)
_EN_SESSION = (
    ("user", "The {product} from order {order} {problem}, can I get a refund?"),
    ("assistant", "Sorry about that, refund {refund} is issued."),
    ("user", "How long will it take? From now on please {channel} me"),
    ("assistant", "3-5 business days back to your card."),
    ("user", "Thanks, and leave parcels {dropoff}. Sorry, it's {order} not {wrong}"),
    ("assistant", "Noted."),
)
_ZH_FILL = {
    "product": ("扫地机", "破壁机", "空气炸锅", "电动牙刷", "蓝牙耳机"),
    "problem": ("不转了", "充不进电", "漏水", "异响", "开不了机"),
    "channel": ("微信", "短信", "电话"),
    "dropoff": ("丰巢柜", "驿站", "门卫"),
}
_EN_FILL = {
    "product": ("kettle", "blender", "air fryer", "electric toothbrush", "headphones"),
    "problem": ("stopped working", "leaks", "won't charge", "rattles"),
    "channel": ("text", "email", "call"),
    "dropoff": ("with the concierge", "at the parcel locker", "at the front desk"),
}

_EN_TEMPLATES = (
    "Order {order} still hasn't shipped, I paid ${amount} last week",
    "I want a refund for order {order}, reason: {reason}",
    "Has refund {refund} reached my card yet? It was ${amount}",
    "Tracking number {tracking} has not moved for three days",
    "My phone number is {phone}, please text me when the parcel moves",
    "Send the invoice for order {order} to {email}",
    "The {product} arrived damaged, I'd like an exchange",
    "I'm travelling to {city} next week, hold order {order} until I'm back",
    "Please change the delivery address of order {order} to {city}",
    "I prefer WeChat notifications, not e-mail, for order {order}",
    "The {product} I bought last month works great, ordering another one as a gift",
    "Coupon was not applied to order {order}, I was charged ${amount} too much",
)
_EN_REASONS = (
    "wrong size",
    "it stopped working",
    "wrong colour",
    "arrived late",
    "not as described",
)
_EN_PRODUCTS = (
    "iPhone 15 Pro",
    "Kindle Paperwhite",
    "Dyson hair dryer",
    "Lego Falcon",
    "AirPods Pro",
)
_EN_CITIES = ("Shanghai", "Beijing", "Hangzhou", "Shenzhen", "Chengdu")


class Mixed:
    """Chinese memories from :class:`Generator` with English ones mixed in, deterministic."""

    def __init__(self, seed: int = SEED, users: int = USERS) -> None:
        self._zh = Generator(seed, users)
        self._rng = random.Random(seed + 1)
        self.users = self._zh.users

    def _english(self, user: str) -> MemoryInput:
        rng = self._rng
        values = {
            "order": str(rng.randint(10_000, 99_999_999)),
            "refund": f"RF{BASE_TIME:%Y%m%d}{rng.randint(0, 99_999):05d}",
            "tracking": f"SF{rng.randint(10**11, 10**12 - 1)}",
            "amount": f"{rng.randint(5, 999)}.{rng.choice(('00', '50', '99'))}",
            "reason": rng.choice(_EN_REASONS),
            "product": rng.choice(_EN_PRODUCTS),
            "city": rng.choice(_EN_CITIES),
            "phone": f"139{rng.randint(1000, 9999)}{rng.randint(1000, 9999)}",
            "email": f"buyer{rng.randint(1, 99_999)}@example.com",
        }
        return MemoryInput(
            user_id=user,
            text=rng.choice(_EN_TEMPLATES).format(**values),
            lifecycle_policy=rng.choice((LifecyclePolicy.IMPLICIT, LifecyclePolicy.EXPLICIT)),
            session_id=f"s-{user}-en{rng.randint(0, 9)}",
            occurred_at=BASE_TIME - timedelta(minutes=rng.randint(0, 60 * 24 * 30)),
            metadata={"lang": "en"},
            kind=MemoryKind.NOTE,
        )

    def memories(self, n: int) -> list[MemoryInput]:
        """The next ``n`` memories of the stream."""
        return [
            self._english(item.user_id) if self._rng.random() < ENGLISH_SHARE else item
            for item in self._zh.fragments(n)
        ]


def _peak_rss_mib() -> float:
    """This process's RSS high-water mark (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def throughput(
    mem: MemoryClient, items: Sequence[MemoryInput], batch_size: int
) -> tuple[dict[str, Any], list[uuid.UUID]]:
    """``write_many`` of ``items`` until searchable: memories/s and the stages' times;
    the ids written."""
    spent = dict.fromkeys(STAGES, 0.0)

    def observe(stage: str, seconds: float, fragments: int) -> None:
        spent[stage] += seconds

    stop = observe_stages(observe)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        ids = mem.write_many(items, batch_size=batch_size, progress=False)
        written, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        stop()
    catch_up = wait_for_index(mem)
    wall = written + catch_up
    n = len(items)
    spent["other"] = written - sum(spent.values())
    stages = {
        stage: {
            "ms": round(1000 * s, 1),
            "us_per_memory": round(1e6 * s / n, 1),
            "share": round(s / written, 3),
        }
        for stage, s in spent.items()
    }
    result = {
        "memories": n,
        "batch_size": batch_size,
        "seconds": round(written, 2),
        "index_catch_up_s": round(catch_up, 2),
        "memories_per_s": round(n / wall, 1),
        "client_cpu_ms_per_memory": round(1000 * cpu / n, 3),
        "stages": stages,
    }
    return result, ids


def searchable(mem: MemoryClient, items: Sequence[MemoryInput], ids: Sequence[uuid.UUID]) -> float:
    """Share of a sample of written memories found in the top 10 by their own text."""
    rng = random.Random(SEED)
    sample = rng.sample(range(len(items)), min(SEARCH_CHECKS, len(items)))
    found = 0
    for i in sample:
        hits = mem.search(items[i].user_id, items[i].text, limit=10)
        found += any(h.memory_id == ids[i] for h in hits)
    return round(found / len(sample), 3)


def single_writes(mem: MemoryClient, items: Sequence[MemoryInput]) -> dict[str, float]:
    """Latency of ``mem.write`` one memory at a time."""
    samples = []
    for item in items:
        started = time.perf_counter()
        mem.write(
            item.user_id,
            item.text,
            lifecycle_policy=item.lifecycle_policy,
            session_id=item.session_id,
            occurred_at=item.occurred_at,
            metadata=item.metadata,
            kind=item.kind,
        )
        samples.append(elapsed_ms(started))
    return latency_stats(samples)


def transcripts(n: int, users: Sequence[str], seed: int) -> list[tuple[str, list[Turn]]]:
    """``n`` deterministic 6-turn after-sales sessions (user, turns), English in
    :data:`ENGLISH_SHARE` of them: a problem, a refund, an instruction, a correction."""
    rng = random.Random(seed + 2)
    out = []
    for i in range(n):
        english = rng.random() < ENGLISH_SHARE
        script, fill = (_EN_SESSION, _EN_FILL) if english else (_ZH_SESSION, _ZH_FILL)
        order = rng.randint(1_000_000, 99_999_999)
        values = {key: rng.choice(options) for key, options in fill.items()}
        values |= {
            "order": str(order),
            "wrong": str(order + rng.randint(1, 9)),
            "refund": f"RF{BASE_TIME:%Y%m%d}{i:05d}",
        }
        at = BASE_TIME - timedelta(days=rng.randint(1, 20))
        turns = [
            Turn(role, text.format(**values), at + timedelta(minutes=k))  # type: ignore[arg-type]
            for k, (role, text) in enumerate(script)
        ]
        out.append((users[i % len(users)], turns))
    return out


def end_sessions(mem: MemoryClient, sessions: Sequence[tuple[str, list[Turn]]]) -> dict[str, Any]:
    """``end_session`` of each transcript, one after another: sessions/s and latency."""
    samples = []
    started = time.perf_counter()
    for k, (user, turns) in enumerate(sessions):
        begin = time.perf_counter()
        mem.end_session(user, f"bench-end-{k}-{uuid.uuid4().hex[:6]}", turns)
        samples.append(elapsed_ms(begin))
    wall = time.perf_counter() - started
    return {
        "sessions": len(sessions),
        "turns_per_session": len(sessions[0][1]) if sessions else 0,
        "seconds": round(wall, 2),
        "sessions_per_s": round(len(sessions) / wall, 1),
        **latency_stats(samples),
    }


def heap_peak_mib(mem: MemoryClient, items: Sequence[MemoryInput]) -> float:
    """The Python heap peak (``tracemalloc``) of one ``write_many`` of ``items``, untimed."""
    tracemalloc.start()
    try:
        mem.write_many(items, progress=False)
        return round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
    finally:
        tracemalloc.stop()


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every phase on the bench data dir ``bench-writes``, its users emptied first."""
    n = args.memories or (QUICK_MEMORIES if args.quick else MEMORIES)
    singles = QUICK_SINGLE_WRITES if args.quick else SINGLE_WRITES
    traced = 500 if args.quick else 1_000
    gen = Mixed(args.seed, args.users)
    mem = bench_client("writes")
    try:
        started = time.perf_counter()
        fresh_users(mem, gen.users)
        console.print(f"emptied {len(gen.users)} users in {time.perf_counter() - started:.1f} s")
        mem.write_many(gen.memories(200), progress=False)  # warm-up
        runs = []
        found = float("nan")
        for batch_size in BATCH_SIZES:
            items = gen.memories(n)
            console.print(f"write_many of {n:,} memories, batch size {batch_size:,}")
            result, ids = throughput(mem, items, batch_size)
            runs.append(result)
            if batch_size == BATCH_SIZES[0]:
                found = searchable(mem, items, ids)
        single = single_writes(mem, gen.memories(singles))
        sessions = QUICK_SESSIONS if args.quick else SESSIONS
        ends = end_sessions(mem, transcripts(sessions, gen.users, args.seed))
        heap = heap_peak_mib(mem, gen.memories(traced))
    finally:
        mem.close()
    return {
        "memories": n,
        "users": args.users,
        "english_share": ENGLISH_SHARE,
        "index": "pgvector",
        "write_many": runs,
        "searchable_share": found,
        "single_write": single,
        "end_session": ends,
        "memory": {
            "peak_rss_mib": round(_peak_rss_mib(), 1),
            "tracemalloc_peak_mib": heap,
            "tracemalloc_memories": traced,
        },
    }


def _print(report: dict[str, Any]) -> None:
    runs = report["write_many"]
    print_table(
        f"write_many: {report['memories']:,} memories over {report['users']} users "
        f"({100 * report['english_share']:.0f} % English), pgvector, defaults on",
        ["batch size", "seconds", "memories/s", "searchable (top 10)"],
        [
            [
                f"{r['batch_size']:,}",
                r["seconds"],
                r["memories_per_s"],
                report["searchable_share"] if i == 0 else "",
            ]
            for i, r in enumerate(runs)
        ],
    )
    print_table(
        "write path stages (write_many, batch size "
        + " / ".join(f"{r['batch_size']:,}" for r in runs)
        + ")",
        ["stage", *(f"ms ({r['batch_size']:,})" for r in runs), "µs/memory", "share"],
        [
            *(
                [
                    stage,
                    *(r["stages"][stage]["ms"] for r in runs),
                    " / ".join(str(r["stages"][stage]["us_per_memory"]) for r in runs),
                    " / ".join(f"{100 * r['stages'][stage]['share']:.1f} %" for r in runs),
                ]
                for stage in [*STAGES, "other"]
            ),
            ["wall time", *(1000 * r["seconds"] for r in runs), "", ""],
            [
                "client CPU (ms/memory)",
                *(r["client_cpu_ms_per_memory"] for r in runs),
                "",
                "",
            ],
        ],
    )
    s, m, e = report["single_write"], report["memory"], report["end_session"]
    print_table(
        "single mem.write, end_session and peak memory",
        ["measure", "value"],
        [
            ["mem.write p50 (ms)", s["p50_ms"]],
            ["mem.write p95 (ms)", s["p95_ms"]],
            ["mem.write mean (ms)", s["mean_ms"]],
            [
                f"end_session, {e['turns_per_session']}-turn transcripts (sessions/s)",
                e["sessions_per_s"],
            ],
            ["end_session p50 / p95 (ms)", f"{e['p50_ms']} / {e['p95_ms']}"],
            ["peak RSS, whole run (MiB, getrusage high-water mark)", m["peak_rss_mib"]],
            [
                f"Python heap peak, write_many of {m['tracemalloc_memories']:,} (MiB, tracemalloc)",
                m["tracemalloc_peak_mib"],
            ],
        ],
    )
    console.print("other: time in write_many outside the named stages (profile locks, commits)")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run every phase; print the tables and write ``benchmarks/results/writes[-quick].json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_MEMORIES:,} memories a run")
    parser.add_argument("--memories", type=int, help="memories per write_many run")
    parser.add_argument("--users", type=int, default=USERS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", help="result name (benchmarks/results/<out>.json)")
    args = parser.parse_args(argv)
    report = {"quick": args.quick, "seed": args.seed, **run(args)}
    _print(report)
    write_result(args.out or ("writes-quick" if args.quick else "writes"), report)
    return report


if __name__ == "__main__":
    main()
