"""``/healthz`` and ``/metrics`` on the MCP port: the REST service's answers, under the
same access rule, and a request id on every answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from sdk import MemoryClient
from service.mcp_server import DualtrackMcp
from service.settings import ServiceSettings
from service.tokens import mint

SERVICE = ServiceSettings(
    jwt_secret="mcp-probe-secret-0123456789abcdef0123",  # type: ignore[arg-type]
    jwt_audience="dualtrack",
    rate_per_s=1000,
    rate_burst=1000,
)
OPS = {
    "Authorization": "Bearer " + mint(SERVICE, sub="oncall-1", agent="ops-console", scopes=["ops"])
}
USER = {
    "Authorization": "Bearer "
    + mint(SERVICE, sub="13912345678", agent="refund-agent", scopes=["memory:read"])
}


@pytest.fixture
def mcp(mem: MemoryClient) -> Iterator[TestClient]:
    with TestClient(DualtrackMcp(mem, SERVICE).http_app()) as client:
        yield client


def test_healthz_answers_without_a_token_as_the_rest_service_does(mcp: TestClient) -> None:
    answer = mcp.get("/healthz")
    assert answer.status_code == 200, answer.text
    report = answer.json()
    assert report["status"] in {"ok", "degraded"}
    assert report["database"] is True
    assert report["schema_supported"] is True
    assert answer.headers["Cache-Control"] == "no-store"
    assert len(answer.headers["X-Request-Id"]) == 32


def test_metrics_need_an_ops_token_unless_configured_open(
    mcp: TestClient, mem: MemoryClient
) -> None:
    assert mcp.get("/metrics").status_code == 401
    assert mcp.get("/metrics", headers=USER).status_code == 403
    mcp.get("/healthz")
    scraped = mcp.get("/metrics", headers=OPS)
    assert scraped.status_code == 200
    assert scraped.headers["content-type"].startswith("text/plain")
    assert "dualtrack_store_up 1.0" in scraped.text
    assert "dualtrack_http_request_duration_seconds_count{" in scraped.text  # the /healthz above
    assert "13912345678" not in scraped.text
    open_metrics = SERVICE.model_copy(update={"metrics_access": "open"})
    with TestClient(DualtrackMcp(mem, open_metrics).http_app()) as client:
        assert client.get("/metrics").status_code == 200


def test_the_mcp_endpoint_still_needs_a_token(mcp: TestClient) -> None:
    answer = mcp.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answer.status_code == 401
    assert answer.json()["error"]["code"] == "unauthorized"
