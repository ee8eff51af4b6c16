"""Rate limits hold for the deployment, not per process: two apps over one database (two
processes' worth of buckets, each reconciling through PostgreSQL) admit one burst between
them, and reconciling is one statement per process, never one per request.

The apps reconcile at start and then only when a test says so (``rate_sync_s`` is an
hour), so every count here is exact. ``tests/drills/test_rate_limit_workers.py`` runs the
same burst against ``dualtrack serve --workers 2``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import event

from sdk import MemoryClient
from service import create_app
from service.ratelimit import RateLimits
from service.settings import ServiceSettings
from tests.test_service import SERVICE, auth, token

TIGHT = SERVICE.model_copy(update={"rate_per_s": 0.001, "rate_burst": 10, "rate_sync_s": 3600.0})
AGENT = auth(token(agent="refund-agent", scopes=["memory:read"]))


def limits(api: TestClient) -> RateLimits:
    app = api.app
    assert isinstance(app, FastAPI)
    found: RateLimits = app.state.gate.limits
    return found


@contextmanager
def two_apps(
    mem: MemoryClient, service: ServiceSettings
) -> Iterator[tuple[TestClient, TestClient]]:
    """Two apps over the test database that know of each other."""
    with ExitStack() as stack:
        a, b = (
            stack.enter_context(TestClient(create_app(service=service, client=mem))) for _ in "ab"
        )
        for api in (a, b):
            limits(api).reconcile()
        yield a, b


@pytest.fixture
def pods(mem: MemoryClient) -> Iterator[tuple[TestClient, TestClient]]:
    with two_apps(mem, TIGHT) as pair:
        yield pair


def admitted(answers: list[int]) -> int:
    return sum(status != 429 for status in answers)


def test_two_processes_admit_one_burst_between_them(pods: tuple[TestClient, TestClient]) -> None:
    a, b = pods
    first = [api.get("/v1/profile", headers=AGENT).status_code for api in (a, b) * 30]
    assert admitted(first) == 10, "the burst is the deployment's, not each process's"
    for api in (a, b):
        limits(api).reconcile()
    again = [api.get("/v1/profile", headers=AGENT).status_code for api in (a, b) * 30]
    assert admitted(again) == 0, "the shared bucket is spent"


def test_a_process_serving_an_agent_alone_gets_the_whole_burst(
    pods: tuple[TestClient, TestClient],
) -> None:
    a, b = pods
    statuses = [a.get("/v1/profile", headers=AGENT).status_code for _ in range(30)]
    assert admitted(statuses) == 5, "until it has reconciled, a process has its share"
    limits(a).reconcile()
    statuses += [a.get("/v1/profile", headers=AGENT).status_code for _ in range(30)]
    assert admitted(statuses) == 5, "b may have used it since its last reconciliation"
    limits(b).reconcile()
    limits(a).reconcile()
    statuses += [a.get("/v1/profile", headers=AGENT).status_code for _ in range(30)]
    assert admitted(statuses) == 10, "b has reconciled, not using it: its share is a's"
    late = [b.get("/v1/profile", headers=AGENT).status_code for _ in range(30)]
    assert admitted(late) == 5, "the slack: a process meeting a bucket grants its share"
    for api in (a, b, a, b):
        limits(api).reconcile()
    owed = [api.get("/v1/profile", headers=AGENT).status_code for api in (a, b) * 30]
    assert admitted(owed) == 0, "what the slack granted is owed by every process"


def test_an_export_is_one_per_user_for_the_deployment(mem: MemoryClient) -> None:
    """An export is granted by the shared bucket itself: each waits for its app's next
    reconciliation (every 50 ms here)."""
    exporter = auth(token(scopes=["account:export"]))
    with two_apps(mem, TIGHT.model_copy(update={"rate_sync_s": 0.05})) as (a, b):
        answers = [api.get("/v1/export", headers=exporter).status_code for api in (a, b, a, b)]
    assert answers == [404, 429, 429, 429], "one export a minute (of no user: 404)"


def test_reconciling_is_one_statement_per_process_never_one_per_request(
    pods: tuple[TestClient, TestClient], mem: MemoryClient
) -> None:
    a, _ = pods
    seen: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if "rate_limit" in statement:
            seen.append(statement)

    engine = mem.admin.database.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        for _ in range(20):
            a.get("/v1/profile", headers=AGENT)
        assert seen == [], "a request spends a local token: no statement"
        limits(a).reconcile()
        assert len(seen) == 1
    finally:
        event.remove(engine, "before_cursor_execute", count)
