"""Business verifiers: live state before use, recorded changes, errors and timeouts never
served as current, a bounded pool, and only the caller's own links ever asked about.

The system of record is a dict the tests change, as a refund or order system would
change overnight.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from policies.audit import AuditAction
from policies.errors import InvalidField, RecordNotFound, UserNotFound
from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from sdk import (
    BusinessState,
    MemoryClient,
    Settings,
    Verification,
    VerificationStatus,
    VerifierMissing,
    VerifierTimeout,
    VerifierUnavailable,
)
from structured_memory import audit

BUYER, OTHER = "buyer-verify-001", "buyer-verify-002"
REFUND, ORDER = "RF20260629001", "88231"
PHONE = "13912345678"

Key = tuple[str, str]


class SystemOfRecord:
    """A simulated order and refund system: a dict of states, and every question asked."""

    def __init__(self, states: dict[Key, str]) -> None:
        self.states = states
        self.asked: list[Key] = []
        self._lock = threading.Lock()

    def __call__(self, entity_type: str, entity_id: str) -> BusinessState | None:
        with self._lock:
            self.asked.append((entity_type, entity_id))
        state = self.states.get((entity_type, entity_id))
        return None if state is None else BusinessState(state, as_of=datetime.now(UTC))


@pytest.fixture(scope="module")
def verifying_client(settings: Settings) -> Iterator[MemoryClient]:
    """A client of its own (verifiers are per client), patient and with a pool of two."""
    patient = settings.model_copy(update={"verifier_timeout_ms": 10_000, "verifier_max_workers": 2})
    with MemoryClient(patient, agent_id="refund-agent") as c:
        yield c


@pytest.fixture
def client(verifying_client: MemoryClient, mem: MemoryClient) -> MemoryClient:
    """The verifying client; ``mem`` empties the tables after the test."""
    return verifying_client


@pytest.fixture
def sor(client: MemoryClient) -> SystemOfRecord:
    """The refund and order verifiers over one simulated system of record."""
    system = SystemOfRecord({("refund", REFUND): "处理中", ("order", ORDER): "已付款"})
    client.register_verifier("refund", system)
    client.register_verifier("order", system)
    return system


def _link(client: MemoryClient, user: str, entity_type: str, entity_id: str) -> None:
    client.links.add(user, entity_type=entity_type, entity_id=entity_id, role="owner")


def _by_id(verifications: list[Verification]) -> dict[str, Verification]:
    return {v.entity_id: v for v in verifications}


def _changes(client: MemoryClient, user: str) -> list[audit.AuditEntry]:
    subject = audit.subject_of(client.admin.database, UserScope(user))
    if subject is None:
        return []
    return audit.recent(
        client.admin.database, subject=subject, actions=[AuditAction.VERIFICATION_CHANGE]
    )


def test_a_refund_credited_overnight_and_a_cancelled_order_are_served_as_changed(
    client: MemoryClient, sor: SystemOfRecord
) -> None:
    client.profiles.ensure(BUYER)
    _link(client, BUYER, "refund", REFUND)
    _link(client, BUYER, "order", ORDER)

    day1 = _by_id(client.verify_links(BUYER))
    assert day1[REFUND].status is VerificationStatus.VERIFIED
    assert (day1[REFUND].state, day1[REFUND].previous_state) == ("处理中", None)
    assert day1[ORDER].state == "已付款"
    assert day1[ORDER].current
    assert day1[REFUND].verified_at is not None
    assert day1[REFUND].as_of is not None

    sor.states[("refund", REFUND)] = "已到账"  # overnight
    sor.states[("order", ORDER)] = "已取消"
    day2 = _by_id(client.verify_links(BUYER))
    refund = day2[REFUND]
    assert refund.status is VerificationStatus.CHANGED
    assert (refund.state, refund.previous_state) == ("已到账", "处理中")
    assert refund.previous_verified_at == day1[REFUND].verified_at
    assert (day2[ORDER].status, day2[ORDER].state) == (VerificationStatus.CHANGED, "已取消")

    stored = {link.entity_id: link for link in client.links.valid_now(BUYER)}
    assert stored[REFUND].verified_state == "已到账"
    assert stored[REFUND].verification_ok is True
    assert stored[REFUND].verified_at == refund.verified_at
    assert stored[ORDER].verified_state == "已取消"

    # the first states and both changes are in the audit log, without text or ids
    changes = _changes(client, BUYER)
    assert len(changes) == 4
    refund_change = next(
        c for c in changes if c.details["entity_type"] == "refund" and c.details["previous_state"]
    )
    assert refund_change.details["outcome"] == "verified"
    assert refund_change.details["previous_state"].startswith("sha256:")
    assert refund_change.details["state"] != refund_change.details["previous_state"]
    assert refund_change.agent_id == "refund-agent"
    logged = repr([c.details for c in changes])
    assert "处理中" not in logged
    assert REFUND not in logged
    assert ORDER not in logged

    # nothing changed since: verified, and no new audit entry
    day3 = _by_id(client.verify_links(BUYER))
    assert day3[REFUND].status is VerificationStatus.VERIFIED
    assert day3[REFUND].previous_state == "已到账"
    assert len(_changes(client, BUYER)) == 4


def test_an_entity_the_system_of_record_does_not_know_is_unknown(
    client: MemoryClient, sor: SystemOfRecord
) -> None:
    client.profiles.ensure(BUYER)
    _link(client, BUYER, "order", ORDER)
    client.verify_links(BUYER)
    del sor.states[("order", ORDER)]

    (v,) = client.verify_links(BUYER)
    assert v.status is VerificationStatus.UNKNOWN
    assert (v.state, v.verified_at, v.previous_state) == (None, None, "已付款")
    assert not v.current
    (link,) = client.links.valid_now(BUYER)
    assert (link.verified_state, link.verification_ok) == ("已付款", False)


def test_a_slow_verifier_times_out_unverified_and_its_late_answer_is_dropped(
    settings: Settings, client: MemoryClient, sor: SystemOfRecord
) -> None:
    client.profiles.ensure(BUYER)
    _link(client, BUYER, "refund", REFUND)
    client.verify_links(BUYER)  # 处理中, verified
    release, answered = threading.Event(), threading.Event()

    def hanging(entity_type: str, entity_id: str) -> BusinessState:
        release.wait(30)
        answered.set()
        return BusinessState("已到账")

    hurried = settings.model_copy(update={"verifier_timeout_ms": 50})
    with MemoryClient(hurried, agent_id="refund-agent") as impatient:
        impatient.register_verifier("refund", hanging)
        try:
            (v,) = impatient.verify_links(BUYER)
        finally:
            release.set()
        assert answered.wait(30)
    assert v.status is VerificationStatus.UNVERIFIED
    assert isinstance(v.error, VerifierTimeout)
    assert v.error.code == "verifier_timeout"
    assert (v.state, v.verified_at, v.previous_state) == (None, None, "处理中")
    (link,) = client.links.valid_now(BUYER)
    assert (link.verified_state, link.verification_ok) == ("处理中", False)
    assert _changes(client, BUYER)[0].details["outcome"] == "verifier_timeout"


def test_a_raising_verifier_is_unverified_typed_and_logged_without_pii(
    client: MemoryClient, sor: SystemOfRecord, caplog: pytest.LogCaptureFixture
) -> None:
    client.profiles.ensure(BUYER)
    _link(client, BUYER, "order", ORDER)
    _link(client, BUYER, "refund", REFUND)

    def broken(entity_type: str, entity_id: str) -> BusinessState:
        raise ConnectionError(f"订单 {entity_id} 查询失败，联系人 {PHONE}")

    client.register_verifier("order", broken)
    client.register_verifier("refund", lambda t, i: {"state": "已到账"})  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="sdk.verification"):
        found = _by_id(client.verify_links(BUYER))
    order, refund = found[ORDER], found[REFUND]
    assert order.status is VerificationStatus.UNVERIFIED
    assert isinstance(order.error, VerifierUnavailable)
    assert order.error.code == "verifier_unavailable"
    assert "ConnectionError" in str(order.error)
    assert isinstance(refund.error, VerifierUnavailable)
    assert refund.state is None
    assert "ConnectionError" in caplog.text
    for secret in (PHONE, ORDER, REFUND, "查询失败"):
        assert secret not in caplog.text
        assert secret not in str(order.error)
        assert secret not in str(order.error.details)


def test_a_type_without_a_verifier_is_unverified_and_left_as_it_is(
    client: MemoryClient, sor: SystemOfRecord
) -> None:
    client.profiles.ensure(BUYER)
    _link(client, BUYER, "work_order", "WO20260630007")
    _link(client, BUYER, "return", "RT20260701002")
    _link(client, BUYER, "exchange", "EX20260702003")
    found = client.verify_links(BUYER, entity_types=["work_order", "return", "exchange"])
    assert [v.status for v in found] == [VerificationStatus.UNVERIFIED] * 3
    assert all(isinstance(v.error, VerifierMissing) for v in found)
    assert sor.asked == []
    assert {link.verification_ok for link in client.links.valid_now(BUYER)} == {None}
    assert client.verify_links(BUYER, entity_types=["refund"]) == []


def test_verifiers_run_concurrently_within_the_bound(client: MemoryClient) -> None:
    client.profiles.ensure(BUYER)
    orders = [f"8823{i}" for i in range(6)]
    for order in orders:
        _link(client, BUYER, "order", order)
    lock = threading.Condition()
    calls, running, most = 0, 0, 0

    def counting(entity_type: str, entity_id: str) -> BusinessState:
        nonlocal calls, running, most
        with lock:
            calls += 1
            running += 1
            most = max(most, running)
            lock.notify_all()
            if calls <= 2:  # the first two wait for each other: the pool runs two at once
                lock.wait_for(lambda: most >= 2, timeout=5)
        with lock:
            running -= 1
        return BusinessState("已发货")

    client.register_verifier("order", counting)
    found = client.verify_links(BUYER)
    assert [v.entity_id for v in found] == orders
    assert all(v.status is VerificationStatus.VERIFIED for v in found)
    assert most == 2  # verifier_max_workers of the client


def _lock_waiters(client: MemoryClient) -> int:
    with client.admin.database.transaction() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE wait_event_type = 'Lock' AND datname = current_database()"
                )
            ).scalar_one()
        )


def test_concurrent_rounds_record_a_change_once(client: MemoryClient, sor: SystemOfRecord) -> None:
    client.profiles.ensure(BUYER)
    _link(client, BUYER, "refund", REFUND)
    client.verify_links(BUYER)
    sor.states[("refund", REFUND)] = "已到账"
    statuses: list[VerificationStatus] = []

    def round_() -> None:
        statuses.extend(v.status for v in client.verify_links(BUYER))

    threads = [threading.Thread(target=round_) for _ in range(2)]
    with client.admin.database.engine.connect() as holder, holder.begin():
        # hold the link until both rounds have their answers and wait to record them
        holder.execute(
            text("SELECT 1 FROM user_business_link WHERE user_id = :u FOR UPDATE"), {"u": BUYER}
        )
        for t in threads:
            t.start()
        for _ in range(1000):
            if _lock_waiters(client) >= 2:
                break
            threading.Event().wait(0.01)
    for t in threads:
        t.join()
    assert sorted(statuses) == [VerificationStatus.CHANGED, VerificationStatus.VERIFIED]
    assert len(_changes(client, BUYER)) == 2  # the first state, then one change


def test_search_with_verify_attaches_the_live_state_of_named_entities(
    client: MemoryClient, sor: SystemOfRecord
) -> None:
    client.profiles.ensure(BUYER)
    _link(client, BUYER, "refund", REFUND)
    _link(client, BUYER, "order", ORDER)
    client.write(
        BUYER,
        f"订单 {ORDER} 的扫地机不回充，退款 {REFUND} 处理中",
        lifecycle_policy=LifecyclePolicy.BUSINESS,
    )
    sor.states[("refund", REFUND)] = "已到账"

    (plain,) = client.search(BUYER, "退款到账了吗", limit=1)
    assert plain.verifications == ()
    assert sor.asked == []
    (hit,) = client.search(BUYER, "退款到账了吗", limit=1, verify=True)
    found = _by_id(list(hit.verifications))
    assert (found[REFUND].status, found[REFUND].state) == (VerificationStatus.VERIFIED, "已到账")
    assert found[ORDER].state == "已付款"
    stored = {link.entity_id: link.verified_state for link in client.links.valid_now(BUYER)}
    assert stored == {REFUND: "已到账", ORDER: "已付款"}


def test_only_the_callers_own_links_are_verified(client: MemoryClient, sor: SystemOfRecord) -> None:
    for user in (BUYER, OTHER):
        client.profiles.ensure(user)
    _link(client, BUYER, "order", ORDER)
    _link(client, OTHER, "order", "99999")
    _link(client, OTHER, "refund", REFUND)
    sor.states[("order", "99999")] = "已发货"
    client.write(
        BUYER, "帮我看看订单 99999 和订单 88231", lifecycle_policy=LifecyclePolicy.EXPLICIT
    )

    assert [v.entity_id for v in client.verify_links(BUYER)] == [ORDER]
    (hit,) = client.search(BUYER, "订单 99999", limit=1, verify=True)
    found = _by_id(list(hit.verifications))
    assert found["99999"].status is VerificationStatus.UNVERIFIED
    assert isinstance(found["99999"].error, RecordNotFound)
    assert found[ORDER].status is VerificationStatus.VERIFIED
    assert set(sor.asked) == {("order", ORDER)}
    assert {link.verification_ok for link in client.links.valid_now(OTHER)} == {None}
    assert _changes(client, OTHER) == []


def test_pii_in_a_reported_state_is_masked_before_it_is_stored_or_returned(
    client: MemoryClient, sor: SystemOfRecord
) -> None:
    client.profiles.ensure(BUYER)
    _link(client, BUYER, "order", ORDER)
    sor.states[("order", ORDER)] = f"已改派，收件电话 {PHONE}"
    (v,) = client.verify_links(BUYER)
    assert v.state is not None
    assert PHONE not in v.state
    assert "139****5678" in v.state
    with client.admin.database.transaction() as conn:
        row = conn.execute(
            text("SELECT row_to_json(l)::text FROM user_business_link l WHERE user_id = :u"),
            {"u": BUYER},
        ).scalar_one()
    assert PHONE not in row


def test_bad_registrations_states_and_users_are_refused(
    client: MemoryClient, sor: SystemOfRecord
) -> None:
    with pytest.raises(InvalidField):
        client.register_verifier("coupon", sor)
    with pytest.raises(InvalidField):
        client.register_verifier("order", "not a function")  # type: ignore[arg-type]
    with pytest.raises(UserNotFound):
        client.verify_links("ghost-buyer")
    client.profiles.ensure(BUYER)
    with pytest.raises(InvalidField):
        client.verify_links(BUYER, entity_types="order")
    with pytest.raises(InvalidField):
        client.verify_links(BUYER, entity_types=["coupon"])
    with pytest.raises(InvalidField):
        client.search(BUYER, "退款", verify="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidField):
        BusinessState("已到账", as_of=datetime(2026, 6, 30))  # naive
    with pytest.raises(InvalidField):
        BusinessState("  ")
    with pytest.raises(InvalidField):
        BusinessState("状" * 129)
