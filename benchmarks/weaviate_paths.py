"""Weaviate search paths, side by side in one run against a real server.

1. **Keyword property**: BM25 over ``index_text`` (jieba tokens in a
   ``whitespace`` property, the query tokenised the same way) against
   ``text_gse`` (the masked text under Weaviate's ``gse_ch``, the raw query),
   keyword-only and hybrid, on the LoCoMo tuning split (the protocol of
   :mod:`benchmarks.locomo_offline`: one user per conversation, one memory per
   turn, evidence recall and MRR within 100 results) and on the hand-written
   Chinese e-commerce set ``benchmarks/data/zh_retrieval.jsonl`` (alone, and
   "hard": each user also holding the memories of five other users as
   distractors). The pgvector backend runs the same sets as a reference. The
   ``index_text`` collection is fed by the outbox; the same ledger rows are
   pushed into a second, ``text_gse`` collection; both are queried with the
   same query vectors through ``WeaviateIndex.search``.
2. **Our search path against a bare client query**: ``mem.search`` (embed the
   query, Weaviate hybrid with the user, expiry, visibility and sandbox
   filters, ledger hydration with TTL renewal) against a bare
   ``collection.with_tenant(t).query.hybrid(...)`` with the same precomputed
   vector, interleaved in random order per query; the pieces of our path are
   timed separately for a breakdown.
3. **Pre-filter then rank against filter-only**: for intent and time filters
   of about 1 %, 10 %, 50 % and 100 % selectivity, on users holding 50 and
   2,000 fragments: (a) the ledger lists the matching ids and Weaviate ranks
   only those (``Filter.by_id().contains_any``, what ``mem.search`` does), and
   (b) Weaviate's own property filters (``WeaviateIndex.search`` with
   ``SearchFilters(intents=..., occurred_after=...)`` and no candidates);
   latency and the overlap of their top 5.

Start a server first, e.g. ``WEAVIATE_PORT=8093 WEAVIATE_GRPC_PORT=50063
scripts/weaviate.sh start``, then::

    python -m benchmarks.weaviate_paths --weaviate 127.0.0.1:8093:50063 [--quick]

Every user is a tenant, and an active tenant holds about 25 open files in
Weaviate 1.39: the full run makes about 600 tenants (about 15,000 files), so
the server needs a file descriptor limit above that; at a limit of 20,000,
1,100 tenants exhausted it and the server stopped accepting writes.

The data lives in the ``WvpBench`` and ``WvpBenchGse`` collections (dropped
and refilled each run)
and in ``.dualtrack/bench-weaviate-paths`` (Weaviate) and
``.dualtrack/bench-weaviate-paths-pg`` (pgvector reference); users are
prefixed ``wvp-`` / ``wvpg-`` and replaced on every run.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import random
import re
import statistics
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from sqlalchemy import text

from benchmarks.common import bench_client, console, percentile, write_result
from benchmarks.locomo_data import MRR_DEPTH, TUNING, dataset_path, load
from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk.client import MemoryClient
from sdk.indexing import to_indexed
from sdk.memories import MemoryInput
from structured_memory.cross_user import fragments_for_index
from structured_memory.repositories.fragments import FragmentLedger
from unstructured_memory.embedders.base import Embedder
from unstructured_memory.embedders.registry import create_embedder
from unstructured_memory.index.base import FragmentIndex, SearchFilters, SearchQuery, Upsert
from unstructured_memory.index.weaviate import WeaviateConfig, WeaviateIndex, tenant_name
from unstructured_memory.search.presets import HYBRID_DEFAULT, KEYWORD_ONLY, SearchConfig
from unstructured_memory.tokenize import tokens

__all__ = ["main"]

NAME = "weaviate_paths"
COLLECTION = "WvpBench"
GSE_COLLECTION = "WvpBenchGse"
PREFIX = "wvp-"
PG_PREFIX = "wvpg-"
ZH_PATH = Path(__file__).parent / "data" / "zh_retrieval.jsonl"
SEED = 20260629
BASE_TIME = datetime(2026, 3, 1, tzinfo=UTC)
SPAN_DAYS = 100
LIMIT = 5
HARD_DISTRACTOR_USERS = 5
METHODS: dict[str, SearchConfig] = {"keyword": KEYWORD_ONLY, "hybrid": HYBRID_DEFAULT}
KEYWORD_PROPERTIES = ("index_text", "text_gse")
RECALL_KS = (3, 10)


@dataclass(frozen=True)
class Size:
    """How much data each part uses (full run or ``--quick``)."""

    locomo: tuple[str, ...]
    path_users: int
    path_fragments: int
    path_searches: int
    small_users: int
    large_users: int
    large_fragments: int
    filter_searches: int


FULL = Size(TUNING, 500, 40, 1_000, 40, 4, 2_000, 60)
QUICK = Size(("conv-26",), 100, 40, 150, 10, 1, 2_000, 12)
SMALL_FRAGMENTS = 50


# ----------------------------------------------------------------------------- data sets


@dataclass(frozen=True)
class Doc:
    """One memory to write."""

    text: str
    occurred_at: datetime | None = None
    session: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Question:
    """One query of a user and the positions of its relevant memories."""

    user: str
    text: str
    relevant: frozenset[int]


@dataclass
class RetrievalSet:
    """Users' memories (by position) and labelled queries."""

    name: str
    docs: dict[str, list[Doc]]
    queries: list[Question]


