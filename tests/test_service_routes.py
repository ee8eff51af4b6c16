"""Every user route of the REST contract, in-process over ASGI: each serves the token's user
only (another user's ids find nothing), refuses a user id in a body (422) and checks its
scope (read, write, erase, ops)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from fastapi.testclient import TestClient

from sdk import MemoryClient
from service import create_app
from tests.test_service import SERVICE, auth, token

BUYER, OTHER = "buyer-001", "buyer-002"
PHONE = "13912345678"


@pytest.fixture
def api(mem: MemoryClient) -> Iterator[TestClient]:
    with TestClient(create_app(service=SERVICE, client=mem)) as client:
        for sub in (BUYER, OTHER):
            assert client.put("/v1/profile", headers=auth(token(sub=sub))).status_code == 200
        yield client


def me(**kw: Any) -> dict[str, str]:
    return auth(token(sub=BUYER, **kw))


def them(**kw: Any) -> dict[str, str]:
    return auth(token(sub=OTHER, **kw))


def test_devices_register_verify_list_remove(api: TestClient) -> None:
    body = {"device_id": "iphone-15-a1b2", "os": "iOS 18", "browser": "微信内置浏览器"}
    device = api.post("/v1/devices", headers=me(), json=body)
    assert device.status_code == 200
    fp = device.json()["fingerprint"]
    assert device.json()["user_id"] == BUYER
    assert device.json()["is_trusted"] is False
    assert api.post("/v1/devices", headers=me(), json={**body, "user_id": OTHER}).status_code == (
        422
    )
    for _ in range(2):
        trusted = api.post(f"/v1/devices/{fp}/verify", headers=me(), json={"succeeded": True})
    assert trusted.json()["is_trusted"] is True
    assert [d["fingerprint"] for d in api.get("/v1/devices", headers=me()).json()] == [fp]
    assert api.get("/v1/devices", headers=them()).json() == []
    stolen = api.post(f"/v1/devices/{fp}/verify", headers=them(), json={"succeeded": True})
    assert stolen.status_code == 404
    assert api.delete(f"/v1/devices/{fp}", headers=them()).status_code == 404
    assert api.delete(f"/v1/devices/{fp}", headers=me()).status_code == 204
    assert api.delete(f"/v1/devices/{fp}", headers=me()).status_code == 404
    assert api.delete("/v1/devices/not-a-fingerprint", headers=me()).status_code == 422


def test_links_add_list_end_remove(api: TestClient) -> None:
    body = {"entity_type": "order", "entity_id": "88231", "role": "owner"}
    link = api.post("/v1/links", headers=me(), json=body)
    assert link.status_code == 200
    link_id = link.json()["id"]
    ended_body = {**body, "entity_type": "refund", "entity_id": "RF20260629001"}
    past = datetime.now(UTC) - timedelta(days=30)
    old = api.post(
        "/v1/links",
        headers=me(),
        json={**ended_body, "effective_from": past.isoformat(), "effective_to": past.isoformat()},
    )
    assert old.status_code == 400, "an empty validity range is the SDK's typed error"
    assert api.post("/v1/links", headers=me(), json={**body, "user_id": BUYER}).status_code == 422
    assert api.post("/v1/links", headers=me(), json={**body, "role": "thief"}).status_code == 422
    listed = api.get("/v1/links", headers=me()).json()
    assert [x["entity_id"] for x in listed] == ["88231"]
    assert api.get("/v1/links", headers=them()).json() == []
    assert api.post(f"/v1/links/{link_id}/end", headers=them(), json={}).status_code == 404
    assert api.delete(f"/v1/links/{link_id}", headers=them()).status_code == 404
    ended = api.post(f"/v1/links/{link_id}/end", headers=me(), json={})
    assert ended.status_code == 200
    assert ended.json()["effective_to"] is not None
    assert api.get("/v1/links?valid_now=true", headers=me()).json() == []
    assert len(api.get("/v1/links?valid_now=false", headers=me()).json()) == 1
    assert api.delete(f"/v1/links/{link_id}", headers=me()).status_code == 204
    assert api.delete(f"/v1/links/{link_id}", headers=me()).status_code == 404


def test_facts_put_get_list_delete_mask_pii(api: TestClient) -> None:
    body = {"value": f"收货电话 {PHONE}", "lifecycle_policy": "explicit", "source": "客服"}
    put = api.put("/v1/facts/收货电话", headers=me(), json=body)
    assert put.status_code == 200
    assert PHONE not in put.text, "PII in a fact value is stored and returned masked"
    assert api.put("/v1/facts/notify/channel", headers=me(), json={**body, "value": "微信"}).json()[
        "key"
    ] == ("notify/channel")
    assert sorted(f["key"] for f in api.get("/v1/facts", headers=me()).json()) == [
        "notify/channel",
        "收货电话",
    ]
    assert api.get("/v1/facts/notify/channel", headers=me()).json()["value"] == "微信"
    assert api.get("/v1/facts", headers=them()).json() == []
    assert api.get("/v1/facts/收货电话", headers=them()).status_code == 404
    assert api.delete("/v1/facts/收货电话", headers=them()).status_code == 404
    smuggled = {**body, "user_id": BUYER}
    assert api.put("/v1/facts/收货电话", headers=them(), json=smuggled).status_code == 422
    no_policy = {"value": "微信"}
    assert api.put("/v1/facts/notify", headers=me(), json=no_policy).status_code == 422
    assert api.delete("/v1/facts/收货电话", headers=me()).status_code == 204
    assert api.get("/v1/facts/收货电话", headers=me()).status_code == 404


def test_context_is_the_token_users_block(api: TestClient) -> None:
    memory = {"text": "订单 88231 退款 RF20260629001 预计三天到账", "lifecycle_policy": "implicit"}
    assert api.post("/v1/memories", headers=me(), json=memory).status_code == 201
    ctx = api.post("/v1/context", headers=me(), json={"query": "退款到账了吗", "max_tokens": 600})
    assert ctx.status_code == 200
    assert "RF20260629001" in ctx.json()["text"]
    assert {i["section"] for i in ctx.json()["items"]} >= {"profile", "record"}
    theirs = api.post("/v1/context", headers=them(), json={"query": "退款到账了吗"})
    assert "RF20260629001" not in theirs.text
    bad = {"query": "退款", "user_id": BUYER}
    assert api.post("/v1/context", headers=them(), json=bad).status_code == 422


def test_session_turns_and_end_never_return_clear_pii(api: TestClient) -> None:
    turns = [
        {"role": "user", "text": f"订单 88231 的扫地机坏了，我要退款，电话 {PHONE}"},
        {
            "role": "assistant",
            "text": "已为您申请退款，退款编号 RF20260629001，预计 1-3 个工作日到账",
        },
    ]
    appended = api.post("/v1/sessions/s-88231/turns", headers=me(), json={"turns": turns[:1]})
    assert appended.status_code == 200
    assert len(appended.json()["memory_ids"]) == 1
    ended = api.post("/v1/sessions/s-88231/end", headers=me(), json={"transcript": turns[1:]})
    assert ended.status_code == 200
    record = ended.json()
    assert PHONE not in ended.text, "the summary's clear PII is never serialised"
    assert "pii" not in record
    assert "RF20260629001" in record["summary"]
    assert record["session_id"] == "s-88231"
    assert any(e["text"] == "88231" for e in record["entities"])
    got = api.get(f"/v1/memories/{record['memory_id']}", headers=me())
    assert got.status_code == 200
    assert api.get(f"/v1/memories/{record['memory_id']}", headers=them()).status_code == 404
    smuggled = {"transcript": turns, "user_id": BUYER}
    assert api.post("/v1/sessions/s-1/end", headers=them(), json=smuggled).status_code == 422
    bad_role = {"turns": [{"role": "hacker", "text": "x"}]}
    assert api.post("/v1/sessions/s-1/turns", headers=me(), json=bad_role).status_code == 422


def test_the_sandbox_header_flow(api: TestClient) -> None:
    opened = api.post("/v1/sessions/s-7/sandbox", headers=me())
    assert opened.status_code == 200
    box = opened.json()["id"]
    assert opened.json()["status"] == "active"
    assert api.post("/v1/sessions/s-7/sandbox", headers=me()).json()["id"] == box, "resumed"
    inside = {**me(), "X-Dualtrack-Sandbox": box}
    note = {"text": "沙箱里的临时需求：想把订单 88231 换成 S20", "lifecycle_policy": "implicit"}
    kept = api.post("/v1/memories", headers=inside, json=note).json()["memory_id"]
    dropped = api.post(
        "/v1/memories", headers=inside, json={**note, "text": "沙箱里随口一说：想要红色 S20"}
    ).json()["memory_id"]
    query = {"query": "S20"}
    assert {
        h["memory_id"] for h in api.post("/v1/search", headers=inside, json=query).json()["hits"]
    } == {kept, dropped}
    assert api.post("/v1/search", headers=me(), json=query).json()["hits"] == []
    no_header = api.post(
        "/v1/sessions/s-7/sandbox/merge", headers=me(), json={"memory_ids": [kept]}
    )
    assert no_header.status_code == 400
    foreign = {**them(), "X-Dualtrack-Sandbox": box}
    stolen = api.post(
        "/v1/sessions/s-7/sandbox/merge", headers=foreign, json={"memory_ids": [kept]}
    )
    assert stolen.status_code in (404, 409)
    assert api.post("/v1/sessions/s-7/sandbox/discard", headers=foreign).status_code in (404, 409)
    own_box = api.post("/v1/sessions/s-7/sandbox", headers=them()).json()["id"]
    assert own_box != box
    in_own = {**them(), "X-Dualtrack-Sandbox": own_box}
    taken = api.post("/v1/sessions/s-7/sandbox/merge", headers=in_own, json={"memory_ids": [kept]})
    assert taken.json() == {"merged": []}, "another user's memory id merges nothing"
    merged = api.post("/v1/sessions/s-7/sandbox/merge", headers=inside, json={"memory_ids": [kept]})
    assert merged.json() == {"merged": [kept]}
    outside = api.post("/v1/search", headers=me(), json=query).json()["hits"]
    assert [h["memory_id"] for h in outside] == [kept]
    assert api.post("/v1/sessions/s-7/sandbox/discard", headers=inside).json() == {"discarded": 1}
    assert api.get(f"/v1/memories/{dropped}", headers=me()).status_code == 404
    assert api.get(f"/v1/memories/{kept}", headers=me()).status_code == 200
    fresh = api.post("/v1/sessions/s-7/sandbox", headers=me()).json()
    forked = api.post("/v1/sessions/s-7/sandbox/fork", headers=me()).json()
    assert forked["parent_id"] == fresh["id"]
    assert forked["id"] != fresh["id"]


def test_feedback_on_the_users_own_memories_only(api: TestClient) -> None:
    memory = {"text": "偏好微信通知，不要短信", "lifecycle_policy": "implicit"}
    mid = api.post("/v1/memories", headers=me(), json=memory).json()["memory_id"]
    clicked = api.post("/v1/feedback", headers=me(), json={"memory_id": mid, "action": "click"})
    assert clicked.status_code == 200
    assert clicked.json()["kind"] == "fragment"
    assert clicked.json()["memory_id"] == mid
    theirs = api.post("/v1/feedback", headers=them(), json={"memory_id": mid, "action": "reject"})
    assert theirs.status_code == 404
    unknown = api.post("/v1/feedback", headers=me(), json={"memory_id": mid, "action": "hack"})
    assert unknown.status_code == 422
    smuggled = {"memory_id": mid, "action": "click", "user_id": BUYER}
    assert api.post("/v1/feedback", headers=them(), json=smuggled).status_code == 422
    missing = {"memory_id": str(uuid.uuid4()), "action": "click"}
    assert api.post("/v1/feedback", headers=me(), json=missing).status_code == 404


EXPORT = ["account:export"]


def test_export_needs_its_own_scope_and_holds_the_users_pii_in_clear(api: TestClient) -> None:
    memory = {"text": f"我的手机号是 {PHONE}，订单 88231", "lifecycle_policy": "sensitive"}
    assert api.post("/v1/memories", headers=me(), json=memory).status_code == 201
    reader = api.get("/v1/export", headers=me(scopes=["memory:read"]))
    assert reader.status_code == 403, "an agent reading memories does not get the clear PII"
    assert PHONE not in reader.text
    exported = api.get("/v1/export", headers=me(scopes=EXPORT))
    assert exported.status_code == 200
    assert exported.headers["Cache-Control"] == "no-store"
    data = exported.json()
    assert data["user_id"] == BUYER
    assert [p["value"] for p in data["pii"]] == [PHONE], "decrypted for the user it belongs to"
    assert len(data["memories"]) == 1
    theirs = api.get("/v1/export", headers=them(scopes=EXPORT))
    assert PHONE not in theirs.text
    assert theirs.json()["memories"] == []


def test_one_export_per_user_a_minute_by_default(api: TestClient) -> None:
    assert api.get("/v1/export", headers=me(scopes=EXPORT)).status_code == 200
    again = api.get("/v1/export", headers=me(scopes=EXPORT, agent="account-portal"))
    assert again.status_code == 429, "per user, whichever agent asks"
    assert again.json()["error"]["code"] == "rate_limited"
    assert 50 <= int(again.headers["Retry-After"]) <= 60
    assert api.get("/v1/export", headers=them(scopes=EXPORT)).status_code == 200


def test_data_routes_are_not_cached(api: TestClient) -> None:
    fact = {"value": {"channel": "wechat"}, "lifecycle_policy": "explicit"}
    assert api.put("/v1/facts/contact", headers=me(), json=fact).status_code == 200
    for path in ("/v1/memories", "/v1/facts", "/v1/facts/contact", "/v1/profile", "/v1/devices"):
        answer = api.get(path, headers=me())
        assert answer.status_code == 200, path
        assert answer.headers["Cache-Control"] == "no-store", path


def test_erasure_needs_the_erase_scope_and_erases(api: TestClient) -> None:
    memory = {"text": "订单 88231 退款中", "lifecycle_policy": "implicit"}
    api.post("/v1/memories", headers=me(), json=memory)
    rw = me(scopes=["memory:read", "memory:write"])
    assert api.delete("/v1/me", headers=rw).status_code == 403
    assert api.delete("/v1/me", headers=me()).status_code == 204
    assert api.get("/v1/profile", headers=me()).status_code == 404
    assert api.get("/v1/export", headers=me(scopes=EXPORT)).status_code == 404
    assert api.delete("/v1/me", headers=me()).status_code == 204, "idempotent"
    assert api.get("/v1/profile", headers=them()).status_code == 200, "only the token's user"


def test_scopes_read_write_erase_and_ops(api: TestClient) -> None:
    read = me(scopes=["memory:read"])
    write = me(scopes=["memory:write"])
    body = {"device_id": "pc-01", "os": "Windows 11", "browser": "Edge"}
    assert api.get("/v1/devices", headers=read).status_code == 200
    assert api.post("/v1/devices", headers=read, json=body).status_code == 403
    assert api.get("/v1/devices", headers=write).status_code == 403
    assert api.post("/v1/devices", headers=write, json=body).status_code == 200
    assert api.get("/v1/export", headers=write).status_code == 403
    assert api.post("/v1/context", headers=write, json={"query": "退款"}).status_code == 403
    assert api.post("/v1/sessions/s-1/sandbox", headers=read).status_code == 403
    assert api.delete("/v1/me", headers=write).status_code == 403
    victim = token(sub=BUYER)
    jti = jwt.decode(victim, options={"verify_signature": False})["jti"]
    revocation = {"jti": jti, "expires_at": (datetime.now(UTC) + timedelta(hours=1)).isoformat()}
    assert api.post("/v1/ops/revocations", headers=me(), json=revocation).status_code == 403
    ops = auth(token(sub="operator-01", agent="ops-console", scopes=["ops"]))
    assert api.get("/v1/profile", headers=ops).status_code == 403, "ops is not a user scope"
    assert api.get("/v1/profile", headers=auth(victim)).status_code == 200
    assert api.post("/v1/ops/revocations", headers=ops, json=revocation).status_code == 204
    assert api.get("/v1/profile", headers=auth(victim)).status_code == 401
    assert api.post("/v1/ops/revocations", headers=ops, json={"jti": jti}).status_code == 422
