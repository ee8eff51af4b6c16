"""pgvector specifics: the HNSW plan must not cut results short; the exact scan of a
small scope and the HNSW path of a large one rank alike, whatever the sweep has flagged
``ann``; the HNSW index holds only flagged rows, and the sweep flags only large users."""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial

import pytest
from sqlalchemy import Connection, event, text

from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from sdk.client import MemoryClient
from structured_memory.cross_user import flag_large_scopes
from structured_memory.repositories.fragments import visible_in_ledger
from unstructured_memory.index.base import IndexHit, LargeScopes
from unstructured_memory.index.pgvector import PgVectorIndex, hnsw_index_name
from unstructured_memory.search.presets import HYBRID_DEFAULT, KEYWORD_ONLY, VECTOR_ONLY
from unstructured_memory.search.query import build_query
from values.inputs import MemoryInput


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
    assert flag_large_scopes(mem.admin.database, threshold=0) == len(items)  # all in HNSW
    embedder = mem.admin.embedder
    hnsw_only = partial(_index_scans, mem)
    query = build_query(
        "订单咨询", embedder=embedder, config=VECTOR_ONLY, limit=50, now=datetime.now(UTC)
    ).query
    with hnsw_only() as conn:
        plan = "\n".join(
            conn.execute(
                text(
                    "EXPLAIN SELECT id FROM memory_fragment WHERE user_id = 'user-1' "
                    f"AND embedding_model = '{embedder.name}' AND ann "
                    f"ORDER BY embedding::vector({embedder.dimensions}) <=> "
                    f"CAST(:q AS vector({embedder.dimensions})) LIMIT 100"
                ),
                {"q": str(query.vector)},
            ).scalars()
        )
    assert hnsw_index_name(embedder.name) in plan
    index = PgVectorIndex(hnsw_only, visible_in_ledger, exact_scan_limit=0)
    hits = index.search(UserScope("user-1"), query)
    assert len(hits) == 50
    assert len({h.fragment_id for h in hits}) == 50


def test_the_exact_scan_and_the_hnsw_path_rank_alike(mem: MemoryClient) -> None:
    """One statement over the user's own rows, or HNSW plus a keyword statement:
    the same hits in the same order, with the same scores, for every preset."""
    user = "buyer-exact-01"
    mem.profiles.ensure(user)
    products = ["空气净化器", "扫地机器人", "蓝牙耳机", "电饭煲", "S10 Pro 手机"]
    items = [
        MemoryInput(
            user_id=user,
            text=f"订单 8823{i % 10} 的{products[i % 5]}，第 {i} 次咨询物流和退款",
            lifecycle_policy=LifecyclePolicy.EXPLICIT,
        )
        for i in range(40)
    ] + [
        MemoryInput(
            user_id=user,
            text="Where is my refund for the air purifier?",
            lifecycle_policy=LifecyclePolicy.EXPLICIT,
        )
    ]
    mem.write_many(items, progress=False)
    _assert_paths_agree(mem, user)


def test_a_large_scope_finds_flagged_and_unflagged_rows_alike(mem: MemoryClient) -> None:
    """Rows flagged ``ann`` are found through HNSW, the rest (written since the sweep)
    exactly: the same hits as the exact scan before, between and after the sweeps."""
    user = "buyer-ann-01"
    mem.profiles.ensure(user)
    products = ["空气净化器", "扫地机器人", "蓝牙耳机", "电饭煲", "S10 Pro 手机"]

    def write(first: int, n: int) -> None:
        mem.write_many(
            [
                MemoryInput(
                    user_id=user,
                    text=f"订单 8823{i % 10} 的{products[i % 5]}，第 {i} 次咨询物流和退款",
                    lifecycle_policy=LifecyclePolicy.EXPLICIT,
                )
                for i in range(first, first + n)
            ]
            + [
                MemoryInput(
                    user_id=user,
                    text=f"Refund {first} for the air purifier, call 13912345678",
                    lifecycle_policy=LifecyclePolicy.EXPLICIT,
                )
            ],
            progress=False,
        )

    small = PgVectorIndex(mem.admin.database.reading, visible_in_ledger, exact_scan_limit=30)
    write(0, 30)
    assert flag_large_scopes(mem.admin.database, threshold=small.ann_threshold) == 31
    write(30, 20)  # after the sweep: not flagged
    assert _flags(mem, user) == {True: 31, False: 21}
    _assert_paths_agree(mem, user)
    assert flag_large_scopes(mem.admin.database, threshold=small.ann_threshold, batch_size=8) == 21
    assert _flags(mem, user) == {True: 52}
    _assert_paths_agree(mem, user)


