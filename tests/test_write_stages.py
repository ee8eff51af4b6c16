"""The write path's stage observers, its batches, and the session lookups of contextual
indexing made in one statement."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from policies.errors import InvalidText
from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from sdk.client import MemoryClient
from sdk.write_path import STAGES, observe_stages
from structured_memory.repositories.fragments import FragmentLedger, NewFragment
from values.inputs import MemoryInput

EXPLICIT = LifecyclePolicy.EXPLICIT
T0 = datetime(2026, 6, 29, 10, 0, tzinfo=UTC)

TEXTS = [
    "我的手机号是 13912345678，订单 88231 有变化请短信通知我",
    "退款 RF20260629001 到账了吗？金额 199 元",
    "Please send the invoice for order 88231 to buyer@example.com",
    "快递三天没更新了，订单 88231",
    "The blender arrived damaged, I'd like an exchange",
]


def _items(user: str, texts: list[str], session: str = "s-1") -> list[MemoryInput]:
    return [
        MemoryInput(
            user_id=user,
            text=t,
            lifecycle_policy=EXPLICIT,
            session_id=session,
            occurred_at=T0 + timedelta(minutes=i),
        )
        for i, t in enumerate(texts)
    ]


def test_every_stage_of_each_committed_batch_is_reported_once(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    heard: list[tuple[str, float, int]] = []
    stop = observe_stages(lambda stage, seconds, n: heard.append((stage, seconds, n)))
    try:
        ids = mem.write_many(_items("buyer-001", TEXTS), batch_size=2, progress=False)
    finally:
        stop()
    assert len(ids) == 5
    assert [s for s, _, _ in heard] == list(STAGES) * 3  # three batches, stages in order
    assert [n for _, _, n in heard] == [2] * 8 + [2] * 8 + [1] * 8
    assert all(seconds >= 0.0 for _, seconds, _ in heard)
    heard.clear()
    mem.write("buyer-001", "订单 88231 已签收", lifecycle_policy=EXPLICIT)
    assert heard == [], "a stopped observer hears nothing"


def test_a_failing_observer_does_not_fail_the_write(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")

    def broken(stage: str, seconds: float, fragments: int) -> None:
        raise RuntimeError("observer bug")

    stop = observe_stages(broken)
    try:
        memory_id = mem.write("buyer-001", "退款 RF20260629001 处理中", lifecycle_policy=EXPLICIT)
    finally:
        stop()
    assert mem.memories.get("buyer-001", memory_id) is not None


def test_batches_keep_their_order_and_the_session_context_across_batches(
    mem: MemoryClient,
) -> None:
    mem.profiles.ensure("buyer-001")
    ids = mem.write_many(_items("buyer-001", TEXTS), batch_size=2, progress=False)
    with mem.admin.database.transaction() as conn:
        rows = {
            r.id: r
            for r in conn.execute(
                text(
                    "SELECT id, text, context_ids FROM memory_fragment WHERE user_id = 'buyer-001'"
                )
            )
        }
    assert "13912345678" not in rows[ids[0]].text
    assert rows[ids[3]].text == TEXTS[3]
    # the first turn of batch 2 is indexed with the two turns of batch 1 before it
    assert rows[ids[2]].context_ids == ids[:2]
    assert rows[ids[4]].context_ids == ids[2:4]


def test_a_bad_item_fails_its_batch_after_the_batches_before_it_are_stored(
    mem: MemoryClient,
) -> None:
    mem.profiles.ensure("buyer-001")
    bad = MemoryInput(user_id="buyer-001", text="   ", lifecycle_policy=EXPLICIT)
    items = [*_items("buyer-001", TEXTS), bad]
    with pytest.raises(InvalidText) as err:
        mem.write_many(items, batch_size=2, progress=False)
    assert err.value.details["item"] == 5
    with mem.admin.database.transaction() as conn:
        stored = conn.execute(
            text("SELECT count(*) FROM memory_fragment WHERE user_id = 'buyer-001'")
        ).scalar_one()
    assert stored == 4, "batches 1 and 2 stay written, batch 3 (items 4 and 5) is not"


def test_session_lookups_in_one_statement_match_one_at_a_time(mem: MemoryClient) -> None:
    for user in ("buyer-001", "buyer-002"):
        mem.profiles.ensure(user)
    box_1, box_2 = uuid.uuid4(), uuid.uuid4()
    now = datetime.now(UTC)
    rows = [
        ("buyer-001", None, False, None, None),
        ("buyer-001", "agent-x", True, None, None),
        ("buyer-001", "agent-y", True, None, None),
        ("buyer-001", None, False, box_1, None),
        ("buyer-001", None, False, box_2, None),
        ("buyer-001", None, False, None, now - timedelta(days=1)),  # expired
        ("buyer-001", None, False, None, None),
        ("buyer-002", None, False, None, None),
    ]
    ledger = FragmentLedger(mem.admin.database)
    with mem.admin.database.transaction() as conn:
        ledger.insert(
            conn,
            [
                NewFragment(
                    user_id=user,
                    kind="note",
                    policy=EXPLICIT,
                    text=f"第 {i} 轮 订单 88231",
                    index_text=f"第 {i} 轮 订单 88231",
                    token_count=4,
                    intent="other",
                    occurred_at=T0 + timedelta(minutes=i),
                    expires_at=expires,
                    embedding=[1.0] + [0.0] * 1023,
                    embedding_model="test",
                    session_id="s-1",
                    sandbox_id=box,
                    agent_id=agent,
                    private=private,
                )
                for i, (user, agent, private, box, expires) in enumerate(rows)
            ],
        )
    lookups = [
        (UserScope(user, agent, box), "s-1", until)
        for user in ("buyer-001", "buyer-002")
        for agent in (None, "agent-x")
        for box in (None, box_1)
        for until in (T0 + timedelta(minutes=4), T0 + timedelta(hours=1))
    ] + [(UserScope("buyer-001"), "s-2", T0 + timedelta(hours=1))]
    for limit in (2, 5):
        with mem.admin.database.transaction() as conn:
            many = ledger.recent_turns_many(conn, lookups, now=now, limit=limit)
        one_by_one = [
            ledger.recent_turns(scope, session, until=until, now=now, limit=limit)
            for scope, session, until in lookups
        ]
        assert [list(m) for m in many] == [list(o) for o in one_by_one]
    # agent-x in box 1 sees turns 0, 1 (its own private one), 3 (box 1) and 6
    assert max(len(m) for m in many) == 4
    assert not many[-1], "another session has no turns"
