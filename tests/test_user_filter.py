"""Every statement on a user table carries the user predicate, unless marked cross-user.

A SQLAlchemy ``before_cursor_execute`` hook records each statement while a
representative workload runs through the SDK: profile, devices, links, facts,
vault, write, search, session end, export, delete and erasure. A statement
that names a table holding a ``user_id`` column must filter on it (or insert
it), unless ``structured_memory.cross_user`` marked it as cross-user work.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from policies.lifecycle import LifecyclePolicy
from sdk import MemoryClient, MemoryInput, Turn
from structured_memory.cross_user import CROSS_USER, count_expired, sweep_expired
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

    engine = mem.database.engine
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
    mem.export_user(user)
    mem.memories.delete(user, first)
    mem.facts.delete(user, "偏好")
    mem.forget_user(user)

    statements = [s for s, _ in recorded]
    assert any("memory_fragment" in s for s in statements), "the workload reached the ledger"
    offending = [s for s, marked in recorded if unscoped(s) and not marked]
    assert offending == [], "\n\n".join(offending)


def test_cross_user_work_is_marked(mem: MemoryClient, recorded: list[tuple[str, bool]]) -> None:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    count_expired(mem.database, now)
    sweep_expired(mem.database, now)
    touching = [(s, marked) for s, marked in recorded if _TABLE_RE.search(s)]
    assert touching, "the sweep ran statements on user tables"
    assert all(marked for _, marked in touching)
