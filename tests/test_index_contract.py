"""The ``FragmentIndex`` contract: every backend must pass this module unchanged.

A harness stores fragments the way production does (ledger row, then the
index operation) and removes them the same way; the assertions speak only of
what ``search`` returns.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest

from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from sdk.client import MemoryClient
from structured_memory.repositories.fragments import FragmentLedger, NewFragment, visible_in_ledger
from tests.conftest import TEST_TENANT_KEY
from unstructured_memory.embedders.hashing import HashingEmbedder
from unstructured_memory.index.base import (
    Delete,
    DropUser,
    FragmentIndex,
    IndexedFragment,
    SearchFilters,
    Upsert,
)
from unstructured_memory.index.registry import create_index
from unstructured_memory.search.presets import (
    HYBRID_DEFAULT,
    KEYWORD_ONLY,
    VECTOR_ONLY,
    SearchConfig,
)
from unstructured_memory.search.query import build_query
from unstructured_memory.tokenize import keyword_terms

EMBEDDER = HashingEmbedder()
T0 = datetime(2026, 6, 1, tzinfo=UTC)


@dataclass
class Harness:
    """Stores and removes fragments through the ledger and one index backend."""

    mem: MemoryClient
    index: FragmentIndex
    stored: dict[uuid.UUID, IndexedFragment] = field(default_factory=dict)

    def store(
        self,
        user: str,
        text: str,
        *,
        intent: str = "other",
        days: int = 0,
        session: str | None = None,
        sandbox: uuid.UUID | None = None,
        agent: str | None = None,
        private: bool = False,
        expires_at: datetime | None = None,
    ) -> uuid.UUID:
        words = keyword_terms(text)
        vector = EMBEDDER.embed_documents([text])[0]
        fragment = NewFragment(
            user_id=user,
            kind="note",
            policy=LifecyclePolicy.EXPLICIT,
            text=text,
            index_text=" ".join(words),
            token_count=len(words),
            intent=intent,
            occurred_at=T0 + timedelta(days=days),
            expires_at=expires_at,
            embedding=vector,
            embedding_model=EMBEDDER.name,
            session_id=session,
            sandbox_id=sandbox,
            agent_id=agent,
            private=private,
        )
        self.mem.profiles.ensure(user)
        with self.mem.admin.database.transaction() as conn:
            FragmentLedger(self.mem.admin.database).insert(conn, [fragment])
        indexed = IndexedFragment(
            id=fragment.id,
            user_id=user,
            text=text,
            index_text=fragment.index_text,
            vector=vector,
            embedding_model=EMBEDDER.name,
            intent=intent,
            occurred_at=fragment.occurred_at,
            expires_at=expires_at,
            session_id=session,
            sandbox_id=sandbox,
            agent_id=agent,
            private=private,
        )
        self.index.apply([Upsert(UserScope(user), indexed)])
        self.stored[fragment.id] = indexed
        return fragment.id

    def redeliver(self, fragment_id: uuid.UUID) -> None:
        """Apply a fragment's upsert again, as an outbox retry would."""
        indexed = self.stored[fragment_id]
        self.index.apply([Upsert(UserScope(indexed.user_id), indexed)] * 2)

    def remove(self, user: str, fragment_id: uuid.UUID) -> None:
        with self.mem.admin.database.transaction() as conn:
            FragmentLedger(self.mem.admin.database).delete(conn, UserScope(user), fragment_id)
        self.index.apply([Delete(UserScope(user), fragment_id)])

    def drop_user(self, user: str) -> None:
        self.mem.forget_user(user)
        self.index.apply([DropUser(UserScope(user))])

    def search(
        self,
        user: str,
        query: str,
        *,
        config: SearchConfig = HYBRID_DEFAULT,
        limit: int = 10,
        agent: str | None = None,
        sandbox_id: uuid.UUID | None = None,
        **filters: object,
    ) -> list[uuid.UUID]:
        q = build_query(
            query,
            embedder=EMBEDDER,
            config=config,
            limit=limit,
            now=datetime.now(UTC),
            filters=SearchFilters(**filters),  # type: ignore[arg-type]
        ).query
        hits = self.index.search(UserScope(user, agent, sandbox_id), q)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True), "hits must come best first"
        return [h.fragment_id for h in hits]


@pytest.fixture(params=["pgvector", pytest.param("weaviate", marks=pytest.mark.weaviate)])
def harness(request: pytest.FixtureRequest, mem: MemoryClient) -> Harness:
    index: FragmentIndex
    if request.param == "weaviate":
        index = request.getfixturevalue("weaviate_index")
    else:
        index = create_index(
            request.param,
            {},
            connect=mem.admin.database.reading,
            visible=visible_in_ledger,
            tenant_key=TEST_TENANT_KEY,
        )
    index.setup(EMBEDDER.name, EMBEDDER.dimensions)
    return Harness(mem, index)


def test_only_the_scope_user_is_searched(harness: Harness) -> None:
    mine = harness.store("buyer-001", "退款编号 RF20260629001 预计三个工作日到账")
    harness.store("buyer-002", "退款编号 RF20260629001 预计三个工作日到账")
    assert harness.search("buyer-001", "RF20260629001 退款") == [mine]
    assert harness.search("buyer-003", "RF20260629001 退款") == []


