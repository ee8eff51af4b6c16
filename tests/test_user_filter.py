"""Every statement on a user table carries the user predicate, unless marked cross-user.

A SQLAlchemy ``before_cursor_execute`` hook records each statement while a
representative workload runs through the SDK: profile, devices, links, facts,
vault, write, search, session end, feedback, export, retokenise, delete and erasure;
and the cross-user sweep and decay. A statement
that names a table holding a ``user_id`` column must filter on it (or insert
it), unless ``structured_memory.cross_user`` marked it as cross-user work.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import event, text

from policies.lifecycle import LifecyclePolicy
from sdk import BusinessState, MemoryClient, MemoryInput, Settings, Turn
from structured_memory.cross_user import (
    CROSS_USER,
    count_decay_due,
    count_expired,
    decay_inferred,
    flag_large_scopes,
    idle_sessions,
    sweep_expired,
)
from structured_memory.models import Base

USER_TABLES = sorted(t.name for t in Base.metadata.sorted_tables if "user_id" in t.c)
_TABLE_RE = re.compile(r"\b(" + "|".join(USER_TABLES) + r")\b")
_PREDICATE_RE = re.compile(r"\buser_id\s*(=|IN\b|= ANY)", re.IGNORECASE)
_INSERT_RE = re.compile(r"^\s*INSERT INTO \w+\s*\([^)]*\buser_id\b", re.IGNORECASE)


_DDL_RE = re.compile(r"^\s*(CREATE|ALTER|DROP)\b", re.IGNORECASE)


def unscoped(statement: str) -> bool:
    """Whether a statement reads or writes a user table without the user predicate."""
    if _TABLE_RE.search(statement) is None or _DDL_RE.match(statement):
        return False
    return _PREDICATE_RE.search(statement) is None and _INSERT_RE.search(statement) is None


@pytest.fixture
def recorded(mem: MemoryClient) -> Iterator[list[tuple[str, bool]]]:
    seen: list[tuple[str, bool]] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        context = args[1]
        marked = bool(context is not None and context.execution_options.get(CROSS_USER))
        seen.append((statement, marked))

    engine = mem.admin.database.engine
    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


def test_the_detector_flags_a_statement_without_the_predicate() -> None:
    assert unscoped("SELECT id FROM memory_fragment WHERE expires_at < now()")
    assert unscoped("DELETE FROM pii_vault")
    assert not unscoped("SELECT id FROM memory_fragment WHERE memory_fragment.user_id = %(u)s")
    assert not unscoped("INSERT INTO memory_fact (id, user_id, key) VALUES (%(a)s, %(b)s, %(c)s)")
    assert not unscoped("SELECT 1")


def test_every_user_statement_of_a_workload_is_scoped(
    mem: MemoryClient, recorded: list[tuple[str, bool]]
) -> None:
    user, other = "buyer-filter-1", "buyer-filter-2"
    explicit, implicit = LifecyclePolicy.EXPLICIT, LifecyclePolicy.IMPLICIT
    for u in (user, other):
        mem.profiles.ensure(u)
    profile = mem.profiles.get(user)
    mem.profiles.update(user, expected_version=profile.version, language="zh-CN")
    device = mem.devices.register(user, device_id="iphone-15", os="iOS", browser="Safari")
    mem.devices.verify(user, device.fingerprint, succeeded=True)
    mem.devices.list(user)
    link = mem.links.add(user, entity_type="order", entity_id="88231", role="owner")
    mem.links.valid_now(user)
    mem.links.end(user, link.id)
    mem.facts.put(user, "偏好", "文字说明", lifecycle_policy=implicit)
    mem.facts.get(user, "偏好")
    mem.facts.list(user)
    ref = mem.pii.store(user, "phone", "13912345678")
    mem.pii.find(user, "phone", "13912345678")
    mem.pii.reveal(user, ref.id)
    first = mem.write(user, "订单 88231 的扫地机不回充，申请退款", lifecycle_policy=explicit)
    mem.write_many(
        [
            MemoryInput(
                user_id=user,
                text="退款 RF20260629001 预计三天到账，手机 13912345678",
                lifecycle_policy=implicit,
                session_id="s-1",
            ),
            MemoryInput(user_id=other, text="别人的订单 99999", lifecycle_policy=explicit),
        ],
        progress=False,
    )
    mem.search(user, "退款到账了吗", limit=3)
    mem.search(user, "手机 13912345678 的订单", limit=3, session_id="s-1")
    mem.end_session(
        user,
        "s-2",
        [Turn(role="user", text="昨天那个退款到账了吗"), Turn(role="assistant", text="已到账")],
    )
    mem.append_turns(
        user,
        "s-4",
        [
            Turn("user", "我是金卡会员，以后微信通知我，寄到北京市朝阳区建国路88号"),
            Turn("assistant", "好的，已为您创建维修工单 WO2026070100123"),
        ],
    )
    mem.end_session(user, "s-4", [])
    with mem.sandbox(user, "s-3") as sb:
        boxed = mem.write(user, "沙箱里的临时需求", lifecycle_policy=implicit)
        mem.search(user, "临时需求", limit=3)
        sb.merge([boxed])
        sb.fork()
        mem.write(user, "重新来过", lifecycle_policy=implicit)
        mem.sandboxes.history(user, "s-3")
        sb.discard()
    mem.memories.get(user, first)
    mem.memories.list(user)
    mem.feedback(user, first, action="click")
    fact = mem.facts.put(user, "内容偏好", "图文", lifecycle_policy=implicit, confidence=0.31)
    mem.feedback(user, fact.id, action="skip")
    mem.facts.feedback(user, fact.id, "confirm")
    mem.feedback(user, fact.id, action="reject")
    mem.export_user(user)
    with mem.admin.database.transaction() as conn:  # terms of an older release, to be rewritten
        conn.execute(
            text("UPDATE memory_fragment SET index_text = '' WHERE user_id = :u"), {"u": user}
        )
    assert mem.admin.retokenise(batch_size=2).changed > 0  # ops work, each user in their own scope
    mem.memories.delete(user, first)
    mem.facts.delete(user, "偏好")
    mem.forget_user(user)

    statements = [s for s, _ in recorded]
    assert any("memory_fragment" in s for s in statements), "the workload reached the ledger"
    offending = [s for s, marked in recorded if unscoped(s) and not marked]
    assert offending == [], "\n\n".join(offending)


def test_the_other_read_paths_are_scoped(
    mem: MemoryClient, recorded: list[tuple[str, bool]]
) -> None:
    """The reads the workload above does not take: the context block, a sandbox and what
    it holds, trust revoked, links by date, the vault's listing, and their removals."""
    user = "buyer-filter-1"
    mem.profiles.ensure(user)
    device = mem.devices.register(user, device_id="iphone-15", os="iOS", browser="Safari")
    link = mem.links.add(user, entity_type="order", entity_id="88231", role="owner")
    ref = mem.pii.store(user, "phone", "13912345678")
    with mem.sandbox(user, "s-1") as sb:
        mem.write(user, "沙箱里的临时需求", lifecycle_policy=LifecyclePolicy.IMPLICIT)
        mem.build_context(user, "临时需求", records=3)
        mem.sandboxes.get(user, sb.id)
        mem.sandboxes.memories(user, sb.id)
    mem.build_context(user, "退款到账了吗", records=3)
    mem.devices.revoke_trust(user, device.fingerprint)
    mem.devices.remove(user, device.fingerprint)
    mem.links.list(user)
    mem.links.valid_at(user, datetime.now(UTC))
    mem.links.remove(user, link.id)
    mem.pii.list(user)
    mem.pii.delete(user, ref.id)

    assert any("session_sandbox" in s for s, _ in recorded), "the reads reached the sandboxes"
    offending = [s for s, marked in recorded if unscoped(s) and not marked]
    assert offending == [], "\n\n".join(offending)


