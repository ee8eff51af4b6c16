"""Shared fixtures: one real embedded PostgreSQL server for the whole test session.

The server lives in a temporary data dir and stops when the session ends.
Each test gets a clean schema state: user tables are truncated after it.
"""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import psycopg
import pytest
from hypothesis import settings as hypothesis_settings
from sqlalchemy import make_url, text

from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory.embedded import start_embedded_server
from structured_memory.models import Base
from unstructured_memory.index.registry import WeaviateConfig
from unstructured_memory.index.weaviate import WeaviateIndex

# CI explores the same examples on every run (a failure there is reproducible); local
# runs keep exploring new ones, which is how regressions get found.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")


def key_line(key_id: str, secret_byte: int, age_days: int = 0) -> str:
    """A key-ring entry with a fixed secret and a creation date ``age_days`` ago."""
    created = (datetime.now(UTC) - timedelta(days=age_days)).date()
    return f"{key_id}:{base64.b64encode(bytes([secret_byte]) * 32).decode()}:{created}"


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dualtrack")


@pytest.fixture(scope="session")
def dsn(data_dir: Path) -> str:
    external = os.environ.get("DUALTRACK_TEST_DSN")
    return external or start_embedded_server(data_dir)


@pytest.fixture(scope="session")
def settings(dsn: str, data_dir: Path) -> Settings:
    return Settings(
        postgres_dsn=dsn,  # type: ignore[arg-type]
        data_dir=data_dir,
        pii_keys=key_line("k-test-1", 7),  # type: ignore[arg-type]
    )


@pytest.fixture
def cli_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads DUALTRACK_* variables: point them at the test database and ring."""
    assert settings.postgres_dsn is not None
    assert settings.pii_keys is not None
    monkeypatch.setenv("DUALTRACK_POSTGRES_DSN", settings.postgres_dsn.get_secret_value())
    monkeypatch.setenv("DUALTRACK_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("DUALTRACK_PII_KEYS", settings.pii_keys.get_secret_value())


@pytest.fixture
def fresh_dsn(dsn: str) -> Iterator[str]:
    """An empty database of its own on the test server, dropped afterwards."""
    url = make_url(dsn)
    name = f"fresh_{uuid.uuid4().hex[:10]}"
    admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield url.set(database=name).render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def session_client(settings: Settings) -> Iterator[MemoryClient]:
    with MemoryClient(settings, agent_id="test-agent") as mem:
        yield mem


@pytest.fixture
def mem(session_client: MemoryClient) -> Iterator[MemoryClient]:
    """A started client over a database whose user tables are emptied after the test."""
    yield session_client
    # embedding_space stays: it records the session client's embedder, as in production;
    # audit_log stays: it is append-only (its triggers refuse TRUNCATE);
    # schema_compat stays: it describes the schema, not a user
    kept = {"embedding_space", "audit_log", "schema_compat"}
    tables = ", ".join(t.name for t in Base.metadata.sorted_tables if t.name not in kept)
    with session_client.admin.database.transaction() as conn:
        conn.execute(text(f"TRUNCATE {tables} CASCADE"))


@pytest.fixture
def slow(mem: MemoryClient, settings: Settings) -> Iterator[MemoryClient]:
    """A client over the test database whose renewal writer waits 60 s between batches,
    so nothing is renewed behind a test's back (its tables are emptied like ``mem``'s)."""
    with MemoryClient(settings.model_copy(update={"renewal_flush_s": 60}), agent_id="a") as c:
        yield c


TEST_TENANT_KEY = b"test-tenant-key-0123456789abcdef"
"""Keys the tenant names of indexes the tests build by hand."""

WEAVIATE_ADDRESS = os.environ.get("DUALTRACK_TEST_WEAVIATE", "127.0.0.1:8080:50051")
"""``host:port:grpc_port`` of the Weaviate the tests use (started by ``.ci/run``)."""


@pytest.fixture(scope="session")
def weaviate_server() -> WeaviateConfig:
    """The test Weaviate; skipped with a reason when absent, a failure under ``CI``."""
    host, port, grpc = WEAVIATE_ADDRESS.split(":")
    try:
        ready = httpx.get(f"http://{host}:{port}/v1/.well-known/ready", timeout=3).status_code
    except httpx.HTTPError:
        ready = 0
    if ready != 200:
        reason = f"no Weaviate answers at {host}:{port}; start one with scripts/weaviate.sh start"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return WeaviateConfig(host=host, port=int(port), grpc_port=int(grpc))


@pytest.fixture
def weaviate_index(weaviate_server: WeaviateConfig) -> Iterator[WeaviateIndex]:
    """A Weaviate index on a collection of its own, dropped after the test."""
    config = weaviate_server.model_copy(update={"collection": f"Test{uuid.uuid4().hex[:12]}"})
    index = WeaviateIndex(config, tenant_key=TEST_TENANT_KEY)
    yield index
    index.reset()
    index.close()
