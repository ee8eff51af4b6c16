"""Profiles: defaults, optimistic locking, the retry helper under contention."""

from __future__ import annotations

import threading

import pytest

from policies.errors import ConcurrentModificationError, InvalidField, InvalidUserId, UserNotFound
from sdk.client import MemoryClient
from values.records import Profile


def test_new_profile_has_documented_defaults(mem: MemoryClient) -> None:
    p = mem.profiles.ensure("buyer-001")
    assert p.timezone == "Asia/Shanghai"
    assert p.language == "zh-CN"
    assert p.notification_preference == {"email": True, "wechat": False, "sms": False}
    assert p.attributes == {}
    assert p.profile_summary == ""
    assert p.version == 1


def test_ensure_is_idempotent(mem: MemoryClient) -> None:
    first = mem.profiles.ensure("buyer-001")
    second = mem.profiles.ensure("buyer-001")
    assert first == second


def test_update_increments_version_and_merges_notifications(mem: MemoryClient) -> None:
    p = mem.profiles.ensure("buyer-001")
    q = mem.profiles.update(
        "buyer-001",
        expected_version=p.version,
        notification_preference={"wechat": True},
        attributes={"会员等级": "PLUS"},
        profile_summary="偏好微信通知的老客户",
    )
    assert q.version == p.version + 1
    assert q.notification_preference == {"email": True, "wechat": True, "sms": False}
    assert q.attributes == {"会员等级": "PLUS"}
    assert q.updated_at >= p.updated_at
    assert mem.profiles.get("buyer-001") == q


def test_stale_version_is_refused_and_nothing_changes(mem: MemoryClient) -> None:
    p = mem.profiles.ensure("buyer-001")
    mem.profiles.update("buyer-001", expected_version=p.version, language="en-US")
    with pytest.raises(ConcurrentModificationError) as err:
        mem.profiles.update("buyer-001", expected_version=p.version, language="ja-JP")
    assert err.value.details == {"expected_version": 1, "current_version": 2}
    assert err.value.http_status == 409
    assert mem.profiles.get("buyer-001").language == "en-US"


def test_unknown_user(mem: MemoryClient) -> None:
    with pytest.raises(UserNotFound):
        mem.profiles.get("nobody")
    with pytest.raises(UserNotFound):
        mem.profiles.update("nobody", expected_version=1, language="en")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"language": "x" * 17}, "language"),
        ({"notification_preference": {"pigeon": True}}, "notification_preference"),
        ({"notification_preference": {"email": "yes"}}, "notification_preference"),
        ({"attributes": ["not", "an", "object"]}, "attributes"),
        ({"attributes": {"blob": "长" * 30_000}}, "attributes"),
        ({"profile_summary": "s" * 4001}, "profile_summary"),
        ({"profile_summary": "bad \udcff surrogate"}, "profile_summary"),
        ({"version": 99}, None),
    ],
)
def test_bad_changes_are_typed_errors_and_write_nothing(
    mem: MemoryClient, changes: dict[str, object], field: str | None
) -> None:
    before = mem.profiles.ensure("buyer-001")
    with pytest.raises((InvalidField, ValueError)) as err:
        mem.profiles.update("buyer-001", expected_version=1, **changes)
    assert getattr(err.value, "code", "").startswith("invalid")
    if field is not None:
        assert err.value.details.get("field") == field  # type: ignore[attr-defined]
    assert mem.profiles.get("buyer-001") == before


@pytest.mark.parametrize("bad", ["", " ", "a" * 129, "用户一", "a b", "-lead", "x;drop", 42])
def test_malformed_user_ids(mem: MemoryClient, bad: object) -> None:
    with pytest.raises(InvalidUserId):
        mem.profiles.ensure(bad)  # type: ignore[arg-type]


def test_contention_eight_threads_lose_no_update(mem: MemoryClient) -> None:
    mem.profiles.ensure("hot-user")
    attempts: list[int] = []
    errors: list[BaseException] = []

    def bump(p: Profile) -> dict[str, object]:
        return {"attributes": {**p.attributes, "counter": p.attributes.get("counter", 0) + 1}}

    def worker() -> None:
        try:
            for _ in range(50):  # enough attempts that a loaded machine cannot starve one
                attempts.append(
                    mem.profiles.update_with_retry("hot-user", bump, max_attempts=1000).attempts
                )
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    final = mem.profiles.get("hot-user")
    assert final.attributes["counter"] == 400
    assert final.version == 401
    assert len(attempts) == 400
    assert max(attempts) > 1, "8 threads on one row must have produced at least one conflict"
