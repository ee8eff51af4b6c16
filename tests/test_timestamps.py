"""Timestamps read back from PostgreSQL: ISO text parsed on the fast path, everything
else (infinity, another DateStyle) as before."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Connection, text

from sdk.client import MemoryClient
from structured_memory.database import INFINITY


@pytest.fixture
def conn(mem: MemoryClient) -> Iterator[Connection]:
    with mem.admin.database.transaction() as c:
        yield c


def read(conn: Connection, literal: str) -> datetime:
    value = conn.execute(text(f"SELECT TIMESTAMPTZ '{literal}'")).scalar_one()
    assert isinstance(value, datetime)
    return value


def test_iso_timestamps_keep_every_microsecond_and_the_instant(conn: Connection) -> None:
    assert read(conn, "2026-06-29 10:15:00.000001+00") == datetime(
        2026, 6, 29, 10, 15, 0, 1, tzinfo=UTC
    )
    east = read(conn, "2026-06-29 18:15:00+08")  # 退款 RF20260629001 的申请时间, Beijing
    assert east == datetime(2026, 6, 29, 10, 15, tzinfo=UTC)
    assert east.utcoffset() == timedelta(0)  # the session's time zone is UTC


def test_infinity_reads_as_the_sentinel(conn: Connection) -> None:
    assert read(conn, "infinity") is INFINITY


def test_another_time_zone_keeps_the_instant(conn: Connection) -> None:
    conn.execute(text("SET LOCAL TimeZone = 'Asia/Shanghai'"))
    local = read(conn, "2026-06-29 10:15:00+00")
    assert local == datetime(2026, 6, 29, 10, 15, tzinfo=UTC)
    assert local.utcoffset() == timedelta(hours=8)


def test_another_date_style_falls_back_to_psycopg(conn: Connection) -> None:
    """psycopg reads timestamptz in the ISO style only: the fallback reaches it and it
    says so, as before the fast path."""
    conn.execute(text("SET LOCAL DateStyle = 'SQL, DMY'"))
    with pytest.raises(NotImplementedError, match="DateStyle"):
        read(conn, "2026-06-29 10:15:00.5+00")
