"""Unstructured track at scale: ingest throughput and search latency through the SDK.

Synthetic Chinese e-commerce fragments (orders, refunds, tracking numbers,
products, amounts, some English, some phone numbers and e-mail addresses) for
1,000 users, generated from a fixed seed. In one run, per index backend:

- ingest the first stage (10k fragments) with ``write_many`` -- PII masking
  and vaulting, NER, intent, embedding and the ledger/index write included --
  and measure fragments/s;
- measure search latency p50/p95 for hybrid, keyword-only and vector-only
  search from random users (a query about one of the user's own orders,
  products or refunds, or a generic question);
- ingest up to the second stage (100k) and measure again.

Also recorded: the process's peak RSS (``getrusage``), optionally the Python
heap peak of the first ingest (``--tracemalloc``, slow), the PostgreSQL
server's private memory and the size of the fragment table with its indexes,
and a correctness check: the share of searches returning fewer hits than the
limit although the user holds enough live fragments.

``--index pgvector,weaviate`` runs several backends side by side, each on its
own data dir (``--index-config weaviate='{...}'`` passes a backend's settings).
For a derived index (fed through the outbox) the ingest phase also reports the
time until the index has caught up, and the search table the share of
searches answered by the ledger fallback (``degraded``).

    python -m benchmarks.unstructured [--quick] [--index pgvector]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
import tracemalloc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import text

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
from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk.client import MemoryClient
from values.inputs import MemoryInput

__all__ = ["Generator", "main"]

SEED = 20260629
USERS = 1_000
STAGES = (10_000, 100_000)
QUICK_STAGES = (2_000, 10_000)
SEARCH_METHODS = ("hybrid", "keyword", "vector")
SEARCH_LIMIT = 10
BASE_TIME = datetime(2026, 6, 1, tzinfo=UTC)

# --------------------------------------------------------------------------- data

_PRODUCTS = (
    "iPhone 15 Pro",
    "华为 Mate 60",
    "小米手环 8",
    "戴森吹风机",
    "耐克 Air Max 90",
    "优衣库羽绒服",
    "SK-II 神仙水",
    "乐高千年隼",
    "索尼 WH-1000XM5 耳机",
    "美的电饭煲",
    "三只松鼠坚果礼盒",
    "Kindle Paperwhite",
    "雅诗兰黛小棕瓶",
    "李宁跑鞋",
    "九阳豆浆机",
    "Switch OLED 游戏机",
    "飞利浦电动牙刷",
    "安踏运动裤",
    "格力空调",
    "无印良品收纳盒",
)
_COURIERS = (("SF", "顺丰"), ("YT", "圆通"), ("ZTO", "中通"), ("JD", "京东物流"), ("YD", "韵达"))
_CITIES = ("上海", "北京", "杭州", "深圳", "成都", "武汉", "广州", "南京")
_REASONS = ("尺码不合适", "质量问题", "发错货了", "不想要了", "收到时已破损", "和描述不符")
_ENGLISH = (
    "please ASAP",
    "thanks!",
    "any update?",
    "refund status?",
    "not happy with this",
    "where is my parcel",
    "ok, got it",
)
_TEMPLATES = (
    "订单 {order} 的{product}什么时候发货？已经付款 ¥{amount} 了",
    "我要退款，订单号 {order}，原因：{reason}",
    "退款 {refund} 到账了吗？金额 {amount} 元",
    "快递单号 {tracking}（{courier}）三天没更新了，{english}",
    "{product} 收到了，{reason}，想换货",
    "请把{product}的发票开给公司，订单 {order}",
    "我的手机号是 {phone}，物流有变化请短信通知我",
    "改一下收货地址，寄到{city}，订单 {order}",
    "{product} 降价了，能退差价 {amount} 元吗？{english}",
    "上次买的{product}很好用，想再买一个送朋友",
    "优惠券没用上，订单 {order} 多付了 {amount} 元",
    "客服你好，{english} 订单 {order} 还没到",
    "邮箱 {email} 收不到电子发票，订单 {order}",
    "下周出差去{city}，先别发货，订单 {order}",
    "退款 {refund} 被拒了，理由是{reason}，我不接受",
    "{courier}快递员说{tracking}已签收，但我没收到",
)
_GENERIC_QUERIES = (
    "退款到账了吗",
    "我的快递到哪了",
    "什么时候发货",
    "发票怎么开",
    "换货流程",
    "refund status",
    "物流没有更新",
    "改收货地址",
)


@dataclass
class UserFacts:
    """What was written for one user, to ask questions about it."""

    orders: list[str] = field(default_factory=list)
    refunds: list[str] = field(default_factory=list)
    products: list[str] = field(default_factory=list)
    count: int = 0


class Generator:
    """Deterministic fragments for ``users`` users; the same seed gives the same stream."""

    def __init__(self, seed: int = SEED, users: int = USERS) -> None:
        self._rng = random.Random(seed)
        self.users = [f"bench-u{i:04d}" for i in range(users)]
        self.facts: dict[str, UserFacts] = {u: UserFacts() for u in self.users}
        self.produced = 0

    def _fragment(self) -> MemoryInput:
        rng = self._rng
        user = rng.choice(self.users)
        facts = self.facts[user]
        order = (
            rng.choice(facts.orders)
            if facts.orders and rng.random() < 0.4
            else str(rng.randint(10_000_000, 99_999_999))
        )
        courier_code, courier = rng.choice(_COURIERS)
        refund = f"RF{BASE_TIME:%Y%m%d}{rng.randint(0, 999):03d}{rng.randint(0, 99):02d}"
        product = rng.choice(_PRODUCTS)
        values = {
            "order": order,
            "refund": refund,
            "tracking": f"{courier_code}{rng.randint(10**11, 10**12 - 1)}",
            "courier": courier,
            "product": product,
            "amount": f"{rng.randint(9, 9999)}.{rng.choice(('00', '50', '90', '99'))}",
            "reason": rng.choice(_REASONS),
            "english": rng.choice(_ENGLISH),
            "city": rng.choice(_CITIES),
            "phone": f"1{rng.choice('3589')}{rng.randint(0, 9)} "
            f"{rng.randint(1000, 9999)} {rng.randint(1000, 9999)}",
            "email": f"user{rng.randint(1, 99999)}@example.com",
        }
        template = rng.choice(_TEMPLATES)
        body = template.format(**values)
        if "{order}" in template and order not in facts.orders:
            facts.orders.append(order)
        if "{refund}" in template:
            facts.refunds.append(refund)
        if "{product}" in template and product not in facts.products:
            facts.products.append(product)
        facts.count += 1
        self.produced += 1
        kind, policy = rng.choice(
            (
                (MemoryKind.INTERACTION_RECORD, LifecyclePolicy.IMPLICIT),
                (MemoryKind.INTERACTION_RECORD, LifecyclePolicy.IMPLICIT),
                (MemoryKind.SESSION_SUMMARY, LifecyclePolicy.IMPLICIT),
                (MemoryKind.NOTE, LifecyclePolicy.IMPLICIT),
                (MemoryKind.NOTE, LifecyclePolicy.EXPLICIT),
            )
        )
        return MemoryInput(
            user_id=user,
            text=body,
            lifecycle_policy=policy,
            session_id=f"s-{user}-{rng.randint(0, 49):02d}",
            occurred_at=BASE_TIME - timedelta(minutes=rng.randint(0, 60 * 24 * 30)),
            metadata={"seq": self.produced},
            kind=kind,
        )

    def fragments(self, n: int) -> list[MemoryInput]:
        """The next ``n`` fragments of the stream."""
        return [self._fragment() for _ in range(n)]

    def queries(self, n: int, seed: int) -> Iterator[tuple[str, str]]:
        """``n`` ``(user, query)`` pairs over users that hold fragments."""
        rng = random.Random(seed)
        users = [u for u in self.users if self.facts[u].count]
        for _ in range(n):
            user = rng.choice(users)
            f = self.facts[user]
            choices = [rng.choice(_GENERIC_QUERIES)]
            if f.orders:
                choices.append(f"订单 {rng.choice(f.orders)} 的物流")
            if f.refunds:
                choices.append(f"{rng.choice(f.refunds)} 退款进度")
            if f.products:
                choices.append(f"{rng.choice(f.products)} 退货")
            yield user, rng.choice(choices)


# --------------------------------------------------------------------------- measures


def _peak_rss_mib() -> float:
    """This process's RSS high-water mark (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _server_memory_mib(mem: MemoryClient) -> dict[str, float] | None:
    """Private (anonymous) RSS and its summed high-water marks of a local PostgreSQL.

    Read from ``/proc`` for the postmaster and its children; ``None`` when
    the server is not on this machine or ``/proc`` is unavailable.
    """
    with mem.admin.database.transaction() as conn:
        data_dir = conn.execute(text("SELECT current_setting('data_directory')")).scalar_one()
    pid_file = Path(data_dir) / "postmaster.pid"
    try:
        postmaster = int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    anon = hwm = 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            stat = (proc / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if int(proc.name) != postmaster and ppid != postmaster:
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("RssAnon:"):
                    anon += int(line.split()[1])
                elif line.startswith("VmHWM:"):
                    hwm += int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return {"private_rss_mib": round(anon / 1024, 1), "summed_vmhwm_mib": round(hwm / 1024, 1)}


def _storage_mib(mem: MemoryClient) -> dict[str, float]:
    """On-disk size of the fragment table, of its indexes, and of the database."""
    with mem.admin.database.transaction() as conn:
        row = conn.execute(
            text(
                "SELECT pg_table_size('memory_fragment') AS table_bytes, "
                "pg_indexes_size('memory_fragment') AS index_bytes, "
                "pg_database_size(current_database()) AS db_bytes"
            )
        ).one()
    mib = 1024 * 1024
    return {
        "fragment_table_mib": round(row.table_bytes / mib, 1),
        "fragment_indexes_mib": round(row.index_bytes / mib, 1),
        "database_mib": round(row.db_bytes / mib, 1),
    }


def ingest(
    mem: MemoryClient, items: Sequence[MemoryInput], batch_size: int, trace: bool
) -> dict[str, Any]:
    """Write ``items`` with ``write_many``; throughput and memory of the phase."""
    if trace:
        tracemalloc.start()
    started = time.perf_counter()
    mem.write_many(items, batch_size=batch_size, progress=console.is_terminal)
    seconds = time.perf_counter() - started
    catch_up = wait_for_index(mem, timeout_s=3600.0)
    out: dict[str, Any] = {
        "fragments": len(items),
        "seconds": round(seconds, 2),
        "fragments_per_s": round(len(items) / seconds, 1),
        "index_catch_up_s": round(catch_up, 2),
        "searchable_per_s": round(len(items) / (seconds + catch_up), 1),
    }
    if trace:
        out["python_heap_peak_mib"] = round(tracemalloc.get_traced_memory()[1] / 2**20, 1)
        tracemalloc.stop()
    return out


def search_latency(
    mem: MemoryClient, gen: Generator, searches: int, seed: int
) -> dict[str, dict[str, float]]:
    """p50/p95/mean latency (ms) per method over the same random ``(user, query)`` pairs.

    ``short_share`` is the share of searches that returned fewer than
    ``SEARCH_LIMIT`` hits although the user holds at least that many fragments
    (hybrid and vector search should then always fill the limit).
    """
    pairs = list(gen.queries(searches, seed))
    for user, query in pairs[:10]:  # warm caches and the connection pool
        mem.search(user, query, limit=SEARCH_LIMIT)
    out = {}
    for method in SEARCH_METHODS:
        samples: list[float] = []
        short = eligible = lengths = degraded = 0
        for user, query in pairs:
            started = time.perf_counter()
            hits = mem.search(user, query, limit=SEARCH_LIMIT, preset=method)
            samples.append(elapsed_ms(started))
            lengths += len(hits)
            degraded += hits.degraded
            if gen.facts[user].count >= SEARCH_LIMIT:
                eligible += 1
                short += len(hits) < SEARCH_LIMIT
        out[method] = {
            **latency_stats(samples),
            "mean_hits": round(lengths / len(pairs), 2),
            "short_share": round(short / eligible, 3) if eligible else float("nan"),
            "degraded_share": round(degraded / len(pairs), 3),
        }
    return out


# --------------------------------------------------------------------------- runner


def run_backend(
    index: str, index_config: dict[str, Any], stages: Sequence[int], args: argparse.Namespace
) -> dict[str, Any]:
    """Every stage on one backend, from an emptied bench data dir."""
    mem = bench_client(f"unstructured-{index}", index=index, index_config=index_config)
    gen = Generator(args.seed, args.users)
    out: dict[str, Any] = {"index": index, "stages": []}
    try:
        started = time.perf_counter()
        fresh_users(mem, gen.users)
        console.print(
            f"{index}: emptied {len(gen.users)} users in {time.perf_counter() - started:.1f} s"
        )
        written = 0
        for stage_no, target in enumerate(stages):
            items = gen.fragments(target - written)
            console.print(f"{index}: ingesting {len(items)} fragments (to {target})")
            phase = ingest(mem, items, args.batch_size, args.tracemalloc and stage_no == 0)
            written = target
            console.print(
                f"{index}: {phase['fragments']} in {phase['seconds']} s "
                f"= {phase['fragments_per_s']} fragments/s"
            )
            out["stages"].append(
                {
                    "fragments_total": written,
                    "ingest": phase,
                    "search": search_latency(mem, gen, args.searches, args.seed + stage_no),
                    "peak_rss_mib": round(_peak_rss_mib(), 1),
                    "server_memory": _server_memory_mib(mem),
                    "storage": _storage_mib(mem),
                }
            )
    finally:
        mem.close()
    return out


def _print(results: Sequence[dict[str, Any]]) -> None:
    ingest_rows: list[list[Any]] = []
    search_rows: list[list[Any]] = []
    for backend in results:
        for stage in backend["stages"]:
            phase, storage = stage["ingest"], stage["storage"]
            server = stage["server_memory"] or {}
            total = f"{stage['fragments_total']:,}"
            ingest_rows.append(
                [
                    backend["index"],
                    total,
                    f"{phase['fragments']:,}",
                    phase["seconds"],
                    phase["fragments_per_s"],
                    phase["index_catch_up_s"],
                    stage["peak_rss_mib"],
                    server.get("private_rss_mib", "n/a"),
                    storage["fragment_table_mib"] + storage["fragment_indexes_mib"],
                ]
            )
            for method in SEARCH_METHODS:
                m = stage["search"][method]
                search_rows.append(
                    [
                        backend["index"],
                        total,
                        method,
                        m["p50_ms"],
                        m["p95_ms"],
                        m["mean_ms"],
                        m["mean_hits"],
                        m["short_share"],
                        m["degraded_share"],
                    ]
                )
    print_table(
        "unstructured track: ingest (write_many, everything included)",
        [
            "index",
            "total",
            "written",
            "s",
            "frag/s",
            "catch-up s",
            "peak RSS MiB",
            "PG anon MiB",
            "disk MiB",
        ],
        ingest_rows,
    )
    print_table(
        f"unstructured track: search latency (limit {SEARCH_LIMIT})",
        ["index", "total", "method", "p50 ms", "p95 ms", "mean ms", "hits", "short", "degraded"],
        search_rows,
    )
    console.print(
        "short: share of searches with fewer hits than the limit although the user holds "
        "enough fragments (expected for keyword-only; should be 0 for vector and hybrid)"
    )


def _index_configs(raw: Sequence[str]) -> dict[str, dict[str, Any]]:
    out = {}
    for item in raw:
        name, sep, config = item.partition("=")
        if not sep:
            raise SystemExit(f"--index-config wants NAME=JSON, got {item!r}")
        out[name] = json.loads(config)
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the stages on every backend named by ``--index``; print and write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="stages of 2k and 10k fragments")
    parser.add_argument(
        "--index",
        default="pgvector",
        help="comma-separated index backends, run side by side (e.g. pgvector,weaviate)",
    )
    parser.add_argument(
        "--index-config", action="append", default=[], help="NAME=JSON settings of one backend"
    )
    parser.add_argument("--stages", help="comma-separated cumulative fragment counts")
    parser.add_argument("--users", type=int, default=USERS)
    parser.add_argument("--searches", type=int, default=300, help="per method and stage")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--tracemalloc", action="store_true", help="Python heap peak (slow)")
    args = parser.parse_args(argv)

    if args.stages:
        stages = tuple(int(s) for s in args.stages.split(","))
    else:
        stages = QUICK_STAGES if args.quick else STAGES
    if list(stages) != sorted(set(stages)) or stages[0] <= 0:
        raise SystemExit("--stages must be increasing positive counts")
    configs = _index_configs(args.index_config)
    backends = [b.strip() for b in args.index.split(",") if b.strip()]
    results = [run_backend(b, configs.get(b, {}), stages, args) for b in backends]
    _print(results)
    report = {
        "quick": args.quick,
        "users": args.users,
        "seed": args.seed,
        "stages": list(stages),
        "search_limit": SEARCH_LIMIT,
        "searches_per_method": args.searches,
        "backends": results,
    }
    write_result("unstructured-quick" if args.quick else "unstructured", report)
    return report


if __name__ == "__main__":
    main()
