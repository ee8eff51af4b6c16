"""The audit log: append-only in PostgreSQL, pseudonymous, PII-free, surviving erasure."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import event, text

from policies.audit import AuditAction, check_details, pseudonym
from policies.errors import AuditLogImmutable, InvalidField, UserNotFound
from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from sdk.client import MemoryClient
from structured_memory import audit
from structured_memory.repositories.fragments import hold_profiles
from values.inputs import MemoryInput

USER = "buyer-audit-001"
PHONE = "13912345678"


def _entries(mem: MemoryClient, user_id: str) -> list[audit.AuditEntry]:
    subject = audit.subject_of(mem.admin.database, UserScope(user_id))
    assert subject is not None
    return audit.recent(mem.admin.database, subject=subject, limit=500)


def test_record_names_the_agent_and_a_pseudonym_never_the_user(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    scope = UserScope(USER, "refund-agent")
    memory_id = uuid.uuid4()
    with mem.admin.database.transaction() as conn:
        audit.record(conn, scope, AuditAction.FEEDBACK, memory_id=memory_id, details={"n": 1})
        key = audit.audit_key(conn, scope)
    (entry,) = audit.recent(mem.admin.database, memory_id=memory_id)
    assert entry.action is AuditAction.FEEDBACK
    assert entry.agent_id == "refund-agent"
    assert entry.subject == pseudonym(key, USER) == audit.subject_of(mem.admin.database, scope)
    assert entry.details == {"n": 1}
    with mem.admin.database.transaction() as conn:
        row = conn.execute(
            text("SELECT row_to_json(a)::text FROM audit_log a WHERE memory_id = :m"),
            {"m": memory_id},
        ).scalar_one()
    assert USER not in row


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE audit_log SET action = 'write'",
        "UPDATE audit_log SET agent_id = NULL WHERE false",
        "DELETE FROM audit_log",
        "DELETE FROM audit_log WHERE false",
        "TRUNCATE audit_log",
    ],
)
def test_the_log_refuses_update_delete_truncate(mem: MemoryClient, statement: str) -> None:
    mem.profiles.ensure(USER)
    with mem.admin.database.transaction() as conn:
        audit.record(conn, UserScope(USER), AuditAction.WRITE, memory_id=uuid.uuid4())
    before = len(_entries(mem, USER))
    with pytest.raises(AuditLogImmutable) as caught, mem.admin.database.transaction() as conn:
        conn.execute(text(statement))
    assert caught.value.code == "audit_log_immutable"
    assert len(_entries(mem, USER)) == before


def test_record_for_an_unknown_user_is_user_not_found(mem: MemoryClient) -> None:
    with pytest.raises(UserNotFound), mem.admin.database.transaction() as conn:
        audit.record(conn, UserScope("buyer-audit-ghost"), AuditAction.WRITE)
    with mem.admin.database.transaction() as conn:
        keys = conn.execute(
            text("SELECT count(*) FROM audit_key WHERE user_id = 'buyer-audit-ghost'")
        ).scalar_one()
    assert keys == 0


@pytest.mark.parametrize(
    "details",
    [
        {"phone": PHONE},  # digits first: never a code
        {"note": "用户跳过视频三次"},  # memory text
        {"email": "zhang.wei@example.com"},
        {"refund": "RF20260629001 到账"},
        {"用户": 1},
        {"n": float("nan")},
    ],
)
def test_details_refuse_pii_and_text(details: dict[str, object]) -> None:
    with pytest.raises(InvalidField) as caught:
        check_details(details)
    assert PHONE not in str(caught.value)


def test_details_keep_ids_codes_and_numbers() -> None:
    memory_id = uuid.uuid4()
    assert check_details(
        {"id": memory_id, "from": "active", "to": "pending_confirmation", "c": 0.29, "n": 3}
    ) == {"id": str(memory_id), "from": "active", "to": "pending_confirmation", "c": 0.29, "n": 3}


def _rows(mem: MemoryClient, memory_ids: list[uuid.UUID]) -> list[tuple[Any, ...]]:
    """These memories' entries in log order: action, agent, subject, memory, details, at."""
    with mem.admin.database.transaction() as conn:
        rows = conn.execute(
            text(
                "SELECT action, agent_id, subject, memory_id, details, at FROM audit_log "
                "WHERE memory_id = ANY(:m) ORDER BY id"
            ),
            {"m": memory_ids},
        )
        return [tuple(r) for r in rows]


BUYERS = ["buyer-audit-batch-3", "buyer-audit-batch-1", "buyer-audit-batch-2"]
Entry = tuple[UserScope, uuid.UUID | None, dict[str, Any]]


