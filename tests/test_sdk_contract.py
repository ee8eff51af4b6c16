"""One SDK contract, two clients: every test here runs against ``MemoryClient`` in process
and ``RemoteMemoryClient`` over the REST service, with the same arguments, results and
typed errors. The service runs under uvicorn in a thread on a loopback port of its own
(the real HTTP stack, and a plain ``httpx.Client``); the async client runs the same story
over ``httpx.ASGITransport``."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import uvicorn

from policies.errors import DualtrackError
from sdk import (
    AsyncRemoteMemoryClient,
    ConcurrentModificationError,
    InvalidField,
    InvalidText,
    InvalidUserId,
    LifecyclePolicy,
    MemoryAPI,
    MemoryClient,
    PolicyMissing,
    RecordNotFound,
    RemoteMemoryClient,
    ServiceUnavailable,
    TokenUserMismatch,
    Turn,
    UserNotFound,
)
from service import create_app
from service.settings import ServiceSettings
from service.tokens import mint

SECRET = "contract-secret-0123456789abcdef0123"
SERVICE = ServiceSettings(
    jwt_secret=SECRET,  # type: ignore[arg-type]
    jwt_audience="dualtrack",
    rate_per_s=1000,
    rate_burst=1000,
    export_interval_s=0.001,
    max_body_bytes=256 * 1024,
)
SCOPES = ["memory:read", "memory:write", "memory:erase", "account:export"]
BUYER = "buyer-001"
EXPLICIT = LifecyclePolicy.EXPLICIT
IMPLICIT = LifecyclePolicy.IMPLICIT
T0 = datetime(2026, 7, 1, 10, 0, tzinfo=UTC)


def token_for(user_id: str) -> str:
    """A development token whose ``sub`` is ``user_id`` (the agent is the same for all)."""
    return mint(SERVICE, sub=user_id, agent="refund-agent", scopes=SCOPES)


@pytest.fixture(scope="module")
def service_url(session_client: MemoryClient) -> Iterator[str]:
    """The service over the test database, served on 127.0.0.1 (a free port) for the module."""
    app = create_app(service=SERVICE, client=session_client)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="contract-service", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("the service did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=60)


@pytest.fixture
def remote(mem: MemoryClient, service_url: str) -> Iterator[RemoteMemoryClient]:
    """The remote client over the service (``mem`` empties the tables after the test)."""
    with RemoteMemoryClient(service_url, token_provider=token_for) as client:
        yield client


@pytest.fixture(params=["in_process", "remote"])
def api(request: pytest.FixtureRequest) -> MemoryAPI:
    """Each contract test runs once per client."""
    name = "mem" if request.param == "in_process" else "remote"
    client: MemoryAPI = request.getfixturevalue(name)
    return client


def test_both_clients_satisfy_the_protocol(mem: MemoryClient, remote: RemoteMemoryClient) -> None:
    # the assignments are the check: mypy --strict refuses a client that drifts from MemoryAPI
    clients: list[MemoryAPI] = [mem, remote]
    assert all(callable(c.write) for c in clients)


# --------------------------------------------------------------------------- profiles


def test_profiles_ensure_get_update_and_a_stale_version(api: MemoryAPI) -> None:
    with pytest.raises(UserNotFound):
        api.profiles.get(BUYER)
    created = api.profiles.ensure(BUYER)
    assert (created.user_id, created.version) == (BUYER, 1)
    assert api.profiles.ensure(BUYER).version == 1, "ensure is idempotent"
    updated = api.profiles.update(BUYER, expected_version=1, language="en-US", timezone="UTC")
    assert (updated.version, updated.language, updated.timezone) == (2, "en-US", "UTC")
    with pytest.raises(ConcurrentModificationError) as stale:
        api.profiles.update(BUYER, expected_version=1, language="zh-CN")
    assert stale.value.details["current_version"] == 2
    assert api.profiles.get(BUYER).language == "en-US"
    with pytest.raises(InvalidField):
        api.profiles.update(BUYER, expected_version=2, nickname="小王")
    with pytest.raises(InvalidField):
        api.profiles.update(BUYER, expected_version=2, timezone="Mars/Olympus")
    with pytest.raises(InvalidUserId):
        api.profiles.ensure("bad user!")


# --------------------------------------------------------------------------- memories


def test_write_search_read_and_delete(api: MemoryAPI) -> None:
    text = "订单 88231 退款 RF20260629001 预计三天到账，联系电话 13912345678"
    with pytest.raises(UserNotFound):
        api.write(BUYER, text, lifecycle_policy=IMPLICIT)
    api.profiles.ensure(BUYER)
    mid = api.write(BUYER, text, lifecycle_policy=IMPLICIT, session_id="s-1")
    api.write(BUYER, "Prefers WeChat notifications over SMS", lifecycle_policy=EXPLICIT)

    hits = api.search(BUYER, "退款到账了吗", limit=1)
    assert [h.memory_id for h in hits] == [mid]
    assert hits.degraded is False
    assert "88231" in hits[0].text
    assert "13912345678" not in hits[0].text, "PII is masked in what a search returns"
    assert (hits[0].policy, hits[0].session_id, hits[0].status) == ("implicit", "s-1", "active")

    record = api.memories.get(BUYER, mid)
    assert record is not None
    assert record.id == mid
    assert len(api.memories.list(BUYER, limit=10)) == 2
    assert api.memories.delete(BUYER, mid) is True
    assert api.memories.delete(BUYER, mid) is False
    assert api.memories.get(BUYER, mid) is None
    assert [h.memory_id for h in api.search(BUYER, "退款到账了吗")] != [mid]


def test_bad_input_is_the_same_typed_error(api: MemoryAPI) -> None:
    api.profiles.ensure(BUYER)
    with pytest.raises(InvalidText):
        api.write(BUYER, "   ", lifecycle_policy=EXPLICIT)
    with pytest.raises(InvalidText):
        api.write(BUYER, "退款" * 40_000, lifecycle_policy=EXPLICIT)
    with pytest.raises(PolicyMissing):
        api.write(BUYER, "请记住我的邮箱", lifecycle_policy=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidText):
        api.search(BUYER, "")
    with pytest.raises(InvalidField):
        api.memories.get(BUYER, "not-a-uuid")
    with pytest.raises(InvalidField):
        api.feedback(BUYER, uuid.uuid4(), action="like")
    with pytest.raises(RecordNotFound):
        api.feedback(BUYER, uuid.uuid4(), action="click")
    with pytest.raises(InvalidField):
        api.end_session(BUYER, "s-1", "我要退款")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- structured


def test_devices_links_and_facts(api: MemoryAPI) -> None:
    api.profiles.ensure(BUYER)
    device = api.devices.register(BUYER, device_id="iphone-15-a1b2", os="iOS 18", browser="Safari")
    assert device.is_trusted is False
    api.devices.verify(BUYER, device.fingerprint, succeeded=True)
    assert api.devices.verify(BUYER, device.fingerprint, succeeded=True).is_trusted is True
    assert [d.fingerprint for d in api.devices.list(BUYER)] == [device.fingerprint]
    with pytest.raises(RecordNotFound):
        api.devices.verify(BUYER, "ab" * 32, succeeded=True)
    with pytest.raises(InvalidField):
        api.devices.verify(BUYER, "not-hex", succeeded=True)
    assert api.devices.remove(BUYER, device.fingerprint) is True
    assert api.devices.remove(BUYER, device.fingerprint) is False

    order = api.links.add(BUYER, entity_type="order", entity_id="88231", role="owner")
    refund = api.links.add(BUYER, entity_type="refund", entity_id="RF20260629001", role="owner")
    assert {link.id for link in api.links.valid_now(BUYER)} == {order.id, refund.id}
    assert [link.id for link in api.links.valid_now(BUYER, entity_type="refund")] == [refund.id]
    with pytest.raises(InvalidField):
        api.links.valid_now(BUYER, entity_type="spaceship")
    ended = api.links.end(BUYER, order.id)
    assert ended.effective_to is not None
    assert [link.id for link in api.links.valid_now(BUYER)] == [refund.id]
    assert len(api.links.list(BUYER)) == 2
    assert api.links.remove(BUYER, order.id) is True
    assert api.links.remove(BUYER, order.id) is False

    fact = api.facts.put(BUYER, "通知渠道", "微信", lifecycle_policy=EXPLICIT, source="chat")
    assert (fact.key, fact.value, fact.policy) == ("通知渠道", "微信", "explicit")
    phone = api.facts.put(BUYER, "收货电话", "收货电话 13912345678", lifecycle_policy=EXPLICIT)
    assert "13912345678" not in str(phone.value), "PII in a fact value is stored masked"
    got = api.facts.get(BUYER, "通知渠道")
    assert got is not None
    assert got.id == fact.id
    assert api.facts.get(BUYER, "生日") is None
    assert {f.key for f in api.facts.list(BUYER)} == {"通知渠道", "收货电话"}
    assert api.facts.delete(BUYER, "通知渠道") is True
    assert api.facts.delete(BUYER, "通知渠道") is False
    with pytest.raises(PolicyMissing):
        api.facts.put(BUYER, "语言", "中文", lifecycle_policy=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidField):
        api.facts.put(BUYER, "语言", "中文", lifecycle_policy=EXPLICIT, confidence=1.5)


# --------------------------------------------------------------------------- context, sessions


def test_build_context_holds_the_profile_facts_and_records(api: MemoryAPI) -> None:
    with pytest.raises(UserNotFound):
        api.build_context(BUYER, "退款到账了吗")
    api.profiles.ensure(BUYER)
    api.facts.put(BUYER, "通知渠道", "微信", lifecycle_policy=EXPLICIT)
    mid = api.write(BUYER, "订单 88231 退款 RF20260629001 预计三天到账", lifecycle_policy=IMPLICIT)
    context = api.build_context(BUYER, "退款到账了吗", max_tokens=600)
    assert 0 < context.tokens <= 600
    assert "RF20260629001" in context.text
    assert {str(i.section) for i in context.items} >= {"profile", "fact", "record"}
    assert str(mid) in {i.ref for i in context.items}
    assert context.message() == {"role": "system", "content": context.text}
    tight = api.build_context(BUYER, "退款到账了吗", max_tokens=80)
    assert tight.omitted > 0
    assert tight.tokens <= 80
    with pytest.raises(InvalidField):
        api.build_context(BUYER, "退款到账了吗", max_tokens=10)


def test_end_session_and_append_turns(api: MemoryAPI) -> None:
    transcript = [
        Turn("user", "你好，订单 88231 的扫地机无法回充，我要退款，手机 13912345678", T0),
        Turn("assistant", "已为您提交退款，退款编号 RF20260629001，预计 1-3 个工作日到账", T0),
        Turn("user", "好的谢谢", T0 + timedelta(minutes=1)),
    ]
    with pytest.raises(UserNotFound):
        api.end_session(BUYER, "s-1", transcript)
    api.profiles.ensure(BUYER)
    record = api.end_session(BUYER, "s-1", transcript)
    summary = record.summary
    assert summary.session_id == "s-1"
    assert "RF20260629001" in summary.summary_text
    assert "13912345678" not in summary.summary_text
    assert {"88231", "RF20260629001"} <= {e.text for e in summary.entities}
    assert str(summary.intent) in {"return_request", "refund_status"}
    assert summary.outcomes, "the refund the agent issued is recorded"
    assert api.memories.get(BUYER, record.memory_id) is not None
    again = api.end_session(BUYER, "s-1", transcript)
    assert again.memory_id == record.memory_id, "nothing new: the last record again"
    with pytest.raises(InvalidText):
        api.end_session(BUYER, "s-2", [Turn("assistant", "您好，请问有什么可以帮您？")])

    appended = api.append_turns(
        BUYER, "s-3", [Turn("user", "上次换货的鞋子发出了吗"), Turn("user", "")]
    )
    assert len(appended.memory_ids) == 1
    assert appended.record is None


# --------------------------------------------------------------------------- sandbox


def test_sandbox_write_fork_merge_discard(api: MemoryAPI) -> None:
    api.profiles.ensure(BUYER)
    api.write(BUYER, "用户的常用收货地址在杭州，偏好顺丰配送", lifecycle_policy=EXPLICIT)
    query = "订单 退款 扫地机 顺丰 空气净化器"
    with api.sandbox(BUYER, "s-1") as sb:
        first = sb.id
        said = api.write(BUYER, "订单 88231 的扫地机要退款", lifecycle_policy=IMPLICIT)
        assert said in {h.memory_id for h in api.search(BUYER, query, limit=10, alpha=0.0)}
        new = sb.fork()  # 忘了刚才说的，重新来
        assert new != first
        assert sb.id == new
        assert said not in {h.memory_id for h in api.search(BUYER, query, limit=10, alpha=0.0)}
        kept = api.write(BUYER, "重新开始：想买空气净化器", lifecycle_policy=IMPLICIT)
        dropped = api.write(BUYER, "空气净化器要白色的", lifecycle_policy=IMPLICIT)
        assert sb.merge([kept]) == [kept]
    outside = {h.memory_id for h in api.search(BUYER, query, limit=10, alpha=0.0)}
    assert kept in outside, "merged into long-term memory"
    assert said not in outside
    assert dropped not in outside, "unmerged writes stay in the sandbox"
    with api.sandbox(BUYER, "s-1") as again:
        assert again.id == new, "re-entering resumes the session's active sandbox"
        assert again.discard() == 1
    with api.sandbox(BUYER, "s-2") as other:
        assert other.id not in {first, new}


# --------------------------------------------------------------------------- feedback, account


def test_feedback_export_and_forget(api: MemoryAPI) -> None:
    api.profiles.ensure(BUYER)
    wrong = api.write(BUYER, "用户偏好视频讲解的扫地机评测", lifecycle_policy=IMPLICIT)
    kept = api.write(
        BUYER, "用户偏好图文版的扫地机评测，手机 13912345678", lifecycle_policy=IMPLICIT
    )
    clicked = api.feedback(BUYER, kept, action="click")
    assert (clicked.memory_id, clicked.kind, clicked.action) == (kept, "fragment", "click")
    assert clicked.status == "active"
    rejected = api.feedback(BUYER, wrong, action="reject")
    assert (rejected.status, rejected.previous_status) == ("retired", "active")
    assert [h.memory_id for h in api.search(BUYER, "扫地机评测")] == [kept]
    with pytest.raises(RecordNotFound):
        api.feedback(BUYER, wrong, action="confirm")

    exported = api.export_user(BUYER)
    assert exported["user_id"] == BUYER
    assert exported["profile"]["version"] == 1
    assert [m["id"] for m in exported["memories"]] == [str(kept)]
    assert [p["value"] for p in exported["pii"]] == ["13912345678"], "the user's own PII, clear"

    assert api.forget_user(BUYER) is True
    with pytest.raises(UserNotFound):
        api.profiles.get(BUYER)
    with pytest.raises(UserNotFound):
        api.export_user(BUYER)
    with pytest.raises(UserNotFound):
        api.write(BUYER, "late write", lifecycle_policy=EXPLICIT)


# --------------------------------------------------------------------------- remote only


def test_a_token_of_another_user_is_refused_before_sending() -> None:
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    http = httpx.Client(transport=httpx.MockTransport(record), base_url="http://memory")
    client = RemoteMemoryClient(http=http, token_provider=lambda _: token_for("buyer-002"))
    with pytest.raises(TokenUserMismatch) as refused:
        client.profiles.ensure(BUYER)
    assert isinstance(refused.value, InvalidField)
    assert BUYER not in str(refused.value), "messages never echo a user id"
    with pytest.raises(TokenUserMismatch):
        RemoteMemoryClient(http=http, token_provider=lambda _: "not.a.jwt").profiles.get(BUYER)
    assert sent == []


def test_an_unreachable_service_is_service_unavailable() -> None:
    with socket.socket() as s:  # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = RemoteMemoryClient(f"http://127.0.0.1:{port}", token_provider=token_for)
    with client, pytest.raises(ServiceUnavailable) as down:
        client.profiles.get(BUYER)
    assert down.value.code == "service_unavailable"
    assert down.value.http_status == 503


def test_answers_without_the_error_format_are_typed_too() -> None:
    def proxy(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/profile":
            return httpx.Response(502, text="<html>Bad Gateway</html>")
        return httpx.Response(418, json={"error": {"code": "teapot", "message": "short"}})

    http = httpx.Client(transport=httpx.MockTransport(proxy), base_url="http://memory")
    client = RemoteMemoryClient(http=http, token_provider=token_for)
    with pytest.raises(ServiceUnavailable):
        client.profiles.get(BUYER)
    with pytest.raises(DualtrackError) as odd:
        client.facts.list(BUYER)
    assert odd.value.details == {"status": 418, "code": "teapot"}


# --------------------------------------------------------------------------- async


def test_the_async_client_tells_the_same_story(mem: MemoryClient) -> None:
    app = create_app(service=SERVICE, client=mem)

    async def story() -> None:
        transport = httpx.ASGITransport(app=app)
        async with (
            httpx.AsyncClient(transport=transport, base_url="http://testserver") as http,
            AsyncRemoteMemoryClient(http=http, token_provider=token_for) as client,
        ):
            with pytest.raises(UserNotFound):
                await client.profiles.get(BUYER)
            assert (await client.profiles.ensure(BUYER)).version == 1
            await client.profiles.update(BUYER, expected_version=1, language="en-US")
            with pytest.raises(ConcurrentModificationError) as stale:
                await client.profiles.update(BUYER, expected_version=1, language="zh-CN")
            assert stale.value.details["current_version"] == 2
            mid = await client.write(
                BUYER, "订单 88231 退款 RF20260629001", lifecycle_policy=IMPLICIT
            )
            assert [h.memory_id for h in await client.search(BUYER, "退款")] == [mid]
            async with client.sandbox(BUYER, "s-1") as sb:
                boxed = await client.write(BUYER, "订单 88231 要换货", lifecycle_policy=IMPLICIT)
                assert await sb.merge([boxed]) == [boxed]
            context = await client.build_context(BUYER, "退款")
            assert "RF20260629001" in context.text
            turns = [Turn("user", "订单 88231 退款到账了吗"), Turn("assistant", "预计明天到账")]
            record = await client.end_session(BUYER, "s-2", turns)
            assert (await client.memories.get(BUYER, record.memory_id)) is not None
            assert (await client.feedback(BUYER, mid, action="click")).status == "active"
            assert (await client.export_user(BUYER))["user_id"] == BUYER
            with pytest.raises(InvalidText):
                await client.write(BUYER, "", lifecycle_policy=IMPLICIT)
            assert await client.forget_user(BUYER) is True
            with pytest.raises(UserNotFound):
                await client.profiles.get(BUYER)

    asyncio.run(story())
