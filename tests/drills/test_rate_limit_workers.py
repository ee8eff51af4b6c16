"""Drill: ``dualtrack serve --workers 2`` admits one agent's burst once, not once per worker.

Two real worker processes over the test database, burst 10 (rate 0.01/s): 60 concurrent
requests of one agent, each on a connection of its own so the kernel spreads them over
both workers. Before the buckets were reconciled through PostgreSQL, each worker granted
the whole burst (20 of 60 admitted); now the workers share one bucket (10, or up to 15
when a reconciliation falls inside the burst: the documented slack).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import httpx
import pytest
from sqlalchemy import text

from sdk import MemoryClient
from sdk.settings import Settings
from service.settings import ServiceSettings
from service.tokens import mint

SECRET = "drill-secret-0123456789abcdef0123456789"
BURST = 10


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(done: object, what: str, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not callable(done) or not done():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {timeout_s:.0f} s for {what}")
        time.sleep(0.2)


@pytest.fixture
def workers(settings: Settings, mem: MemoryClient) -> Iterator[str]:
    """Two workers of ``dualtrack serve`` on a free port, both reconciling."""
    assert settings.postgres_dsn is not None
    assert settings.pii_keys is not None
    port = _free_port()
    env = {
        **os.environ,
        "DUALTRACK_POSTGRES_DSN": settings.postgres_dsn.get_secret_value(),
        "DUALTRACK_PII_KEYS": settings.pii_keys.get_secret_value(),
        "DUALTRACK_DATA_DIR": str(settings.data_dir),
        "DUALTRACK_AUTO_MIGRATE": "false",
        "DUALTRACK_JWT_SECRET": SECRET,
        "DUALTRACK_RATE_PER_S": "0.01",
        "DUALTRACK_RATE_BURST": str(BURST),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--port", str(port), "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(lambda: _ready(base), "the service to answer /readyz")
        # both workers registered, then both reconciled after that: each knows the other
        _wait(lambda: _live(mem) == 2, "two workers to reconcile their rate limits")
        with mem.admin.database.transaction() as conn:
            both_seen = conn.execute(text("SELECT now()")).scalar_one()
        _wait(lambda: _oldest_reconciliation(mem) > both_seen, "both to reconcile again")
        yield base
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/readyz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _live(mem: MemoryClient) -> int:
    with mem.admin.database.transaction() as conn:
        return int(
            conn.execute(
                text(
                    "SELECT count(*) FROM rate_limit_process WHERE seen_at > now() - interval '3 s'"
                )
            ).scalar_one()
        )


def _oldest_reconciliation(mem: MemoryClient) -> datetime:
    with mem.admin.database.transaction() as conn:
        oldest: datetime = conn.execute(
            text("SELECT min(seen_at) FROM rate_limit_process")
        ).scalar_one()
        return oldest


def test_two_workers_admit_one_burst(workers: str) -> None:
    service = ServiceSettings(jwt_secret=SECRET)  # type: ignore[arg-type]
    tok = mint(service, sub="buyer-001", agent="refund-agent", scopes=["memory:read"])
    agent = {"Authorization": f"Bearer {tok}"}

    clients = [httpx.Client(base_url=workers, timeout=60) for _ in range(60)]  # 60 connections
    start = threading.Barrier(60)

    def call(client: httpx.Client) -> int:
        start.wait()
        return client.get("/v1/profile", headers=agent).status_code

    try:
        with ThreadPoolExecutor(max_workers=60) as pool:
            statuses = list(pool.map(call, clients))
    finally:
        for client in clients:
            client.close()
    refused = statuses.count(429)
    assert set(statuses) <= {404, 429}, "admitted: 404, the user does not exist"
    # a worker meeting the bucket grants its share (BURST / 2) before it has reconciled it;
    # when a reconciliation falls inside the burst, the first to reconcile has not seen the
    # other's spending yet and holds the rest of the level: at most 1.5 bursts, never the
    # 2 bursts of unshared buckets (service/ratelimit.py, "The slack")
    admitted = 60 - refused
    assert admitted <= BURST + BURST // 2, f"{admitted} of 60 admitted; the burst is {BURST}"
