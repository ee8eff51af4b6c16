"""Defects the mixed-load drill (``tests/drills/test_mixed_load.py``) found, each reproduced
with real transactions on the embedded PostgreSQL.

- A write that reuses a vault entry while a delete releases it left the new memory
  referencing a vault id that no longer existed.
- A search's urgent renewal, a delete's re-indexing of neighbours and an erasure's cascade lock
  a user's fragment rows in different orders; the deadlock surfaced at once as
  ``TransientFailure``, where the SDK should retry it a bounded number of times.

A deadlock is made on purpose: a transaction of the test holds one fragment row, the
SDK call blocks on it while holding another, and the test then asks for that other
one. The SDK call waited first, so its deadlock timer fires first and it is the victim
(the test's transaction also waits longer before checking).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Connection, event, text

from policies.errors import TransientFailure
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient

EXPLICIT = LifecyclePolicy.EXPLICIT
USER = "buyer-lock-01"
PHONE = "13912345678"
EMAIL = "refund@example.com"


class _Call:
    """An SDK call running on a thread of its own; ``result()`` re-raises its error."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._value: Any = None
        self._error: BaseException | None = None

        def run() -> None:
            try:
                self._value = call()
            except BaseException as exc:  # handed back by result()
                self._error = exc

        self.thread = threading.Thread(target=run)
        self.thread.start()

    def result(self) -> Any:
        self.thread.join(60)
        assert not self.thread.is_alive(), "the call never finished"
        if self._error is not None:
            raise self._error
        return self._value


def _wait_for_lock_wait(mem: MemoryClient, call: _Call) -> bool:
    """Poll until another backend waits for a lock (True) or ``call`` has finished (False)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not call.thread.is_alive():
            return False
        with mem.admin.database.transaction() as conn:
            waiting = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND datname = current_database() AND pid <> pg_backend_pid()"
                )
            ).scalar_one()
        if waiting:
            return True
        time.sleep(0.02)
    raise AssertionError("the call neither blocked nor finished")


def _lock_rows(conn: Connection, ids: list[uuid.UUID]) -> None:
    conn.execute(
        text("SELECT id FROM memory_fragment WHERE id = ANY(:ids) FOR UPDATE"), {"ids": ids}
    )


@contextmanager
def _other_transaction(mem: MemoryClient) -> Iterator[Connection]:
    """A transaction of the test (committed on leaving) that is never a deadlock's victim."""
    with mem.admin.database.engine.connect() as conn, conn.begin():
        conn.execute(text("SET LOCAL deadlock_timeout = '30s'"))
        yield conn


def _deadlock(mem: MemoryClient, call: Callable[[], Any], held: uuid.UUID, then: uuid.UUID) -> Any:
    """Run ``call`` while the test holds ``held`` and, once the call blocks on it, asks
    for ``then`` (which the call holds by then); returns what the call returned."""
    with _other_transaction(mem) as conn:
        _lock_rows(conn, [held])
        running = _Call(call)
        assert _wait_for_lock_wait(mem, running), "the call did not block on the held row"
        _lock_rows(conn, [then])  # granted once the call's transaction is rolled back
    return running.result()


def _count(mem: MemoryClient, sql: str, **params: Any) -> int:
    with mem.admin.database.transaction() as conn:
        return int(conn.execute(text(sql), params).scalar_one())