def test_keyword_only_ranks_exact_terms(harness: Harness) -> None:
    a = harness.store("u1", "订单 88231 的扫地机无法回充")
    b = harness.store("u1", "订单 77777 的空气净化器噪音大")
    harness.store("u1", "想咨询一下手机的保修政策")
    assert harness.search("u1", "88231", config=KEYWORD_ONLY) == [a]
    assert harness.search("u1", "订单", config=KEYWORD_ONLY)[:2] in ([a, b], [b, a])


def test_vector_only_returns_nearest_first_and_respects_limit(harness: Harness) -> None:
    near = harness.store("u1", "The robot vacuum cannot return to its charging dock")
    for i in range(6):
        harness.store("u1", f"Invoice request number {i} for the company account")
    found = harness.search("u1", "vacuum charging dock problem", config=VECTOR_ONLY, limit=3)
    assert len(found) == 3
    assert found[0] == near


def test_hybrid_combines_both_legs(harness: Harness) -> None:
    refund = harness.store("u1", "用户申请退款，退款编号 RF20260629001，预计 1-3 个工作日到账")
    harness.store("u1", "用户咨询空气净化器滤网多久换一次")
    assert harness.search("u1", "退款什么时候到账", limit=1) == [refund]


def test_filters(harness: Harness) -> None:
    a = harness.store("u1", "订单 1 退款", intent="refund_status", days=0, session="s1")
    b = harness.store("u1", "订单 2 物流", intent="tracking_inquiry", days=10, session="s2")
    q = "订单"
    assert set(harness.search("u1", q, intents=frozenset({"refund_status"}))) == {a}
    assert set(harness.search("u1", q, occurred_after=T0 + timedelta(days=1))) == {b}
    assert set(harness.search("u1", q, occurred_before=T0 + timedelta(days=1))) == {a}
    assert set(harness.search("u1", q, session_id="s2")) == {b}
    assert set(harness.search("u1", q, candidate_ids=frozenset({b}))) == {b}


def test_sandboxes_and_private_fragments(harness: Harness) -> None:
    box, other_box = uuid.uuid4(), uuid.uuid4()
    shared = harness.store("u1", "订单 1 长期记忆")
    boxed = harness.store("u1", "订单 2 沙箱记忆", sandbox=box)
    secret = harness.store("u1", "订单 3 私有记忆", agent="refund-agent", private=True)
    assert set(harness.search("u1", "订单")) == {shared}
    assert set(harness.search("u1", "订单", sandbox_id=box)) == {shared, boxed}
    assert set(harness.search("u1", "订单", sandbox_id=other_box)) == {shared}
    assert set(harness.search("u1", "订单", agent="refund-agent")) == {shared, secret}
    assert set(harness.search("u1", "订单", agent="shopping-agent")) == {shared}


def test_expired_fragments_are_not_returned(harness: Harness) -> None:
    live = harness.store("u1", "订单 1", expires_at=datetime.now(UTC) + timedelta(days=1))
    harness.store("u1", "订单 2", expires_at=datetime.now(UTC) - timedelta(seconds=1))
    assert harness.search("u1", "订单") == [live]


def test_delete_and_drop_user(harness: Harness) -> None:
    a = harness.store("u1", "订单 88231 退款")
    b = harness.store("u1", "订单 88232 退款")
    harness.remove("u1", a)
    harness.remove("u1", a)  # deleting twice is not an error
    assert harness.search("u1", "退款") == [b]
    harness.drop_user("u1")
    assert harness.search("u1", "退款") == []


def test_query_without_keyword_terms(harness: Harness) -> None:
    harness.store("u1", "订单 88231 退款")
    assert harness.search("u1", "？！。", config=KEYWORD_ONLY) == []


def test_redelivered_upserts_do_not_duplicate(harness: Harness) -> None:
    a = harness.store("u1", "订单 88231 退款")
    harness.redeliver(a)
    harness.redeliver(a)
    assert harness.search("u1", "退款") == [a]


def test_a_word_cut_otherwise_is_found_by_its_bigrams(harness: Harness) -> None:
    party = harness.store("u1", "Bart在圣诞节晚会上跳舞，感觉非常开心")
    harness.store("u1", "Bart在学校的体育节上跑了第一名")
    assert harness.search("u1", "圣诞晚会", config=KEYWORD_ONLY)[:1] == [party]


def test_heavier_query_terms_weigh_more(harness: Harness) -> None:
    refund = harness.store("u1", "退款 已经 到账")
    parcel = harness.store("u1", "快递 已经 签收")
    q = build_query(
        "退款 快递", embedder=EMBEDDER, config=KEYWORD_ONLY, limit=5, now=datetime.now(UTC)
    ).query
    for heavy, first in (("退款", refund), ("快递", parcel)):
        weights = tuple(1.0 if t == heavy else 0.3 for t in q.tokens)
        hits = harness.index.search(UserScope("u1"), replace(q, weights=weights))
        assert [h.fragment_id for h in hits][:1] == [first]


def test_a_dialogue_is_searched_by_the_users_latest_turn_first(harness: Harness) -> None:
    surf = harness.store("u1", "小雨暑假在青岛海边学冲浪，摔进水里好多次")
    cat = harness.store("u1", "小雨的猫咪团子误吞毛线，做了小手术")
    dialogue = (
        "小雨: 团子今天又在乱咬东西了\n助手: 小猫咪就是喜欢咬来咬去的\n小雨: 我想再去海边冲浪"
    )
    for config in (KEYWORD_ONLY, HYBRID_DEFAULT):
        assert harness.search("u1", dialogue, config=config)[:2] == [surf, cat]
