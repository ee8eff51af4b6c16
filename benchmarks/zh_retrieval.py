"""The Chinese e-commerce retrieval set through the SDK on pgvector (no server needed).

``benchmarks/data/zh_retrieval.jsonl`` (hand-written memories and labelled
queries, one user each), alone and "hard" (each user also holding five other
users' memories), written through ``MemoryClient.write_many`` and searched
through ``MemoryClient.search`` with the keyword, vector and hybrid presets.
Reported: recall@5/@10, hit@10 and MRR (within 100 results).
:mod:`benchmarks.weaviate_keyword` runs the same sets against Weaviate.

    python -m benchmarks.zh_retrieval
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from benchmarks.common import bench_client, print_table, write_result
from benchmarks.locomo_data import METHODS, MRR_DEPTH, metrics
from benchmarks.weaviate_keyword import RetrievalSet, write_set, zh_sets
from sdk.client import MemoryClient

__all__ = ["evaluate", "main"]

SHOWN = ("recall@5", "recall@10", "hit@10", "mrr")


def evaluate(mem: MemoryClient, rset: RetrievalSet) -> dict[str, dict[str, float]]:
    """Write ``rset`` and search each query with every preset: metrics in percent."""
    ids = write_set(mem, rset)
    out: dict[str, dict[str, float]] = {}
    for method in METHODS:
        sums = dict.fromkeys(SHOWN, 0.0)
        for question in rset.queries:
            position = {fid: i for i, fid in enumerate(ids[question.user])}
            hits = mem.search(question.user, question.text, limit=MRR_DEPTH, preset=method)
            ranking = [position[h.memory_id] for h in hits if h.memory_id in position]
            values = metrics(ranking, question.relevant)
            for k in SHOWN:
                sums[k] += values[k]
        n = len(rset.queries)
        out[method] = {"n": n, **{k: round(100.0 * v / n, 1) for k, v in sums.items()}}
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Score both sets on pgvector, print them and write ``results/zh_retrieval.json``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", default="zh_retrieval", help="benchmarks/results/<out>.json")
    args = parser.parse_args(argv)
    mem = bench_client("zh-retrieval", index="pgvector")
    try:
        results = {s.name: evaluate(mem, s) for s in zh_sets()}
    finally:
        mem.close()
    print_table(
        "Chinese retrieval set through the SDK (pgvector), % within 100 results",
        ["set", "method", "n", *SHOWN],
        [
            [name, method, int(v["n"]), *(f"{v[k]:.1f}" for k in SHOWN)]
            for name, by_method in results.items()
            for method, v in by_method.items()
        ],
    )
    payload = {"backend": "pgvector", "sets": results}
    write_result(args.out, payload)
    return payload


if __name__ == "__main__":
    main()
