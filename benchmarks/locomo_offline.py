"""Offline retrieval evaluation on LoCoMo: keyword, vector and hybrid search.

One user per conversation and one memory per turn (``speaker: text`` plus the
image caption where present, ``occurred_at`` from the session date, the
``dia_id`` in metadata); every question of categories 1-4 is a query whose
relevant memories are its evidence turns. Everything runs in memory: BM25 from
:mod:`unstructured_memory.search.bm25`, brute-force cosine with numpy, and
:func:`~unstructured_memory.search.fusion.relative_score_fusion` (or ranked
fusion, per preset) over the top ``candidates`` of each list.

Reported per category and overall: evidence recall@5/@10/@25 (share of a
question's evidence turns in the top k, averaged over questions), hit@10 (at
least one evidence turn in the top 10) and MRR (reciprocal rank of the first
evidence turn within the first 100 results, else 0). Parameters are tuned on
the tuning split only; the held-out split is reported separately.

    python -m benchmarks.locomo_offline [--preset hybrid] [--tune]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.common import write_result
from benchmarks.locomo_data import (
    METHODS,
    MRR_DEPTH,
    TUNING,
    Conversation,
    Ranking,
    Report,
    Totals,
    accumulate,
    load,
    print_split,
    summarise,
)
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.embedders.hashing import HashingEmbedder, HashingEmbedderConfig
from unstructured_memory.search.bm25 import BM25Index
from unstructured_memory.search.fusion import ranked_fusion, relative_score_fusion
from unstructured_memory.search.presets import PRESETS, Fusion, SearchConfig
from unstructured_memory.search.rerank import DEFAULT_RERANK, Candidate, RerankConfig, rerank

Vectors = npt.NDArray[np.float32]


def embed(embedder: Embedder, texts: Sequence[str]) -> Vectors:
    """Row-stacked vectors of ``texts``."""
    return np.asarray(embedder.embed_documents(texts), dtype=np.float32)


def top(scores: npt.NDArray[Any], k: int) -> list[tuple[int, float]]:
    """The ``k`` best ``(position, score)`` pairs, ties by position."""
    idx = np.arange(len(scores))
    order = np.lexsort((idx, -scores))[:k]
    return [(int(i), float(scores[i])) for i in order]


def rankings(
    conv: Conversation,
    doc_vecs: Vectors,
    query_vecs: Vectors,
    config: SearchConfig,
    *,
    depth: int = MRR_DEPTH,
    reranking: RerankConfig | None = DEFAULT_RERANK,
) -> dict[str, list[Ranking]]:
    """Per method, the ranked memory positions of each query of ``conv``, re-ranked
    by session, speaker and own text (``reranking``) as the SDK's search path does."""
    bm25 = BM25Index(conv.doc_tokens, k1=config.bm25_k1, b=config.bm25_b)
    fuse = relative_score_fusion if config.fusion is Fusion.RELATIVE_SCORE else ranked_fusion
    n = max(config.candidates, depth)
    head = max(depth, reranking.depth) if reranking is not None else 0
    out: dict[str, list[Ranking]] = {m: [] for m in METHODS}
    sims = query_vecs @ doc_vecs.T
    for qi, q_tokens in enumerate(conv.query_tokens):
        kw = bm25.top_k(q_tokens, n)
        vec = top(sims[qi], n)
        hybrid = fuse(
            vec[: config.candidates], kw[: config.candidates], alpha=config.alpha, limit=n
        )
        for method, found in (("keyword", kw), ("vector", vec), ("hybrid", hybrid)):
            ranked = found
            if reranking is not None:
                candidates = [
                    Candidate(i, s, m.session, m.metadata["speaker"], m.text)
                    for i, s in found[:head]
                    for m in (conv.memories[i],)
                ]
                ranked = (
                    rerank(conv.queries[qi].text, candidates, reranking, terms=q_tokens)
                    + found[head:]
                )
            out[method].append([i for i, _ in ranked])
    return out


