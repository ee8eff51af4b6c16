"""The pgvector backend: hybrid search over the fragment ledger itself.

The ledger row holds the embedding (``vector``) and the keyword lexemes
(``tsvector``, GIN index), so this index is never behind the ledger and
``apply`` has nothing to copy. The HNSW cosine index (one per embedding model,
created by :meth:`PgVectorIndex.setup`) holds only the rows flagged ``ann``:
the sweep flags the rows of users with more than :data:`EXACT_SCAN_LIMIT`
memories (``structured_memory.cross_user.flag_large_scopes``), so a write never
pays for HNSW. Search:

- vector leg: the ``candidates`` nearest by cosine distance;
- keyword leg: Okapi BM25 computed from the user's own corpus statistics
  (document count, average length, document frequency of each query term,
  counted in SQL under the same filters), over the documents matching any term,
  each term's idf times its weight (``SearchQuery.weights``), the
  :data:`MAX_QUERY_TERMS` heaviest terms only;
- fusion: Weaviate's relative-score (or ranked) fusion with ``alpha``.

A search costs what the user's own memories cost, not the table: a scope of
up to :data:`EXACT_SCAN_LIMIT` visible memories (nearly every user) is read
once through the user index and both legs are computed from it in one
statement, the KNN exact; a larger scope's vector leg merges the HNSW index's
nearest among its ``ann`` rows (iterative scan) with an exact KNN over its rows
not flagged yet (written since the last sweep: all of them for a user who just
crossed the limit, which is slower, never incomplete), beside a keyword
statement. Every statement carries the scope's visibility (user, agent-private,
sandbox, live status) as the structured track renders it for the ledger
(``structured_memory.scoping.visible_text``, handed in by the runtime as a
:data:`~unstructured_memory.index.base.LedgerVisibility`), and runs in autocommit
(``Database.reading``): no ``BEGIN``/``COMMIT`` round trips for a read.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Connection, text

from policies.scope import UserScope
from unstructured_memory.index.base import (
    Connect,
    IndexHit,
    IndexOp,
    LedgerVisibility,
    SearchQuery,
)
from unstructured_memory.search.bm25 import bm25_idf
from unstructured_memory.search.fusion import ranked_fusion, relative_score_fusion
from unstructured_memory.search.presets import Fusion

__all__ = [
    "LARGE_SCOPE_TERMS",
    "MAX_QUERY_TERMS",
    "PgVectorIndex",
    "hnsw_index_name",
    "tsquery_any",
]

MAX_QUERY_TERMS = 256
"""Distinct query terms the keyword leg of a scope scanned exactly uses, the heaviest
(a dialogue of many turns has hundreds; the statement does not grow with them)."""

LARGE_SCOPE_TERMS = 64
"""Distinct query terms, the heaviest, the keyword statements of a scope too large to
scan use (they count each term's document frequency in SQL)."""

LARGE_SCOPE_TTL_S = 600.0
"""How long a user found too large to scan is searched without trying the exact scan
first (either way the search is complete; this only spares the attempt)."""

LARGE_SCOPES_KEPT = 10_000
"""Most users remembered as large (the oldest are forgotten first)."""

KEYWORD_MATCH_CAP = 500
"""Most matching documents of a large scope that BM25 scores, pre-ranked in SQL by the
idf of the query terms they hold, then ``ts_rank`` (a small scope scores all its matches)."""

EXACT_SCAN_LIMIT = 1000
"""A scope with at most this many visible memories is searched exactly, in one statement
over its own rows; a larger one through the HNSW index (over its rows flagged ``ann``)."""


def tsquery_any(terms: Sequence[str]) -> str:
    """A ``tsquery`` matching any of ``terms`` exactly, every lexeme quoted.

    Quotes are doubled and backslashes escaped, so tsquery operators in a
    term (``'&|!():*``) are plain characters.
    """
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


def hnsw_index_name(model: str) -> str:
    """The name of the HNSW index holding the ``ann`` rows' vectors of one embedding model."""
    return "ix_memory_fragment_ann_hnsw_" + _model_digest(model)


def _full_hnsw_index_name(model: str) -> str:
    """The HNSW index over every row of a model that releases before the ``ann`` flag
    created (dropped by :meth:`PgVectorIndex.setup`)."""
    return "ix_memory_fragment_hnsw_" + _model_digest(model)


def _model_digest(model: str) -> str:
    return hashlib.sha1(model.encode()).hexdigest()[:12]


class PgVectorIndex:
    """``FragmentIndex`` over the ledger table, in the same PostgreSQL."""

    name = "pgvector"
    derived = False

    def __init__(
        self,
        connect: Connect,
        visible: LedgerVisibility,
        *,
        exact_scan_limit: int = EXACT_SCAN_LIMIT,
    ) -> None:
        self._connect = connect
        self._visible = visible
        self._exact_limit = exact_scan_limit
        self._large: OrderedDict[str, float] = OrderedDict()
        self._large_lock = threading.Lock()

    @classmethod
    def from_config(
        cls, config: object, *, connect: Connect, visible: LedgerVisibility, tenant_key: bytes
    ) -> PgVectorIndex:
        """The registry's constructor: no settings of its own, and no tenants to name."""
        return cls(connect, visible)

    @property
    def ann_threshold(self) -> int:
        """Users with more memories than this have them flagged ``ann`` by the sweep
        (the exact-scan limit: a smaller scope never reads the HNSW index)."""
        return self._exact_limit

    def setup(self, model: str, dimensions: int) -> None:
        """Create the HNSW cosine index for ``model``'s ``ann`` rows if it is missing (or
        left invalid by an interrupted build), and drop the full one of earlier releases.

        The index is an expression index on ``embedding::vector(d)`` restricted
        to rows of that model (one column may hold vectors of several models
        while a reindex runs) flagged ``ann``. Both statements run
        ``CONCURRENTLY`` (the connection is in autocommit), so writes go on;
        when the index is in place nothing is locked at all.
        """
        name, full = hnsw_index_name(model), _full_hnsw_index_name(model)
        with self._connect() as conn:
            found = conn.execute(
                text(
                    "SELECT quote_literal(:m) AS model, "
                    "(SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(:name)) "
                    "AS valid, EXISTS (SELECT FROM pg_stat_progress_create_index "
                    "WHERE index_relid = to_regclass(:name)) AS building, "
                    "to_regclass(:full) IS NOT NULL AS full_exists"
                ),
                {"m": model, "name": name, "full": full},
            ).one()
            if found.valid is False and not found.building:
                conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {name}"))
            if not found.valid and not found.building:
                conn.execute(
                    text(
                        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON memory_fragment "
                        f"USING hnsw ((embedding::vector({int(dimensions)})) vector_cosine_ops) "
                        f"WHERE embedding_model = {found.model} AND ann"
                    )
                )
            if found.full_exists:
                conn.execute(text(f"DROP INDEX CONCURRENTLY IF EXISTS {full}"))

    def ping(self) -> None:
        """Run ``SELECT 1`` on the ledger's database (its errors are the database's)."""
        with self._connect() as conn:
            conn.execute(text("SELECT 1"))

    def close(self) -> None:
        """Nothing to release: the connections belong to the ledger's engine."""

    def apply(self, ops: Sequence[IndexOp]) -> None:
        """Nothing to copy: the ledger rows are the index."""

    def search(self, scope: UserScope, query: SearchQuery) -> list[IndexHit]:
        """Hybrid search inside ``scope``; see the module docstring."""
        where, params = _filters(self._visible(scope, query.now), query)
        alpha = query.config.alpha
        weighted = query.keyword_terms(MAX_QUERY_TERMS) if alpha < 1 else []
        scan = _Scan(
            where,
            params,
            query,
            k=max(query.config.candidates, query.limit),
            terms=[t for t, _ in weighted],
            weights=dict(weighted),
            vector=alpha > 0,
            exact_limit=self._exact_limit,
        )
        exact = scan.exact_limit > 0 and not self._known_large(scope.user_id)
        with self._connect() as conn:
            legs = _exact_legs(conn, scan) if exact else None
            if legs is None:  # more rows than an exact scan should read
                if exact:
                    self._remember_large(scope.user_id)
                if len(scan.terms) > LARGE_SCOPE_TERMS:
                    scan = replace(scan, terms=scan.terms[:LARGE_SCOPE_TERMS])
                legs = (
                    _vector_leg(conn, scan) if scan.vector else [],
                    _keyword_leg(conn, scan) if scan.terms else [],
                )
        vector, keyword = legs
        fuse = (
            relative_score_fusion if query.config.fusion is Fusion.RELATIVE_SCORE else ranked_fusion
        )
        fused = fuse(vector, keyword, alpha=alpha, limit=query.limit)
        vec, kw = dict(vector), dict(keyword)
        return [IndexHit(fid, score, kw.get(fid), vec.get(fid)) for fid, score in fused]

    def _known_large(self, user_id: str) -> bool:
        """Whether the user's scope was found too large to scan in the last
        :data:`LARGE_SCOPE_TTL_S` (its search then skips the exact attempt)."""
        with self._large_lock:
            since = self._large.get(user_id)
            if since is None:
                return False
            if time.monotonic() - since > LARGE_SCOPE_TTL_S:
                del self._large[user_id]
                return False
            return True

    def _remember_large(self, user_id: str) -> None:
        with self._large_lock:
            self._large[user_id] = time.monotonic()
            self._large.move_to_end(user_id)
            while len(self._large) > LARGE_SCOPES_KEPT:
                self._large.popitem(last=False)


Leg = list[tuple[Any, float]]


@dataclass(frozen=True)
class _Scan:
    """One search's statements: the scope's WHERE clause and parameters, the query,
    candidates per leg, the keyword leg's terms (none: no leg), whether a vector leg runs,
    and the most rows an exact scan reads."""

    where: str
    params: dict[str, Any]
    query: SearchQuery
    k: int
    terms: list[str]
    weights: dict[str, float]
    """Each term's weight (multiplies its idf)."""
    vector: bool
    exact_limit: int


def _exact_legs(conn: Connection, scan: _Scan) -> tuple[Leg, Leg] | None:
    """Both legs over the scope's own rows in one statement, or ``None`` if it has
    more than ``scan.exact_limit`` of them.

    The rows are read once (by the user index) into a materialised set holding,
    per row, its cosine distance to the query (rows of the query's embedding
    model only), its terms if it matches any query term, and its length: the
    exact KNN, the scope's size and average length and the keyword matches are
    then computed from that set, and each term's document frequency from the
    matches (a row holding a term matches), so the statement does not grow with
    the number of terms.
    """
    query, terms, k = scan.query, scan.terms, scan.k
    dims = len(query.vector)
    columns = ["id", "token_count"]
    bind: dict[str, Any] = {**scan.params, "exact_cap": scan.exact_limit + 1}
    if scan.vector:
        columns.append(
            f"CASE WHEN embedding_model = :model THEN embedding::vector({dims}) "
            f"<=> CAST(:qvec AS vector({dims})) END AS dist"
        )
        bind |= {"model": query.embedding_model, "qvec": _vector_literal(query.vector)}
    if terms:
        columns += [
            "CASE WHEN tsv @@ CAST(:anyq AS tsquery) THEN index_text END AS index_text",
        ]
        bind["anyq"] = tsquery_any(terms)
    parts = [
        "SELECT 's' AS leg, NULL::uuid AS id, count(*)::float8 AS a, "
        "coalesce(avg(token_count), 0)::float8 AS b, NULL::text AS index_text FROM mine"
    ]
    if scan.vector:
        parts.append(
            "(SELECT 'v', id, 1 - dist, NULL, NULL FROM mine "
            "WHERE dist IS NOT NULL ORDER BY dist LIMIT :k)"
        )
        bind["k"] = k
    if terms:
        parts.append(
            "(SELECT 'k', id, token_count, NULL, index_text FROM mine WHERE index_text IS NOT NULL)"
        )
    rows = conn.execute(
        text(
            f"WITH mine AS MATERIALIZED (SELECT {', '.join(columns)} FROM memory_fragment "
            f"WHERE {scan.where} LIMIT :exact_cap) " + " UNION ALL ".join(parts)
        ),
        bind,
    ).all()
    stats = next(r for r in rows if r.leg == "s")
    if stats.a > scan.exact_limit:
        return None
    nearest = [(r.id, float(r.a)) for r in rows if r.leg == "v"]
    matches = [(r.id, r.index_text, int(r.a)) for r in rows if r.leg == "k"]
    wanted = set(terms)
    df: Counter[str] = Counter()
    for _, index_text, _ in matches:  # a row holding a term matches the query
        df.update(wanted.intersection(index_text.split(" ")))
    idf = {t: bm25_idf(int(stats.a), df[t]) for t in terms}
    return nearest, _bm25(scan, matches, idf, float(stats.b) or 1.0)


def _vector_leg(conn: Connection, scan: _Scan) -> Leg:
    """The ``k`` nearest of a scope too large to scan: the HNSW index's among its rows
    flagged ``ann`` and an exact KNN over the others (by the partial user index on
    ``NOT ann``), merged in one statement. A row is in exactly one part, so none is
    missed whatever the sweep has flagged so far."""
    # pgvector returns at most ef_search rows of the HNSW index and filters them
    # afterwards: widen ef_search to k and keep scanning until k rows pass the user and
    # live filters (iterative scan). Set for the session: every HNSW scan sets them first.
    conn.execute(
        text(
            "SELECT set_config('hnsw.ef_search', :ef, false), "
            "set_config('hnsw.iterative_scan', 'strict_order', false)"
        ),
        {"ef": str(min(1000, max(40, scan.k)))},
    )
    query = scan.query
    dims = len(query.vector)
    distance = f"(embedding::vector({dims}) <=> CAST(:qvec AS vector({dims})))"
    parts = " UNION ALL ".join(
        f"(SELECT id, {distance} AS dist FROM memory_fragment "
        f"WHERE {scan.where} AND embedding_model = :model AND {flag} "
        f"ORDER BY {distance} LIMIT :k)"
        for flag in ("ann", "NOT ann")
    )
    rows = conn.execute(
        text(f"SELECT id, 1 - dist AS similarity FROM ({parts}) AS parts ORDER BY dist LIMIT :k"),
        {
            **scan.params,
            "qvec": _vector_literal(query.vector),
            "model": query.embedding_model,
            "k": scan.k,
        },
    ).all()
    return [(r.id, float(r.similarity)) for r in rows]


def _keyword_leg(conn: Connection, scan: _Scan) -> Leg:
    """BM25 over the scope's matches (for a scope too large to scan)."""
    where, params, terms = scan.where, scan.params, scan.terms
    term_params = {f"t{i}": tsquery_any([t]) for i, t in enumerate(terms)}
    dfs = ", ".join(
        f"count(*) FILTER (WHERE tsv @@ CAST(:t{i} AS tsquery)) AS df{i}" for i in range(len(terms))
    )
    stats = conn.execute(
        text(
            "SELECT count(*) AS n, coalesce(avg(token_count), 0) AS avgdl, "
            f"{dfs} FROM memory_fragment WHERE {where}"
        ),
        {**params, **term_params},
    ).one()
    n_docs = int(stats.n)
    idf = {t: bm25_idf(n_docs, int(getattr(stats, f"df{i}"))) for i, t in enumerate(terms)}
    held = " + ".join(
        f"CASE WHEN tsv @@ CAST(:t{i} AS tsquery) THEN {idf[t]!r} ELSE 0 END"
        for i, t in enumerate(terms)
    )
    rows = conn.execute(
        text(
            "SELECT id, index_text, token_count FROM memory_fragment "
            f"WHERE {where} AND tsv @@ CAST(:anyq AS tsquery) "
            f"ORDER BY {held} DESC, ts_rank(tsv, CAST(:anyq AS tsquery)) DESC LIMIT :cap"
        ),
        {**params, **term_params, "anyq": tsquery_any(terms), "cap": KEYWORD_MATCH_CAP},
    ).all()
    matches = [(r.id, r.index_text, int(r.token_count)) for r in rows]
    return _bm25(scan, matches, idf, float(stats.avgdl) or 1.0)


def _bm25(
    scan: _Scan, matches: list[tuple[Any, str, int]], idf: dict[str, float], avgdl: float
) -> Leg:
    """Okapi BM25 of the matching rows (id, index text, length), best ``k`` first."""
    terms, k1, b = scan.terms, scan.query.config.bm25_k1, scan.query.config.bm25_b
    idf = {t: idf[t] * scan.weights.get(t, 1.0) for t in terms}
    scored = []
    for fragment_id, index_text, length in matches:
        tf = Counter(index_text.split(" "))
        norm = k1 * (1 - b + b * length / avgdl)
        score = sum(idf[t] * tf[t] * (k1 + 1) / (tf[t] + norm) for t in terms if tf.get(t, 0) > 0)
        if score > 0 and math.isfinite(score):
            scored.append((fragment_id, score))
    scored.sort(key=lambda pair: -pair[1])
    return scored[: scan.k]


def _vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _filters(visible: tuple[str, dict[str, Any]], query: SearchQuery) -> tuple[str, dict[str, Any]]:
    """The WHERE clause every statement shares: the scope's visibility (a clause and its
    parameters, rendered for this search; see :class:`PgVectorIndex`), then the query's
    filters."""
    f = query.filters
    where, params = visible
    clauses = [where]
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