def test_the_sweep_flags_only_large_users_once(mem: MemoryClient) -> None:
    large, small = "buyer-ann-large", "buyer-ann-small"
    for user in (large, small):
        mem.profiles.ensure(user)
    mem.write_many(
        [
            MemoryInput(user_id=user, text=f"订单 88231 第 {i} 条", lifecycle_policy=policy)
            for user, n in ((large, 6), (small, 3))
            for i in range(n)
            for policy in (LifecyclePolicy.EXPLICIT,)
        ],
        progress=False,
    )
    assert flag_large_scopes(mem.admin.database, threshold=5, batch_size=4) == 6
    assert flag_large_scopes(mem.admin.database, threshold=5, batch_size=4) == 0  # idempotent
    assert _flags(mem, large) == {True: 6}
    assert _flags(mem, small) == {False: 3}
    # the client's sweep asks the index for its threshold (1,000: nobody here)
    assert isinstance(mem.admin.index, LargeScopes)
    assert mem.admin.index.ann_threshold == 1000
    assert mem.admin.sweep(vacuum=False).flagged == 0


def test_the_hnsw_index_holds_only_flagged_rows(mem: MemoryClient) -> None:
    """Partial on ``ann``; setup replaces the full index of earlier releases, and is
    idempotent."""
    embedder = mem.admin.embedder
    old = "ix_memory_fragment_hnsw_" + hnsw_index_name(embedder.name).rsplit("_", 1)[1]
    with mem.admin.database.reading() as conn:
        conn.execute(
            text(
                f"CREATE INDEX {old} ON memory_fragment USING hnsw "
                f"((embedding::vector({embedder.dimensions})) vector_cosine_ops) "
                f"WHERE embedding_model = '{embedder.name}'"
            )
        )
    index = PgVectorIndex(mem.admin.database.reading, visible_in_ledger)
    index.setup(embedder.name, embedder.dimensions)
    index.setup(embedder.name, embedder.dimensions)
    with mem.admin.database.reading() as conn:
        definitions: dict[str, str] = dict(
            conn.execute(
                text(
                    "SELECT indexname, indexdef FROM pg_indexes "
                    "WHERE tablename = 'memory_fragment' AND indexname IN (:old, :new)"
                ),
                {"old": old, "new": hnsw_index_name(embedder.name)},
            ).all()
        )
    assert list(definitions) == [hnsw_index_name(embedder.name)]
    assert definitions[hnsw_index_name(embedder.name)].endswith(
        f"WHERE (((embedding_model)::text = '{embedder.name}'::text) AND ann)"
    )
    # a build interrupted (left invalid, as a failed CREATE INDEX CONCURRENTLY leaves it)
    # is built again instead of being kept, unused but maintained, by IF NOT EXISTS
    named = {"name": hnsw_index_name(embedder.name)}
    with mem.admin.database.reading() as conn:
        conn.execute(
            text("UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(:name)"),
            named,
        )
    index.setup(embedder.name, embedder.dimensions)
    with mem.admin.database.reading() as conn:
        valid = conn.execute(
            text("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(:name)"), named
        )
        assert valid.scalar_one() is True