def test_a_write_reusing_a_vault_entry_a_delete_releases_keeps_its_reference(
    mem: MemoryClient,
) -> None:
    """The write holds the entry it found until it commits; the delete's release then
    sees the new reference and keeps the entry."""
    mem.profiles.ensure(USER)
    first = mem.write(USER, f"我的手机号是 {PHONE}，订单 88231", lifecycle_policy=EXPLICIT)
    writer_id = threading.get_ident()
    paused, resume = threading.Event(), threading.Event()

    def pause_before_ledger(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if threading.get_ident() == writer_id and statement.startswith(
            "INSERT INTO memory_fragment"
        ):
            paused.set()
            assert resume.wait(60)

    engine = mem.admin.database.engine
    event.listen(engine, "before_cursor_execute", pause_before_ledger)
    try:

        def write() -> uuid.UUID:
            nonlocal writer_id
            writer_id = threading.get_ident()
            return mem.write(USER, f"退款 RF20260629001 请联系 {PHONE}", lifecycle_policy=EXPLICIT)

        writer = _Call(write)
        assert paused.wait(60), "the write never reached its ledger stage"
        deleter = _Call(lambda: mem.memories.delete(USER, first))
        _wait_for_lock_wait(mem, deleter)  # with the fix the delete waits for the write
        resume.set()
        second = writer.result()
        assert deleter.result() is True
    finally:
        resume.set()
        event.remove(engine, "before_cursor_execute", pause_before_ledger)

    record = mem.memories.get(USER, second)
    assert record is not None
    (ref,) = record.metadata["pii"]
    assert mem.pii.reveal(USER, uuid.UUID(ref["vault_id"])) == PHONE
    assert mem.pii.find(USER, "phone", PHONE) is not None


def test_a_write_and_a_release_lock_shared_entries_in_one_order(
    mem: MemoryClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A write holding one of two entries a delete releases: the delete waits for it, and
    neither deadlocks (no retry), whatever order the entries' ids are in."""
    mem.profiles.ensure(USER)
    phone = mem.pii.store(USER, "phone", PHONE)
    email = mem.pii.store(USER, "email", EMAIL)
    while email.id < phone.id:  # ids in the other order than kinds, or values, sort in
        mem.pii.delete(USER, email.id)
        email = mem.pii.store(USER, "email", EMAIL)
    first = mem.write(USER, f"手机 {PHONE}，邮箱 {EMAIL}", lifecycle_policy=EXPLICIT)
    writer_id, vault_reads = 0, 0
    paused, resume = threading.Event(), threading.Event()

    def pause_at_second_entry(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        nonlocal vault_reads
        if threading.get_ident() == writer_id and statement.startswith("SELECT pii_vault.id"):
            vault_reads += 1
            if vault_reads == 2:
                paused.set()
                assert resume.wait(60)

    def write() -> uuid.UUID:
        nonlocal writer_id
        writer_id = threading.get_ident()
        return mem.write(USER, f"换绑手机 {PHONE}，通知发到 {EMAIL}", lifecycle_policy=EXPLICIT)

    engine = mem.admin.database.engine
    event.listen(engine, "before_cursor_execute", pause_at_second_entry)
    try:
        with caplog.at_level(logging.INFO, logger="structured_memory.database"):
            writer = _Call(write)
            assert paused.wait(60), "the write never reached its second vault entry"
            deleter = _Call(lambda: mem.memories.delete(USER, first))
            assert _wait_for_lock_wait(mem, deleter), "the release must wait for the write"
            resume.set()
            second = writer.result()
            assert deleter.result() is True
    finally:
        resume.set()
        event.remove(engine, "before_cursor_execute", pause_at_second_entry)
    assert [r.message for r in caplog.records if "transient" in r.message] == []
    record = mem.memories.get(USER, second)
    assert record is not None
    assert {r["vault_id"] for r in record.metadata["pii"]} == {str(phone.id), str(email.id)}


def test_a_delete_after_the_last_reference_went_still_releases_the_entry(
    mem: MemoryClient,
) -> None:
    """Locking before releasing does not keep an entry nothing references."""
    mem.profiles.ensure(USER)
    only = mem.write(USER, f"我的手机号是 {PHONE}", lifecycle_policy=EXPLICIT)
    assert mem.memories.delete(USER, only)
    assert mem.pii.find(USER, "phone", PHONE) is None


def _session(mem: MemoryClient) -> list[uuid.UUID]:
    """Three turns of one session, in heap order; the later ones borrow earlier words."""
    mem.profiles.ensure(USER)
    texts = ["订单 88231 的退款到账了吗", "退款 RF20260629001 还在处理", "退款到账后请通知我"]
    return [mem.write(USER, t, lifecycle_policy=EXPLICIT, session_id="s-lock") for t in texts]


def _expiring_within_a_day(mem: MemoryClient, ids: list[uuid.UUID]) -> None:
    """Renewable rows so close to their expiry that a search renews them at once."""
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text(
                "UPDATE memory_fragment SET renew_days = 7, "
                "expires_at = now() + interval '1 hour' WHERE id = ANY(:ids)"
            ),
            {"ids": ids},
        )


def test_a_search_does_not_wait_for_rows_a_writer_holds(mem: MemoryClient) -> None:
    """Its renewal is deferred (``structured_memory.renewals``): the search only reads."""
    ids = _session(mem)
    with _other_transaction(mem) as conn:
        _lock_rows(conn, ids)
        running = _Call(lambda: mem.search(USER, "退款到账", limit=5))
        assert not _wait_for_lock_wait(mem, running), "the search waited for a row lock"
        hits = running.result()
    assert set(ids) <= {h.memory_id for h in hits}


def test_an_urgent_renewal_that_deadlocks_is_retried(mem: MemoryClient) -> None:
    first, _, third = _session(mem)
    _expiring_within_a_day(mem, [first, third])
    # the renewal updates the hits in heap order: `first` first
    hits = _deadlock(mem, lambda: mem.search(USER, "退款到账", limit=5), held=third, then=first)
    assert {first, third} <= {h.memory_id for h in hits}
    renewed = (
        "SELECT count(*) FROM memory_fragment "
        "WHERE id = ANY(:ids) AND expires_at > now() + interval '6 days'"
    )
    assert _count(mem, renewed, ids=[first, third]) == 2


def test_a_delete_whose_reindexing_deadlocks_is_retried(mem: MemoryClient) -> None:
    first, second, _ = _session(mem)
    # the delete locks `first`, then its neighbours (the later turns) to re-index them
    done = _deadlock(mem, lambda: mem.memories.delete(USER, first), held=second, then=first)
    assert done is True
    assert mem.memories.get(USER, first) is None


def test_an_erasure_whose_cascade_deadlocks_is_retried(mem: MemoryClient) -> None:
    first, _, third = _session(mem)
    # the erasure's cascade deletes the user's fragments in heap order: `first` first
    assert _deadlock(mem, lambda: mem.forget_user(USER), held=third, then=first) is True
    assert _count(mem, "SELECT count(*) FROM memory_fragment") == 0
    assert _count(mem, "SELECT count(*) FROM user_profile WHERE user_id = :u", u=USER) == 0


def test_a_conflict_outlasting_the_retries_is_a_typed_retryable_error(
    mem: MemoryClient,
) -> None:
    """Every attempt meets a serialization failure (a concurrent update under REPEATABLE
    READ): the unit runs ``attempts`` times, then ``TransientFailure`` propagates."""
    mem.profiles.ensure(USER)
    db, runs = mem.admin.database, 0

    def conflicting() -> None:
        nonlocal runs
        runs += 1
        with db.transaction() as conn:
            conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
            conn.execute(text("SELECT version FROM user_profile WHERE user_id = :u"), {"u": USER})
            version = mem.profiles.get(USER).version
            mem.profiles.update(USER, expected_version=version, language="zh-CN")
            conn.execute(
                text("UPDATE user_profile SET version = version + 1 WHERE user_id = :u"),
                {"u": USER},
            )

    with pytest.raises(TransientFailure) as failed:
        db.retrying(conflicting, attempts=3)
    assert runs == 3
    assert failed.value.code == "transient_failure"
    assert failed.value.http_status == 503
