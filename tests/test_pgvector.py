"""pgvector specifics: the HNSW plan must not cut results short."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy import Connection, text

from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from sdk.client import MemoryClient
from sdk.schemas import MemoryInput
from unstructured_memory.embedders.hashing import HashingEmbedder
from unstructured_memory.index.pgvector import PgVectorIndex, hnsw_index_name
from unstructured_memory.search.presets import VECTOR_ONLY
from unstructured_memory.search.query import build_query


def test_hnsw_plan_returns_every_requested_hit(mem: MemoryClient) -> None:
    items = [
        MemoryInput(
            user_id=f"user-{u}",
            text=f"第 {i} 条 订单 {u}{i:03d} 的咨询记录",
            lifecycle_policy=LifecyclePolicy.EXPLICIT,
        )
        for u in range(4)
        for i in range(60)
    ]
    for u in range(4):
        mem.profiles.ensure(f"user-{u}")
    mem.write_many(items, progress=False)
    embedder = HashingEmbedder()

    @contextmanager
    def hnsw_only() -> Iterator[Connection]:
        """A transaction in which the planner can only use the HNSW index (rolled back)."""
        with mem.database.engine.connect() as conn, conn.begin() as tx:
            conn.execute(text("DROP INDEX ix_memory_fragment_user_id_occurred_at"))
            conn.execute(text("DROP INDEX ix_memory_fragment_user_id_session_id"))
            conn.execute(text("SET LOCAL enable_seqscan = off"))
            yield conn
            tx.rollback()

    query = build_query(
        "订单咨询", embedder=embedder, config=VECTOR_ONLY, limit=50, now=datetime.now(UTC)
    ).query
    with hnsw_only() as conn:
        plan = "\n".join(
            conn.execute(
                text(
                    "EXPLAIN SELECT id FROM memory_fragment WHERE user_id = 'user-1' "
                    f"AND embedding_model = '{embedder.name}' "
                    f"ORDER BY embedding::vector({embedder.dimensions}) <=> "
                    f"CAST(:q AS vector({embedder.dimensions})) LIMIT 100"
                ),
                {"q": str(query.vector)},
            ).scalars()
        )
    assert hnsw_index_name(embedder.name) in plan
    hits = PgVectorIndex(hnsw_only).search(UserScope("user-1"), query)
    assert len(hits) == 50
    assert len({h.fragment_id for h in hits}) == 50