def locomo_set(conversations: Sequence[str]) -> RetrievalSet:
    """The LoCoMo conversations as :mod:`benchmarks.locomo` writes them."""
    convs = [c for c in load(with_tokens=False) if c.sample_id in conversations]
    docs = {
        f"locomo-{c.sample_id}": [
            Doc(m.text, m.occurred_at.replace(tzinfo=UTC), m.session, dict(m.metadata))
            for m in c.memories
        ]
        for c in convs
    }
    queries = [
        Question(f"locomo-{c.sample_id}", q.text, q.evidence) for c in convs for q in c.queries
    ]
    return RetrievalSet("locomo-tuning", docs, queries)


def zh_sets(path: Path = ZH_PATH) -> tuple[RetrievalSet, RetrievalSet]:
    """The hand-written Chinese set, and its "hard" variant with distractor users' memories."""
    memories: dict[str, list[tuple[str, str]]] = {}
    raw_queries: list[tuple[str, str, list[str]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row["type"] == "memory":
            memories.setdefault(row["user"], []).append((row["id"], row["text"]))
        else:
            raw_queries.append((row["user"], row["text"], list(row["relevant"])))
    users = sorted(memories)
    plain = {u: [Doc(t) for _, t in memories[u]] for u in users}
    hard: dict[str, list[Doc]] = {}
    for i, u in enumerate(users):
        others = [users[(i + k) % len(users)] for k in range(1, HARD_DISTRACTOR_USERS + 1)]
        hard[u] = plain[u] + [Doc(t) for o in others for _, t in memories[o]]
    queries = []
    for user, q, relevant in raw_queries:
        position = {mid: i for i, (mid, _) in enumerate(memories[user])}
        missing = [r for r in relevant if r not in position]
        if missing:
            raise ValueError(f"{path}: query {q!r} names unknown memories {missing}")
        queries.append(Question(user, q, frozenset(position[r] for r in relevant)))
    return RetrievalSet("zh", plain, queries), RetrievalSet("zh-hard", hard, queries)


_PRODUCTS = (
    "iPhone 15 Pro",
    "华为 Mate 60",
    "小米手环 8",
    "戴森吹风机",
    "耐克 Air Max 90",
    "优衣库羽绒服",
    "SK-II 神仙水",
    "索尼 WH-1000XM5 耳机",
    "美的电饭煲",
    "Kindle Paperwhite",
    "李宁跑鞋",
    "格力空调",
)
_CITIES = ("上海", "北京", "杭州", "深圳", "成都", "武汉")
_FREE_TEMPLATES = (
    "订单 {order} 的{product}什么时候发货？已经付款 {amount} 元了",
    "我要退货，订单号 {order}，{product}尺码不合适",
    "{product} 怎么用，和上一代比有什么区别",
    "{product} 还有货吗，有没有优惠券",
    "下周出差去{city}，先别发货，订单 {order}",
    "用户偏好微信通知，不看视频教程",
    "上次买的{product}很好用，想再买一个送朋友",
    "客服态度太差了，{product}的问题拖了一周，我要投诉",
)
_INTENT_TEMPLATES = {
    "invoice": ("请把订单 {order} 的发票开给公司，抬头{city}星河科技",),
    "tracking_inquiry": ("快递单号 SF{tracking} 三天没更新了，{product}到哪了",),
    "refund_status": ("退款 RF{refund} 到账了吗？{product}退了 {amount} 元",),
}
_PATH_QUERIES = (
    "订单 {order} 的退款到账了吗",
    "{product} 什么时候发货",
    "快递 SF{tracking} 到哪了",
    "{product}有优惠吗",
    "退款到账了吗",
    "我的快递到哪了",
    "发票怎么开",
    "下周出差能不能晚点发货",
)
_FILTER_QUERIES = (
    "退款到账了吗",
    "发票开好了没",
    "快递到哪了",
    "{product} 退了多少钱",
    "{product} 物流一直没动",
    "订单 {order} 的发票抬头",
)


def _fill(rng: random.Random, template: str) -> str:
    return template.format(
        order=rng.randint(10_000, 99_999),
        product=rng.choice(_PRODUCTS),
        amount=rng.randint(19, 3_999),
        city=rng.choice(_CITIES),
        tracking=rng.randint(10**12, 10**13 - 1),
        refund=f"2026{rng.randint(10**6, 10**7 - 1)}",
    )


def path_docs(rng: random.Random, users: int, per_user: int) -> dict[str, list[Doc]]:
    """Part 2: ``users`` users of ``per_user`` free-form fragments over the last 100 days."""
    out: dict[str, list[Doc]] = {}
    for u in range(users):
        templates = [*_FREE_TEMPLATES, *(t for ts in _INTENT_TEMPLATES.values() for t in ts)]
        out[f"path-{u:05d}"] = [
            Doc(
                _fill(rng, rng.choice(templates)),
                BASE_TIME + timedelta(days=rng.uniform(0, SPAN_DAYS)),
            )
            for _ in range(per_user)
        ]
    return out


def filter_docs(rng: random.Random, user: str, n: int) -> list[Doc]:
    """Part 3: ``n`` fragments, about 1 % invoice, 10 % tracking, 50 % refund status, the
    rest free-form (the classifier calls some of those tracking too); the occurrence
    times are a random permutation of ``n`` evenly spaced instants over 100 days, so
    "after day 100·(1 - s)" selects about ``n·s`` of them."""
    counts = {
        "invoice": max(1, round(0.01 * n)),
        "tracking_inquiry": round(0.10 * n),
        "refund_status": round(0.50 * n),
    }
    texts = [
        _fill(rng, rng.choice(_INTENT_TEMPLATES[intent]))
        for intent, count in counts.items()
        for _ in range(count)
    ]
    texts += [_fill(rng, rng.choice(_FREE_TEMPLATES)) for _ in range(n - len(texts))]
    ranks = list(range(n))
    rng.shuffle(ranks)
    step = SPAN_DAYS / n
    return [
        Doc(t, BASE_TIME + timedelta(days=(r + 0.5) * step))
        for t, r in zip(texts, ranks, strict=True)
    ]


@dataclass(frozen=True)
class FilterCase:
    """One filter of part 3 and the share of fragments it is meant to match."""

    name: str
    intents: frozenset[str] | None = None
    after_share: float | None = None  # keep the newest share of fragments

    def occurred_after(self) -> datetime | None:
        if self.after_share is None:
            return None
        return BASE_TIME + timedelta(days=SPAN_DAYS * (1.0 - self.after_share))


FILTER_CASES = (
    FilterCase("intent invoice", intents=frozenset({"invoice"})),
    FilterCase("intent tracking", intents=frozenset({"tracking_inquiry"})),
    FilterCase("intent refund_status", intents=frozenset({"refund_status"})),
    FilterCase("newest 1%", after_share=0.01),
    FilterCase("newest 10%", after_share=0.10),
    FilterCase("newest 50%", after_share=0.50),
    FilterCase("all (time filter)", after_share=1.0),
    FilterCase("refund_status & newest 10%", frozenset({"refund_status"}), after_share=0.10),
)


# ----------------------------------------------------------------------------- set-up

_wide = Console(width=max(console.width, 150))


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A Rich table at least 150 columns wide (the shared console wraps at 80 off a tty)."""
    table = Table(*columns, title=title)
    for row in rows:
        table.add_row(*(f"{v:.2f}" if isinstance(v, float) else str(v) for v in row))
    _wide.print(table)


def _reset(mem: MemoryClient, prefix: str) -> None:
    """Remove the benchmark's users (ledger rows cascade) and their outbox entries."""
    pattern = prefix.replace("_", r"\_") + "%"
    with mem.database.transaction() as conn:
        conn.execute(text("DELETE FROM fragment_outbox WHERE user_id LIKE :p"), {"p": pattern})
        conn.execute(text("DELETE FROM user_profile WHERE user_id LIKE :p"), {"p": pattern})


def write_docs(
    mem: MemoryClient, prefix: str, docs: Mapping[str, Sequence[Doc]]
) -> dict[str, list[uuid.UUID]]:
    """Write every user's docs through ``write_many``; the ids in order, per user key."""
    items = [
        MemoryInput(
            user_id=prefix + user,
            text=d.text,
            lifecycle_policy=LifecyclePolicy.EXPLICIT,
            session_id=d.session,
            occurred_at=d.occurred_at,
            metadata=d.metadata or None,
            kind=MemoryKind.INTERACTION_RECORD if d.session else MemoryKind.NOTE,
        )
        for user, ds in docs.items()
        for d in ds
    ]
    ids = iter(mem.write_many(items, batch_size=256, progress=False))
    return {user: [next(ids) for _ in ds] for user, ds in docs.items()}


def copy_to(index: FragmentIndex, mem: MemoryClient, ids: Sequence[uuid.UUID]) -> None:
    """Push ledger rows straight into a second index (the ``text_gse`` collection)."""
    for start in range(0, len(ids), 500):
        rows = fragments_for_index(mem.database, ids[start : start + 500])
        index.apply([Upsert(mem.scope(r.user_id), to_indexed(r)) for r in rows.values()])


def drain(mem: MemoryClient, *, deadline_s: float = 300.0) -> float:
    """Apply the whole outbox to Weaviate; seconds it took."""
    started = time.perf_counter()
    while (lag := mem.outbox_lag()).pending:
        report = mem.drain_outbox(deadline_s=60.0)
        if report.applied == 0:
            time.sleep(0.5)  # a failed batch waits for its retry time
        if time.perf_counter() - started > deadline_s:
            raise RuntimeError(
                f"the outbox did not drain in {deadline_s:.0f} s ({lag.pending} pending, "
                f"{lag.failing} failing); a Weaviate log full of 'too many open files' means "
                "too many active tenants for the server's file descriptor limit"
            )
    return time.perf_counter() - started


@dataclass
class Bench:
    """What every part measures with: the client, its embedder, index and ledger."""

    mem: MemoryClient
    embedder: Embedder
    rng: random.Random

    @property
    def index(self) -> FragmentIndex:
        return self.mem.index

    @property
    def ledger(self) -> FragmentLedger:
        return FragmentLedger(self.mem.database)

    def query(
        self,
        q: str,
        config: SearchConfig,
        *,
        limit: int,
        vector: Sequence[float],
        filters: SearchFilters | None = None,
    ) -> SearchQuery:
        """The :class:`SearchQuery` ``mem.search`` builds for ``q`` (vector precomputed)."""
        return SearchQuery(
            text=q,
            tokens=tuple(tokens(q)),
            vector=list(vector) if config.alpha > 0 else [],
            embedding_model=self.embedder.name,
            config=config,
            limit=limit,
            now=datetime.now(UTC),
            filters=filters or SearchFilters(agent_id=self.mem.agent_id),
        )


@dataclass
class Outcome:
    """Timings (ms, by name) of one measured call and what it returned."""

    times: dict[str, float]
    ids: list[uuid.UUID] = field(default_factory=list)
    count: int = 0


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def _stats(values: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 50), 2),
        "p95_ms": round(percentile(values, 95), 2),
        "mean_ms": round(statistics.fmean(values), 2) if values else float("nan"),
    }