def test_verification_statements_are_scoped(settings: Settings, mem: MemoryClient) -> None:
    """Verifying links and search hits, on a client of its own (verifiers are per client)."""
    user, other = "buyer-filter-1", "buyer-filter-2"
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    with MemoryClient(settings, agent_id="refund-agent") as client:
        client.register_verifier("order", lambda t, i: BusinessState("已发货"))
        client.register_verifier("refund", lambda t, i: None)
        for u in (user, other):
            client.profiles.ensure(u)
            client.links.add(u, entity_type="order", entity_id="88231", role="owner")
        client.links.add(user, entity_type="refund", entity_id="RF20260629001", role="owner")
        client.write(
            user, "订单 88231 已发货，退款 RF20260629001", lifecycle_policy=LifecyclePolicy.BUSINESS
        )
        engine = client.admin.database.engine
        event.listen(engine, "before_cursor_execute", record)
        try:
            client.verify_links(user)
            client.search(user, "订单 88231 退款", limit=3, verify=True)
        finally:
            event.remove(engine, "before_cursor_execute", record)
    assert any("user_business_link" in s and "UPDATE" in s for s in seen)
    offending = [s for s in seen if unscoped(s)]
    assert offending == [], "\n\n".join(offending)


def test_cross_user_work_is_marked(mem: MemoryClient, recorded: list[tuple[str, bool]]) -> None:
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    frequent = "buyer-filter-3"
    mem.profiles.ensure(frequent)
    mem.write_many(  # five sessions: a frequent user, whose inferences outlive a week
        [
            MemoryInput(
                user_id=frequent,
                text="查订单 88231 的物流",
                lifecycle_policy=LifecyclePolicy.EXPLICIT,
                session_id=f"s-{i}",
            )
            for i in range(5)
        ],
        progress=False,
    )
    mem.facts.put(frequent, "内容偏好", "视频", lifecycle_policy=LifecyclePolicy.IMPLICIT)
    mem._rt().ledger.renewals.flush()  # earlier tests' searches: not part of what is checked
    recorded.clear()
    count_expired(mem.admin.database, now)
    sweep_expired(mem.admin.database, now)
    idle_sessions(mem.admin.database, now)
    later = now + timedelta(days=10)
    count_decay_due(mem.admin.database, later, mem.settings.confidence)
    assert decay_inferred(mem.admin.database, later, mem.settings.confidence).decayed == 1
    # the sweep audits what it deleted, for users it finds itself
    assert sweep_expired(mem.admin.database, now + timedelta(days=31)).facts == 1
    assert flag_large_scopes(mem.admin.database, threshold=4, batch_size=2) >= 5  # in batches
    statistics = mem.admin.ops
    statistics.expiry()
    statistics.confidence()
    statistics.activity()
    statistics.outbox()
    statistics.tenants()
    statistics.keys()
    statistics.verifiers()
    statistics.gauges()
    touching = [(s, marked) for s, marked in recorded if _TABLE_RE.search(s)]
    assert touching, "the sweep ran statements on user tables"
    assert all(marked for _, marked in touching)
