"""LoCoMo retrieval through the real SDK and the real index.

The protocol of :mod:`benchmarks.locomo_offline`, but every memory goes through
``MemoryClient.write_many`` (PII masking, NER, intent, embedding, the ledger
row and its index) and every question through ``MemoryClient.search``: one
user per conversation (``locomo-conv-26``, ...), one memory per turn with the
turn's ``dia_id`` in metadata and the LoCoMo session key as ``session_id``;
hits are mapped back to turns through ``hit.metadata["dia_id"]``.

Reported per split (tuning: conv-26, -30, -41, -42, -43; held-out: the other
five), per method (keyword, vector and hybrid presets) and per category:
evidence recall@5/@10/@25, hit@10 and MRR (within 100 results, the SDK's
largest ``limit``); plus the ingest time and the search latency. The same
embedder is evaluated in memory beside it (the offline reference) and the
difference is printed, so a gap between the SDK path and the reference shows
up in the same run.

    python -m benchmarks.locomo [--quick]
    python -m benchmarks.locomo --embedder sentence-transformers --model-path DIR
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from datetime import UTC
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import locomo_offline
from benchmarks.common import (
    bench_client,
    console,
    elapsed_ms,
    fresh_users,
    latency_stats,
    print_table,
    write_result,
)
from benchmarks.locomo_data import (
    METHODS,
    METRICS,
    MRR_DEPTH,
    TUNING,
    Conversation,
    Report,
    Totals,
    accumulate,
    dataset_path,
    load,
    print_split,
    summarise,
)
from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk.client import MemoryClient
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.embedders.registry import create_embedder
from unstructured_memory.search.presets import PRESETS
from values.inputs import MemoryInput

__all__ = ["main", "memory_inputs", "user_id"]

QUICK = ("conv-26", "conv-44")
"""One conversation of each split for ``--quick``."""


def user_id(sample_id: str) -> str:
    """The user holding one conversation's memories."""
    return f"locomo-{sample_id}"


def memory_inputs(conv: Conversation) -> list[MemoryInput]:
    """One EXPLICIT interaction record per turn of ``conv``, its ``dia_id`` in metadata."""
    return [
        MemoryInput(
            user_id=user_id(conv.sample_id),
            text=m.text,
            lifecycle_policy=LifecyclePolicy.EXPLICIT,
            session_id=m.session,
            occurred_at=m.occurred_at.replace(tzinfo=UTC),
            metadata=m.metadata,
            kind=MemoryKind.INTERACTION_RECORD,
        )
        for m in conv.memories
    ]


def ingest(mem: MemoryClient, conv: Conversation, batch_size: int) -> float:
    """Replace the conversation's user with one memory per turn; seconds spent writing."""
    fresh_users(mem, [user_id(conv.sample_id)])
    items = memory_inputs(conv)
    started = time.perf_counter()
    mem.write_many(items, batch_size=batch_size, progress=False)
    return time.perf_counter() - started


def evaluate_sdk(
    mem: MemoryClient,
    convs: Sequence[Conversation],
    latencies: dict[str, list[float]],
    limit: int = MRR_DEPTH,
) -> tuple[Report, dict[str, Any]]:
    """Every question of ``convs`` through ``search`` with each preset; metrics and stats.

    Search latencies (ms) are appended to ``latencies[method]``. The stats
    count hits whose ``dia_id`` is missing or unknown and searches that
    returned fewer results than asked while the user holds more memories.
    """
    sums: dict[str, Totals] = {m: {} for m in METHODS}
    short: dict[str, int] = dict.fromkeys(METHODS, 0)
    lengths: dict[str, list[int]] = {m: [] for m in METHODS}
    unmapped = 0
    for conv in convs:
        uid = user_id(conv.sample_id)
        position = {m.metadata["dia_id"]: i for i, m in enumerate(conv.memories)}
        want = min(limit, len(conv.memories))
        for query in conv.queries:
            for method in METHODS:
                started = time.perf_counter()
                hits = mem.search(uid, query.text, limit=limit, preset=method)
                latencies[method].append(elapsed_ms(started))
                ranking = []
                for hit in hits:
                    pos = position.get(str(hit.metadata.get("dia_id")))
                    if pos is None:
                        unmapped += 1
                    else:
                        ranking.append(pos)
                lengths[method].append(len(hits))
                if len(hits) < want:
                    short[method] += 1
                accumulate(sums[method], query, ranking)
    stats = {
        "unmapped_hits": unmapped,
        "short_result_lists": short,
        "mean_result_length": {m: round(statistics.fmean(v), 1) for m, v in lengths.items() if v},
    }
    return summarise(sums), stats


def evaluate_reference(convs: Sequence[Conversation], embedder: Embedder) -> Report:
    """The in-memory evaluation of :mod:`benchmarks.locomo_offline` with ``embedder``."""

    def vectors(conv: Conversation) -> tuple[Any, Any]:
        docs = embedder.embed_documents([m.text for m in conv.memories])
        queries = embedder.embed_documents([q.text for q in conv.queries])
        return np.asarray(docs, dtype=np.float32), np.asarray(queries, dtype=np.float32)

    return locomo_offline.evaluate(convs, PRESETS["hybrid"], embedder, vectors)


