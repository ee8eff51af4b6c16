"""Weaviate keyword property: BM25 over ``index_text`` or over ``text_gse``?

``index_text`` holds jieba tokens in a ``whitespace`` property and is queried
with the query's tokens; ``text_gse`` holds the masked text under Weaviate's
``gse_ch`` tokenizer and is queried with the masked query text. Both are
searched keyword-only and hybrid, with queries from ``build_query`` (masked,
tokenised, embedded, as ``mem.search`` builds them), on:

- the LoCoMo tuning split, written as :mod:`benchmarks.locomo` writes it (one
  user per conversation, one memory per turn; evidence recall and MRR within
  100 results);
- the hand-written Chinese e-commerce set ``benchmarks/data/zh_retrieval.jsonl``,
  alone and "hard" (each user also holding five other users' memories).

pgvector runs the same sets as a reference. The ``index_text`` collection is
fed by the outbox; the same ledger rows are pushed into a second, ``text_gse``
collection. Start a server first, then::

    python -m benchmarks.weaviate_keyword --weaviate 127.0.0.1:8093:50063 [--quick]

The data lives in the ``WvKeywordBench`` and ``WvKeywordBenchGse`` collections
(dropped and refilled each run) and in ``.dualtrack/bench-weaviate-keyword``
(Weaviate) and ``.dualtrack/bench-weaviate-keyword-pg`` (pgvector).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import (
    add_weaviate_option,
    bench_client,
    console,
    elapsed_ms,
    fresh_users,
    percentile,
    print_table,
    wait_for_index,
    write_result,
)
from benchmarks.locomo import memory_inputs, user_id
from benchmarks.locomo_data import MRR_DEPTH, TUNING, dataset_path, load, metrics
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from sdk.feed import to_indexed
from structured_memory.cross_user import fragments_for_index
from structured_memory.repositories.fragments import visible_in_ledger
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.index.base import FragmentIndex, Resettable, Upsert
from unstructured_memory.index.registry import create_index
from unstructured_memory.search.presets import HYBRID_DEFAULT, KEYWORD_ONLY, SearchConfig
from unstructured_memory.search.query import build_query
from values.inputs import MemoryInput

__all__ = ["main"]

NAME = "weaviate_keyword"
COLLECTION = "WvKeywordBench"
ZH_PATH = Path(__file__).parent / "data" / "zh_retrieval.jsonl"
HARD_DISTRACTOR_USERS = 5
METHODS: dict[str, SearchConfig] = {"keyword": KEYWORD_ONLY, "hybrid": HYBRID_DEFAULT}
BACKENDS = ("wv index_text", "wv text_gse", "pgvector")
SHOWN = ("recall@5", "recall@10", "hit@10", "mrr")
QUICK_LOCOMO = ("conv-26",)
ID_PROBES = ("88231", "RF20260629001", "SF1409283374651", "S10 Pro", "iPhone", "退款", "微信")
"""Keyword queries whose match counts show how each property tokenises identifiers."""

_LATIN_OR_DIGIT = re.compile(r"[A-Za-z0-9]")
SUBSETS: dict[str, Callable[[str], bool]] = {
    "all": lambda q: True,
    "with Latin/digits": lambda q: bool(_LATIN_OR_DIGIT.search(q)),
    "Chinese only": lambda q: not _LATIN_OR_DIGIT.search(q),
}
"""Query subsets of the per-query comparison (identifiers and English vs Chinese words)."""


@dataclass(frozen=True)
class Question:
    """One query of a user and the positions of its relevant memories."""

    user: str
    text: str
    relevant: frozenset[int]


@dataclass(frozen=True)
class RetrievalSet:
    """Users' memories (by position) and labelled queries."""

    name: str
    memories: dict[str, list[MemoryInput]]
    queries: list[Question]


def locomo_set(conversations: Sequence[str]) -> RetrievalSet:
    """LoCoMo conversations as :mod:`benchmarks.locomo` writes them."""
    convs = [c for c in load(with_tokens=False) if c.sample_id in conversations]
    return RetrievalSet(
        "locomo-tuning",
        {user_id(c.sample_id): memory_inputs(c) for c in convs},
        [Question(user_id(c.sample_id), q.text, q.evidence) for c in convs for q in c.queries],
    )


