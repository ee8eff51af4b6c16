"""``mem.feedback`` and the scheduled decay against the real store, with their audit trail."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from policies.audit import AuditAction
from policies.errors import InvalidField, RecordNotFound, UserNotFound
from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from sdk import MemoryInput, cli
from sdk.client import MemoryClient
from sdk.settings import Settings
from service.cli import app
from structured_memory import audit

USER, OTHER = "buyer-fb-001", "buyer-fb-002"
EXPLICIT, IMPLICIT = LifecyclePolicy.EXPLICIT, LifecyclePolicy.IMPLICIT
DAY = timedelta(days=1)


def _entries(mem: MemoryClient, user_id: str, *actions: AuditAction) -> list[audit.AuditEntry]:
    subject = audit.subject_of(mem.admin.database, UserScope(user_id))
    assert subject is not None
    return audit.recent(mem.admin.database, subject=subject, actions=actions, limit=1000)


def _frequent(mem: MemoryClient, user_id: str) -> None:
    """Five sessions in the last 30 days: the user's IMPLICIT memories renew by 30 days."""
    mem.write_many(
        [
            MemoryInput(
                user_id=user_id,
                text=f"查订单 8823{i} 的物流",
                lifecycle_policy=EXPLICIT,
                session_id=f"s-{i}",
            )
            for i in range(5)
        ],
        progress=False,
    )


@pytest.fixture
def shopper(mem: MemoryClient) -> MemoryClient:
    mem.profiles.ensure(USER)
    mem.profiles.ensure(OTHER)
    return mem


# -- feedback ----------------------------------------------------------------------------------


def test_skipping_the_video_three_times_asks_instead_of_telling(shopper: MemoryClient) -> None:
    """用户跳过视频三次 → the inferred "偏好视频讲解" becomes a question; 偏好图文 rises."""
    mem = shopper
    video = mem.facts.put(
        USER, "内容偏好.视频", "偏好视频讲解", lifecycle_policy=IMPLICIT, confidence=0.34
    )
    pictures = mem.write(USER, "用户偏好图文介绍，跳过了商品视频", lifecycle_policy=IMPLICIT)
    for _ in range(3):
        result = mem.feedback(USER, video.id, action="skip")
    assert result.kind == "fact"
    assert result.confidence == pytest.approx(0.34 * 0.95**3)
    assert result.status == "pending_confirmation"
    assert result.previous_status == "active"
    clicked = mem.feedback(USER, pictures, action="click")
    assert clicked.kind == "fragment"
    assert clicked.confidence == pytest.approx(1.0)

    fact = mem.facts.get(USER, "内容偏好.视频")
    assert fact is not None
    assert fact.status == "pending_confirmation"
    # "您还希望接收视频内容吗？" → 是的
    confirmed = mem.feedback(USER, str(video.id), action="confirm")
    assert confirmed.status == "active"
    assert confirmed.confidence == pytest.approx(0.6)

    changes = _entries(mem, USER, AuditAction.STATUS_CHANGE)
    assert [(e.details["from"], e.details["to"], e.details["cause"]) for e in changes] == [
        ("pending_confirmation", "active", "confirm"),
        ("active", "pending_confirmation", "skip"),
    ]
    feedback = _entries(mem, USER, AuditAction.FEEDBACK)
    assert [e.details["action"] for e in feedback] == ["confirm", "click", "skip", "skip", "skip"]
    assert {e.agent_id for e in feedback} == {"test-agent"}


def test_a_rejected_memory_is_retired_and_never_served(shopper: MemoryClient) -> None:
    mem = shopper
    wrong = mem.write(USER, "用户偏好视频讲解的扫地机评测", lifecycle_policy=IMPLICIT)
    kept = mem.write(USER, "用户偏好图文版的扫地机评测", lifecycle_policy=IMPLICIT)
    fact = mem.facts.put(USER, "通知渠道", "短信", lifecycle_policy=IMPLICIT)
    assert mem.feedback(USER, wrong, action="reject").status == "retired"
    assert mem.feedback(USER, fact.id, action="reject").status == "retired"

    hits = mem.search(USER, "扫地机评测", limit=5)
    assert [h.memory_id for h in hits] == [kept]
    assert mem.memories.get(USER, wrong) is None
    assert wrong not in {m.id for m in mem.memories.list(USER)}
    assert mem.facts.get(USER, "通知渠道") is None
    assert mem.facts.list(USER) == []
    with pytest.raises(RecordNotFound):
        mem.feedback(USER, wrong, action="confirm")
    with mem.admin.database.transaction() as conn:
        statuses = conn.execute(
            text("SELECT status FROM memory_fragment WHERE id = :i"), {"i": wrong}
        ).scalar_one()
    assert statuses == "retired"


