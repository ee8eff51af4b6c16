"""Per-session sandboxes: isolation, fork, merge, discard, races, context propagation."""

from __future__ import annotations

import asyncio
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from sdk import LifecyclePolicy, MemoryClient, Settings
from sdk.errors import SandboxClosed

EXPLICIT = LifecyclePolicy.EXPLICIT
IMPLICIT = LifecyclePolicy.IMPLICIT
LONG_TERM = "用户的常用收货地址在杭州，偏好顺丰配送"


@pytest.fixture(autouse=True)
def users(mem: MemoryClient) -> None:
    for user in ("buyer-001", "buyer-002"):
        mem.profiles.ensure(user)
    mem.write("buyer-001", LONG_TERM, lifecycle_policy=EXPLICIT)


def texts(mem: MemoryClient, user: str, query: str = "订单 退款 扫地机 顺丰") -> set[str]:
    return {h.text for h in mem.search(user, query, limit=20, alpha=0.0)}


def _count(mem: MemoryClient, sql: str, **params: object) -> int:
    with mem.admin.database.transaction() as conn:
        return int(conn.execute(text(sql), params).scalar_one())


def test_a_sandbox_sees_long_term_memory_and_its_own_writes_only(mem: MemoryClient) -> None:
    with mem.sandbox("buyer-001", "s-1") as one:
        a = mem.write("buyer-001", "订单 88231 的扫地机要退款", lifecycle_policy=IMPLICIT)
        assert texts(mem, "buyer-001") >= {LONG_TERM, "订单 88231 的扫地机要退款"}
        assert mem.memories.get("buyer-001", a) is not None
    with mem.sandbox("buyer-001", "s-2") as two:
        assert two.id != one.id
        assert texts(mem, "buyer-001") == {LONG_TERM}, "another session sees nothing of s-1"
        assert mem.memories.get("buyer-001", a) is None
    assert texts(mem, "buyer-001") == {LONG_TERM}, "outside any sandbox: long-term only"
    assert mem.memories.get("buyer-001", a) is None
    assert a not in {m.id for m in mem.memories.list("buyer-001")}


def test_a_sandbox_is_its_users_only(mem: MemoryClient) -> None:
    mem.write("buyer-002", "订单 99999 退款中", lifecycle_policy=EXPLICIT)
    with mem.sandbox("buyer-001", "s-1"):
        other = mem.write("buyer-002", "订单 77777 已签收", lifecycle_policy=EXPLICIT)
        mem.write("buyer-001", "订单 88231 退款", lifecycle_policy=IMPLICIT)
    record = mem.memories.get("buyer-002", other)
    assert record is not None, "another user's write inside the block is long-term"
    assert record.sandbox_id is None
    assert "订单 88231 退款" not in texts(mem, "buyer-002")


def test_other_agents_never_see_a_sandbox(mem: MemoryClient, settings: Settings) -> None:
    with mem.sandbox("buyer-001", "s-1"):
        mid = mem.write("buyer-001", "订单 88231 的扫地机要退款", lifecycle_policy=IMPLICIT)
    with MemoryClient(settings, agent_id="shopping-agent") as other:
        assert other.memories.get("buyer-001", mid) is None
        assert "订单 88231 的扫地机要退款" not in texts(other, "buyer-001")


def test_fork_archives_and_starts_clean(mem: MemoryClient) -> None:
    with mem.sandbox("buyer-001", "s-1") as sb:
        first = sb.id
        said = mem.write(
            "buyer-001", "订单 88231 退款，手机 13912345678", lifecycle_policy=IMPLICIT
        )
        new = sb.fork()  # 忘了刚才说的，重新来
        assert new != first
        assert texts(mem, "buyer-001") == {LONG_TERM}
        mem.write("buyer-001", "重新开始：想买空气净化器", lifecycle_policy=IMPLICIT)
    history = mem.sandboxes.history("buyer-001", "s-1")
    assert [b.status for b in history] == ["archived", "active"]
    assert history[1].parent_id == first
    archived = mem.sandboxes.memories("buyer-001", first)
    assert [m.id for m in archived] == [said], "kept, readable for audit"
    assert "13912345678" not in archived[0].text


def test_a_write_through_a_forked_sandbox_is_refused(mem: MemoryClient) -> None:
    with mem.sandbox("buyer-001", "s-1") as sb:
        stale = mem.sandboxes.open("buyer-001", "s-1")
        mem.sandboxes.fork("buyer-001", "s-1")  # another worker of the session forked
        assert stale.id == sb.id
        with pytest.raises(SandboxClosed):
            mem.write("buyer-001", "迟到的写入", lifecycle_policy=IMPLICIT)
    assert _count(mem, "SELECT count(*) FROM memory_fragment WHERE text = '迟到的写入'") == 0


def test_merge_promotes_chosen_items_with_their_policys_lifetime(mem: MemoryClient) -> None:
    with mem.sandbox("buyer-001", "s-1") as sb:
        keep = mem.write("buyer-001", "偏好图文说明", lifecycle_policy=IMPLICIT)
        forever = mem.write("buyer-001", "请记住发票抬头是杭州某某公司", lifecycle_policy=EXPLICIT)
        drop = mem.write("buyer-001", "随口一提：今天下雨", lifecycle_policy=IMPLICIT)
        sandboxed = mem.memories.get("buyer-001", keep)
        assert sandboxed is not None
        assert sandboxed.expires_at is not None, "unmerged memories expire with the sandbox"
        assert sorted(sb.merge([keep, forever, uuid.uuid4()])) == sorted([keep, forever])
        assert sb.discard() == 1
    merged = mem.memories.get("buyer-001", keep)
    assert merged is not None
    assert merged.sandbox_id is None
    assert merged.expires_at is not None
    assert merged.expires_at > datetime.now(UTC) + timedelta(days=6)
    kept = mem.memories.get("buyer-001", forever)
    assert kept is not None
    assert kept.expires_at is None
    assert _count(mem, "SELECT count(*) FROM memory_fragment WHERE id = :i", i=drop) == 0


