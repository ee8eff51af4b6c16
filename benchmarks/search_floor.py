"""pgvector: ``mem.search`` beside the bare-SQL floor on the same table, at 10k and 100k.

Ours is ``mem.search(user, text, limit=10)`` with the default hybrid preset
(mask, embed, both legs, hydration). The floor is what the store cannot do
without, built from the same query embedding and tokens (``build_query``),
in one transaction of three statements:

- the user's exact cosine KNN (``ORDER BY embedding::vector(d) <=> q LIMIT 10``
  over the user's rows of the query's embedding model, materialised first so
  the planner cannot pick the approximate HNSW index);
- a tsvector match of any query lexeme on the user's rows (quoted as
  :func:`~unstructured_memory.index.pgvector.tsquery_any` quotes them);
- fetching the KNN's rows by id.

Ours and the floor run per query in random order. The data are the synthetic
e-commerce memories of :mod:`benchmarks.unstructured`, 10 per user: 1,000
users (10k memories), then 9,000 more users (100k); queries go to users
anywhere in the table. The flatness ratio is p95 at 100k over p95 at 10k.
``--quick`` measures 10k only, with fewer searches::

    python -m benchmarks.search_floor [--quick]

The data live in ``.dualtrack/bench-search-floor`` (its users are erased and
written again each run).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
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
from benchmarks.unstructured import SEED, Generator
from sdk.client import MemoryClient
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.embedders.registry import create_embedder
from unstructured_memory.index.base import SearchQuery
from unstructured_memory.index.pgvector import tsquery_any
from unstructured_memory.search.presets import HYBRID_DEFAULT
from unstructured_memory.search.query import build_query

__all__ = ["main"]

NAME = "search_floor"
LIMIT = 10
PER_USER = 10
WRITE_BATCH = 2_000
WARM_UP = 20
OURS, FLOOR = "ours: mem.search", "floor: bare SQL"


@dataclass(frozen=True)
class Size:
    """Users in the table at one measuring point."""

    users: int

    @property
    def label(self) -> str:
        return f"{self.users * PER_USER // 1000}k"


SIZES, QUICK_SIZES = (Size(1_000), Size(10_000)), (Size(1_000),)
SEARCHES, QUICK_SEARCHES = 1_000, 200


def fill(mem: MemoryClient, gen: Generator, users: Sequence[str]) -> float:
    """Write ``PER_USER`` memories for each of ``users`` (erased first); seconds taken."""
    fresh_users(mem, users)
    everyone = gen.users
    items = []
    for user in users:
        gen.users = [user]  # the generator draws its user from this list: pin it
        items += gen.fragments(PER_USER)
    gen.users = everyone
    started = time.perf_counter()
    for i in range(0, len(items), WRITE_BATCH):
        mem.write_many(items[i : i + WRITE_BATCH], progress=False)
        console.print(f"  wrote {min(i + WRITE_BATCH, len(items)):,} / {len(items):,}")
    return time.perf_counter() - started


def ours(mem: MemoryClient, user: str, query_text: str) -> float:
    """The whole SDK path, in ms."""
    started = time.perf_counter()
    mem.search(user, query_text, limit=LIMIT)
    return elapsed_ms(started)


def floor(mem: MemoryClient, user: str, query: SearchQuery) -> float:
    """Exact per-user KNN, a tsvector match and a fetch of 10 rows by id, in ms."""
    dims = len(query.vector)
    terms = list(dict.fromkeys(t for t in query.tokens if t))
    qvec = "[" + ",".join(repr(float(x)) for x in query.vector) + "]"
    started = time.perf_counter()
    with mem.database.transaction() as conn:
        ids = (
            conn.execute(
                text(
                    "WITH mine AS MATERIALIZED (SELECT id, embedding FROM memory_fragment "
                    "WHERE user_id = :u AND embedding_model = :m) "
                    f"SELECT id FROM mine ORDER BY embedding::vector({dims}) "
                    f"<=> CAST(:q AS vector({dims})) LIMIT :k"
                ),
                {"u": user, "m": query.embedding_model, "q": qvec, "k": LIMIT},
            )
            .scalars()
            .all()
        )
        if terms:
            conn.execute(
                text(
                    "SELECT id FROM memory_fragment "
                    "WHERE user_id = :u AND tsv @@ CAST(:tq AS tsquery) LIMIT :k"
                ),
                {"u": user, "tq": tsquery_any(terms), "k": LIMIT},
            ).all()
        conn.execute(
            text("SELECT * FROM memory_fragment WHERE user_id = :u AND id = ANY(:ids)"),
            {"u": user, "ids": list(ids)},
        ).all()
    return elapsed_ms(started)


def measure(
    mem: MemoryClient, embedder: Embedder, gen: Generator, searches: int, seed: int
) -> dict[str, dict[str, float]]:
    """Ours and the floor per query, in random order; latency stats of each."""
    rng = random.Random(seed)
    times: dict[str, list[float]] = {OURS: [], FLOOR: []}
    for i, (user, query_text) in enumerate(gen.queries(WARM_UP + searches, seed)):
        query = build_query(
            query_text,
            embedder=embedder,
            config=HYBRID_DEFAULT,
            limit=LIMIT,
            now=datetime.now(UTC),
        ).query
        order = [OURS, FLOOR]
        rng.shuffle(order)
        done = {
            name: ours(mem, user, query_text) if name == OURS else floor(mem, user, query)
            for name in order
        }
        if i >= WARM_UP:
            for name, ms in done.items():
                times[name].append(ms)
    return {name: latency_stats(v) for name, v in times.items()}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Measure ours beside the floor and write ``benchmarks/results/search_floor[-quick].json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="10k only, 200 searches")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    searches = QUICK_SEARCHES if args.quick else SEARCHES
    gen = Generator(SEED, sizes[-1].users)
    mem = bench_client("search-floor", index="pgvector")
    stages: dict[str, Any] = {}
    try:
        embedder = create_embedder(mem.settings.embedder, mem.settings.embedder_config)
        written = 0
        for n, size in enumerate(sizes):
            console.print(f"filling to {size.users:,} users × {PER_USER}")
            seconds = fill(mem, gen, gen.users[written : size.users])
            written = size.users
            stats = measure(mem, embedder, gen, searches, SEED + n)
            stages[size.label] = {
                "users": size.users,
                "memories": size.users * PER_USER,
                "write_s": round(seconds, 1),
                "latency": stats,
                "ratio_ours_over_floor_p95": round(
                    stats[OURS]["p95_ms"] / stats[FLOOR]["p95_ms"], 2
                ),
            }
    finally:
        mem.close()
    rows = [
        [label, name, int(s["n"]), s["p50_ms"], s["p95_ms"], stage["ratio_ours_over_floor_p95"]]
        for label, stage in stages.items()
        for name, s in stage["latency"].items()
    ]
    flatness: dict[str, float] = {}
    if len(sizes) > 1:
        small, large = stages[sizes[0].label], stages[sizes[-1].label]
        flatness = {
            name: round(large["latency"][name]["p95_ms"] / small["latency"][name]["p95_ms"], 2)
            for name in (OURS, FLOOR)
        }
    flat = ", ".join(f"{k} {v}×" for k, v in flatness.items())
    print_table(
        f"pgvector search vs bare-SQL floor, limit {LIMIT}, {searches} searches per size"
        + (f"; p95 100k/10k: {flat}" if flat else ""),
        ["size", "call", "n", "p50 ms", "p95 ms", "ours/floor p95"],
        rows,
    )
    payload = {
        "backend": "pgvector",
        "limit": LIMIT,
        "searches": searches,
        "stages": stages,
        "flatness_p95_large_over_small": flatness,
    }
    write_result(NAME + ("-quick" if args.quick else ""), payload)
    return payload


if __name__ == "__main__":
    main()
