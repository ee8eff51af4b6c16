"""``mem.search`` beside the floor of its store, for pgvector and Weaviate, at 10k and 100k.

Ours is ``mem.search(user, text, limit=10)`` with the default hybrid preset
(validate, mask, embed, index, hydrate, hits). The floor is what the store
cannot do without, given the same query embedding and tokens (``build_query``):

- **pgvector**: bare SQL in one transaction of three statements: the user's
  exact cosine KNN (``ORDER BY embedding::vector(d) <=> q LIMIT 10`` over the
  user's rows of the query's embedding model, materialised first so the planner
  cannot pick the approximate HNSW index); a tsvector match of any query lexeme
  on the user's rows (quoted as :func:`~unstructured_memory.index.pgvector.tsquery_any`
  quotes them); fetching the KNN's rows by id.
- **Weaviate**: the client's own ``query.hybrid`` on the user's tenant (relative
  score fusion, the same alpha, 10 objects, only their ``fragment_id``).

Each query also runs our path stage by stage (mask + embed, index, hydrate) for
a breakdown. Ours, the floor and the stages run per query in random order. The
data are the synthetic e-commerce memories of :mod:`benchmarks.unstructured`,
10 per user: 1,000 users (10k memories), then 9,000 more users (100k); queries
go to users anywhere in the table. Flatness is p95 at 100k over p95 at 10k. Last, one
user with 5,000 memories (past the exact-scan limit, after a sweep) is searched the
same way.
``--quick`` measures 10k only, with fewer searches::

    python -m benchmarks.search_floor [--quick] [--index pgvector,weaviate] [--weaviate H:P:G]

Weaviate needs a server (``make bench-weaviate`` starts one). The data live in
``.dualtrack/bench-search-floor[-weaviate]`` and the ``SearchFloorBench``
collection; users are erased and written again each run.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

from sqlalchemy import text

from benchmarks.common import (
    WeaviateAt,
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
from unstructured_memory.index.base import Resettable, SearchQuery
from unstructured_memory.index.pgvector import tsquery_any
from unstructured_memory.search.presets import HYBRID_DEFAULT
from unstructured_memory.search.query import build_query

__all__ = ["main"]

NAME = "search_floor"
COLLECTION = "SearchFloorBench"
LIMIT = 10
PER_USER = 10
WRITE_BATCH = 2_000
WARM_UP = 20
OURS = "ours: mem.search"
FLOORS = {"pgvector": "floor: bare SQL", "weaviate": "floor: bare client hybrid"}
STAGES = ("stage mask + embed", "stage index", "stage hydrate + mark used")

Floor = Callable[[str, SearchQuery], float]
"""One floor query for a user, timed in ms."""


@dataclass(frozen=True)
class Size:
    """Users in the table at one measuring point."""

    users: int

    @property
    def label(self) -> str:
        return f"{self.users * PER_USER // 1000}k"


SIZES, QUICK_SIZES = (Size(1_000), Size(10_000)), (Size(1_000),)
LARGE_USER, LARGE_USER_MEMORIES = "bench-large-user", 5_000
SEARCHES, QUICK_SEARCHES = 1_000, 200


def fill(mem: MemoryClient, gen: Generator, users: Sequence[str]) -> float:
    """Write ``PER_USER`` memories for each of ``users`` (erased first) and wait until
    they are searchable; seconds taken."""
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
    wait_for_index(mem)
    return time.perf_counter() - started


def sql_floor(mem: MemoryClient) -> Floor:
    """Exact per-user KNN, a tsvector match and a fetch of 10 rows by id."""

    def run(user: str, query: SearchQuery) -> float:
        dims = len(query.vector)
        terms = list(dict.fromkeys(t for t in query.tokens if t))
        qvec = "[" + ",".join(repr(float(x)) for x in query.vector) + "]"
        started = time.perf_counter()
        with mem.admin.database.transaction() as conn:
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

    return run


def client_floor(mem: MemoryClient, collection: Any) -> Floor:
    """The bare client's hybrid query on the user's tenant, ids only."""
    from weaviate.classes.query import HybridFusion

    from unstructured_memory.index.weaviate import WeaviateIndex

    index = mem.admin.index
    if not isinstance(index, WeaviateIndex):
        raise SystemExit("the Weaviate floor needs a client on the Weaviate index")

    def run(user: str, query: SearchQuery) -> float:
        tenant = index.tenant(user)
        started = time.perf_counter()
        collection.with_tenant(tenant).query.hybrid(
            query=" ".join(query.tokens) or None,
            vector=list(query.vector),
            alpha=query.config.alpha,
            fusion_type=HybridFusion.RELATIVE_SCORE,
            limit=LIMIT,
            query_properties=["index_text"],
            return_properties=["fragment_id"],
        )
        return elapsed_ms(started)

    return run


def ours(mem: MemoryClient, user: str, query_text: str) -> dict[str, float]:
    """The whole SDK path, in ms."""
    started = time.perf_counter()
    mem.search(user, query_text, limit=LIMIT)
    return {OURS: elapsed_ms(started)}


def stages(
    mem: MemoryClient, embedder: Embedder, ledger: FragmentLedger, user: str, query_text: str
) -> dict[str, float]:
    """Our path stage by stage, in ms."""
    scope, now = mem.scope(user), datetime.now(UTC)
    started = time.perf_counter()
    built = build_query(query_text, embedder=embedder, config=HYBRID_DEFAULT, limit=LIMIT, now=now)
    times = {STAGES[0]: elapsed_ms(started)}
    started = time.perf_counter()
    hits = mem.admin.index.search(scope, built.query)
    times[STAGES[1]] = elapsed_ms(started)
    started = time.perf_counter()
    records = ledger.hydrate(scope, [h.fragment_id for h in hits], now=now)
    ledger.used(scope, records.records.values(), now=now)
    times[STAGES[2]] = elapsed_ms(started)
    return times


def measure(
    mem: MemoryClient, floor: tuple[str, Floor], gen: Generator, searches: int, seed: int
) -> dict[str, dict[str, float]]:
    """Ours, the floor and the stages per query, in random order; latency stats of each."""
    rng = random.Random(seed)
    embedder = mem.admin.embedder
    ledger = FragmentLedger(mem.admin.database)  # its renewals are never written: they don't matter
    floor_name, run_floor = floor
    times: dict[str, list[float]] = {name: [] for name in (OURS, floor_name, *STAGES)}
    for i, (user, query_text) in enumerate(gen.queries(WARM_UP + searches, seed)):
        query = build_query(
            query_text,
            embedder=embedder,
            config=HYBRID_DEFAULT,
            limit=LIMIT,
            now=datetime.now(UTC),
        ).query
        calls: list[Callable[[], dict[str, float]]] = [
            partial(ours, mem, user, query_text),
            partial(_floor, floor_name, run_floor, user, query),
            partial(stages, mem, embedder, ledger, user, query_text),
        ]
        rng.shuffle(calls)
        done = [call() for call in calls]
        if i >= WARM_UP:
            for timed in done:
                for name, ms in timed.items():
                    times[name].append(ms)
    return {name: latency_stats(v) for name, v in times.items()}


def _floor(name: str, run: Floor, user: str, query: SearchQuery) -> dict[str, float]:
    return {name: run(user, query)}


@contextmanager
def backend(name: str, at: WeaviateAt) -> Iterator[tuple[MemoryClient, Floor]]:
    """A client on a fresh index of backend ``name`` and the floor beside it."""
    if name == "pgvector":
        mem = bench_client("search-floor", index="pgvector")
        try:
            yield mem, sql_floor(mem)
        finally:
            mem.close()
        return
    server = at.client()
    mem = bench_client(
        "search-floor-weaviate",
        index="weaviate",
        index_config=at.index_config(COLLECTION),
        outbox_worker="external",
    )
    try:
        if not isinstance(mem.admin.index, Resettable):
            raise SystemExit("the benchmark client's index cannot be reset")
        mem.admin.index.reset()
        yield mem, client_floor(mem, server.collections.use(COLLECTION))
    finally:
        server.close()
        mem.close()


def large_user(mem: MemoryClient, floor: tuple[str, Floor], searches: int) -> dict[str, Any]:
    """One user holding :data:`LARGE_USER_MEMORIES` memories, past the exact-scan limit,
    after a sweep has flagged them for the approximate index; ours and the floor
    (still an exact KNN of the user's rows) on queries to that user."""
    gen = Generator(SEED + 99, 1)
    user = LARGE_USER
    gen.facts[user] = gen.facts.pop(gen.users[0])
    gen.users = [user]
    console.print(f"one user with {LARGE_USER_MEMORIES:,} memories")
    fresh_users(mem, [user])
    started = time.perf_counter()
    mem.write_many(gen.fragments(LARGE_USER_MEMORIES), progress=False)
    wait_for_index(mem)
    seconds = time.perf_counter() - started
    mem.admin.sweep(vacuum=False)
    stats = measure(mem, floor, gen, min(searches, 200), SEED + 99)
    return {
        "users": 1,
        "memories": LARGE_USER_MEMORIES,
        "write_s": round(seconds, 1),
        "latency": stats,
        "ratio_ours_over_floor_p95": round(stats[OURS]["p95_ms"] / stats[floor[0]]["p95_ms"], 2),
        "ratio_ours_over_floor_p50": round(stats[OURS]["p50_ms"] / stats[floor[0]]["p50_ms"], 2),
    }


def run_backend(name: str, at: WeaviateAt, sizes: Sequence[Size], searches: int) -> dict[str, Any]:
    """Fill to each size in turn and measure there."""
    gen = Generator(SEED, sizes[-1].users)
    floor_name = FLOORS[name]
    out: dict[str, Any] = {}
    with backend(name, at) as (mem, floor):
        written = 0
        for n, size in enumerate(sizes):
            console.print(f"{name}: filling to {size.users:,} users × {PER_USER}")
            seconds = fill(mem, gen, gen.users[written : size.users])
            written = size.users
            stats = measure(mem, (floor_name, floor), gen, searches, SEED + n)
            out[size.label] = {
                "users": size.users,
                "memories": size.users * PER_USER,
                "write_s": round(seconds, 1),
                "latency": stats,
                "ratio_ours_over_floor_p95": round(
                    stats[OURS]["p95_ms"] / stats[floor_name]["p95_ms"], 2
                ),
                "ratio_ours_over_floor_p50": round(
                    stats[OURS]["p50_ms"] / stats[floor_name]["p50_ms"], 2
                ),
            }
        out["large user"] = large_user(mem, (floor_name, floor), searches)
    flatness: dict[str, float] = {}
    if len(sizes) > 1:
        small, large = out[sizes[0].label], out[sizes[-1].label]
        flatness = {
            call: round(large["latency"][call]["p95_ms"] / small["latency"][call]["p95_ms"], 2)
            for call in (OURS, floor_name)
        }
    return {"floor": floor_name, "sizes": out, "flatness_p95_large_over_small": flatness}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Measure ours beside the floor and write ``benchmarks/results/search_floor[-quick].json``
    (``search_floor-weaviate[-quick].json`` and the like for other backends)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="10k only, 200 searches")
    parser.add_argument(
        "--index",
        default="pgvector",
        help="comma-separated backends: pgvector, weaviate (default %(default)s)",
    )
    add_weaviate_option(parser)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.index.split(",") if n.strip()]
    if unknown := [n for n in names if n not in FLOORS]:
        parser.error(f"unknown index {', '.join(unknown)}; known: {', '.join(FLOORS)}")
    sizes = QUICK_SIZES if args.quick else SIZES
    searches = QUICK_SEARCHES if args.quick else SEARCHES
    backends = {name: run_backend(name, args.weaviate, sizes, searches) for name in names}
    rows = []
    for name, result in backends.items():
        for label, stage in result["sizes"].items():
            for call, s in stage["latency"].items():
                ratio = stage["ratio_ours_over_floor_p95"] if call == OURS else ""
                rows.append([name, label, call, int(s["n"]), s["p50_ms"], s["p95_ms"], ratio])
    flat = "; ".join(
        f"{name} p95 100k/10k: ours {r['flatness_p95_large_over_small'][OURS]}×, "
        f"floor {r['flatness_p95_large_over_small'][r['floor']]}×"
        for name, r in backends.items()
        if r["flatness_p95_large_over_small"]
    )
    print_table(
        f"mem.search beside the store's floor, limit {LIMIT}, {searches} searches per size"
        + (f"; {flat}" if flat else ""),
        ["index", "size", "call", "n", "p50 ms", "p95 ms", "ours/floor p95"],
        rows,
    )
    payload = {"limit": LIMIT, "searches": searches, "backends": backends}
    backends_suffix = "" if names == ["pgvector"] else "-" + "-".join(names)
    write_result(NAME + backends_suffix + ("-quick" if args.quick else ""), payload)
    return payload


if __name__ == "__main__":
    main()