def _batch() -> list[Entry]:
    """Three users, one through two agents, grouped by scope in user order as the write
    path audits a batch; fresh memory ids each call."""
    scopes = [
        UserScope(BUYERS[1]),
        UserScope(BUYERS[1]),
        UserScope(BUYERS[2], "refund-agent"),
        UserScope(BUYERS[0], "refund-agent"),
        UserScope(BUYERS[0], "refund-agent"),
        UserScope(BUYERS[0], "order-agent"),
    ]
    return [
        (scope, uuid.uuid4(), {"kind": "note", "order": "o88231", "n": i, "ok": i % 2 == 0})
        for i, scope in enumerate(scopes)
    ]


def _expected(mem: MemoryClient, entries: list[Entry]) -> list[tuple[Any, ...]]:
    """The rows entries must become: each user's pseudonym under the key the table holds."""
    with mem.admin.database.transaction() as conn:
        rows = conn.execute(
            text("SELECT user_id, key FROM audit_key WHERE user_id = ANY(:u)"), {"u": BUYERS}
        )
        keys = {str(u): bytes(k) for u, k in rows}
    return [
        ("write", s.agent_id, pseudonym(keys[s.user_id], s.user_id), m, d) for s, m, d in entries
    ]


@pytest.mark.parametrize("keys_exist", [False, True])
def test_record_batch_appends_what_per_user_calls_appended(
    mem: MemoryClient, keys_exist: bool
) -> None:
    for user in BUYERS:
        mem.profiles.ensure(user)
    if keys_exist:
        with mem.admin.database.transaction() as conn:
            audit.record_many(conn, UserScope(BUYERS[0]), AuditAction.WRITE, [(None, None)])
    entries = _batch()
    with mem.admin.database.transaction() as conn:
        audit.record_batch(conn, AuditAction.WRITE, entries)
    got = _rows(mem, [m for _, m, _ in entries if m is not None])
    assert [r[:5] for r in got] == _expected(mem, entries)  # in the order given
    assert len({r[5] for r in got}) == 1  # one transaction, one timestamp
    subjects = {audit.subject_of(mem.admin.database, UserScope(u)) for u in BUYERS}
    assert {r[2] for r in got} == subjects