def test_concurrent_forks_leave_one_active_sandbox_and_lose_nothing(mem: MemoryClient) -> None:
    with mem.sandbox("buyer-001", "s-1"):
        mem.write("buyer-001", "第一版需求", lifecycle_policy=IMPLICIT)
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            with mem.sandbox("buyer-001", "s-1") as sb:
                barrier.wait()
                sb.fork()
                mem.write("buyer-001", f"第 {n} 个分支的需求", lifecycle_policy=IMPLICIT)
        except SandboxClosed:
            pass  # another fork won between this fork and the write: typed, nothing written
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    history = mem.sandboxes.history("buyer-001", "s-1")
    assert [b.status for b in history].count("active") == 1
    assert len(history) == 7, "the first sandbox plus one per fork"
    total = _count(mem, "SELECT count(*) FROM memory_fragment WHERE sandbox_id IS NOT NULL")
    branches = _count(
        mem, "SELECT count(*) FROM memory_fragment WHERE text LIKE '第 % 个分支的需求'"
    )
    assert total == 1 + branches, "every write that succeeded is kept in its sandbox"


def _merge_racing_fork(mem: MemoryClient) -> tuple[list[str], uuid.UUID, uuid.UUID]:
    """One race: a merge of the sandbox's memory against a fork of its session."""
    with mem.sandbox("buyer-001", "s-race") as sb:
        mid = mem.write("buyer-001", "订单 88231 的退款进度", lifecycle_policy=IMPLICIT)
        box = sb.id
    outcome: list[str] = []
    go = threading.Barrier(2)

    def merge() -> None:
        go.wait()
        try:
            mem.sandboxes.merge("buyer-001", "s-race", box, [mid])
            outcome.append("merged")
        except SandboxClosed:
            outcome.append("closed")

    def fork() -> None:
        go.wait()
        mem.sandboxes.fork("buyer-001", "s-race")

    threads = [threading.Thread(target=merge), threading.Thread(target=fork)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return outcome, box, mid


def test_a_merge_racing_a_fork_loses_nothing(mem: MemoryClient) -> None:
    for _ in range(5):
        outcome, box, mid = _merge_racing_fork(mem)
        merged = mem.memories.get("buyer-001", mid)
        if outcome == ["merged"]:
            assert merged is not None
            assert merged.sandbox_id is None
        else:
            assert outcome == ["closed"]
            archived = mem.sandboxes.memories("buyer-001", box)
            assert [m.id for m in archived] == [mid], "still archived with its sandbox"
        actives = [b for b in mem.sandboxes.history("buyer-001", "s-race") if b.status == "active"]
        assert len(actives) == 1


def test_each_thread_and_task_sees_its_own_sandbox(mem: MemoryClient) -> None:
    seen: dict[str, uuid.UUID | None] = {}

    def outside() -> None:
        seen["thread"] = mem.scope("buyer-001").sandbox_id

    with mem.sandbox("buyer-001", "s-1") as sb:
        worker = threading.Thread(target=outside)
        worker.start()
        worker.join()
        assert mem.scope("buyer-001").sandbox_id == sb.id

        async def task(session: str | None) -> uuid.UUID | None:
            if session is None:
                return mem.scope("buyer-001").sandbox_id
            with mem.sandbox("buyer-001", session) as inner:
                await asyncio.sleep(0)
                assert mem.scope("buyer-001").sandbox_id == inner.id
                return inner.id

        async def both() -> list[uuid.UUID | None]:
            return list(await asyncio.gather(task("s-9"), task(None)))

        inner_id, inherited = asyncio.run(both())
        assert inherited == sb.id, "a task inherits the block it was started in"
        assert inner_id != sb.id
        assert mem.scope("buyer-001").sandbox_id == sb.id, "the task's block did not leak out"
    assert seen["thread"] is None, "a plain thread starts outside any sandbox"
    assert mem.scope("buyer-001").sandbox_id is None


def test_fork_merge_and_discard_are_audited(mem: MemoryClient) -> None:
    from structured_memory.audit import recent

    with mem.sandbox("buyer-001", "s-audit") as sb:
        mid = mem.write("buyer-001", "想买空气净化器", lifecycle_policy=IMPLICIT)
        sb.merge([mid])
        sb.fork()
        mem.write("buyer-001", "随口一提", lifecycle_policy=IMPLICIT)
        sb.discard()
    actions = [e.action for e in recent(mem.admin.database, limit=50)]
    assert {"merge", "fork", "discard"} <= set(actions)


def test_a_session_ended_inside_a_sandbox_writes_long_term_memory(mem: MemoryClient) -> None:
    from sdk import Turn

    with mem.sandbox("buyer-001", "s-end"):
        record = mem.end_session(
            "buyer-001", "s-end", [Turn("user", "订单 88231 的扫地机不回充，我要退款")]
        )
    stored = mem.memories.get("buyer-001", record.memory_id)
    assert stored is not None
    assert stored.sandbox_id is None, "the transcript given is what persists"