@contextmanager
def _index_scans(mem: MemoryClient) -> Iterator[Connection]:
    """A transaction (rolled back) in which the planner reads the ledger only by the HNSW
    index (rows flagged ``ann``), the user index on the others, and the GIN index."""
    with mem.admin.database.engine.connect() as conn, conn.begin() as tx:
        conn.execute(text("DROP INDEX ix_memory_fragment_user_id_occurred_at"))
        conn.execute(text("DROP INDEX ix_memory_fragment_user_id_session_id"))
        conn.execute(text("SET LOCAL enable_seqscan = off"))
        yield conn
        tx.rollback()


def _flags(mem: MemoryClient, user: str) -> dict[bool, int]:
    with mem.admin.database.reading() as conn:
        rows = conn.execute(
            text("SELECT ann, count(*) FROM memory_fragment WHERE user_id = :u GROUP BY ann"),
            {"u": user},
        ).all()
    return {bool(flag): int(n) for flag, n in rows}


def _assert_paths_agree(mem: MemoryClient, user: str) -> None:
    """The exact scan and the large-scope path (HNSW over flagged rows, exact over the
    rest): the same hits in the same order, with the same scores, for every preset."""
    embedder = mem.admin.embedder
    exact = PgVectorIndex(mem.admin.database.reading, visible_in_ledger)
    approximate = PgVectorIndex(partial(_index_scans, mem), visible_in_ledger, exact_scan_limit=0)
    for preset in (HYBRID_DEFAULT, VECTOR_ONLY, KEYWORD_ONLY):
        for words in ("空气净化器 退款", "订单 88231 物流", "refund air purifier"):
            query = build_query(
                words, embedder=embedder, config=preset, limit=10, now=datetime.now(UTC)
            ).query
            a = exact.search(UserScope(user), query)
            b = approximate.search(UserScope(user), query)
            assert len(a) == 10 or preset is KEYWORD_ONLY
            assert [h.score for h in a] == pytest.approx([h.score for h in b])
            assert _tied(a) == _tied(b), (preset, words)


def _tied(hits: list[IndexHit]) -> list[set[uuid.UUID]]:
    """The hits as groups of equal scores, best first; the last group (which the limit
    may cut anywhere) left out. Rows tied on similarity (texts differing only in words
    the query lacks) come in either order, by whichever plan found them."""
    groups: list[set[uuid.UUID]] = []
    last: float | None = None
    for hit in hits:
        if last is None or not math.isclose(hit.score, last, rel_tol=1e-6, abs_tol=1e-9):
            groups.append(set())
            last = hit.score
        groups[-1].add(hit.fragment_id)
    return groups[:-1]


def test_a_scope_found_large_skips_the_exact_attempt_and_finds_the_same(
    mem: MemoryClient,
) -> None:
    """The exact statement reads up to the limit + 1 rows before giving up on a large
    scope; once a user is known large, its searches go straight to the large-scope path."""
    user = "buyer-large-01"
    mem.profiles.ensure(user)
    mem.write_many(
        [
            MemoryInput(
                user_id=user,
                text=f"订单 8823{i} 的物流和退款",
                lifecycle_policy=LifecyclePolicy.EXPLICIT,
            )
            for i in range(8)
        ],
        progress=False,
    )
    index = PgVectorIndex(mem.admin.database.reading, visible_in_ledger, exact_scan_limit=5)
    now = datetime.now(UTC)
    embedder = mem.admin.embedder
    built = build_query("订单 退款", embedder=embedder, config=HYBRID_DEFAULT, limit=5, now=now)
    query = built.query
    statements: list[str] = []

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        statements.append(statement)

    event.listen(mem.admin.database.engine, "before_cursor_execute", record)
    try:
        first = index.search(UserScope(user), query)
        exact_attempts = sum("AS MATERIALIZED" in s for s in statements)
        statements.clear()
        second = index.search(UserScope(user), query)
    finally:
        event.remove(mem.admin.database.engine, "before_cursor_execute", record)
    assert exact_attempts == 1
    assert not any("AS MATERIALIZED" in s for s in statements)
    assert [h.fragment_id for h in second] == [h.fragment_id for h in first]
    assert len(first) == 5