def _statements(mem: MemoryClient) -> tuple[list[str], Callable[[], None]]:
    seen: list[str] = []

    def hook(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    event.listen(mem.admin.database.engine, "before_cursor_execute", hook)
    return seen, lambda: event.remove(mem.admin.database.engine, "before_cursor_execute", hook)


def test_record_batch_costs_two_statements_whatever_the_users(mem: MemoryClient) -> None:
    """Keys found and entries appended: two statements; creating the missing keys: one more."""
    users = [f"buyer-audit-many-{i:03d}" for i in range(40)]
    for user in users:
        mem.profiles.ensure(user)
    for expected in (3, 2):  # creating the keys, then finding them
        entries = [(UserScope(u, "refund-agent"), uuid.uuid4(), {"n": 1}) for u in users * 3]
        seen, stop = _statements(mem)
        try:
            with mem.admin.database.transaction() as conn:
                audit.record_batch(conn, AuditAction.WRITE, entries)
        finally:
            stop()
        assert len([s for s in seen if "audit_" in s]) == expected
        assert len(_rows(mem, [m for _, m, _ in entries])) == len(entries)


def test_keys_read_by_the_profile_hold_leave_the_audit_one_statement(mem: MemoryClient) -> None:
    """``hold_profiles`` returns the keys that exist; given all of them, the audit only
    appends; a user whose key is not among them still has it read, then created."""
    for user in BUYERS:
        mem.profiles.ensure(user)
    with mem.admin.database.transaction() as conn:  # BUYERS[0] and [1] get keys, [2] none yet
        audit.record_batch(
            conn, AuditAction.WRITE, [(UserScope(u), None, None) for u in BUYERS[:2]]
        )
    first, second = _batch(), _batch()
    counts = []
    with mem.admin.database.transaction() as conn:
        for entries in (first, second):
            keys = hold_profiles(conn, BUYERS)
            seen, stop = _statements(mem)
            try:
                audit.record_batch(conn, AuditAction.WRITE, entries, keys=keys)
            finally:
                stop()
            counts.append((sorted(keys), len(seen)))
    assert counts == [
        (sorted(BUYERS[:2]), 3),  # BUYERS[2]'s key read, created; the entries appended
        (sorted(BUYERS), 1),  # every key given: the append alone
    ]
    got = _rows(mem, [m for _, m, _ in first + second if m is not None])
    assert [r[:5] for r in got] == _expected(mem, first + second)


def test_record_batch_with_an_unknown_user_appends_nothing(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    ghost = "buyer-audit-ghost"
    entries: list[Entry] = [(UserScope(u), uuid.uuid4(), {}) for u in (USER, ghost, USER)]
    with pytest.raises(UserNotFound), mem.admin.database.transaction() as conn:
        audit.record_batch(conn, AuditAction.WRITE, entries)
    assert _rows(mem, [m for _, m, _ in entries if m is not None]) == []
    with mem.admin.database.transaction() as conn:
        keys = conn.execute(
            text("SELECT count(*) FROM audit_key WHERE user_id = ANY(:u)"), {"u": [USER, ghost]}
        ).scalar_one()
    assert keys == 0


def test_write_many_audits_a_multi_user_batch_in_user_order(mem: MemoryClient) -> None:
    for user in BUYERS:
        mem.profiles.ensure(user)
    items = [
        MemoryInput(
            user_id=BUYERS[i % 3],
            text=f"订单 88231 第 {i} 次咨询退款 RF20260629001 进度",
            lifecycle_policy=LifecyclePolicy.IMPLICIT if i % 2 else LifecyclePolicy.EXPLICIT,
        )
        for i in range(9)
    ]
    ids = mem.write_many(items, progress=False)
    got = _rows(mem, ids)
    order = sorted(range(len(items)), key=lambda i: items[i].user_id)  # stable: per user
    subject = {u: audit.subject_of(mem.admin.database, UserScope(u)) for u in BUYERS}
    assert [r[:5] for r in got] == [
        (
            "write",
            "test-agent",
            subject[items[i].user_id],
            ids[i],
            {"kind": "note", "policy": items[i].lifecycle_policy.value, "sandboxed": False},
        )
        for i in order
    ]
    assert len({r[5] for r in got}) == 1


def test_record_batch_keeps_details_that_compare_equal_apart(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    values: list[object] = [1, True, 1.0, ["o88231"], ["o88231"], None]
    entries: list[Entry] = [(UserScope(USER), uuid.uuid4(), {"n": v}) for v in values]
    with mem.admin.database.transaction() as conn:
        audit.record_batch(conn, AuditAction.FEEDBACK, entries)
    got = _rows(mem, [m for _, m, _ in entries if m is not None])
    assert [r[4]["n"] for r in got] == values
    assert [type(r[4]["n"]) for r in got] == [type(v) for v in values]


def _log_rows(mem: MemoryClient, subject: str) -> list[tuple[str, uuid.UUID | None]]:
    with mem.admin.database.transaction() as conn:
        rows = conn.execute(
            text("SELECT action, memory_id FROM audit_log WHERE subject = :s ORDER BY id"),
            {"s": subject},
        )
        return [(r.action, r.memory_id) for r in rows]


def test_a_trail_appends_its_entries_in_order_in_one_statement(mem: MemoryClient) -> None:
    """Entries of several actions recorded inside a trail (nested ones join it) reach the log
    when it ends, in the order recorded, in one statement; no key is read once given."""
    mem.profiles.ensure(USER)
    scope = UserScope(USER, "refund-agent")
    with mem.admin.database.transaction() as conn:
        audit.record(conn, scope, AuditAction.WRITE)  # creates the key
        keys = hold_profiles(conn, [USER])
    subject = audit.subject_of(mem.admin.database, scope)
    assert subject is not None
    assert keys
    memories = [uuid.uuid4() for _ in range(4)]
    with mem.admin.database.transaction() as conn:
        seen, stop = _statements(mem)
        try:
            with audit.trail(conn, keys):
                audit.record(conn, scope, AuditAction.MERGE, memory_id=memories[0])
                with audit.trail(conn):
                    audit.record_many(
                        conn, scope, AuditAction.PROFILE_UPDATE, [(memories[1], {"n": 2})]
                    )
                audit.record_batch(
                    conn, AuditAction.WRITE, [(scope, m, None) for m in memories[2:]]
                )
                assert seen == [], "nothing is appended before the trail ends"
        finally:
            stop()
    assert len(seen) == 1
    assert "INSERT INTO audit_log" in seen[0]
    assert _log_rows(mem, subject)[1:] == [
        ("merge", memories[0]),
        ("profile_update", memories[1]),
        ("write", memories[2]),
        ("write", memories[3]),
    ]


def test_a_trail_that_fails_appends_nothing(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    scope = UserScope(USER)
    with mem.admin.database.transaction() as conn:
        audit.record(conn, scope, AuditAction.WRITE)
    subject = audit.subject_of(mem.admin.database, scope)
    assert subject is not None

    def fails() -> None:
        with mem.admin.database.transaction() as conn, audit.trail(conn):
            audit.record(conn, scope, AuditAction.MERGE, memory_id=uuid.uuid4())
            audit.record(conn, scope, AuditAction.MERGE, details={"note": "电话 " + PHONE})

    with pytest.raises(InvalidField):
        fails()
    with mem.admin.database.transaction() as conn:  # the connection keeps no open trail
        audit.record(conn, scope, AuditAction.FEEDBACK)
    assert [a for a, _ in _log_rows(mem, subject)] == ["write", "feedback"]
