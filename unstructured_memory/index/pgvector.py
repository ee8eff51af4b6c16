"""The pgvector backend: hybrid search over the fragment ledger itself.

The ledger row holds the embedding (``vector``, with an HNSW cosine index per
embedding model, created by :meth:`PgVectorIndex.setup`) and the keyword
lexemes (``tsvector``, GIN index), so this index is never behind the ledger and
``apply`` has nothing to copy. Search:

- vector leg: the ``candidates`` nearest by cosine distance;
- keyword leg: Okapi BM25 computed from the user's own corpus statistics
  (document count, average length, document frequency of each query term,
  counted in SQL under the same filters), over the documents matching any term;
- fusion: Weaviate's relative-score (or ranked) fusion with ``alpha``.

Every statement carries ``user_id = :user_id`` and the live-status filter.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

from policies.scope import UserScope
from unstructured_memory.index.base import IndexHit, IndexOp, SearchQuery, Transaction
from unstructured_memory.search.bm25 import bm25_idf
from unstructured_memory.search.fusion import ranked_fusion, relative_score_fusion
from unstructured_memory.search.presets import Fusion

__all__ = ["MAX_QUERY_TERMS", "PgVectorIndex", "tsquery_any"]

MAX_QUERY_TERMS = 32
"""Distinct query terms used by the keyword leg (the rest are ignored)."""

KEYWORD_MATCH_CAP = 2000
"""Most documents matching a query term that BM25 scores (pre-ranked by ts_rank)."""


def tsquery_any(terms: Sequence[str]) -> str:
    """A ``tsquery`` matching any of ``terms`` exactly, every lexeme quoted.

    Quotes are doubled and backslashes escaped, so tsquery operators in a
    term (``'&|!():*``) are plain characters.
    """
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def hnsw_index_name(model: str) -> str:
    """The name of the HNSW index holding vectors of one embedding model."""
    return "ix_memory_fragment_hnsw_" + hashlib.sha1(model.encode()).hexdigest()[:12]


class PgVectorIndex:
    """``FragmentIndex`` over the ledger table, in the same PostgreSQL."""

    name = "pgvector"
    derived = False

    def __init__(self, transaction: Transaction) -> None:
        self._transaction = transaction

    @classmethod
    def from_config(
        cls, config: object, *, transaction: Transaction, tenant_key: bytes
    ) -> PgVectorIndex:
        """The registry's constructor: no settings of its own, and no tenants to name."""
        return cls(transaction)

    def setup(self, model: str, dimensions: int) -> None:
        """Create the HNSW cosine index for ``model``'s vectors if it is missing.

        The index is an expression index on ``embedding::vector(d)`` restricted
        to rows of that model, since one column may hold vectors of several
        models while a reindex runs.
        """
        with self._transaction() as conn:
            model_literal = conn.execute(
                text("SELECT quote_literal(:m)"), {"m": model}
            ).scalar_one()
            conn.execute(
                text(
                    f"CREATE INDEX IF NOT EXISTS {hnsw_index_name(model)} ON memory_fragment "
                    f"USING hnsw ((embedding::vector({int(dimensions)})) vector_cosine_ops) "
                    f"WHERE embedding_model = {model_literal}"
                )
            )

    def ping(self) -> None:
        """Run ``SELECT 1`` on the ledger's database (its errors are the database's)."""
        with self._transaction() as conn:
            conn.execute(text("SELECT 1"))

    def close(self) -> None:
        """Nothing to release: the connections belong to the ledger's engine."""

    def apply(self, ops: Sequence[IndexOp]) -> None:
        """Nothing to copy: the ledger rows are the index."""

    def search(self, scope: UserScope, query: SearchQuery) -> list[IndexHit]:
        """Hybrid search inside ``scope``; see the module docstring."""
        where, params = _filters(scope, query)
        alpha = query.config.alpha
        k = max(query.config.candidates, query.limit)
        with self._transaction() as conn:
            vector = self._vector_leg(conn, where, params, query, k) if alpha > 0 else []
            keyword = self._keyword_leg(conn, where, params, query, k) if alpha < 1 else []
        fuse = (
            relative_score_fusion if query.config.fusion is Fusion.RELATIVE_SCORE else ranked_fusion
        )
        fused = fuse(vector, keyword, alpha=alpha, limit=query.limit)
        vec, kw = dict(vector), dict(keyword)
        return [IndexHit(fid, score, kw.get(fid), vec.get(fid)) for fid, score in fused]

    @staticmethod
    def _vector_leg(
        conn: Connection, where: str, params: dict[str, Any], query: SearchQuery, k: int
    ) -> list[tuple[Any, float]]:
        # When the planner picks the HNSW index, pgvector returns at most ef_search rows
        # and filters them afterwards: widen ef_search to k and keep scanning until k rows
        # pass the user and live filters (iterative scan), for this transaction only.
        conn.execute(
            text(
                "SELECT set_config('hnsw.ef_search', :ef, true), "
                "set_config('hnsw.iterative_scan', 'strict_order', true)"
            ),
            {"ef": str(min(1000, max(40, k)))},
        )
        dims = len(query.vector)
        distance = f"(embedding::vector({dims}) <=> CAST(:qvec AS vector({dims})))"
        rows = conn.execute(
            text(
                f"SELECT id, 1 - {distance} AS similarity FROM memory_fragment "
                f"WHERE {where} AND embedding_model = :model "
                f"ORDER BY {distance} LIMIT :k"
            ),
            {
                **params,
                "qvec": _vector_literal(query.vector),
                "model": query.embedding_model,
                "k": k,
            },
        ).all()
        return [(r.id, float(r.similarity)) for r in rows]

    @staticmethod
    def _keyword_leg(
        conn: Connection, where: str, params: dict[str, Any], query: SearchQuery, k: int
    ) -> list[tuple[Any, float]]:
        terms = list(dict.fromkeys(t for t in query.tokens if t))[:MAX_QUERY_TERMS]
        if not terms:
            return []
        term_params = {f"t{i}": tsquery_any([t]) for i, t in enumerate(terms)}
        dfs = ", ".join(
            f"count(*) FILTER (WHERE tsv @@ CAST(:t{i} AS tsquery)) AS df{i}"
            for i in range(len(terms))
        )
        stats = conn.execute(
            text(
                "SELECT count(*) AS n, coalesce(avg(token_count), 0) AS avgdl, "
                f"{dfs} FROM memory_fragment WHERE {where}"
            ),
            {**params, **term_params},
        ).one()
        n_docs, avgdl = int(stats.n), float(stats.avgdl) or 1.0
        idf = {t: bm25_idf(n_docs, int(getattr(stats, f"df{i}"))) for i, t in enumerate(terms)}
        rows = conn.execute(
            text(
                "SELECT id, index_text, token_count FROM memory_fragment "
                f"WHERE {where} AND tsv @@ CAST(:anyq AS tsquery) "
                "ORDER BY ts_rank(tsv, CAST(:anyq AS tsquery)) DESC LIMIT :cap"
            ),
            {**params, "anyq": tsquery_any(terms), "cap": KEYWORD_MATCH_CAP},
        ).all()
        k1, b = query.config.bm25_k1, query.config.bm25_b
        scored = []
        for row in rows:
            tf = Counter(row.index_text.split(" "))
            norm = k1 * (1 - b + b * row.token_count / avgdl)
            score = sum(
                idf[t] * tf[t] * (k1 + 1) / (tf[t] + norm) for t in terms if tf.get(t, 0) > 0
            )
            if score > 0 and math.isfinite(score):
                scored.append((row.id, score))
        scored.sort(key=lambda pair: -pair[1])
        return scored[:k]


def _vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _filters(scope: UserScope, query: SearchQuery) -> tuple[str, dict[str, Any]]:
    """The WHERE clause every statement shares: the scope's visibility (user,
    agent-private, sandbox, live; see ``policies.scope``), then the query's filters."""
    f = query.filters
    clauses = ["user_id = :user_id", "(expires_at IS NULL OR expires_at > :now)"]
    params: dict[str, Any] = {"user_id": scope.user_id, "now": query.now}
    if scope.agent_id is None:
        clauses.append("NOT private")
    else:
        clauses.append("(NOT private OR agent_id = :agent_id)")
        params["agent_id"] = scope.agent_id
    if scope.sandbox_id is None:
        clauses.append("sandbox_id IS NULL")
    else:
        clauses.append("(sandbox_id IS NULL OR sandbox_id = :sandbox_id)")
        params["sandbox_id"] = scope.sandbox_id
    if f.intents is not None:
        clauses.append("intent = ANY(:intents)")
        params["intents"] = sorted(f.intents)
    if f.occurred_after is not None:
        clauses.append("occurred_at >= :after")
        params["after"] = f.occurred_after
    if f.occurred_before is not None:
        clauses.append("occurred_at < :before")
        params["before"] = f.occurred_before
    if f.session_id is not None:
        clauses.append("session_id = :session_id")
        params["session_id"] = f.session_id
    if f.candidate_ids is not None:
        clauses.append("id = ANY(:candidate_ids)")
        params["candidate_ids"] = list(f.candidate_ids)
    return " AND ".join(clauses), params
