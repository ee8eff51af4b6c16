"""The ops API (``/v1/ops/*``), the probes and ``/metrics``, in-process over ASGI.

Each endpoint's numbers are checked against what the test wrote. The audit log
outlives each test (it is append-only), so counts read from it are compared
as differences from a baseline taken first.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from policies.errors import InvalidField
from policies.lifecycle import LifecyclePolicy
from sdk import BusinessState, MemoryClient, MemoryInput, Settings
from sdk.ops import TenantCounts
from service import create_app
from service.settings import ServiceSettings
from service.tokens import mint
from tests.conftest import key_line

SECRET = "ops-test-secret-0123456789abcdef0123456"
SERVICE = ServiceSettings(
    jwt_secret=SECRET,  # type: ignore[arg-type]
    jwt_audience="dualtrack",
    rate_per_s=1000,
    rate_burst=1000,
)
OPS_ROUTES = ["expiry", "confidence", "activity", "outbox", "tenants", "keys", "verifiers"]
IMPLICIT, EXPLICIT = LifecyclePolicy.IMPLICIT, LifecyclePolicy.EXPLICIT
BUYER = "buyer-ops-1"


def bearer(
    sub: str = "oncall-1", agent: str | None = "ops-console", scopes: Any = ("ops",)
) -> dict[str, str]:
    return {"Authorization": f"Bearer {mint(SERVICE, sub=sub, agent=agent, scopes=scopes)}"}


OPS = bearer()
USER = bearer(sub=BUYER, agent="refund-agent", scopes=["memory:read", "memory:write"])


@pytest.fixture
def api(mem: MemoryClient) -> Iterator[TestClient]:
    with TestClient(create_app(service=SERVICE, client=mem)) as client:
        yield client


def ops(api: TestClient, name: str, **params: Any) -> dict[str, Any]:
    response = api.get(f"/v1/ops/{name}", headers=OPS, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def day_of(report: dict[str, Any], day: date) -> dict[str, Any]:
    found: dict[str, Any] = next(d for d in report["days"] if d["day"] == day.isoformat())
    return found


def metric_values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition, by name and sorted labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_frequent(mem: MemoryClient, user: str) -> None:
    """Five sessions in 30 days: a frequent user, whose inferences live 30 days."""
    mem.write_many(
        [
            MemoryInput(
                user_id=user,
                text="查订单 88231 的物流",
                lifecycle_policy=EXPLICIT,
                session_id=f"s-{i}",
            )
            for i in range(5)
        ],
        progress=False,
    )


# -- access ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", OPS_ROUTES)
def test_ops_routes_need_the_ops_scope(api: TestClient, name: str) -> None:
    assert api.get(f"/v1/ops/{name}").status_code == 401
    refused = api.get(f"/v1/ops/{name}", headers=USER)
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden"
    erase = bearer(sub=BUYER, scopes=["memory:read", "memory:write", "memory:erase"])
    assert api.get(f"/v1/ops/{name}", headers=erase).status_code == 403
    assert api.get(f"/v1/ops/{name}", headers=OPS).status_code == 200


def test_probes_and_the_page_need_no_token(api: TestClient) -> None:
    for path in (
        "/readyz",
        "/healthz",
        "/ops",
        "/ops/static/ops.js",
        "/ops/static/ops.css",
    ):
        assert api.get(path).status_code == 200, path
    page = api.get("/ops")
    assert page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp
    assert "connect-src 'self'" in csp
    assert api.get("/ops/static/secrets.txt").status_code == 404
    assert api.get("/ops/static/..%2Fapp.py").status_code == 404


def test_metrics_need_an_ops_token_unless_configured_open(mem: MemoryClient) -> None:
    with TestClient(create_app(service=SERVICE, client=mem)) as api:
        assert api.get("/metrics").status_code == 401
        assert api.get("/metrics", headers=USER).status_code == 403
        scraped = api.get("/metrics", headers=OPS)
        assert scraped.status_code == 200
        assert scraped.headers["Cache-Control"] == "no-store"
        assert "dualtrack_store_up" in scraped.text
    open_metrics = SERVICE.model_copy(update={"metrics_access": "open"})
    with TestClient(create_app(service=open_metrics, client=mem)) as api:
        assert api.get("/metrics").status_code == 200


def test_the_page_fetches_nothing_from_another_origin(api: TestClient) -> None:
    for path in ("/ops", "/ops/static/ops.js", "/ops/static/ops.css"):
        text = api.get(path).text
        assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
        assert "https://" not in text
        assert "//cdn" not in text


# -- the numbers -------------------------------------------------------------------------


def test_expiry_shows_implicit_memories_on_the_day_they_expire(
    api: TestClient, mem: MemoryClient
) -> None:
    assert api.put("/v1/profile", headers=USER).status_code == 200
    before = (datetime.now(UTC) + timedelta(days=7)).date()
    texts = ["订单 88231 想改地址", "退款 RF20260629001 进度", "prefers text over video"]
    for text in texts:
        body = {"text": text, "lifecycle_policy": "implicit"}
        assert api.post("/v1/memories", headers=USER, json=body).status_code == 201
    api.post(
        "/v1/memories", headers=USER, json={"text": "我的邮箱要换", "lifecycle_policy": "explicit"}
    )
    mem.facts.put(BUYER, "内容偏好", "图文", lifecycle_policy=IMPLICIT)
    after = (datetime.now(UTC) + timedelta(days=7)).date()

    report = ops(api, "expiry")
    assert report["horizon_days"] == 30
    assert len(report["days"]) == 31
    assert report["days"][0]["day"] == datetime.fromisoformat(report["as_of"]).date().isoformat()
    assert report["total"] == 4
    busy = [d for d in report["days"] if d["total"]]
    assert busy[0]["day"] in {before.isoformat(), after.isoformat()}
    assert sum(d["by_policy"]["implicit"] for d in report["days"]) == 4
    assert sum(d["fragments"] for d in report["days"]) == 3
    assert sum(d["facts"] for d in report["days"]) == 1
    assert all(d["by_policy"]["explicit"] == 0 for d in report["days"])
    if before == after:
        assert day_of(report, before)["by_policy"]["implicit"] == 4
    assert ops(api, "expiry", days=3)["total"] == 0  # nothing expires within 3 days
    assert api.get("/v1/ops/expiry", headers=OPS, params={"days": 0}).status_code == 422


def test_a_frequent_users_inferences_expire_after_30_days(
    api: TestClient, mem: MemoryClient
) -> None:
    mem.profiles.ensure(BUYER)
    make_frequent(mem, BUYER)
    mem.write(BUYER, "下周出差，暂不报销", lifecycle_policy=IMPLICIT)
    report = ops(api, "expiry")
    last = report["days"][-1]
    second_last = report["days"][-2]
    assert last["by_policy"]["implicit"] + second_last["by_policy"]["implicit"] == 1
    assert report["total"] == 1


def test_confidence_histogram_and_pending_queue(api: TestClient, mem: MemoryClient) -> None:
    mem.profiles.ensure(BUYER)
    mem.write(BUYER, "订单 88231 已签收", lifecycle_policy=EXPLICIT)
    mem.facts.put(BUYER, "通知偏好", "微信", lifecycle_policy=IMPLICIT, confidence=0.2)
    wobbly = mem.facts.put(BUYER, "内容偏好", "视频", lifecycle_policy=IMPLICIT, confidence=0.31)
    assert mem.feedback(BUYER, wobbly.id, action="skip").status == "pending_confirmation"
    mem.facts.put(BUYER, "语言", "中文", lifecycle_policy=IMPLICIT, confidence=0.75)

    report = ops(api, "confidence")
    assert report["pending_below"] == pytest.approx(0.3)
    assert len(report["buckets"]) == 10
    assert report["total"] == 4
    by_bucket = {round(b["lower"], 1): b for b in report["buckets"]}
    assert by_bucket[0.2]["by_status"]["pending_confirmation"] == 2  # 0.2 and 0.2945
    assert by_bucket[0.7]["by_status"]["active"] == 1
    assert by_bucket[0.9]["by_status"]["active"] == 1  # confidence 1.0 is in the last bucket
    assert by_bucket[0.9]["fragments"] == 1
    pending = report["pending"]
    assert (pending["fragments"], pending["facts"], pending["total"]) == (0, 2, 2)
    assert pending["oldest_since"] is not None
    assert 0 <= pending["oldest_age_s"] < 600
    assert set(report["statuses"]) == {"active", "pending_confirmation", "needs_review"}
    assert len(ops(api, "confidence", buckets=4)["buckets"]) == 4
    for text in ("通知偏好", "微信", "视频"):
        assert text not in str(report)


def test_expiry_lists_each_policys_ttl_and_the_memories_that_never_expire(
    api: TestClient, mem: MemoryClient
) -> None:
    """The lifetimes are ``policies.ttl``'s table; the never-expiring counts are the live
    EXPLICIT, SENSITIVE and BUSINESS memories (an IMPLICIT one always expires)."""
    empty = ops(api, "expiry")
    assert empty["never_expiring"] == dict.fromkeys(empty["policies"], 0)
    ttl = {(r["policy"], r["frequent_user"]): r for r in empty["ttl"]}
    for policy in ("explicit", "sensitive", "business"):
        assert ttl[(policy, None)] == {
            "policy": policy,
            "kinds": None,
            "frequent_user": None,
            "days": None,
            "renewed_on_use": False,
        }
    assert ttl[("implicit", False)]["days"] == 7
    assert ttl[("implicit", True)]["days"] == 30
    assert ttl[("implicit", True)]["renewed_on_use"] is True
    assert ttl[("implicit", None)] == {
        "policy": "implicit",
        "kinds": ["interaction_record"],
        "frequent_user": None,
        "days": 90,
        "renewed_on_use": False,
    }
    assert len(empty["ttl"]) == 6

    mem.profiles.ensure(BUYER)
    mem.write(BUYER, "请记住我的邮箱是 a@b.com", lifecycle_policy=EXPLICIT)
    mem.write(BUYER, "以后都用微信通知我", lifecycle_policy=EXPLICIT)
    mem.facts.put(BUYER, "通知偏好", "微信", lifecycle_policy=EXPLICIT)
    mem.facts.put(BUYER, "临时地址", "公司", lifecycle_policy=IMPLICIT)
    mem.links.add(BUYER, entity_type="order", entity_id="88231", role="owner")
    report = ops(api, "expiry")
    assert report["never_expiring"]["explicit"] == 3
    assert report["never_expiring"]["implicit"] == 0
    assert report["never_expiring_total"] == sum(report["never_expiring"].values()) == 3
    assert report["total"] == 1  # the implicit fact, in 7 days


def _end_of(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, 23, 59, 59, tzinfo=UTC)


def _forecast_against_the_job(mem: MemoryClient, at: datetime) -> list[int]:
    """The forecast at ``at``, then the decay job run at the end of each of its days (the
    last one at the horizon): the memories each run moves to pending must be the
    forecast's count for that day. Returns the forecast's counts."""
    forecast = mem.admin.ops.confidence(now=at).forecast
    assert forecast.horizon_days == 7
    assert len(forecast.days) == 8
    horizon = at + timedelta(days=7)
    moved = [mem.admin.decay(now=min(_end_of(d.day), horizon)).pending for d in forecast.days]
    expected = [d.total for d in forecast.days]
    assert moved == expected
    assert forecast.total == sum(expected)
    return expected


def test_the_decay_forecast_is_what_the_decay_job_then_does(mem: MemoryClient) -> None:
    """Inferred memories of a frequent user (30-day lifetimes, so they decay) at different
    confidences: which cross 0.3 within the next 7 days, and on which day, if unused."""
    frequent, passing = "buyer-ops-2", "buyer-ops-3"
    for user in (frequent, passing):
        mem.profiles.ensure(user)
    make_frequent(mem, frequent)
    written = datetime.now(UTC)
    put = mem.facts.put
    put(frequent, "通知偏好", "微信", lifecycle_policy=IMPLICIT, confidence=0.4)  # 6 steps
    put(frequent, "内容偏好", "图文", lifecycle_policy=IMPLICIT, confidence=0.35)  # 4 steps
    put(frequent, "尺码", "XL", lifecycle_policy=IMPLICIT, confidence=0.9)  # 22 steps
    put(frequent, "语言", "中文", lifecycle_policy=IMPLICIT, confidence=1.0)  # swept first
    put(frequent, "城市", "杭州", lifecycle_policy=IMPLICIT, confidence=0.25)  # pending now
    put(frequent, "邮箱", "a@b.com", lifecycle_policy=EXPLICIT, confidence=0.35)  # no decay
    put(passing, "内容偏好", "视频", lifecycle_policy=IMPLICIT, confidence=0.35)  # 7 days
    note = mem.write(frequent, "下周出差，暂不报销", lifecycle_policy=IMPLICIT)
    for _ in range(18):  # 0.95**18 = 0.397: a fragment crossing after 6 steps too
        mem.feedback(frequent, note, action="skip")

    # day 8 unused: the first step is due; 0.35 crosses on day 11, 0.4 and the note on 13
    report = mem.admin.ops.confidence(now=written + timedelta(days=8))
    assert (report.forecast.fragments, report.forecast.facts) == (1, 2)
    week = _forecast_against_the_job(mem, written + timedelta(days=8))
    assert sum(week) == 3
    assert week[3] == 1  # day 11
    assert week[5] == 2  # day 13

    # day 24: the 0.9 fact (0.597 after the runs above) crosses on day 29; the 1.0 one would
    # cross on day 31, but it expires on day 30, unused
    later = _forecast_against_the_job(mem, written + timedelta(days=24))
    assert later == [0, 0, 0, 0, 0, 1, 0, 0]


def test_the_forecast_through_the_api(api: TestClient, mem: MemoryClient) -> None:
    mem.profiles.ensure(BUYER)
    make_frequent(mem, BUYER)
    mem.facts.put(BUYER, "通知偏好", "微信", lifecycle_policy=IMPLICIT, confidence=0.4)
    report = ops(api, "confidence")
    forecast = report["forecast"]
    assert forecast["horizon_days"] == 7
    assert len(forecast["days"]) == 8
    assert forecast["days"][0]["day"] == report["as_of"][:10]
    assert forecast["total"] == 0  # just used: the decay starts on day 8
    assert len(ops(api, "confidence", forecast_days=30)["forecast"]["days"]) == 31
    assert ops(api, "confidence", forecast_days=30)["forecast"]["facts"] == 1  # day 13
    bad = api.get("/v1/ops/confidence", headers=OPS, params={"forecast_days": 0})
    assert bad.status_code == 422


def test_activity_counts_sweeps_decays_and_renewals_per_day(
    api: TestClient, mem: MemoryClient
) -> None:
    start = ops(api, "activity")
    today = date.fromisoformat(start["days"][-1]["day"])
    assert len(start["days"]) == 30
    base = day_of(start, today)

    mem.profiles.ensure(BUYER)
    mem.write(BUYER, "订单 88231 想改地址", lifecycle_policy=IMPLICIT)
    mem.facts.put(BUYER, "临时地址", "公司", lifecycle_policy=IMPLICIT)
    now = datetime.now(UTC)
    swept = mem.admin.sweep(now=now + timedelta(days=8), vacuum=False)
    assert (swept.fragments, swept.facts) == (1, 1)

    frequent = "buyer-ops-2"
    mem.profiles.ensure(frequent)
    make_frequent(mem, frequent)
    mem.facts.put(frequent, "内容偏好", "视频", lifecycle_policy=IMPLICIT)
    assert mem.admin.decay(now=now + timedelta(days=10)).decayed == 1

    used = mem.write(frequent, "退款 RF20260629001 三天到账", lifecycle_policy=IMPLICIT)
    assert used in {h.memory_id for h in mem.search(frequent, "退款到账", limit=3)}
    mem._rt().ledger.renewals.flush()  # uses land within renewal_flush_s; now, for the test

    report = ops(api, "activity")
    now_day = day_of(report, today)
    assert now_day["sweeps"] - base["sweeps"] == 2
    assert now_day["decays"] - base["decays"] == 1
    assert now_day["renewals"] >= 1  # the ledger: only memories of this test exist
    assert report["sweeps"] - start["sweeps"] == 2
    assert report["decays"] - start["decays"] == 1
    assert report["renewals"] == sum(d["renewals"] for d in report["days"])
    assert len(ops(api, "activity", days=7)["days"]) == 7


def test_outbox_and_tenants_of_the_pgvector_index(api: TestClient) -> None:
    assert ops(api, "outbox") == {
        "index": "pgvector",
        "derived": False,
        "pending": 0,
        "oldest_age_s": 0.0,
        "failing": 0,
    }
    tenants = ops(api, "tenants")
    assert tenants["applicable"] is False
    assert tenants["reachable"] is None
    assert (tenants["hot"], tenants["cold"], tenants["total"]) == (0, 0, 0)
    assert "pgvector" in tenants["note"]


@pytest.mark.parametrize(
    ("method", "kwargs"),
    [
        ("expiry", {"days": 0}),
        ("expiry", {"days": True}),
        ("expiry", {"days": "30"}),
        ("expiry", {"now": datetime(2026, 6, 1)}),  # naive
        ("activity", {"days": 10_000}),
        ("activity", {"now": datetime.max.replace(tzinfo=UTC)}),
        ("verifiers", {"now": "2026-06-01"}),
        ("confidence", {"buckets": 1}),
        ("confidence", {"buckets": 10.5}),
        ("confidence", {"forecast_days": 0}),
        ("confidence", {"forecast_days": 7.5}),
        ("keys", {"today": "2026-06-01"}),
        ("keys", {"today": datetime.now(UTC)}),
    ],
)
def test_bad_arguments_are_invalid_field(mem: MemoryClient, method: str, kwargs: Any) -> None:
    with pytest.raises(InvalidField):
        getattr(mem.admin.ops, method)(**kwargs)


def test_tenant_statuses_fold_into_hot_cold_and_offloaded() -> None:
    counts = TenantCounts.of({"ACTIVE": 3, "HOT": 1, "INACTIVE": 2, "OFFLOADED": 1, "ONLOADING": 1})
    assert (counts.hot, counts.cold, counts.offloaded) == (4, 2, 2)


def test_keys_report_the_active_keys_age_against_90_days(api: TestClient) -> None:
    report = ops(api, "keys")
    assert report["active_key_id"] == "k-test-1"
    assert (report["active_key_age_days"], report["rotation_days"]) == (0, 90)
    assert report["days_left"] == 90
    assert report["stale"] is False
    assert report["entries_unreadable"] == 0
    assert report["keys"] == [{"key_id": "k-test-1", "age_days": 0, "active": True}]


def test_verifier_outcomes(api: TestClient, mem: MemoryClient, settings: Settings) -> None:
    start = ops(api, "verifiers")
    assert start["links"] == {"ok": 0, "failing": 0, "unchecked": 0}

    def broken(entity_type: str, entity_id: str) -> BusinessState:
        raise ConnectionError("the refund system is down")

    with MemoryClient(settings, agent_id="refund-agent") as client:
        client.register_verifier("order", lambda t, i: BusinessState("shipped"))
        client.register_verifier("refund", broken)
        client.profiles.ensure(BUYER)
        client.links.add(BUYER, entity_type="order", entity_id="88231", role="owner")
        client.links.add(BUYER, entity_type="refund", entity_id="RF20260629001", role="owner")
        client.links.add(BUYER, entity_type="ticket", entity_id="T-1", role="owner")
        outcomes = {v.entity_type: v.status.value for v in client.verify_links(BUYER)}
    assert outcomes == {"order": "verified", "refund": "unverified", "ticket": "unverified"}

    report = ops(api, "verifiers")
    assert report["links"] == {"ok": 1, "failing": 1, "unchecked": 1}
    # outcomes earlier tests recorded stay (the audit log is append-only): count what grew
    grown = ((k, v - start["outcomes"].get(k, 0)) for k, v in report["outcomes"].items())
    gained = {k: n for k, n in grown if n}
    assert gained == {"verified": 1, "verifier_unavailable": 1}
    assert sum(d["total"] for d in report["days"]) == sum(report["outcomes"].values())
    assert "88231" not in str(report)


# -- probes and metrics ------------------------------------------------------------------


def test_readyz_and_healthz_when_all_is_well(api: TestClient) -> None:
    ready = api.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["ready"] is True
    assert body["database"] is True
    assert body["schema_supported"] is True
    assert body["schema_revision"] == body["schema_head"]
    health = api.get("/healthz")
    assert health.status_code == 200
    h = health.json()
    assert h["status"] == "ok"
    assert (h["database"], h["index_reachable"], h["key_stale"]) == (True, True, False)
    assert (h["key_age_days"], h["key_rotation_days"]) == (0, 90)
    assert "k-test-1" not in health.text  # no key id without a token


@pytest.fixture
def dead_index_client(settings: Settings) -> Iterator[MemoryClient]:
    """A client whose search index is a Weaviate nobody listens on, and whose only key is
    95 days old (the same key material as the session's, so its data stays readable)."""
    dead = settings.model_copy(
        update={
            "index": "weaviate",
            "index_config": {
                "host": "127.0.0.1",
                "port": free_port(),
                "grpc_port": free_port(),
                "collection": f"Dead{uuid.uuid4().hex[:8]}",
            },
            "pii_keys": SecretStr(key_line("k-test-1", 7, age_days=95)),
        }
    )
    with MemoryClient(dead) as client:
        yield client


def test_readyz_stays_200_while_the_index_is_down(
    mem: MemoryClient, dead_index_client: MemoryClient
) -> None:
    with TestClient(create_app(service=SERVICE, client=dead_index_client)) as api:
        ready = api.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["ready"] is True
        health = api.get("/healthz")
        assert health.status_code == 200
        h = health.json()
        assert h["status"] == "degraded"
        assert h["index"] == "weaviate"
        assert h["index_reachable"] is False
        assert (h["key_age_days"], h["key_stale"]) == (95, True)

        assert api.put("/v1/profile", headers=USER).status_code == 200
        body = {"text": "订单 88231 想改地址", "lifecycle_policy": "implicit"}
        assert api.post("/v1/memories", headers=USER, json=body).status_code == 201
        found = api.post("/v1/search", headers=USER, json={"query": "订单 88231 改地址"})
        assert found.status_code == 200
        assert found.json()["degraded"] is True

        outbox = ops(api, "outbox")
        assert (outbox["index"], outbox["derived"], outbox["pending"]) == ("weaviate", True, 1)
        tenants = ops(api, "tenants")
        assert (tenants["applicable"], tenants["reachable"]) == (True, False)
        keys = ops(api, "keys")
        assert (keys["active_key_age_days"], keys["stale"], keys["days_left"]) == (95, True, -5)

        samples = metric_values(api.get("/metrics", headers=OPS).text)
        assert samples[("dualtrack_searches_total", (("degraded", "true"),))] == 1
        assert samples[("dualtrack_outbox_pending", ())] == 1
        assert samples[("dualtrack_pii_key_age_days", ())] == 95


def test_metrics_hold_the_latency_histogram_and_the_counters(api: TestClient) -> None:
    assert api.put("/v1/profile", headers=USER).status_code == 200
    ids = []
    for policy in ("implicit", "implicit", "implicit", "explicit"):
        body = {"text": f"订单 88231 的 {policy} 备注", "lifecycle_policy": policy}
        ids.append(api.post("/v1/memories", headers=USER, json=body).json()["memory_id"])
    assert api.post("/v1/search", headers=USER, json={"query": "订单 88231"}).status_code == 200
    assert api.get(f"/v1/memories/{ids[0]}", headers=USER).status_code == 200
    api.get("/no/such/path")

    text = api.get("/metrics", headers=OPS).text
    samples = metric_values(text)
    assert samples[("dualtrack_memory_writes_total", (("policy", "implicit"),))] == 3
    assert samples[("dualtrack_memory_writes_total", (("policy", "explicit"),))] == 1
    assert samples[("dualtrack_searches_total", (("degraded", "false"),))] == 1
    post = (("method", "POST"), ("route", "/v1/memories"), ("status", "201"))
    assert samples[("dualtrack_http_request_duration_seconds_count", post)] == 4
    bucket = (("le", "+Inf"), *post)
    assert samples[("dualtrack_http_request_duration_seconds_bucket", tuple(sorted(bucket)))] == 4
    one = (("method", "GET"), ("route", "/v1/memories/{memory_id}"), ("status", "200"))
    assert samples[("dualtrack_http_request_duration_seconds_count", one)] == 1
    lost = (("method", "GET"), ("route", "unmatched"), ("status", "404"))
    assert samples[("dualtrack_http_request_duration_seconds_count", lost)] == 1
    assert not any(ids[0] in str(labels) for _, labels in samples)
    assert samples[("dualtrack_store_up", ())] == 1
    assert samples[("dualtrack_outbox_pending", ())] == 0
    assert samples[("dualtrack_pending_confirmations", (("track", "fact"),))] == 0
    assert samples[("dualtrack_pii_key_rotation_days", ())] == 90
    assert "# TYPE dualtrack_http_request_duration_seconds histogram" in text
    assert "# TYPE dualtrack_memory_writes_total counter" in text


def test_building_the_app_touches_no_store(tmp_path: Any) -> None:
    """The metrics registry reads the store at scrape time only, never when it is built."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        settings = Settings(
            postgres_dsn=f"postgresql://postgres@127.0.0.1:{port}/dualtrack",  # type: ignore[arg-type]
            data_dir=tmp_path,
            pii_keys=key_line("k", 1),  # type: ignore[arg-type]
        )
        create_app(service=SERVICE, client=MemoryClient(settings))
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody tried to connect


def test_each_app_has_its_own_registry(mem: MemoryClient) -> None:
    with (
        TestClient(create_app(service=SERVICE, client=mem)) as first,
        TestClient(create_app(service=SERVICE, client=mem)) as second,
    ):
        first.put("/v1/profile", headers=USER)
        first.post(
            "/v1/memories",
            headers=USER,
            json={"text": "订单 88231", "lifecycle_policy": "implicit"},
        )
        assert (
            metric_values(first.get("/metrics", headers=OPS).text)[
                ("dualtrack_memory_writes_total", (("policy", "implicit"),))
            ]
            == 1
        )
        assert ("dualtrack_memory_writes_total", (("policy", "implicit"),)) not in metric_values(
            second.get("/metrics", headers=OPS).text
        )


# -- a real Weaviate ---------------------------------------------------------------------


@pytest.mark.weaviate
def test_weaviate_tenants_hot_and_cold(settings: Settings, weaviate_server: Any) -> None:
    config = {**weaviate_server.model_dump(), "collection": f"Ops{uuid.uuid4().hex[:12]}"}
    live = settings.model_copy(update={"index": "weaviate", "index_config": config})
    with MemoryClient(live) as client:
        try:
            users = ["buyer-tenant-1", "buyer-tenant-2", "buyer-tenant-3"]
            for user in users:
                client.profiles.ensure(user)
                client.write(user, "订单 88231 想改地址", lifecycle_policy=IMPLICIT)
            client.admin.drain_outbox()
            with TestClient(create_app(service=SERVICE, client=client)) as api:
                first = ops(api, "tenants")
                assert (first["applicable"], first["reachable"]) == (True, True)
                assert (first["hot"], first["cold"], first["total"]) == (3, 0, 3)
                index: Any = client.admin.index
                assert index.set_cold(users[:1]) == 1
                second = ops(api, "tenants")
                assert (second["hot"], second["cold"], second["total"]) == (2, 1, 3)
                assert second["by_status"] == {"ACTIVE": 2, "INACTIVE": 1}
        finally:
            for user in ["buyer-tenant-1", "buyer-tenant-2", "buyer-tenant-3"]:
                client.forget_user(user)
            client.admin.drain_outbox()
            index = client.admin.index
            if hasattr(index, "reset"):
                index.reset()
