"""Shared fixtures: one real embedded PostgreSQL server for the whole test session.

The server lives in a temporary data dir and stops when the session ends.
Each test gets a clean schema state: user tables are truncated after it.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory.embedded import start_embedded_server
from structured_memory.models import Base


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


@pytest.fixture(scope="session")
def session_client(settings: Settings) -> Iterator[MemoryClient]:
    with MemoryClient(settings, agent_id="test-agent") as mem:
        yield mem


@pytest.fixture
def mem(session_client: MemoryClient) -> Iterator[MemoryClient]:
    """A started client over a database whose user tables are emptied after the test."""
    yield session_client
    # embedding_space stays: it records the session client's embedder, as in production
    tables = ", ".join(t.name for t in Base.metadata.sorted_tables if t.name != "embedding_space")
    with session_client.database.transaction() as conn:
        conn.execute(text(f"TRUNCATE {tables} CASCADE"))
