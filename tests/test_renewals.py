"""Renewal on use without a write on the search path (``structured_memory.renewals``).

A search reads; the uses it makes are written in batches shortly after, with the
time of each use, so the result is the one an immediate renewal gives. These
tests use a client whose writer waits 60 s, so nothing is written behind their back.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

import pytest
from sqlalchemy import event, text

from policies.errors import DatabaseUnavailable
from policies.lifecycle import LifecyclePolicy
from sdk import MemoryClient, Settings
from structured_memory.database import Database
from structured_memory.renewals import Renewals

IMPLICIT = LifecyclePolicy.IMPLICIT
USER = "buyer-renew-01"
PURIFIER = "想买静音的空气净化器，卧室用"


@pytest.fixture
def slow(slow: MemoryClient) -> MemoryClient:
    """The conftest's client whose renewal writer waits 60 s, with the buyer created."""
    slow.profiles.ensure(USER)
    return slow


Table = Literal["memory_fragment", "memory_fact"]
T = TypeVar("T")


def _row(mem: MemoryClient, mid: uuid.UUID, table: Table = "memory_fragment") -> Any:
    with mem.admin.database.transaction() as conn:
        return conn.execute(
            text(f"SELECT expires_at, last_used_at, renew_days FROM {table} WHERE id = :i"),
            {"i": mid},
        ).one_or_none()


def _expire_in(
    mem: MemoryClient, mid: uuid.UUID, delta: timedelta, table: Table = "memory_fragment"
) -> datetime:
    expires = datetime.now(UTC) + delta
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text(f"UPDATE {table} SET expires_at = :e WHERE id = :i"),
            {"e": expires, "i": mid},
        )
    return expires


def _writes_during(mem: MemoryClient, call: Callable[[], T]) -> tuple[T, list[str]]:
    """``call()``'s result and the INSERT and UPDATE statements it ran."""
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    event.listen(mem.admin.database.engine, "before_cursor_execute", record)
    try:
        result = call()
    finally:
        event.remove(mem.admin.database.engine, "before_cursor_execute", record)
    return result, [s for s in statements if s.lstrip().split()[0].upper() in {"UPDATE", "INSERT"}]


def _renewals(mem: MemoryClient) -> Renewals:
    return mem._rt().ledger.renewals


def test_a_search_writes_nothing_and_its_use_lands_with_the_time_of_use(
    slow: MemoryClient,
) -> None:
    mid = slow.write(USER, PURIFIER, lifecycle_policy=IMPLICIT)
    old = _expire_in(slow, mid, timedelta(days=3))
    before = datetime.now(UTC)
    hits, writes = _writes_during(slow, lambda: slow.search(USER, "空气净化器 静音", limit=3))
    after = datetime.now(UTC)
    assert hits[0].memory_id == mid
    assert writes == []
    row = _row(slow, mid)
    assert row.expires_at == old
    assert _renewals(slow).pending == 1

    assert _renewals(slow).flush() == 1
    row = _row(slow, mid)
    assert before <= row.last_used_at <= after
    assert row.expires_at == row.last_used_at + timedelta(days=row.renew_days)
    assert _renewals(slow).pending == 0


def test_a_memory_close_to_its_expiry_is_renewed_at_once(slow: MemoryClient) -> None:
    mid = slow.write(USER, PURIFIER, lifecycle_policy=IMPLICIT)
    _expire_in(slow, mid, timedelta(hours=20))
    slow.search(USER, "空气净化器", limit=1)
    assert _row(slow, mid).expires_at > datetime.now(UTC) + timedelta(days=6)
    assert _renewals(slow).pending == 0


def test_a_renewal_never_shortens_and_later_uses_win(slow: MemoryClient) -> None:
    mid = slow.write(USER, PURIFIER, lifecycle_policy=IMPLICIT)
    far = _expire_in(slow, mid, timedelta(days=30))
    now = datetime.now(UTC)
    renewals = _renewals(slow)
    renewals.record("fragment", USER, [mid], now + timedelta(seconds=5))
    renewals.record("fragment", USER, [mid], now)  # an earlier use arriving late is ignored
    assert renewals.flush() == 1
    row = _row(slow, mid)
    assert row.expires_at == far  # seven days from now is earlier than thirty
    assert row.last_used_at == now + timedelta(seconds=5)


def test_a_pending_use_of_a_deleted_or_other_users_memory_revives_nothing(
    slow: MemoryClient,
) -> None:
    slow.profiles.ensure("buyer-renew-02")
    gone = slow.write(USER, PURIFIER, lifecycle_policy=IMPLICIT)
    _expire_in(slow, gone, timedelta(days=3))
    theirs = slow.write("buyer-renew-02", "订单 88231 的发票", lifecycle_policy=IMPLICIT)
    kept = _expire_in(slow, theirs, timedelta(days=3))
    slow.search(USER, "空气净化器", limit=1)
    assert slow.memories.delete(USER, gone)
    _renewals(slow).record(
        "fragment", USER, [theirs], datetime.now(UTC)
    )  # the wrong user for this id
    assert _renewals(slow).flush() == 0
    assert _row(slow, gone) is None
    assert _row(slow, theirs).expires_at == kept


