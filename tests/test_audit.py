"""The audit log: append-only in PostgreSQL, pseudonymous, PII-free, surviving erasure."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from policies.audit import AuditAction, check_details, pseudonym
from policies.errors import AuditLogImmutable, InvalidField, UserNotFound
from policies.scope import UserScope
from sdk.client import MemoryClient
from structured_memory import audit

USER = "buyer-audit-001"
PHONE = "13912345678"


def _entries(mem: MemoryClient, user_id: str) -> list[audit.AuditEntry]:
    subject = audit.subject_of(mem.database, UserScope(user_id))
    assert subject is not None
    return audit.recent(mem.database, subject=subject, limit=500)


def test_record_names_the_agent_and_a_pseudonym_never_the_user(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    scope = UserScope(USER, "refund-agent")
    memory_id = uuid.uuid4()
    with mem.database.transaction() as conn:
        audit.record(conn, scope, AuditAction.FEEDBACK, memory_id=memory_id, details={"n": 1})
        key = audit.audit_key(conn, scope)
    (entry,) = audit.recent(mem.database, memory_id=memory_id)
    assert entry.action is AuditAction.FEEDBACK
    assert entry.agent_id == "refund-agent"
    assert entry.subject == pseudonym(key, USER) == audit.subject_of(mem.database, scope)
    assert entry.details == {"n": 1}
    with mem.database.transaction() as conn:
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
    with mem.database.transaction() as conn:
        audit.record(conn, UserScope(USER), AuditAction.WRITE, memory_id=uuid.uuid4())
    before = len(_entries(mem, USER))
    with pytest.raises(AuditLogImmutable) as caught, mem.database.transaction() as conn:
        conn.execute(text(statement))
    assert caught.value.code == "audit_log_immutable"
    assert len(_entries(mem, USER)) == before


def test_record_for_an_unknown_user_is_user_not_found(mem: MemoryClient) -> None:
    with pytest.raises(UserNotFound), mem.database.transaction() as conn:
        audit.record(conn, UserScope("buyer-audit-ghost"), AuditAction.WRITE)
    with mem.database.transaction() as conn:
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
