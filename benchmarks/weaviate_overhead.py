"""Weaviate: what does our search path cost over a bare client query?

``mem.search`` (validate → mask → embed → index → fallback → hydrate → hits;
the index stage is a Weaviate hybrid query with the scope's visibility and
expiry filters, hydration renews TTLs) against a bare
``collection.with_tenant(t).query.hybrid(...)`` with the same vector and
tokens, with and without our filters, interleaved in random order per query.
The stages of our path are timed on their own for a breakdown: *mask + embed*
(``build_query``), *index* (``WeaviateIndex.search``) and *hydrate*
(``FragmentLedger.hydrate``).

The data are the synthetic e-commerce fragments of :mod:`benchmarks.unstructured`
(500 users, 40 fragments each on average; ``--quick``: 100 users). Start a
server first, then::

    python -m benchmarks.weaviate_overhead --weaviate 127.0.0.1:8093:50063 [--quick]

The data lives in the ``WvOverheadBench`` collection (dropped and refilled
each run) and in ``.dualtrack/bench-weaviate-overhead``.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from benchmarks.common import (
    add_weaviate_option,
    bench_client,
    console,
    elapsed_ms,
    fresh_users,
    latency_stats,
    print_table,
    wait_for_index,
    write_result,
)
from benchmarks.unstructured import SEED, Generator
from sdk.client import MemoryClient
from structured_memory.repositories.fragments import FragmentLedger
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.embedders.registry import create_embedder
from unstructured_memory.index import weaviate as backend
from unstructured_memory.index.base import Resettable, SearchQuery
from unstructured_memory.search.presets import HYBRID_DEFAULT
from unstructured_memory.search.query import build_query

__all__ = ["main"]

NAME = "weaviate_overhead"
COLLECTION = "WvOverheadBench"
LIMIT = 5
PER_USER = 40
WARM_UP = 20
ORDER = (
    "ours: mem.search",
    "bare: hybrid",
    "bare: hybrid + our filters",
    "stage mask + embed: build_query",
    "stage index: WeaviateIndex.search",
    "stage hydrate: FragmentLedger.hydrate",
)


@dataclass(frozen=True)
class Size:
    """Users written and searches measured (full run or ``--quick``)."""

    users: int
    searches: int


FULL, QUICK = Size(500, 1_000), Size(100, 150)


@dataclass(frozen=True)
class Call:
    """One measured call: timings in ms by name, and how many hits it returned."""

    times: dict[str, float]
    hits: int


def ours(mem: MemoryClient, user: str, text: str) -> Call:
    """The whole SDK path."""
    started = time.perf_counter()
    n = len(mem.search(user, text, limit=LIMIT))
    return Call({"ours: mem.search": elapsed_ms(started)}, n)


def bare(tenant: Any, query: SearchQuery, filters: Any, name: str) -> Call:
    """A bare hybrid query on the user's tenant, as the client's documentation shows it."""
    from weaviate.classes.query import HybridFusion

    options = {} if filters is None else {"filters": filters, "return_properties": ["fragment_id"]}
    started = time.perf_counter()
    response = tenant.query.hybrid(
        query=" ".join(query.tokens),
        vector=list(query.vector),
        alpha=query.config.alpha,
        fusion_type=HybridFusion.RELATIVE_SCORE,
        limit=LIMIT,
        query_properties=["index_text"],
        **options,
    )
    return Call({name: elapsed_ms(started)}, len(response.objects))


def stages(
    mem: MemoryClient, embedder: Embedder, ledger: FragmentLedger, user: str, text: str
) -> Call:
    """Our path stage by stage: mask + embed, index, hydrate."""
    scope, now = mem.scope(user), datetime.now(UTC)
    started = time.perf_counter()
    built = build_query(text, embedder=embedder, config=HYBRID_DEFAULT, limit=LIMIT, now=now)
    times = {"stage mask + embed: build_query": elapsed_ms(started)}
    started = time.perf_counter()
    hits = mem.index.search(scope, built.query)
    times["stage index: WeaviateIndex.search"] = elapsed_ms(started)
    started = time.perf_counter()
    ledger.hydrate(scope, [h.fragment_id for h in hits], now=now)
    times["stage hydrate: FragmentLedger.hydrate"] = elapsed_ms(started)
    return Call(times, len(hits))


def measure(mem: MemoryClient, collection: Any, gen: Generator, searches: int) -> dict[str, Any]:
    """``mem.search`` against bare hybrid queries, interleaved in random order per query."""
    rng = random.Random(SEED)
    embedder = create_embedder(mem.settings.embedder, mem.settings.embedder_config)
    ledger = FragmentLedger(mem.database)
    index = mem.index
    if not isinstance(index, backend.WeaviateIndex):
        raise SystemExit("this benchmark needs the Weaviate index")
    times: dict[str, list[float]] = {name: [] for name in ORDER}
    short = {"ours: mem.search": 0, "bare: hybrid": 0}
    for i, (user, text) in enumerate(gen.queries(WARM_UP + searches, SEED)):
        query = build_query(
            text, embedder=embedder, config=HYBRID_DEFAULT, limit=LIMIT, now=datetime.now(UTC)
        ).query
        tenant = collection.with_tenant(index.tenant(user))
        # the index's own filter builder, so the comparison follows the index as it changes
        filters = backend._filters(mem.scope(user), query)
        calls: dict[str, Callable[[], Call]] = {
            "ours: mem.search": partial(ours, mem, user, text),
            "bare: hybrid": partial(bare, tenant, query, None, "bare: hybrid"),
            "bare: hybrid + our filters": partial(
                bare, tenant, query, filters, "bare: hybrid + our filters"
            ),
            "stages": partial(stages, mem, embedder, ledger, user, text),
        }
        order = list(calls)
        rng.shuffle(order)
        done = {name: calls[name]() for name in order}
        if i < WARM_UP:
            continue
        for call in done.values():
            for name, ms in call.times.items():
                times[name].append(ms)
        for name in short:
            short[name] += done[name].hits < LIMIT
    stats = {name: latency_stats(v) for name, v in times.items()}
    ours_s, bare_s = stats["ours: mem.search"], stats["bare: hybrid"]
    ratio = {q: round(ours_s[f"{q}_ms"] / bare_s[f"{q}_ms"], 2) for q in ("p50", "p95")}
    print_table(
        f"mem.search vs bare hybrid, {len(gen.users)} users, {searches} searches, "
        f"limit {LIMIT}; ours/bare p50 {ratio['p50']}×, p95 {ratio['p95']}×",
        ["call", "n", "p50 ms", "p95 ms", "mean ms"],
        [[k, int(s["n"]), s["p50_ms"], s["p95_ms"], s["mean_ms"]] for k, s in stats.items()],
    )
    return {"latency": stats, "ratio_ours_over_bare": ratio, "short_result_lists": short}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Measure our path's overhead and write ``benchmarks/results/weaviate_overhead.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="100 users, 150 searches")
    add_weaviate_option(parser)
    args = parser.parse_args(argv)
    size = QUICK if args.quick else FULL
    started = time.perf_counter()
    gen = Generator(SEED, size.users)
    items = gen.fragments(size.users * PER_USER)
    server = args.weaviate.client()
    mem = bench_client(
        "weaviate-overhead",
        index="weaviate",
        index_config=args.weaviate.index_config(COLLECTION),
        outbox_worker="external",
    )
    try:
        if not isinstance(mem.index, Resettable):
            raise SystemExit("the benchmark client's index cannot be reset")
        mem.index.reset()
        fresh_users(mem, gen.users)
        written = time.perf_counter()
        mem.write_many(items, batch_size=256, progress=False)
        write_s = time.perf_counter() - written
        catch_up_s = wait_for_index(mem)
        console.print(
            f"wrote {len(items)} fragments in {write_s:.1f} s; "
            f"Weaviate caught up {catch_up_s:.1f} s later"
        )
        result = measure(mem, server.collections.use(COLLECTION), gen, size.searches)
        version = server.get_meta().get("version")
    finally:
        server.close()
        mem.close()
    payload = {
        "quick": args.quick,
        "weaviate": {"version": version, "at": str(args.weaviate)},
        "users": size.users,
        "fragments": len(items),
        "searches": size.searches,
        "limit": LIMIT,
        "ingest": {"write_s": round(write_s, 1), "catch_up_s": round(catch_up_s, 1)},
        **result,
        "runtime_s": round(time.perf_counter() - started, 1),
    }
    write_result(NAME + ("-quick" if args.quick else ""), payload)
    return payload


if __name__ == "__main__":
    main()