def test_pending_memories_are_still_found_but_marked(shopper: MemoryClient) -> None:
    mem = shopper
    doubtful = mem.write(USER, "用户可能下周出差，暂时不报销", lifecycle_policy=IMPLICIT)
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text("UPDATE memory_fragment SET confidence = 0.31 WHERE id = :i"), {"i": doubtful}
        )
    assert mem.feedback(USER, doubtful, action="ignore").status == "pending_confirmation"
    (hit,) = mem.search(USER, "出差报销", limit=3)
    assert hit.memory_id == doubtful
    assert hit.status == "pending_confirmation"
    assert hit.confidence == pytest.approx(0.31 * 0.95)


def test_feedback_sees_only_what_the_scope_sees(shopper: MemoryClient, settings: Settings) -> None:
    mem = shopper
    private = mem.write(
        USER, "退款 RF20260629001 的处理备注", lifecycle_policy=EXPLICIT, private=True
    )
    theirs = mem.write(OTHER, "订单 88231 已签收", lifecycle_policy=EXPLICIT)
    with pytest.raises(RecordNotFound):
        mem.feedback(USER, theirs, action="click")
    with pytest.raises(RecordNotFound):
        mem.feedback(USER, uuid.uuid4(), action="click")
    with (
        MemoryClient(settings, agent_id="shopping-agent") as other_agent,
        pytest.raises(RecordNotFound),
    ):
        other_agent.feedback(USER, private, action="click")
    with mem.sandbox(USER, "s-box"):
        boxed = mem.write(USER, "沙箱里的临时偏好：只看图文", lifecycle_policy=IMPLICIT)
        assert mem.feedback(USER, boxed, action="click").kind == "fragment"
    with pytest.raises(RecordNotFound):
        mem.feedback(USER, boxed, action="click")
    with pytest.raises(InvalidField):
        mem.feedback(USER, private, action="teleport")
    with pytest.raises(InvalidField):
        mem.feedback(USER, "not-a-uuid", action="click")
    with pytest.raises(RecordNotFound):
        mem.feedback("buyer-fb-ghost", private, action="click")
    assert mem.memories.get(USER, theirs) is None


# -- the scheduled decay -----------------------------------------------------------------------


def test_decay_drifts_stale_inferences_to_pending_once_per_day(shopper: MemoryClient) -> None:
    mem = shopper
    _frequent(mem, USER)
    inferred = mem.write(USER, "用户跳过视频三次，偏好图文", lifecycle_policy=IMPLICIT)
    said = mem.write(USER, "请记住我偏好微信通知", lifecycle_policy=EXPLICIT)
    preference = mem.facts.put(USER, "内容偏好", "图文", lifecycle_policy=IMPLICIT, confidence=0.33)
    casual = mem.write(OTHER, "随便看看扫地机", lifecycle_policy=IMPLICIT)  # 7-day TTL
    record = mem.memories.get(USER, inferred)
    assert record is not None
    now = record.last_used_at + 10 * DAY + timedelta(hours=1)

    report = mem.admin.decay(now=now)
    assert (report.decayed, report.pending) == (2, 1)
    assert mem.admin.decay(now=now) == type(report)(decayed=0, pending=0)  # idempotent per day
    assert mem.admin.decay(now=now + DAY).decayed == 1  # the fact is pending now: it stays so

    with mem.admin.database.transaction() as conn:
        rows: dict[uuid.UUID, float] = dict(
            conn.execute(
                text(
                    "SELECT id, confidence FROM memory_fragment WHERE id IN (:a, :b, :c) "
                    "UNION ALL SELECT id, confidence FROM memory_fact WHERE id = :d"
                ),
                {"a": inferred, "b": said, "c": casual, "d": preference.id},
            ).all()
        )
    assert rows[inferred] == pytest.approx(0.95**4)
    assert rows[said] == 1.0
    assert rows[casual] == 1.0
    assert rows[preference.id] == pytest.approx(0.33 * 0.95**3)

    decays = _entries(mem, USER, AuditAction.DECAY)
    assert sorted((e.details["kind"], e.details["steps"]) for e in decays) == [
        ("fact", 3),
        ("fragment", 1),
        ("fragment", 3),
    ]
    assert all(e.agent_id is None for e in decays)
    (moved,) = _entries(mem, USER, AuditAction.STATUS_CHANGE)
    assert moved.memory_id == preference.id
    assert (moved.details["to"], moved.details["cause"]) == ("pending_confirmation", "decay")

    days = audit.daily_counts(
        mem.admin.database,
        since=now - 30 * DAY,
        actions=(AuditAction.DECAY, AuditAction.STATUS_CHANGE),
    )
    assert sum(d.count for d in days if d.action is AuditAction.DECAY and d.kind == "fact") >= 1


def test_sweep_runs_the_decay_and_reports_it(shopper: MemoryClient) -> None:
    mem = shopper
    _frequent(mem, USER)
    inferred = mem.write(USER, "用户常买扫地机配件", lifecycle_policy=IMPLICIT)
    record = mem.memories.get(USER, inferred)
    assert record is not None
    report = mem.admin.sweep(now=record.last_used_at + 9 * DAY, vacuum=False)
    assert report.decay is not None
    assert report.decay.decayed == 1


