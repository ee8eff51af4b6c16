"""Structured facts: policies, TTL, renewal on read, confidence feedback, erasure."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from policies.errors import InvalidField, PolicyMissing, RecordNotFound, UserNotFound
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient


def test_explicit_fact_never_expires_implicit_in_seven_days(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    e = mem.facts.put(
        "buyer-001", "售后偏好", "退款优先", lifecycle_policy=LifecyclePolicy.EXPLICIT
    )
    i = mem.facts.put("buyer-001", "内容偏好", "文字", lifecycle_policy=LifecyclePolicy.IMPLICIT)
    assert e.expires_at is None
    assert i.expires_at is not None
    assert timedelta(days=6, hours=23) < i.expires_at - i.created_at <= timedelta(days=7, seconds=5)
    assert e.agent_id == "test-agent"


def test_reading_an_implicit_fact_renews_it_and_expired_facts_vanish(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    mem.facts.put("buyer-001", "内容偏好", "文字", lifecycle_policy=LifecyclePolicy.IMPLICIT)
    with mem.admin.database.transaction() as conn:
        conn.execute(text("UPDATE memory_fact SET expires_at = now() + interval '1 hour'"))
    renewed = mem.facts.get("buyer-001", "内容偏好")
    assert renewed is not None
    assert renewed.expires_at is not None
    assert renewed.expires_at > datetime.now(UTC) + timedelta(days=6)
    with mem.admin.database.transaction() as conn:
        conn.execute(text("UPDATE memory_fact SET expires_at = now() - interval '1 second'"))
    assert mem.facts.get("buyer-001", "内容偏好") is None
    assert mem.facts.list("buyer-001") == []


def test_policy_is_required(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    with pytest.raises(PolicyMissing):
        mem.facts.put("buyer-001", "k", "v", lifecycle_policy=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        mem.facts.put("buyer-001", "k", "v")  # type: ignore[call-arg]
    with pytest.raises(PolicyMissing):
        mem.facts.put("buyer-001", "k", "v", lifecycle_policy="forever")  # type: ignore[arg-type]
    assert mem.facts.list("buyer-001") == []


def test_feedback_moves_confidence_and_flags_pending(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    f = mem.facts.put(
        "buyer-001", "内容偏好", "视频", lifecycle_policy=LifecyclePolicy.IMPLICIT, confidence=0.31
    )
    assert f.status == "active"
    g = mem.facts.feedback("buyer-001", f.id, "ignore")
    assert g.confidence == pytest.approx(0.31 * 0.95)
    assert g.status == "pending_confirmation"
    h = mem.facts.feedback("buyer-001", f.id, "click")
    assert h.confidence == pytest.approx(0.31 * 0.95 * 0.95 + 0.05)
    assert h.status == "active"
    with pytest.raises(RecordNotFound):
        mem.facts.feedback("buyer-002", f.id, "click")
    with pytest.raises(InvalidField):
        mem.facts.feedback("buyer-001", f.id, "teleport")


def test_bad_facts(mem: MemoryClient) -> None:
    with pytest.raises(UserNotFound):
        mem.facts.put("ghost", "k", "v", lifecycle_policy=LifecyclePolicy.EXPLICIT)
    mem.profiles.ensure("buyer-001")
    for kwargs in [
        {"key": "", "value": 1},
        {"key": "k" * 129, "value": 1},
        {"key": "k", "value": object()},
        {"key": "k", "value": "长" * 10_000},
    ]:
        with pytest.raises((InvalidField, ValueError)):
            mem.facts.put("buyer-001", lifecycle_policy=LifecyclePolicy.EXPLICIT, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidField):
        mem.facts.put(
            "buyer-001", "k", 1, lifecycle_policy=LifecyclePolicy.EXPLICIT, confidence=1.5
        )
    assert mem.facts.list("buyer-001") == []


def test_forget_user_erases_every_table_in_one_transaction(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    mem.profiles.ensure("buyer-002")
    for uid in ("buyer-001", "buyer-002"):
        mem.devices.register(uid, device_id="d", os="iOS", browser="Safari")
        mem.links.add(uid, entity_type="order", entity_id="88231", role="owner")
        mem.facts.put(uid, "k", "v", lifecycle_policy=LifecyclePolicy.EXPLICIT)
        mem.pii.store(uid, "phone", "13812345678")
    assert mem.forget_user("buyer-001") is True
    assert mem.forget_user("buyer-001") is False
    with mem.admin.database.transaction() as conn:
        for table in (
            "user_profile",
            "user_device",
            "user_business_link",
            "memory_fact",
            "pii_vault",
        ):
            owners = conn.execute(text(f"SELECT DISTINCT user_id FROM {table}")).scalars().all()
            assert owners == ["buyer-002"], table