def evaluate(
    convs: Sequence[Conversation],
    config: SearchConfig,
    embedder: Embedder,
    vectors: Callable[[Conversation], tuple[Vectors, Vectors]] | None = None,
) -> Report:
    """``{method: {category or "overall": {metric: value, "n": count}}}`` in percent."""
    sums: dict[str, Totals] = {m: {} for m in METHODS}
    for conv in convs:
        if vectors is None:
            doc_vecs = embed(embedder, [m.text for m in conv.memories])
            query_vecs = embed(embedder, [q.text for q in conv.queries])
        else:
            doc_vecs, query_vecs = vectors(conv)
        for method, ranked in rankings(conv, doc_vecs, query_vecs, config).items():
            for query, ranking in zip(conv.queries, ranked, strict=True):
                accumulate(sums[method], query, ranking)
    return summarise(sums)


def tune(convs: Sequence[Conversation], embedder: Embedder, start: SearchConfig) -> SearchConfig:
    """Grid-search k1 and b (keyword recall@10), then alpha (hybrid recall@10)."""
    cache = {
        c.sample_id: (
            embed(embedder, [m.text for m in c.memories]),
            embed(embedder, [q.text for q in c.queries]),
        )
        for c in convs
    }

    def score(cfg: SearchConfig, method: str) -> float:
        res = evaluate(convs, cfg, embedder, lambda c: cache[c.sample_id])
        return res[method]["overall"]["recall@10"]

    best = start
    grid_kb = [
        (k1, b) for k1 in (0.3, 0.45, 0.6, 0.9, 1.2, 1.5) for b in (0.1, 0.2, 0.3, 0.5, 0.75)
    ]
    k1, b = max(
        grid_kb,
        key=lambda kb: score(
            best.model_copy(update={"bm25_k1": kb[0], "bm25_b": kb[1]}), "keyword"
        ),
    )
    best = best.model_copy(update={"bm25_k1": k1, "bm25_b": b})
    alphas = [round(0.05 * i, 2) for i in range(21)]
    alpha = max(alphas, key=lambda a: score(best.model_copy(update={"alpha": a}), "hybrid"))
    return best.model_copy(update={"alpha": alpha})


def main(argv: Sequence[str] | None = None) -> None:
    """Evaluate a preset (or tune one on the tuning split) and write the JSON results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--preset", default="hybrid", choices=sorted(PRESETS))
    parser.add_argument("--embedder", default="{}", help="HashingEmbedderConfig as JSON")
    parser.add_argument("--tune", action="store_true", help="grid-search k1, b, alpha first")
    parser.add_argument("--context-turns", type=int, default=0, help="contextual variant")
    parser.add_argument("--date-prefix", action="store_true", help="contextual variant")
    parser.add_argument("--out", default="locomo_offline", help="benchmarks/results/<out>.json")
    args = parser.parse_args(argv)

    embedder = HashingEmbedder(HashingEmbedderConfig.model_validate_json(args.embedder))
    convs = load(context_turns=args.context_turns, date_prefix=args.date_prefix)
    tuning = [c for c in convs if c.sample_id in TUNING]
    held_out = [c for c in convs if c.sample_id not in TUNING]

    texts = [m.text for c in convs for m in c.memories]
    started = time.perf_counter()
    embedder.embed_documents(texts)
    docs_per_s = len(texts) / (time.perf_counter() - started)

    preset = PRESETS[args.preset]
    config = tune(tuning, embedder, preset) if args.tune else preset
    report: dict[str, Any] = {
        "embedder": embedder.name,
        "embedder_config": embedder.config.model_dump(),
        "search_config": config.model_dump(mode="json"),
        "embed_docs_per_s": round(docs_per_s),
        "context_turns": args.context_turns,
        "date_prefix": args.date_prefix,
        "splits": {},
    }
    for split, group in (("tuning", tuning), ("held_out", held_out)):
        result = evaluate(group, config, embedder)
        report["splits"][split] = {"conversations": [c.sample_id for c in group], **result}
        print_split(f"{split} ({', '.join(c.sample_id for c in group)})", result)
    print(f"\nembedder {embedder.name}: {docs_per_s:.0f} docs/s; search config {config}")
    write_result(args.out, report)


if __name__ == "__main__":
    main()