# -- the audit trail of the other calls --------------------------------------------------------


def test_every_change_is_audited_with_the_agent(shopper: MemoryClient) -> None:
    mem = shopper
    first, second = mem.write_many(
        [
            MemoryInput(user_id=USER, text="订单 88231 的扫地机不回充", lifecycle_policy=EXPLICIT),
            MemoryInput(
                user_id=USER, text="退款 RF20260629001 三天到账", lifecycle_policy=IMPLICIT
            ),
        ],
        progress=False,
    )
    fact = mem.facts.put(USER, "会员等级", "金卡", lifecycle_policy=EXPLICIT)
    mem.facts.put(USER, "会员等级", "钻石卡", lifecycle_policy=EXPLICIT)
    mem.facts.delete(USER, "会员等级")
    profile = mem.profiles.get(USER)
    mem.profiles.update(USER, expected_version=profile.version, language="en-US")
    mem.memories.delete(USER, first)
    exported = mem.export_user(USER)

    got = [(e.action, e.memory_id, e.details) for e in reversed(_entries(mem, USER))]
    assert got == [
        (AuditAction.WRITE, first, {"kind": "note", "policy": "explicit", "sandboxed": False}),
        (AuditAction.WRITE, second, {"kind": "note", "policy": "implicit", "sandboxed": False}),
        (AuditAction.WRITE, fact.id, {"kind": "fact", "policy": "explicit", "replaced": False}),
        (AuditAction.WRITE, fact.id, {"kind": "fact", "policy": "explicit", "replaced": True}),
        (AuditAction.DELETE, fact.id, {"kind": "fact"}),
        (
            AuditAction.PROFILE_UPDATE,
            None,
            {"version": profile.version + 1, "fields": ["language"]},
        ),
        (AuditAction.DELETE, first, {"kind": "fragment"}),
        (
            AuditAction.EXPORT,
            None,
            {"devices": 0, "links": 0, "facts": 0, "pii": 0, "memories": len(exported["memories"])},
        ),
    ]
    assert {e.agent_id for e in _entries(mem, USER)} == {"test-agent"}


def test_erasure_leaves_pseudonymous_entries_only(shopper: MemoryClient) -> None:
    mem = shopper
    phone = "13912345678"
    memory_id = mem.write(USER, f"退款 RF20260629001 请打 {phone}", lifecycle_policy=EXPLICIT)
    subject = audit.subject_of(mem.admin.database, UserScope(USER))
    assert mem.forget_user(USER)
    assert audit.subject_of(mem.admin.database, UserScope(USER)) is None
    assert not mem.forget_user(USER)  # nothing left: nothing recorded

    trail = audit.recent(mem.admin.database, subject=subject, limit=100)
    assert [e.action for e in trail] == [AuditAction.ERASURE, AuditAction.WRITE]
    assert trail[1].memory_id == memory_id
    with mem.admin.database.transaction() as conn:
        dump = "\n".join(
            conn.execute(text("SELECT row_to_json(a)::text FROM audit_log a")).scalars()
        )
        keys = conn.execute(
            text("SELECT count(*) FROM audit_key WHERE user_id = :u"), {"u": USER}
        ).scalar_one()
    assert keys == 0
    for value in (USER, phone, "RF20260629001"):
        assert value not in dump
    with pytest.raises(UserNotFound):
        mem.write(USER, "迟到的写入", lifecycle_policy=EXPLICIT)
    with pytest.raises(RecordNotFound):
        mem.feedback(USER, memory_id, action="click")


# -- the CLI -----------------------------------------------------------------------------------


def test_audit_and_decay_commands(
    shopper: MemoryClient, cli_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem = shopper
    monkeypatch.setattr(cli.console, "width", 200)  # one line per entry
    memory_id = mem.write(USER, "订单 88231 查物流", lifecycle_policy=EXPLICIT)
    subject = audit.subject_of(mem.admin.database, UserScope(USER))
    assert subject is not None

    listed = CliRunner().invoke(app, ["audit", "--user", USER, "--limit", "5"])
    assert listed.exit_code == 0, listed.output
    assert subject in listed.output
    assert str(memory_id) in listed.output
    assert "test-agent" in listed.output

    daily = CliRunner().invoke(app, ["audit", "--daily", "2", "--action", "write"])
    assert daily.exit_code == 0, daily.output
    assert "write" in daily.output
    assert "note" in daily.output

    mem.forget_user(USER)
    gone = CliRunner().invoke(app, ["audit", "--user", USER])
    assert gone.exit_code == 0
    assert "no audit key" in gone.output

    decayed = CliRunner().invoke(app, ["decay"])
    assert decayed.exit_code == 0, decayed.output
    assert "moved to pending" in decayed.output
