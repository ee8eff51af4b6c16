"""The SDK contract as tests over a ``MemoryAPI``: the same arguments, results and typed
errors whichever client runs them. ``tests/test_sdk_contract.py`` collects them over
``MemoryClient`` in process and ``RemoteMemoryClient`` over the service;
``tests/test_thin_client.py`` copies this module into a fresh venv holding only the
client-only distribution (``dualtrack-client``) and runs it there, over the remote clients,
with ``tests/thin_contract_conftest.py`` as its conftest. So it imports nothing that
distribution does not ship: ``sdk``, ``policies.errors``, httpx and pytest.

Fixtures each runner provides: ``api`` (a ``MemoryAPI``), ``buyer`` and ``other_buyer``
(user ids nobody else uses during the test), ``token_for`` (a token whose ``sub`` is the
given user) and ``async_http`` (a new ``httpx.AsyncClient`` on the service)."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from policies.errors import DualtrackError
from sdk import (
    AsyncRemoteMemoryClient,
    ConcurrentModificationError,
    InvalidField,
    InvalidText,
    InvalidUserId,
    LifecyclePolicy,
    MemoryAPI,
    PolicyMissing,
    RecordNotFound,
    RemoteMemoryClient,
    ServiceUnavailable,
    TokenUserMismatch,
    Turn,
    UserNotFound,
)

TokenFor = Callable[[str], str]
"""A token whose ``sub`` is the given user id."""

EXPLICIT = LifecyclePolicy.EXPLICIT
IMPLICIT = LifecyclePolicy.IMPLICIT
T0 = datetime(2026, 7, 1, 10, 0, tzinfo=UTC)


# --------------------------------------------------------------------------- profiles


def test_profiles_ensure_get_update_and_a_stale_version(api: MemoryAPI, buyer: str) -> None:
    with pytest.raises(UserNotFound):
        api.profiles.get(buyer)
    created = api.profiles.ensure(buyer)
    assert (created.user_id, created.version) == (buyer, 1)
    assert api.profiles.ensure(buyer).version == 1, "ensure is idempotent"
    updated = api.profiles.update(buyer, expected_version=1, language="en-US", timezone="UTC")
    assert (updated.version, updated.language, updated.timezone) == (2, "en-US", "UTC")
    with pytest.raises(ConcurrentModificationError) as stale:
        api.profiles.update(buyer, expected_version=1, language="zh-CN")
    assert stale.value.details["current_version"] == 2
    assert api.profiles.get(buyer).language == "en-US"
    with pytest.raises(InvalidField):
        api.profiles.update(buyer, expected_version=2, nickname="小王")
    with pytest.raises(InvalidField):
        api.profiles.update(buyer, expected_version=2, timezone="Mars/Olympus")
    with pytest.raises(InvalidUserId):
        api.profiles.ensure("bad user!")


# --------------------------------------------------------------------------- memories


def test_write_search_read_and_delete(api: MemoryAPI, buyer: str) -> None:
    text = "订单 88231 退款 RF20260629001 预计三天到账，联系电话 13912345678"
    with pytest.raises(UserNotFound):
        api.write(buyer, text, lifecycle_policy=IMPLICIT)
    api.profiles.ensure(buyer)
    mid = api.write(buyer, text, lifecycle_policy=IMPLICIT, session_id="s-1")
    api.write(buyer, "Prefers WeChat notifications over SMS", lifecycle_policy=EXPLICIT)

    hits = api.search(buyer, "退款到账了吗", limit=1)
    assert [h.memory_id for h in hits] == [mid]
    assert hits.degraded is False
    assert "88231" in hits[0].text
    assert "13912345678" not in hits[0].text, "PII is masked in what a search returns"
    assert (hits[0].policy, hits[0].session_id, hits[0].status) == ("implicit", "s-1", "active")

    record = api.memories.get(buyer, mid)
    assert record is not None
    assert record.id == mid
    assert len(api.memories.list(buyer, limit=10)) == 2
    assert api.memories.delete(buyer, mid) is True
    assert api.memories.delete(buyer, mid) is False
    assert api.memories.get(buyer, mid) is None
    assert [h.memory_id for h in api.search(buyer, "退款到账了吗")] != [mid]


def test_bad_input_is_the_same_typed_error(api: MemoryAPI, buyer: str) -> None:
    api.profiles.ensure(buyer)
    with pytest.raises(InvalidText):
        api.write(buyer, "   ", lifecycle_policy=EXPLICIT)
    with pytest.raises(InvalidText):
        api.write(buyer, "退款" * 40_000, lifecycle_policy=EXPLICIT)
    with pytest.raises(PolicyMissing):
        api.write(buyer, "请记住我的邮箱", lifecycle_policy=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidText):
        api.search(buyer, "")
    with pytest.raises(InvalidField):
        api.memories.get(buyer, "not-a-uuid")
    with pytest.raises(InvalidField):
        api.feedback(buyer, uuid.uuid4(), action="like")
    with pytest.raises(RecordNotFound):
        api.feedback(buyer, uuid.uuid4(), action="click")
    with pytest.raises(InvalidField):
        api.end_session(buyer, "s-1", "我要退款")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- structured


def test_devices_links_and_facts(api: MemoryAPI, buyer: str) -> None:
    api.profiles.ensure(buyer)
    device = api.devices.register(buyer, device_id="iphone-15-a1b2", os="iOS 18", browser="Safari")
    assert device.is_trusted is False
    api.devices.verify(buyer, device.fingerprint, succeeded=True)
    assert api.devices.verify(buyer, device.fingerprint, succeeded=True).is_trusted is True
    assert [d.fingerprint for d in api.devices.list(buyer)] == [device.fingerprint]
    with pytest.raises(RecordNotFound):
        api.devices.verify(buyer, "ab" * 32, succeeded=True)
    with pytest.raises(InvalidField):
        api.devices.verify(buyer, "not-hex", succeeded=True)
    assert api.devices.remove(buyer, device.fingerprint) is True
    assert api.devices.remove(buyer, device.fingerprint) is False

    order = api.links.add(buyer, entity_type="order", entity_id="88231", role="owner")
    refund = api.links.add(buyer, entity_type="refund", entity_id="RF20260629001", role="owner")
    assert {link.id for link in api.links.valid_now(buyer)} == {order.id, refund.id}
    assert [link.id for link in api.links.valid_now(buyer, entity_type="refund")] == [refund.id]
    with pytest.raises(InvalidField):
        api.links.valid_now(buyer, entity_type="spaceship")
    ended = api.links.end(buyer, order.id)
    assert ended.effective_to is not None
    assert [link.id for link in api.links.valid_now(buyer)] == [refund.id]
    assert len(api.links.list(buyer)) == 2
    assert api.links.remove(buyer, order.id) is True
    assert api.links.remove(buyer, order.id) is False

    fact = api.facts.put(buyer, "通知渠道", "微信", lifecycle_policy=EXPLICIT, source="chat")
    assert (fact.key, fact.value, fact.policy) == ("通知渠道", "微信", "explicit")
    phone = api.facts.put(buyer, "收货电话", "收货电话 13912345678", lifecycle_policy=EXPLICIT)
    assert "13912345678" not in str(phone.value), "PII in a fact value is stored masked"
    got = api.facts.get(buyer, "通知渠道")
    assert got is not None
    assert got.id == fact.id
    assert api.facts.get(buyer, "生日") is None
    assert {f.key for f in api.facts.list(buyer)} == {"通知渠道", "收货电话"}
    assert api.facts.delete(buyer, "通知渠道") is True
    assert api.facts.delete(buyer, "通知渠道") is False
    with pytest.raises(PolicyMissing):
        api.facts.put(buyer, "语言", "中文", lifecycle_policy=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidField):
        api.facts.put(buyer, "语言", "中文", lifecycle_policy=EXPLICIT, confidence=1.5)


# --------------------------------------------------------------------------- context, sessions


def test_build_context_holds_the_profile_facts_and_records(api: MemoryAPI, buyer: str) -> None:
    with pytest.raises(UserNotFound):
        api.build_context(buyer, "退款到账了吗")
    api.profiles.ensure(buyer)
    api.facts.put(buyer, "通知渠道", "微信", lifecycle_policy=EXPLICIT)
    mid = api.write(buyer, "订单 88231 退款 RF20260629001 预计三天到账", lifecycle_policy=IMPLICIT)
    context = api.build_context(buyer, "退款到账了吗", max_tokens=600)
    assert 0 < context.tokens <= 600
    assert "RF20260629001" in context.text
    assert {str(i.section) for i in context.items} >= {"profile", "fact", "record"}
    assert str(mid) in {i.ref for i in context.items}
    assert context.message() == {"role": "system", "content": context.text}
    tight = api.build_context(buyer, "退款到账了吗", max_tokens=80)
    assert tight.omitted > 0
    assert tight.tokens <= 80
    with pytest.raises(InvalidField):
        api.build_context(buyer, "退款到账了吗", max_tokens=10)


def test_end_session_and_append_turns(api: MemoryAPI, buyer: str) -> None:
    transcript = [
        Turn("user", "你好，订单 88231 的扫地机无法回充，我要退款，手机 13912345678", T0),
        Turn("assistant", "已为您提交退款，退款编号 RF20260629001，预计 1-3 个工作日到账", T0),
        Turn("user", "好的谢谢", T0 + timedelta(minutes=1)),
    ]
    with pytest.raises(UserNotFound):
        api.end_session(buyer, "s-1", transcript)
    api.profiles.ensure(buyer)
    record = api.end_session(buyer, "s-1", transcript)
    summary = record.summary
    assert summary.session_id == "s-1"
    assert "RF20260629001" in summary.summary_text
    assert "13912345678" not in summary.summary_text
    assert {"88231", "RF20260629001"} <= {e.text for e in summary.entities}
    assert str(summary.intent) in {"return_request", "refund_status"}
    assert summary.outcomes, "the refund the agent issued is recorded"
    assert api.memories.get(buyer, record.memory_id) is not None
    again = api.end_session(buyer, "s-1", transcript)
    assert again.memory_id == record.memory_id, "nothing new: the last record again"
    with pytest.raises(InvalidText):
        api.end_session(buyer, "s-2", [Turn("assistant", "您好，请问有什么可以帮您？")])

    appended = api.append_turns(
        buyer, "s-3", [Turn("user", "上次换货的鞋子发出了吗"), Turn("user", "")]
    )
    assert len(appended.memory_ids) == 1
    assert appended.record is None


# --------------------------------------------------------------------------- sandbox


def test_sandbox_write_fork_merge_discard(api: MemoryAPI, buyer: str) -> None:
    api.profiles.ensure(buyer)
    api.write(buyer, "用户的常用收货地址在杭州，偏好顺丰配送", lifecycle_policy=EXPLICIT)
    query = "订单 退款 扫地机 顺丰 空气净化器"
    with api.sandbox(buyer, "s-1") as sb:
        first = sb.id
        said = api.write(buyer, "订单 88231 的扫地机要退款", lifecycle_policy=IMPLICIT)
        assert said in {h.memory_id for h in api.search(buyer, query, limit=10, alpha=0.0)}
        new = sb.fork()  # 忘了刚才说的，重新来
        assert new != first
        assert sb.id == new
        assert said not in {h.memory_id for h in api.search(buyer, query, limit=10, alpha=0.0)}
        kept = api.write(buyer, "重新开始：想买空气净化器", lifecycle_policy=IMPLICIT)
        dropped = api.write(buyer, "空气净化器要白色的", lifecycle_policy=IMPLICIT)
        assert sb.merge([kept]) == [kept]
    outside = {h.memory_id for h in api.search(buyer, query, limit=10, alpha=0.0)}
    assert kept in outside, "merged into long-term memory"
    assert said not in outside
    assert dropped not in outside, "unmerged writes stay in the sandbox"
    with api.sandbox(buyer, "s-1") as again:
        assert again.id == new, "re-entering resumes the session's active sandbox"
        assert again.discard() == 1
    with api.sandbox(buyer, "s-2") as other:
        assert other.id not in {first, new}


# --------------------------------------------------------------------------- feedback, account


def test_feedback_export_and_forget(api: MemoryAPI, buyer: str) -> None:
    api.profiles.ensure(buyer)
    wrong = api.write(buyer, "用户偏好视频讲解的扫地机评测", lifecycle_policy=IMPLICIT)
    kept = api.write(
        buyer, "用户偏好图文版的扫地机评测，手机 13912345678", lifecycle_policy=IMPLICIT
    )
    clicked = api.feedback(buyer, kept, action="click")
    assert (clicked.memory_id, clicked.kind, clicked.action) == (kept, "fragment", "click")
    assert clicked.status == "active"
    rejected = api.feedback(buyer, wrong, action="reject")
    assert (rejected.status, rejected.previous_status) == ("retired", "active")
    assert [h.memory_id for h in api.search(buyer, "扫地机评测")] == [kept]
    with pytest.raises(RecordNotFound):
        api.feedback(buyer, wrong, action="confirm")

    exported = api.export_user(buyer)
    assert exported["user_id"] == buyer
    assert exported["profile"]["version"] == 1
    assert [m["id"] for m in exported["memories"]] == [str(kept)]
    assert [p["value"] for p in exported["pii"]] == ["13912345678"], "the user's own PII, clear"

    assert api.forget_user(buyer) is True
    with pytest.raises(UserNotFound):
        api.profiles.get(buyer)
    with pytest.raises(UserNotFound):
        api.export_user(buyer)
    with pytest.raises(UserNotFound):
        api.write(buyer, "late write", lifecycle_policy=EXPLICIT)


# --------------------------------------------------------------------------- remote only


def test_a_token_of_another_user_is_refused_before_sending(
    token_for: TokenFor, buyer: str, other_buyer: str
) -> None:
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    http = httpx.Client(transport=httpx.MockTransport(record), base_url="http://memory")
    client = RemoteMemoryClient(http=http, token_provider=lambda _: token_for(other_buyer))
    with pytest.raises(TokenUserMismatch) as refused:
        client.profiles.ensure(buyer)
    assert isinstance(refused.value, InvalidField)
    assert buyer not in str(refused.value), "messages never echo a user id"
    with pytest.raises(TokenUserMismatch):
        RemoteMemoryClient(http=http, token_provider=lambda _: "not.a.jwt").profiles.get(buyer)
    assert sent == []


def test_an_unreachable_service_is_service_unavailable(token_for: TokenFor, buyer: str) -> None:
    with socket.socket() as s:  # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = RemoteMemoryClient(f"http://127.0.0.1:{port}", token_provider=token_for)
    with client, pytest.raises(ServiceUnavailable) as down:
        client.profiles.get(buyer)
    assert down.value.code == "service_unavailable"
    assert down.value.http_status == 503


def test_answers_without_the_error_format_are_typed_too(token_for: TokenFor, buyer: str) -> None:
    def proxy(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/profile":
            return httpx.Response(502, text="<html>Bad Gateway</html>")
        return httpx.Response(418, json={"error": {"code": "teapot", "message": "short"}})

    http = httpx.Client(transport=httpx.MockTransport(proxy), base_url="http://memory")
    client = RemoteMemoryClient(http=http, token_provider=token_for)
    with pytest.raises(ServiceUnavailable):
        client.profiles.get(buyer)
    with pytest.raises(DualtrackError) as odd:
        client.facts.list(buyer)
    assert odd.value.details == {"status": 418, "code": "teapot"}


# --------------------------------------------------------------------------- async


def test_the_async_client_tells_the_same_story(
    async_http: Callable[[], httpx.AsyncClient], token_for: TokenFor, buyer: str
) -> None:
    async def story() -> None:
        async with (
            async_http() as http,
            AsyncRemoteMemoryClient(http=http, token_provider=token_for) as client,
        ):
            with pytest.raises(UserNotFound):
                await client.profiles.get(buyer)
            assert (await client.profiles.ensure(buyer)).version == 1
            await client.profiles.update(buyer, expected_version=1, language="en-US")
            with pytest.raises(ConcurrentModificationError) as stale:
                await client.profiles.update(buyer, expected_version=1, language="zh-CN")
            assert stale.value.details["current_version"] == 2
            mid = await client.write(
                buyer, "订单 88231 退款 RF20260629001", lifecycle_policy=IMPLICIT
            )
            assert [h.memory_id for h in await client.search(buyer, "退款")] == [mid]
            async with client.sandbox(buyer, "s-1") as sb:
                boxed = await client.write(buyer, "订单 88231 要换货", lifecycle_policy=IMPLICIT)
                assert await sb.merge([boxed]) == [boxed]
            context = await client.build_context(buyer, "退款")
            assert "RF20260629001" in context.text
            turns = [Turn("user", "订单 88231 退款到账了吗"), Turn("assistant", "预计明天到账")]
            record = await client.end_session(buyer, "s-2", turns)
            assert (await client.memories.get(buyer, record.memory_id)) is not None
            assert (await client.feedback(buyer, mid, action="click")).status == "active"
            assert (await client.export_user(buyer))["user_id"] == buyer
            with pytest.raises(InvalidText):
                await client.write(buyer, "", lifecycle_policy=IMPLICIT)
            assert await client.forget_user(buyer) is True
            with pytest.raises(UserNotFound):
                await client.profiles.get(buyer)

    asyncio.run(story())