def zh_sets(path: Path = ZH_PATH) -> list[RetrievalSet]:
    """The hand-written Chinese set, and its "hard" variant with distractor users' memories."""
    memories: dict[str, list[tuple[str, str]]] = {}
    raw: list[tuple[str, str, list[str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if row["type"] == "memory":
                memories.setdefault(row["user"], []).append((row["id"], row["text"]))
            else:
                raw.append((row["user"], row["text"], list(row["relevant"])))
    users = sorted(memories)

    def note(user: str, text: str) -> MemoryInput:
        return MemoryInput(user_id=user, text=text, lifecycle_policy=LifecyclePolicy.EXPLICIT)

    plain = {u: [note(u, t) for _, t in memories[u]] for u in users}
    hard = {
        f"hard-{u}": [
            note(f"hard-{u}", t)
            for k in range(HARD_DISTRACTOR_USERS + 1)
            for _, t in memories[users[(i + k) % len(users)]]
        ]
        for i, u in enumerate(users)
    }
    queries = []
    for user, q, relevant in raw:
        position = {mid: i for i, (mid, _) in enumerate(memories[user])}
        if missing := [r for r in relevant if r not in position]:
            raise ValueError(f"{path}: query {q!r} names unknown memories {missing}")
        queries.append(Question(user, q, frozenset(position[r] for r in relevant)))
    hard_queries = [Question(f"hard-{q.user}", q.text, q.relevant) for q in queries]
    return [RetrievalSet("zh", plain, queries), RetrievalSet("zh-hard", hard, hard_queries)]


def write_set(mem: MemoryClient, rset: RetrievalSet) -> dict[str, list[uuid.UUID]]:
    """Replace the set's users and write their memories; the ids in order, per user."""
    fresh_users(mem, rset.memories)
    items = [m for ms in rset.memories.values() for m in ms]
    ids = iter(mem.write_many(items, batch_size=256, progress=False))
    return {user: [next(ids) for _ in ms] for user, ms in rset.memories.items()}


def copy_to(index: FragmentIndex, mem: MemoryClient, ids: Sequence[uuid.UUID]) -> None:
    """Push ledger rows straight into a second index (the ``text_gse`` collection)."""
    for start in range(0, len(ids), 500):
        rows = fragments_for_index(mem.admin.database, ids[start : start + 500])
        index.apply([Upsert(mem.scope(r.user_id), to_indexed(r)) for r in rows.values()])


Report = dict[str, dict[str, dict[str, float]]]
"""``{backend: {method: {metric: percent, "n": queries, "p50_ms": ms}}}``."""


def evaluate_set(
    mem: MemoryClient,
    embedder: Embedder,
    rset: RetrievalSet,
    ids: Mapping[str, Mapping[str, Sequence[uuid.UUID]]],
    backends: Mapping[str, FragmentIndex],
) -> tuple[Report, dict[str, dict[str, list[float]]]]:
    """Per backend and method: mean metrics in percent, and each query's MRR.

    ``ids`` maps each backend to its fragment ids per user, in memory order.
    """
    sums: dict[str, dict[str, dict[str, float]]] = {}
    mrr: dict[str, dict[str, list[float]]] = {}
    latency: dict[str, list[float]] = {}
    for question in rset.queries:
        scope = mem.scope(question.user)
        for method, config in METHODS.items():
            built = build_query(
                question.text,
                embedder=embedder,
                config=config,
                limit=MRR_DEPTH,
                now=datetime.now(UTC),
            )
            for backend, index in backends.items():
                position = {fid: i for i, fid in enumerate(ids[backend][question.user])}
                started = time.perf_counter()
                hits = index.search(scope, built.query)
                latency.setdefault(f"{backend}/{method}", []).append(elapsed_ms(started))
                ranking = [position[h.fragment_id] for h in hits if h.fragment_id in position]
                values = metrics(ranking, question.relevant)
                acc = sums.setdefault(backend, {}).setdefault(method, {"n": 0.0})
                for k, v in values.items():
                    acc[k] = acc.get(k, 0.0) + v
                acc["n"] += 1
                mrr.setdefault(backend, {}).setdefault(method, []).append(values["mrr"])
    report: Report = {}
    for backend, methods in sums.items():
        for method, acc in methods.items():
            row = {k: (v if k == "n" else round(100.0 * v / acc["n"], 1)) for k, v in acc.items()}
            row["p50_ms"] = round(percentile(latency[f"{backend}/{method}"], 50), 2)
            report.setdefault(backend, {})[method] = row
    return report, mrr


def compare_subsets(
    rset: RetrievalSet, mrr: Mapping[str, Mapping[str, Sequence[float]]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per method and query subset: queries where ``text_gse`` puts the first relevant
    memory higher / lower / as high as ``index_text``, and both mean MRRs."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for method in METHODS:
        for subset, keep in SUBSETS.items():
            chosen = [i for i, q in enumerate(rset.queries) if keep(q.text)]
            if not chosen:
                continue
            xs = [mrr["wv index_text"][method][i] for i in chosen]
            ys = [mrr["wv text_gse"][method][i] for i in chosen]
            pairs = list(zip(xs, ys, strict=True))
            out.setdefault(method, {})[subset] = {
                "n": len(chosen),
                "better": sum(y > x + 1e-9 for x, y in pairs),
                "worse": sum(y < x - 1e-9 for x, y in pairs),
                "same": sum(abs(y - x) <= 1e-9 for x, y in pairs),
                "mrr_index_text": round(100 * statistics.fmean(xs), 1),
                "mrr_text_gse": round(100 * statistics.fmean(ys), 1),
            }
    return out


def id_probe(
    mem: MemoryClient, embedder: Embedder, backends: Mapping[str, FragmentIndex], user: str
) -> dict[str, dict[str, int]]:
    """How many of one user's memories each keyword property matches for :data:`ID_PROBES`."""
    out: dict[str, dict[str, int]] = {}
    for probe in ID_PROBES:
        built = build_query(
            probe, embedder=embedder, config=KEYWORD_ONLY, limit=MRR_DEPTH, now=datetime.now(UTC)
        )
        out[probe] = {
            name: len(index.search(mem.scope(user), built.query))
            for name, index in backends.items()
        }
    return out


def winners(results: Mapping[str, Any]) -> dict[str, str]:
    """Which keyword property wins, per set and method (by recall@10, then MRR)."""
    out = {}
    for name, r in results.items():
        for method in METHODS:
            a = r["results"]["wv index_text"][method]
            b = r["results"]["wv text_gse"][method]
            key_a, key_b = (a["recall@10"], a["mrr"]), (b["recall@10"], b["mrr"])
            winner = "index_text" if key_a > key_b else "text_gse" if key_b > key_a else "tie"
            out[f"{name}/{method}"] = (
                f"{winner} (index_text R@10 {a['recall@10']}, MRR {a['mrr']}; "
                f"text_gse R@10 {b['recall@10']}, MRR {b['mrr']})"
            )
    return out


def run(
    wv: MemoryClient, gse: FragmentIndex, pg: MemoryClient, sets: Sequence[RetrievalSet]
) -> dict[str, Any]:
    """Write every set on both clients, copy to ``text_gse``, evaluate; print the tables."""
    embedder = wv.admin.embedder
    backends = {"wv index_text": wv.admin.index, "wv text_gse": gse, "pgvector": pg.admin.index}
    started = time.perf_counter()
    wv_ids = {s.name: write_set(wv, s) for s in sets}
    pg_ids = {s.name: write_set(pg, s) for s in sets}
    caught_up_s = wait_for_index(wv)
    copy_to(gse, wv, [i for by_user in wv_ids.values() for us in by_user.values() for i in us])
    ingest = {
        "memories": sum(len(m) for s in sets for m in s.memories.values()),
        "write_and_index_s": round(time.perf_counter() - started, 1),
        "outbox_catch_up_s": round(caught_up_s, 1),
    }
    console.print(f"ingest: {ingest}")
    results: dict[str, Any] = {}
    rows: list[list[Any]] = []
    for s in sets:
        ids = {
            "wv index_text": wv_ids[s.name],
            "wv text_gse": wv_ids[s.name],
            "pgvector": pg_ids[s.name],
        }
        report, mrr = evaluate_set(wv, embedder, s, ids, backends)
        results[s.name] = {
            "users": len(s.memories),
            "memories": sum(len(m) for m in s.memories.values()),
            "queries": len(s.queries),
            "results": report,
            "text_gse_vs_index_text_mrr": compare_subsets(s, mrr),
        }
        rows += [
            [s.name, method, backend, int(v["n"]), *(f"{v[k]:.1f}" for k in SHOWN), v["p50_ms"]]
            for method in METHODS
            for backend in BACKENDS
            for v in [report[backend][method]]
        ]
    print_table(
        "keyword property: recall, hit and MRR in % (pgvector for reference)",
        ["set", "method", "backend", "n", "R@5", "R@10", "hit@10", "MRR", "p50 ms"],
        rows,
    )
    print_table(
        "per query: does text_gse put the first relevant memory higher than index_text?",
        ["set", "method", "queries", "n", "gse better", "gse worse", "same", "MRR idx", "MRR gse"],
        [
            [name, m, subset, *c.values()]
            for name, r in results.items()
            for m, subsets in r["text_gse_vs_index_text_mrr"].items()
            for subset, c in subsets.items()
        ],
    )
    out: dict[str, Any] = {"ingest": ingest, "sets": results, "winner": winners(results)}
    hard = next((s for s in sets if s.name == "zh-hard"), None)
    if hard is not None:
        user = min(hard.memories)
        wv_only = {"index_text": wv.admin.index, "text_gse": gse}
        probe = id_probe(wv, embedder, wv_only, user)
        out["keyword_match_probe"] = {
            "user": user,
            "memories": len(hard.memories[user]),
            "matches": probe,
        }
        print_table(
            f"memories matched by a keyword query ({user}, {len(hard.memories[user])} memories)",
            ["query", "index_text", "text_gse"],
            [[q, c["index_text"], c["text_gse"]] for q, c in probe.items()],
        )
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Compare the keyword properties and write ``benchmarks/results/weaviate_keyword.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help=f"LoCoMo {QUICK_LOCOMO[0]} only")
    add_weaviate_option(parser)
    args = parser.parse_args(argv)
    sets: list[RetrievalSet] = []
    if dataset_path().is_file():
        sets.append(locomo_set(QUICK_LOCOMO if args.quick else TUNING))
    else:
        console.print(f"[yellow]LoCoMo not found at {dataset_path()}: skipped[/]")
    sets += zh_sets()
    server = args.weaviate.client()
    version = server.get_meta().get("version")
    server.close()
    started = time.perf_counter()
    config = args.weaviate.index_config(COLLECTION)
    wv = bench_client(
        "weaviate-keyword", index="weaviate", index_config=config, outbox_worker="external"
    )
    gse_config = args.weaviate.index_config(f"{COLLECTION}Gse", keyword_property="text_gse")
    gse = create_index(
        "weaviate",
        gse_config,
        connect=wv.admin.database.reading,
        visible=visible_in_ledger,
        tenant_key=b"bench-gse-tenants",  # its own collection, fed by this benchmark alone
    )
    pg = bench_client("weaviate-keyword-pg", index="pgvector")
    try:
        for index in (wv.admin.index, gse):
            if not isinstance(index, Resettable):
                raise SystemExit(f"the {index.name} index cannot be reset")
            index.reset()
        out = run(wv, gse, pg, sets)
    finally:
        gse.close()
        wv.close()
        pg.close()
    payload = {
        "quick": args.quick,
        "weaviate": {"version": version, "at": str(args.weaviate)},
        **out,
        "runtime_s": round(time.perf_counter() - started, 1),
    }
    write_result(NAME + ("-quick" if args.quick else ""), payload)
    return payload


if __name__ == "__main__":
    main()