def _run_shuffled(
    rng: random.Random, calls: Mapping[str, Callable[[], Outcome]], times: dict[str, list[float]]
) -> dict[str, Outcome]:
    """Run ``calls`` in random order, collecting their timings into ``times``."""
    order = list(calls)
    rng.shuffle(order)
    outcomes = {name: calls[name]() for name in order}
    for outcome in outcomes.values():
        for name, ms in outcome.times.items():
            times.setdefault(name, []).append(ms)
    return outcomes


# ----------------------------------------------------------------------------- part 1

BACKEND_LABELS = {"index_text": "wv index_text", "text_gse": "wv text_gse"}
ID_PROBES = ("88231", "RF20260629001", "SF1409283374651", "S10 Pro", "iPhone", "退款", "微信")
"""Keyword queries whose match counts show how each property tokenises identifiers."""


def ranking_metrics(ranking: Sequence[int], relevant: frozenset[int]) -> dict[str, float]:
    """Recall@3/@10 (share of the relevant memories in the top k), hit@1 and MRR@100."""
    out = {
        f"recall@{k}": len(relevant.intersection(ranking[:k])) / len(relevant) for k in RECALL_KS
    }
    first = next((r for r, i in enumerate(ranking[:MRR_DEPTH]) if i in relevant), None)
    out["hit@1"] = float(bool(ranking) and ranking[0] in relevant)
    out["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


Report = dict[str, dict[str, dict[str, float]]]
"""``{backend: {method: {metric: percent, "n": queries, "p50_ms": ms}}}``."""


def evaluate_set(
    bench: Bench,
    rset: RetrievalSet,
    *,
    ids: Mapping[str, Sequence[uuid.UUID]],
    prefix: str,
    backends: Mapping[str, FragmentIndex],
) -> tuple[Report, dict[str, dict[str, list[float]]]]:
    """Per backend and method: mean metrics in percent, plus each query's MRR."""
    sums: dict[str, dict[str, dict[str, float]]] = {}
    per_query: dict[str, dict[str, list[float]]] = {}
    latency: dict[str, list[float]] = {}
    for question in rset.queries:
        scope = bench.mem.scope(prefix + question.user)
        position = {fid: i for i, fid in enumerate(ids[question.user])}
        vector = bench.embedder.embed_query(question.text)
        for method, config in METHODS.items():
            query = bench.query(question.text, config, limit=MRR_DEPTH, vector=vector)
            for backend, index in backends.items():
                started = time.perf_counter()
                hits = index.search(scope, query)
                latency.setdefault(f"{backend}/{method}", []).append(_ms(started))
                ranking = [position[h.fragment_id] for h in hits if h.fragment_id in position]
                values = ranking_metrics(ranking, question.relevant)
                acc = sums.setdefault(backend, {}).setdefault(method, {"n": 0.0})
                for k, v in values.items():
                    acc[k] = acc.get(k, 0.0) + v
                acc["n"] += 1
                per_query.setdefault(backend, {}).setdefault(method, []).append(values["mrr"])
    report: Report = {}
    for backend, methods in sums.items():
        for method, acc in methods.items():
            row = {k: (v if k == "n" else round(100.0 * v / acc["n"], 1)) for k, v in acc.items()}
            row["p50_ms"] = round(percentile(latency[f"{backend}/{method}"], 50), 2)
            report.setdefault(backend, {})[method] = row
    return report, per_query


_LATIN_OR_DIGIT = re.compile(r"[A-Za-z0-9]")

SUBSETS: dict[str, Callable[[str], bool]] = {
    "all": lambda q: True,
    "with Latin/digits": lambda q: bool(_LATIN_OR_DIGIT.search(q)),
    "Chinese only": lambda q: not _LATIN_OR_DIGIT.search(q),
}
"""Query subsets of the per-query comparison (identifiers and English vs Chinese words)."""


def paired(a: Sequence[float], b: Sequence[float]) -> dict[str, int]:
    """Queries where ``b`` puts the first relevant memory higher / lower / as high as ``a``."""
    pairs = list(zip(a, b, strict=True))
    return {
        "better": sum(y > x + 1e-9 for x, y in pairs),
        "worse": sum(y < x - 1e-9 for x, y in pairs),
        "same": sum(abs(y - x) <= 1e-9 for x, y in pairs),
    }


def id_probe(bench: Bench, gse: FragmentIndex, user_id: str) -> dict[str, dict[str, int]]:
    """How many of one user's memories each keyword property matches for :data:`ID_PROBES`."""
    scope = bench.mem.scope(user_id)
    out: dict[str, dict[str, int]] = {}
    for probe in ID_PROBES:
        query = bench.query(probe, KEYWORD_ONLY, limit=MRR_DEPTH, vector=[])
        out[probe] = {
            "index_text": len(bench.index.search(scope, query)),
            "text_gse": len(gse.search(scope, query)),
        }
    return out


def compare_subsets(
    rset: RetrievalSet, mrr: Mapping[str, Mapping[str, Sequence[float]]]
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per method and query subset: text_gse's per-query MRR against index_text's."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    a, b = BACKEND_LABELS["index_text"], BACKEND_LABELS["text_gse"]
    for method in METHODS:
        for subset, keep in SUBSETS.items():
            chosen = [i for i, q in enumerate(rset.queries) if keep(q.text)]
            if not chosen:
                continue
            xs = [mrr[a][method][i] for i in chosen]
            ys = [mrr[b][method][i] for i in chosen]
            out.setdefault(method, {})[subset] = {
                "n": len(chosen),
                **paired(xs, ys),
                "mrr_index_text": round(100 * statistics.fmean(xs), 1),
                "mrr_text_gse": round(100 * statistics.fmean(ys), 1),
            }
    return out


def part1(
    bench: Bench,
    pg: Bench,
    gse: FragmentIndex,
    sets: Sequence[RetrievalSet],
    *,
    wv_ids: Mapping[str, Mapping[str, Sequence[uuid.UUID]]],
    pg_ids: Mapping[str, Mapping[str, Sequence[uuid.UUID]]],
) -> dict[str, Any]:
    """Keyword property choice: recall and MRR per set, method and backend."""
    out: dict[str, Any] = {}
    rows: list[list[Any]] = []
    wv_backends = {BACKEND_LABELS["index_text"]: bench.index, BACKEND_LABELS["text_gse"]: gse}
    for rset in sets:
        wv_report, wv_mrr = evaluate_set(
            bench, rset, ids=wv_ids[rset.name], prefix=PREFIX, backends=wv_backends
        )
        pg_report, _ = evaluate_set(
            pg, rset, ids=pg_ids[rset.name], prefix=PG_PREFIX, backends={"pgvector": pg.index}
        )
        report = {**wv_report, **pg_report}
        out[rset.name] = {
            "users": len(rset.docs),
            "memories": sum(len(d) for d in rset.docs.values()),
            "queries": len(rset.queries),
            "results": report,
            "text_gse_vs_index_text_mrr": compare_subsets(rset, wv_mrr),
        }
        for method in METHODS:
            for backend, methods in report.items():
                v = methods[method]
                rows.append(
                    [
                        rset.name,
                        method,
                        backend,
                        int(v["n"]),
                        *(f"{v[k]:.1f}" for k in ("recall@3", "recall@10", "hit@1", "mrr")),
                        f"{v['p50_ms']:.1f}",
                    ]
                )
    print_table(
        "1. keyword property, recall in % (pgvector for reference)",
        ["set", "method", "backend", "n", "R@3", "R@10", "hit@1", "MRR", "p50 ms"],
        rows,
    )
    print_table(
        "1b. per query: does text_gse put the first relevant memory higher than index_text?",
        ["set", "method", "queries", "n", "gse better", "gse worse", "same", "MRR idx", "MRR gse"],
        [
            [name, m, subset, *c.values()]
            for name, r in out.items()
            for m, subsets in r["text_gse_vs_index_text_mrr"].items()
            for subset, c in subsets.items()
        ],
    )
    hard_user = next((u for s in sets if s.name == "zh-hard" for u in sorted(s.docs)), None)
    if hard_user is not None:
        probe = id_probe(bench, gse, PREFIX + hard_user)
        out["keyword_match_probe"] = {
            "user": PREFIX + hard_user,
            "memories": len(next(s for s in sets if s.name == "zh-hard").docs[hard_user]),
            "matches": probe,
        }
        print_table(
            f"1c. memories matched by a keyword query ({PREFIX + hard_user})",
            ["query", "index_text", "text_gse"],
            [[q, c["index_text"], c["text_gse"]] for q, c in probe.items()],
        )
    return out


# ----------------------------------------------------------------------------- part 2

PATH_ORDER = (
    "ours: mem.search",
    "bare: hybrid",
    "bare: hybrid + our filters",
    "piece: embed query",
    "piece: tokenise query",
    "piece: WeaviateIndex.search",
    "piece: tenants.exists",
    "piece: hydrate + TTL renewal",
)


def _our_filters(bench: Bench, uid: str) -> Any:
    """The filters ``WeaviateIndex`` adds to every query (user, expiry, visibility, sandbox):
    its own private builder, so the comparison follows the index as it changes."""
    from unstructured_memory.index import weaviate as backend

    query = bench.query("", HYBRID_DEFAULT, limit=LIMIT, vector=[])
    return backend._filters(bench.mem.scope(uid), query)


def _ours(bench: Bench, uid: str, q: str) -> Outcome:
    started = time.perf_counter()
    n = len(bench.mem.search(uid, q, limit=LIMIT))
    return Outcome({"ours: mem.search": _ms(started)}, count=n)


def _bare(tenant: Any, keyword: str, vector: list[float], filters: Any, name: str) -> Outcome:
    from weaviate.classes.query import HybridFusion

    options: dict[str, Any] = {}
    if filters is not None:
        options = {"filters": filters, "return_properties": ["fragment_id"]}
    started = time.perf_counter()
    response = tenant.query.hybrid(
        query=keyword,
        vector=vector,
        alpha=HYBRID_DEFAULT.alpha,
        fusion_type=HybridFusion.RELATIVE_SCORE,
        limit=LIMIT,
        query_properties=["index_text"],
        **options,
    )
    return Outcome({name: _ms(started)}, count=len(response.objects))


def _pieces(bench: Bench, collection: Any, uid: str, q: str, vector: list[float]) -> Outcome:
    """Our path piece by piece: embedding, tokens, index search, tenant check, hydration."""
    times: dict[str, float] = {}
    scope = bench.mem.scope(uid)
    started = time.perf_counter()
    bench.embedder.embed_query(q)
    times["piece: embed query"] = _ms(started)
    started = time.perf_counter()
    tokens(q + " ")  # a new string: the tokeniser caches by text
    times["piece: tokenise query"] = _ms(started)
    query = bench.query(q, HYBRID_DEFAULT, limit=LIMIT, vector=vector)
    started = time.perf_counter()
    hits = bench.index.search(scope, query)
    times["piece: WeaviateIndex.search"] = _ms(started)
    started = time.perf_counter()
    collection.tenants.exists(tenant_name(uid))
    times["piece: tenants.exists"] = _ms(started)
    started = time.perf_counter()
    bench.ledger.hydrate(
        scope,
        [h.fragment_id for h in hits],
        now=datetime.now(UTC),
        implicit_ttl=timedelta(days=bench.mem.settings.ttl.implicit_days),
    )
    times["piece: hydrate + TTL renewal"] = _ms(started)
    return Outcome(times, count=len(hits))


def part2(
    bench: Bench, bare: Any, users: Mapping[str, Sequence[Doc]], searches: int
) -> dict[str, Any]:
    """``mem.search`` vs a bare hybrid query, interleaved, with a breakdown of our path."""
    collection = bare.collections.use(COLLECTION)
    keys = sorted(users)
    times: dict[str, list[float]] = {}
    short = dict.fromkeys(("ours: mem.search", "bare: hybrid"), 0)
    warm_up = 20
    for i in range(warm_up + searches):
        if i == warm_up:
            times.clear()
            short = dict.fromkeys(short, 0)
        uid = PREFIX + bench.rng.choice(keys)
        q = _fill(bench.rng, bench.rng.choice(_PATH_QUERIES))
        vector = bench.embedder.embed_query(q)
        keyword = " ".join(tokens(q))
        tenant = collection.with_tenant(tenant_name(uid))
        filters = _our_filters(bench, uid)
        calls: dict[str, Callable[[], Outcome]] = {
            "ours: mem.search": partial(_ours, bench, uid, q),
            "bare: hybrid": partial(_bare, tenant, keyword, vector, None, "bare: hybrid"),
            "bare: hybrid + our filters": partial(
                _bare, tenant, keyword, vector, filters, "bare: hybrid + our filters"
            ),
            "pieces": partial(_pieces, bench, collection, uid, q, vector),
        }
        outcomes = _run_shuffled(bench.rng, calls, times)
        for name in short:
            short[name] += outcomes[name].count < LIMIT
    stats = {name: _stats(times[name]) for name in PATH_ORDER}
    ours, plain = stats["ours: mem.search"], stats["bare: hybrid"]
    ratio = {
        "p50": round(ours["p50_ms"] / plain["p50_ms"], 2),
        "p95": round(ours["p95_ms"] / plain["p95_ms"], 2),
    }
    per_user = len(next(iter(users.values())))
    print_table(
        f"2. mem.search vs bare hybrid, {len(users)} users × {per_user}, {searches} searches; "
        f"ours/bare p50 {ratio['p50']}×, p95 {ratio['p95']}×",
        ["call", "n", "p50 ms", "p95 ms", "mean ms"],
        [[k, s["n"], s["p50_ms"], s["p95_ms"], s["mean_ms"]] for k, s in stats.items()],
    )
    return {
        "users": len(users),
        "fragments_per_user": per_user,
        "searches": searches,
        "limit": LIMIT,
        "latency": stats,
        "ratio_ours_over_bare": ratio,
        "short_result_lists": short,
    }


# ----------------------------------------------------------------------------- part 3


def _overlap(a: Sequence[uuid.UUID], b: Sequence[uuid.UUID]) -> float:
    """Shared ids of two top-5 lists over the longer list's length (1.0 when both are empty)."""
    a, b = a[:LIMIT], b[:LIMIT]
    if not a and not b:
        return 1.0
    return len(set(a) & set(b)) / max(len(a), len(b))


def _prefiltered(bench: Bench, uid: str, q: str, vector: list[float], case: FilterCase) -> Outcome:
    """(a): the ledger lists the matching ids, Weaviate ranks only those (as ``mem.search``)."""
    scope = bench.mem.scope(uid)
    limit = bench.mem.settings.prefilter_limit
    after = case.occurred_after()
    started = time.perf_counter()
    ids = bench.ledger.candidate_ids(
        scope, now=datetime.now(UTC), intents=case.intents, occurred_after=after, limit=limit + 1
    )
    ledger_ms = _ms(started)
    filters = SearchFilters(
        intents=case.intents,
        occurred_after=after,
        agent_id=bench.mem.agent_id,
        candidate_ids=frozenset(ids) if len(ids) <= limit else None,
    )
    query = bench.query(q, HYBRID_DEFAULT, limit=LIMIT, vector=vector, filters=filters)
    started_index = time.perf_counter()
    hits = bench.index.search(scope, query)
    times = {
        "a: ledger ids": ledger_ms,
        "a: index by ids": _ms(started_index),
        "a: pre-filter total": _ms(started),
    }
    return Outcome(times, [h.fragment_id for h in hits], count=len(ids))


def _property_filtered(
    bench: Bench, uid: str, q: str, vector: list[float], case: FilterCase | None
) -> Outcome:
    """(b): Weaviate's own property filters, no candidate ids; ``None``: no filter at all."""
    filters = SearchFilters(agent_id=bench.mem.agent_id)
    if case is not None:
        filters = replace(filters, intents=case.intents, occurred_after=case.occurred_after())
    query = bench.query(q, HYBRID_DEFAULT, limit=LIMIT, vector=vector, filters=filters)
    started = time.perf_counter()
    hits = bench.index.search(bench.mem.scope(uid), query)
    name = "no filter" if case is None else "b: property filters"
    return Outcome({name: _ms(started)}, [h.fragment_id for h in hits])


def _full(bench: Bench, uid: str, q: str, case: FilterCase) -> Outcome:
    started = time.perf_counter()
    bench.mem.search(
        uid, q, limit=LIMIT, intents=case.intents, occurred_after=case.occurred_after()
    )
    return Outcome({"mem.search": _ms(started)})


def _filter_case(
    bench: Bench, group: str, users: Mapping[str, Sequence[Doc]], case: FilterCase, searches: int
) -> dict[str, Any]:
    keys = sorted(users)
    prefilter_limit = bench.mem.settings.prefilter_limit
    times: dict[str, list[float]] = {}
    overlaps: list[float] = []
    identical = prefiltered = 0
    shares: list[float] = []
    for j in range(searches):
        user = keys[j % len(keys)]
        uid = PREFIX + user
        q = _fill(bench.rng, bench.rng.choice(_FILTER_QUERIES))
        vector = bench.embedder.embed_query(q)
        calls: dict[str, Callable[[], Outcome]] = {
            "a": partial(_prefiltered, bench, uid, q, vector, case),
            "b": partial(_property_filtered, bench, uid, q, vector, case),
            "none": partial(_property_filtered, bench, uid, q, vector, None),
            "full": partial(_full, bench, uid, q, case),
        }
        outcomes = _run_shuffled(bench.rng, calls, times)
        a, b = outcomes["a"], outcomes["b"]
        overlaps.append(_overlap(a.ids, b.ids))
        identical += a.ids[:LIMIT] == b.ids[:LIMIT]
        prefiltered += a.count <= prefilter_limit
        shares.append(a.count / len(users[user]))
    stats = {name: _stats(v) for name, v in times.items()}
    return {
        "group": group,
        "filter": case.name,
        "intents": sorted(case.intents) if case.intents else None,
        "occurred_after": case.occurred_after(),
        "matched_share_pct": round(100 * statistics.fmean(shares), 1),
        "prefiltered_share": round(prefiltered / searches, 2),
        "latency": stats,
        "ratio_prefilter_over_property_p50": round(
            stats["a: pre-filter total"]["p50_ms"] / stats["b: property filters"]["p50_ms"], 2
        ),
        "overlap_at_5": round(statistics.fmean(overlaps), 3),
        "identical_top5_share": round(identical / searches, 3),
    }


def part3(
    bench: Bench, groups: Mapping[str, Mapping[str, Sequence[Doc]]], searches: int
) -> list[dict[str, Any]]:
    """Ledger pre-filter + rank by ids vs Weaviate's property filters, per size and filter."""
    out = [
        _filter_case(bench, group, users, case, searches)
        for group, users in groups.items()
        for case in FILTER_CASES
    ]

    def p(entry: dict[str, Any], name: str, q: int = 50) -> float:
        return float(entry["latency"][name][f"p{q}_ms"])

    print_table(
        f"3. (a) ledger pre-filter + rank by ids vs (b) Weaviate property filters, "
        f"{searches} searches per row, ms",
        [
            "users",
            "filter",
            "match",
            "a ids",
            "a rank",
            "a p50/p95",
            "b p50/p95",
            "a/b",
            "none",
            "sdk",
            "ov@5",
        ],
        [
            [
                e["group"],
                e["filter"],
                f"{e['matched_share_pct']:.1f}%",
                f"{p(e, 'a: ledger ids'):.1f}",
                f"{p(e, 'a: index by ids'):.1f}",
                f"{p(e, 'a: pre-filter total'):.1f}/{p(e, 'a: pre-filter total', 95):.1f}",
                f"{p(e, 'b: property filters'):.1f}/{p(e, 'b: property filters', 95):.1f}",
                f"{e['ratio_prefilter_over_property_p50']:.2f}",
                f"{p(e, 'no filter'):.1f}",
                f"{p(e, 'mem.search'):.1f}",
                f"{e['overlap_at_5']:.2f}",
            ]
            for e in out
        ],
    )
    return out


# ----------------------------------------------------------------------------- main


@dataclass
class Data:
    """Everything one run writes."""

    sets: list[RetrievalSet] = field(default_factory=list)
    path_users: dict[str, list[Doc]] = field(default_factory=dict)
    groups: dict[str, dict[str, list[Doc]]] = field(default_factory=dict)

    def fragments(self) -> int:
        users = [*(d for s in self.sets for d in s.docs.values()), *self.path_users.values()]
        users += [d for g in self.groups.values() for d in g.values()]
        return sum(len(d) for d in users)


def build_data(size: Size, parts: set[int], rng: random.Random) -> Data:
    """The data sets of the parts to run."""
    data = Data()
    if 1 in parts:
        if dataset_path().is_file():
            data.sets.append(locomo_set(size.locomo))
        else:
            console.print(f"[yellow]LoCoMo not found at {dataset_path()}: skipped[/]")
        plain, hard = zh_sets()
        hard = RetrievalSet(
            hard.name,
            {f"hard-{u}": d for u, d in hard.docs.items()},
            [Question(f"hard-{q.user}", q.text, q.relevant) for q in hard.queries],
        )
        data.sets += [plain, hard]
    if 2 in parts:
        data.path_users = path_docs(rng, size.path_users, size.path_fragments)
    if 3 in parts:
        data.groups[f"{SMALL_FRAGMENTS}"] = {
            f"small-{i:03d}": filter_docs(rng, f"small-{i:03d}", SMALL_FRAGMENTS)
            for i in range(size.small_users)
        }
        data.groups[f"{size.large_fragments}"] = {
            f"large-{i:03d}": filter_docs(rng, f"large-{i:03d}", size.large_fragments)
            for i in range(size.large_users)
        }
    return data


def _git_state() -> str:
    """The checkout's commit, ``+dirty`` when tracked files differ from it."""
    import subprocess

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
        return done.stdout.strip()

    return git("rev-parse", "--short", "HEAD") + (
        "+dirty" if git("status", "--short", "-uno") else ""
    )


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller data, fewer searches")
    parser.add_argument(
        "--weaviate",
        default="127.0.0.1:8080:50051",
        help="HOST:PORT:GRPC_PORT of the Weaviate server (default %(default)s)",
    )
    parser.add_argument("--parts", default="1,2,3", help="which parts to run (default 1,2,3)")
    return parser.parse_args(argv)


def _bare_client(host: str, port: int, grpc_port: int) -> Any:
    """A plain weaviate-client connection (authlib's deprecation warnings silenced)."""
    with warnings.catch_warnings():
        with contextlib.suppress(ImportError):
            importlib.import_module("authlib.deprecate")
        warnings.simplefilter("ignore", DeprecationWarning)
        import weaviate
    return weaviate.connect_to_local(
        host=host, port=port, grpc_port=grpc_port, skip_init_checks=True
    )


def _conclusions(p1: Mapping[str, Any]) -> dict[str, str]:
    """Which keyword property wins, per set and method (by recall@10, then MRR)."""
    out = {}
    for name, r in p1.items():
        if "results" not in r:  # the probe
            continue
        for method in METHODS:
            a = r["results"][BACKEND_LABELS["index_text"]][method]
            b = r["results"][BACKEND_LABELS["text_gse"]][method]
            key_a, key_b = (a["recall@10"], a["mrr"]), (b["recall@10"], b["mrr"])
            winner = "index_text" if key_a > key_b else "text_gse" if key_b > key_a else "tie"
            out[f"{name}/{method}"] = (
                f"{winner} (index_text R@10 {a['recall@10']}, MRR {a['mrr']}; "
                f"text_gse R@10 {b['recall@10']}, MRR {b['mrr']})"
            )
    return out


def _ingest(
    mem: MemoryClient, data: Data
) -> tuple[dict[str, dict[str, list[uuid.UUID]]], dict[str, float]]:
    """Write every data set through the SDK, then wait until Weaviate holds it all."""
    started = time.perf_counter()
    ids = {s.name: write_docs(mem, PREFIX, s.docs) for s in data.sets}
    write_docs(mem, PREFIX, data.path_users)
    for users in data.groups.values():
        write_docs(mem, PREFIX, users)
    write_s = time.perf_counter() - started
    drain_s = drain(mem)
    n = data.fragments()
    console.print(
        f"wrote {n} fragments in {write_s:.1f} s; Weaviate caught up {drain_s:.1f} s later"
    )
    tenants = sum(len(s.docs) for s in data.sets) + len(data.path_users)
    tenants += sum(len(g) for g in data.groups.values())
    return ids, {
        "fragments": n,
        "tenants": tenants,
        "write_s": round(write_s, 1),
        "drain_s": round(drain_s, 1),
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Run the three comparisons and write ``benchmarks/results/weaviate_paths.json``."""
    args = _parse(argv)
    size = QUICK if args.quick else FULL
    parts = {int(p) for p in args.parts.split(",") if p.strip()}
    host, port, grpc_port = args.weaviate.rsplit(":", 2)
    wv_config: dict[str, Any] = {
        "host": host,
        "port": int(port),
        "grpc_port": int(grpc_port),
        "collection": COLLECTION,
        "keyword_property": "index_text",
    }
    rng = random.Random(SEED)
    started = time.perf_counter()
    mem = bench_client(
        "weaviate-paths", index="weaviate", index_config=wv_config, outbox_worker="external"
    )
    pg = bench_client("weaviate-paths-pg", index="pgvector") if 1 in parts else None
    gse_config = {**wv_config, "collection": GSE_COLLECTION, "keyword_property": "text_gse"}
    gse = WeaviateIndex(WeaviateConfig(**gse_config))
    bare = _bare_client(host, int(port), int(grpc_port))
    embedder = create_embedder(mem.settings.embedder, mem.settings.embedder_config)
    bench = Bench(mem, embedder, rng)
    payload: dict[str, Any] = {"quick": args.quick, "embedder": embedder.name, "size": size}
    try:
        if not isinstance(mem.index, WeaviateIndex):
            raise SystemExit("the benchmark client is not on the Weaviate index")
        payload["weaviate"] = {"version": bare.get_meta().get("version"), "at": args.weaviate}
        payload["git"] = _git_state()
        _reset(mem, PREFIX)
        mem.index.reset()
        gse.reset()
        data = build_data(size, parts, rng)
        wv_ids, payload["ingest"] = _ingest(mem, data)
        copy_to(gse, mem, [i for ids in wv_ids.values() for us in ids.values() for i in us])
        if pg is not None:
            _reset(pg, PG_PREFIX)
            pg_ids = {s.name: write_docs(pg, PG_PREFIX, s.docs) for s in data.sets}
            p1 = part1(
                bench, Bench(pg, embedder, rng), gse, data.sets, wv_ids=wv_ids, pg_ids=pg_ids
            )
            payload["part1_keyword_property"] = p1
            payload["part1_winner"] = _conclusions(p1)
        if data.path_users:
            payload["part2_search_path"] = part2(bench, bare, data.path_users, size.path_searches)
        if data.groups:
            payload["part3_prefilter"] = part3(bench, data.groups, size.filter_searches)
    finally:
        bare.close()
        gse.close()
        mem.close()
        if pg is not None:
            pg.close()
    payload["runtime_s"] = round(time.perf_counter() - started, 1)
    console.print(f"total {payload['runtime_s']} s")
    write_result(NAME, payload)


if __name__ == "__main__":
    main()
