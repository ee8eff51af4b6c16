"""A database that is down gives a typed error, not a driver traceback."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from policies.errors import DatabaseUnavailable
from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory.database import Database
from tests.conftest import key_line


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_server_is_database_unavailable(tmp_path: Path) -> None:
    settings = Settings(
        postgres_dsn=f"postgresql://postgres@127.0.0.1:{_free_port()}/dualtrack",  # type: ignore[arg-type]
        data_dir=tmp_path,
        pii_keys=key_line("k", 1),  # type: ignore[arg-type]
    )
    client = MemoryClient(settings)
    with pytest.raises(DatabaseUnavailable) as err:
        client.profiles.get("buyer-001")
    assert err.value.http_status == 503
    assert err.value.code == "database_unavailable"


def test_client_reconnects_after_its_pool_is_reset(mem: MemoryClient) -> None:
    assert mem.admin.health().database
    mem.admin.database.dispose()
    assert mem.admin.health().ok


def test_a_pooled_connection_the_server_ended_is_replaced_at_checkout(dsn: str) -> None:
    """A restart or ``pg_terminate_backend`` ends pooled connections: the next checkout
    notices (the socket holds the server's goodbye) and connects afresh; nothing fails."""
    db = Database.from_dsn(dsn, pool_size=1)
    try:
        with db.reading() as conn:
            first = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with db.reading() as conn:
            assert conn.execute(text("SELECT pg_backend_pid()")).scalar_one() == first
        admin = Database.from_dsn(dsn, pool_size=1)
        with admin.transaction() as conn:
            assert conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": first}).scalar()
        admin.dispose()
        time.sleep(0.2)  # the server's message reaches the idle socket
        for _ in range(3):
            with db.transaction() as conn:
                assert conn.execute(text("SELECT pg_backend_pid()")).scalar_one() != first
    finally:
        db.dispose()