def test_a_sweep_writes_pending_renewals_first(slow: MemoryClient) -> None:
    """Used two days before it would expire, the memory outlives a sweep three days on."""
    mid = slow.write(USER, PURIFIER, lifecycle_policy=IMPLICIT)
    _expire_in(slow, mid, timedelta(days=2))
    slow.search(USER, "空气净化器", limit=1)
    assert _renewals(slow).pending == 1
    slow.admin.sweep(now=datetime.now(UTC) + timedelta(days=3), vacuum=False)
    assert _row(slow, mid) is not None


def test_closing_the_client_writes_pending_renewals(mem: MemoryClient, settings: Settings) -> None:
    client = MemoryClient(settings.model_copy(update={"renewal_flush_s": 60}), agent_id="a")
    client.start()
    client.profiles.ensure(USER)
    mid = client.write(USER, PURIFIER, lifecycle_policy=IMPLICIT)
    old = _expire_in(client, mid, timedelta(days=3))
    client.search(USER, "空气净化器", limit=1)
    client.close()
    assert _row(mem, mid).expires_at > old + timedelta(days=3)


def test_uses_that_cannot_be_written_stay_pending(settings: Settings) -> None:
    down = Database.from_dsn("postgresql://nobody@127.0.0.1:9/none")
    renewals = Renewals(down)
    renewals.record("fragment", USER, [uuid.uuid4(), uuid.uuid4()], datetime.now(UTC))
    renewals.record("fact", USER, [uuid.uuid4()], datetime.now(UTC))
    with pytest.raises(DatabaseUnavailable):
        renewals.flush()
    assert renewals.pending == 3
    down.dispose()


def test_a_candidate_hydrated_but_not_returned_is_not_renewed(slow: MemoryClient) -> None:
    ids = [
        slow.write(USER, f"空气净化器 静音 卧室 第{n}台", lifecycle_policy=IMPLICIT, session_id="s")
        for n in range(3)
    ]
    expires = datetime.now(UTC) + timedelta(days=3)
    with slow.admin.database.transaction() as conn:
        conn.execute(
            text("UPDATE memory_fragment SET expires_at = :e WHERE id = ANY(:i)"),
            {"e": expires, "i": ids},
        )
    before = {i: _row(slow, i) for i in ids}
    hits = slow.search(USER, "空气净化器 静音", limit=1)
    assert len(hits) == 1
    returned = hits[0].memory_id
    assert slow._rt().ledger.renewals.flush() == 1
    for i in ids:
        row = _row(slow, i)
        if i == returned:
            assert row.expires_at > expires
            assert row.last_used_at > before[i].last_used_at
        else:
            assert row == before[i]


def test_reading_a_fact_writes_nothing_and_its_use_lands_with_the_time_of_use(
    slow: MemoryClient,
) -> None:
    put = slow.facts.put(USER, "收货偏好", "工作日送货", lifecycle_policy=IMPLICIT)
    old = _expire_in(slow, put.id, timedelta(days=3), "memory_fact")
    before = datetime.now(UTC)
    read, writes = _writes_during(slow, lambda: slow.facts.get(USER, "收货偏好"))
    after = datetime.now(UTC)
    assert writes == []
    assert _row(slow, put.id, "memory_fact").expires_at == old
    assert _renewals(slow).pending == 1
    # the caller sees the fact as the renewal leaves it
    assert read is not None
    assert before <= read.last_used_at <= after
    renew_days = _row(slow, put.id, "memory_fact").renew_days
    assert read.expires_at == read.last_used_at + timedelta(days=renew_days)

    assert _renewals(slow).flush() == 1
    row = _row(slow, put.id, "memory_fact")
    assert row.last_used_at == read.last_used_at
    assert row.expires_at == read.expires_at


def test_a_fact_close_to_its_expiry_is_renewed_at_once(slow: MemoryClient) -> None:
    put = slow.facts.put(USER, "收货偏好", "工作日送货", lifecycle_policy=IMPLICIT)
    _expire_in(slow, put.id, timedelta(hours=20), "memory_fact")
    read = slow.facts.get(USER, "收货偏好")
    assert read is not None
    row = _row(slow, put.id, "memory_fact")
    assert row.expires_at > datetime.now(UTC) + timedelta(days=6)
    assert (row.expires_at, row.last_used_at) == (read.expires_at, read.last_used_at)
    assert _renewals(slow).pending == 0


def test_a_pending_fact_use_lands_before_a_sweep_and_never_revives_a_deleted_fact(
    slow: MemoryClient,
) -> None:
    kept = slow.facts.put(USER, "收货偏好", "工作日送货", lifecycle_policy=IMPLICIT)
    gone = slow.facts.put(USER, "发票抬头", "个人", lifecycle_policy=IMPLICIT)
    for fact in (kept, gone):
        _expire_in(slow, fact.id, timedelta(days=2), "memory_fact")
        assert slow.facts.get(USER, fact.key) is not None
    assert _renewals(slow).pending == 2
    assert slow.facts.delete(USER, "发票抬头")
    slow.admin.sweep(now=datetime.now(UTC) + timedelta(days=3), vacuum=False)
    assert (
        _row(slow, kept.id, "memory_fact") is not None
    )  # used two days before expiry: outlives it
    assert _row(slow, gone.id, "memory_fact") is None
    assert _renewals(slow).pending == 0