def _delta_rows(sdk: Report, ref: Report) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for method in METHODS:
        s, r = sdk[method]["overall"], ref[method]["overall"]
        rows.append([method, "SDK", *(f"{s[m]:.1f}" for m in METRICS)])
        rows.append(["", "offline", *(f"{r[m]:.1f}" for m in METRICS)])
        rows.append(["", "difference", *(f"{s[m] - r[m]:+.1f}" for m in METRICS)])
    return rows


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument("--embedder", default="hashing", help="embedder name (registry)")
    parser.add_argument("--model-path", type=Path, help="sentence-transformers model directory")
    parser.add_argument(
        "--data-name",
        help="bench data dir suffix (.dualtrack/bench-<name>); default per embedder, "
        "since one database holds one embedding space",
    )
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument(
        "--limit",
        type=int,
        default=MRR_DEPTH,
        help="hits asked per search (the re-ranking's depth)",
    )
    parser.add_argument("--no-reference", action="store_true", help="skip the in-memory run")
    parser.add_argument("--out", default=None, help="result name (benchmarks/results/<out>.json)")
    return parser.parse_args(argv)


def run_sdk(
    mem: MemoryClient,
    splits: dict[str, list[Conversation]],
    batch_size: int,
    limit: int = MRR_DEPTH,
) -> tuple[dict[str, Any], dict[str, Report]]:
    """Ingest every conversation, then search every question; the report and results."""
    report: dict[str, Any] = {"splits": {}}
    latencies: dict[str, list[float]] = {m: [] for m in METHODS}
    ingest_s, turns = 0.0, 0
    for conv in (c for group in splits.values() for c in group):
        seconds = ingest(mem, conv, batch_size)
        console.print(f"ingested {conv.sample_id}: {len(conv.memories)} turns in {seconds:.1f} s")
        ingest_s += seconds
        turns += len(conv.memories)
    report["ingest"] = {
        "memories": turns,
        "seconds": round(ingest_s, 2),
        "memories_per_s": round(turns / ingest_s, 1),
    }
    results: dict[str, Report] = {}
    for split, group in splits.items():
        if not group:
            continue
        result, stats = evaluate_sdk(mem, group, latencies, limit)
        results[split] = result
        report["splits"][split] = {
            "conversations": [c.sample_id for c in group],
            "sdk": result,
            "checks": stats,
        }
        print_split(f"SDK {split} ({', '.join(c.sample_id for c in group)})", result)
        console.print(f"checks: {stats}")
    report["search_latency"] = {m: latency_stats(v) for m, v in latencies.items() if v}
    return report, results


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Ingest LoCoMo through the SDK, run every question, print and write the results."""
    args = _parse(argv)
    embedder_config: dict[str, Any] = {}
    if args.model_path is not None:
        embedder_config["model_path"] = str(args.model_path.absolute())
    suffix = "" if args.embedder == "hashing" else f"-{args.embedder}"
    name = args.data_name or f"locomo{suffix}"

    convs = load(dataset_path(), with_tokens=True)
    if args.quick:
        convs = [c for c in convs if c.sample_id in QUICK]
    splits = {
        "tuning": [c for c in convs if c.sample_id in TUNING],
        "held_out": [c for c in convs if c.sample_id not in TUNING],
    }
    console.print(f"embedder {args.embedder}; data dir bench-{name}")
    mem = bench_client(name, embedder=args.embedder, embedder_config=embedder_config)
    try:
        run, sdk_results = run_sdk(mem, splits, args.batch_size, args.limit)
    finally:
        mem.close()
    report: dict[str, Any] = {
        "dataset": str(dataset_path()),
        "quick": args.quick,
        "embedder": args.embedder,
        "embedder_config": embedder_config,
        "search_presets": {m: PRESETS[m].model_dump(mode="json") for m in METHODS},
        "limit": args.limit,
        **run,
    }
    ingest_stats = run["ingest"]
    print_table(
        f"LoCoMo through the SDK ({args.embedder})",
        ["measure", "value"],
        [
            ["memories ingested", ingest_stats["memories"]],
            ["ingest seconds", ingest_stats["seconds"]],
            ["ingest memories/s", ingest_stats["memories_per_s"]],
            *(
                [f"{m} search mean / p95 (ms)", f"{s['mean_ms']:.1f} / {s['p95_ms']:.1f}"]
                for m, s in run["search_latency"].items()
            ),
        ],
    )
    if not args.no_reference:
        embedder = create_embedder(args.embedder, embedder_config)
        for split, result in sdk_results.items():
            ref = evaluate_reference(splits[split], embedder)
            report["splits"][split]["offline_reference"] = ref
            report["splits"][split]["sdk_minus_reference_overall"] = {
                m: {k: round(result[m]["overall"][k] - ref[m]["overall"][k], 1) for k in METRICS}
                for m in METHODS
            }
            print_table(
                f"{split}: SDK vs offline reference, overall",
                ["method", "run", *METRICS],
                _delta_rows(result, ref),
            )
    write_result(args.out or f"locomo{suffix}{'-quick' if args.quick else ''}", report)
    return report


if __name__ == "__main__":
    main()
