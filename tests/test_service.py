"""The REST service in-process over ASGI: tokens, scopes, the user from `sub`, limits."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import jwt
import pytest
from fastapi.testclient import TestClient

from sdk import MemoryClient
from service import create_app
from service.settings import ServiceSettings
from service.tokens import mint

SECRET = "test-secret-0123456789abcdef0123456789"
SERVICE = ServiceSettings(
    jwt_secret=SECRET,  # type: ignore[arg-type]
    jwt_audience="dualtrack",
    rate_per_s=1000,
    rate_burst=1000,
    unauthorized_per_s=1000,
    unauthorized_burst=1000,
    max_body_bytes=64 * 1024,
)
ALL = ["memory:read", "memory:write", "memory:erase"]


def token(sub: str = "buyer-001", agent: str | None = "refund-agent", **kw: object) -> str:
    return mint(SERVICE, sub=sub, agent=agent, scopes=kw.pop("scopes", ALL), **kw)  # type: ignore[arg-type]


def auth(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


@pytest.fixture
def api(mem: MemoryClient) -> Iterator[TestClient]:
    with TestClient(create_app(service=SERVICE, client=mem)) as client:
        yield client


def test_put_creates_the_user_of_the_token_and_only_that_one(api: TestClient) -> None:
    assert api.get("/v1/profile", headers=auth(token())).json()["error"]["code"] == (
        "user_not_found"
    )
    created = api.put("/v1/profile", headers=auth(token()))
    assert created.status_code == 200
    assert created.json()["user_id"] == "buyer-001"
    assert created.headers["ETag"] == '"1"'
    other = api.get("/v1/profile", headers=auth(token(sub="buyer-002")))
    assert other.status_code == 404


def test_patch_with_a_stale_if_match_is_412_with_the_current_version(api: TestClient) -> None:
    api.put("/v1/profile", headers=auth(token()))
    ok = api.patch(
        "/v1/profile", headers={**auth(token()), "If-Match": '"1"'}, json={"language": "en-US"}
    )
    assert ok.status_code == 200
    assert ok.json()["version"] == 2
    stale = api.patch(
        "/v1/profile", headers={**auth(token()), "If-Match": '"1"'}, json={"language": "zh-CN"}
    )
    assert stale.status_code == 412
    assert stale.json()["error"]["code"] == "version_conflict"
    assert stale.json()["error"]["current_version"] == 2


def test_write_search_get_delete_for_the_token_user_only(api: TestClient) -> None:
    for sub in ("buyer-001", "buyer-002"):
        api.put("/v1/profile", headers=auth(token(sub=sub)))
    body = {"text": "订单 88231 退款 RF20260629001 预计三天到账", "lifecycle_policy": "implicit"}
    written = api.post("/v1/memories", headers=auth(token()), json=body)
    assert written.status_code == 201
    mid = written.json()["memory_id"]
    hits = api.post("/v1/search", headers=auth(token()), json={"query": "退款到账了吗"})
    assert [h["memory_id"] for h in hits.json()["hits"]] == [mid]
    assert api.get(f"/v1/memories/{mid}", headers=auth(token())).json()["agent_id"] == (
        "refund-agent"
    )
    mine = api.get(f"/v1/memories/{mid}", headers=auth(token(sub="buyer-002")))
    assert mine.status_code == 404, "another user's memory id in the path finds nothing"
    stolen = api.post("/v1/search", headers=auth(token(sub="buyer-002")), json={"query": "退款"})
    assert stolen.json()["hits"] == []
    smuggled = api.post(
        "/v1/memories", headers=auth(token(sub="buyer-002")), json={**body, "user_id": "buyer-001"}
    )
    assert smuggled.status_code == 422, "a user id in the body is refused, never trusted"
    gone = api.delete(f"/v1/memories/{mid}", headers=auth(token(sub="buyer-002")))
    assert gone.status_code == 404
    assert api.delete(f"/v1/memories/{mid}", headers=auth(token())).status_code == 204


def test_a_write_without_a_policy_is_422(api: TestClient) -> None:
    api.put("/v1/profile", headers=auth(token()))
    missing = api.post("/v1/memories", headers=auth(token()), json={"text": "记住我的邮箱"})
    assert missing.status_code == 422
    assert missing.json()["error"]["code"] == "invalid_input"


def _forged(claims: dict[str, object], key: str = "wrong-secret-0123456789abcdef012") -> str:
    return jwt.encode(claims, key, algorithm="HS256")


def _none_alg(claims: dict[str, object]) -> str:
    def part(d: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


def test_bad_tokens_are_401_and_missing_scopes_403(api: TestClient) -> None:
    now = datetime.now(UTC)
    good = {"sub": "buyer-001", "azp": "a", "aud": "dualtrack", "scope": " ".join(ALL)}
    exp = int((now + timedelta(hours=1)).timestamp())
    cases = {
        "expired": token(now=now - timedelta(hours=2)),
        "not yet valid": jwt.encode(
            {**good, "exp": exp, "nbf": exp - 60}, SECRET, algorithm="HS256"
        ),
        "forged": _forged({**good, "exp": exp}),
        "alg none": _none_alg({**good, "exp": exp}),
        "wrong audience": jwt.encode({**good, "exp": exp, "aud": "other"}, SECRET),
        "no exp": jwt.encode(good, SECRET, algorithm="HS256"),
        "malformed": "not.a.jwt",
        "bad sub": jwt.encode({**good, "exp": exp, "sub": "bad user!"}, SECRET),
        "absurd exp": jwt.encode({**good, "exp": 2**62}, SECRET, algorithm="HS256"),
    }
    for name, tok in cases.items():
        answer = api.get("/v1/profile", headers=auth(tok))
        assert answer.status_code == 401, name
        assert answer.json()["error"]["code"] == "unauthorized", name
    assert api.get("/v1/profile").status_code == 401
    read_only = token(scopes=["memory:read"])
    answer = api.post(
        "/v1/memories", headers=auth(read_only), json={"text": "x", "lifecycle_policy": "explicit"}
    )
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "forbidden"


def test_a_revoked_token_is_refused_before_it_expires(api: TestClient, mem: MemoryClient) -> None:
    tok = token()
    api.put("/v1/profile", headers=auth(tok))
    jti = jwt.decode(tok, options={"verify_signature": False})["jti"]
    mem.admin.revoked_tokens.revoke(jti, datetime.now(UTC) + timedelta(hours=1))
    api.app.state.verifier.forget_cache()  # type: ignore[attr-defined]
    assert api.get("/v1/profile", headers=auth(tok)).status_code == 401
    assert api.get("/v1/profile", headers=auth(token())).status_code == 200


def test_limits_give_413_422_and_429(mem: MemoryClient) -> None:
    tight = SERVICE.model_copy(update={"rate_per_s": 0.01, "rate_burst": 3})
    with TestClient(create_app(service=tight, client=mem)) as api:
        api.put("/v1/profile", headers=auth(token()))
        big = {"text": "退" * 70_000, "lifecycle_policy": "explicit"}
        assert api.post("/v1/memories", headers=auth(token()), json=big).status_code == 413
        answers = [api.get("/v1/profile", headers=auth(token())) for _ in range(4)]
        limited = [a for a in answers if a.status_code == 429]
        assert limited
        assert limited[0].json()["error"]["code"] == "rate_limited"
        assert int(limited[0].headers["Retry-After"]) >= 1
        other = api.get("/v1/profile", headers=auth(token(agent="shopping-agent")))
        assert other.status_code != 429, "buckets are per agent"


def test_refused_tokens_are_limited_per_address_and_probes_never(mem: MemoryClient) -> None:
    tight = SERVICE.model_copy(update={"unauthorized_per_s": 0.001, "unauthorized_burst": 3})
    forged = {"Authorization": "Bearer not.a.jwt"}
    with TestClient(create_app(service=tight, client=mem)) as api:
        refused = [api.get("/v1/profile", headers=forged).status_code for _ in range(4)]
        assert refused == [401, 401, 401, 429]
        assert api.get("/v1/profile", headers=auth(token())).status_code == 404, (
            "a valid token from that address is served"
        )
        spoofed = {**forged, "X-Forwarded-For": "198.51.100.7"}
        assert api.get("/v1/profile", headers=spoofed).status_code == 429, (
            "X-Forwarded-For from a peer that is no configured proxy is ignored"
        )
        for path in ("/healthz", "/readyz"):
            assert {api.get(path).status_code for _ in range(30)} == {200}, path
    behind = tight.model_copy(update={"trusted_proxies": "testclient"})
    with TestClient(create_app(service=behind, client=mem)) as api:
        for client in ("198.51.100.7", "198.51.100.8"):
            named = {**forged, "X-Forwarded-For": client}
            refused = [api.get("/v1/profile", headers=named).status_code for _ in range(4)]
            assert refused == [401, 401, 401, 429], "a trusted proxy's client is the address"


def test_the_sandbox_header_scopes_reads_and_writes(api: TestClient, mem: MemoryClient) -> None:
    api.put("/v1/profile", headers=auth(token()))
    box = mem.for_agent("refund-agent").sandboxes.open("buyer-001", "s-1")
    headers = {**auth(token()), "X-Dualtrack-Sandbox": str(box.id)}
    body = {"text": "沙箱里的临时需求：想换 S20", "lifecycle_policy": "implicit"}
    assert api.post("/v1/memories", headers=headers, json=body).status_code == 201
    inside = api.post("/v1/search", headers=headers, json={"query": "S20"}).json()["hits"]
    outside = api.post("/v1/search", headers=auth(token()), json={"query": "S20"}).json()["hits"]
    assert len(inside) == 1
    assert outside == []
    foreign = {**auth(token(sub="buyer-002")), "X-Dualtrack-Sandbox": str(box.id)}
    api.put("/v1/profile", headers=auth(token(sub="buyer-002")))
    for answer in (
        api.post("/v1/search", headers=foreign, json={"query": "S20"}),
        api.post("/v1/memories", headers=foreign, json=body),
    ):
        assert answer.status_code == 404, "another user's sandbox is not found"
        assert answer.json()["error"]["code"] == "sandbox_not_found"
    bad = {**auth(token()), "X-Dualtrack-Sandbox": str(uuid.uuid4())[:8]}
    assert api.get("/v1/profile", headers=bad).status_code == 400
