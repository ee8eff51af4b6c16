"""Drill: ``sweep`` vacuums every user table, those an erasure left dead tuples in among them.

Issue 8 ("Forgetting completely"): erased rows stay in heap pages as dead
tuples until VACUUM marks their space free. ``mem.admin.sweep`` and
``dualtrack sweep`` run ``VACUUM (ANALYZE)`` on every user table and report
them with their ``pg_stat_user_tables.n_dead_tup``. The erasure's own vacuum
(issue 19, ``test_erasure_heap``) is turned off here, so the dead tuples wait
for the sweep; with it on, the sweep still vacuums those tables, for the
index entries the erasure's vacuum leaves. The statistics
reach ``pg_stat_user_tables`` asynchronously (each backend flushes its counters
within about a second of its commit), so the test waits for them in a bounded
poll; it asserts no timing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, text
from typer.testing import CliRunner

from policies.lifecycle import LifecyclePolicy
from sdk import MemoryInput
from sdk.client import MemoryClient
from sdk.settings import Settings
from service.cli import app
from structured_memory.cross_user import CROSS_USER, USER_TABLES

ERASED_TABLES = {"user_profile", "memory_fragment", "memory_fact", "pii_vault", "pii_data_key"}
STATS_WAIT_S = 30.0
"""How long to wait for the statistics to show the erasure (a bound, not an expectation)."""


@pytest.fixture
def mem(mem: MemoryClient, settings: Settings) -> Iterator[MemoryClient]:
    """A client whose erasures leave their dead tuples to the sweep (their own vacuum off);
    the tables are emptied after the test as for the shared ``mem``."""
    with MemoryClient(settings.model_copy(update={"erasure_vacuum_timeout_s": 0})) as client:
        yield client


def _stats(mem: MemoryClient) -> dict[str, tuple[int, int]]:
    """``(n_dead_tup, vacuum_count)`` per table, read in a fresh transaction."""
    with mem.admin.database.transaction() as conn:
        rows = conn.execute(
            text("SELECT relname, n_dead_tup, vacuum_count FROM pg_stat_user_tables")
        ).all()
    return {r.relname: (int(r.n_dead_tup), int(r.vacuum_count)) for r in rows}


def _await_dead_tuples(mem: MemoryClient, tables: set[str]) -> dict[str, tuple[int, int]]:
    """Poll until every table in ``tables`` shows dead tuples; the statistics then."""
    deadline = time.monotonic() + STATS_WAIT_S
    while True:
        with mem.admin.database.transaction() as conn:
            conn.execute(text("SELECT pg_stat_force_next_flush()"))
        stats = _stats(mem)
        if all(stats.get(t, (0, 0))[0] > 0 for t in tables):
            return stats
        if time.monotonic() > deadline:
            pytest.fail(f"no dead tuples reported within {STATS_WAIT_S:.0f} s: {stats}")
        time.sleep(0.05)


def _erase_a_buyer(mem: MemoryClient, user: str) -> None:
    mem.profiles.ensure(user)
    mem.facts.put(user, "送货偏好", "放在菜鸟驿站", lifecycle_policy=LifecyclePolicy.EXPLICIT)
    mem.write_many(
        [
            MemoryInput(
                user_id=user,
                text=f"订单 88231 第 {i} 次咨询，退款 RF20260629001，手机 13912345678",
                lifecycle_policy=LifecyclePolicy.EXPLICIT,
                session_id="s-1",
            )
            for i in range(5)
        ],
        progress=False,
    )
    assert mem.forget_user(user)


@pytest.fixture
def marked(mem: MemoryClient) -> Iterator[list[tuple[str, bool]]]:
    """Statements run on the client's engine, each with whether it was marked cross-user."""
    seen: list[tuple[str, bool]] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        context = args[1]
        seen.append(
            (statement, bool(context is not None and context.execution_options.get(CROSS_USER)))
        )

    event.listen(mem.admin.database.engine, "before_cursor_execute", record)
    yield seen
    event.remove(mem.admin.database.engine, "before_cursor_execute", record)


def test_sweep_vacuums_the_tables_an_erasure_left_dead_tuples_in(
    mem: MemoryClient, marked: list[tuple[str, bool]]
) -> None:
    _erase_a_buyer(mem, "buyer-001")
    before = _await_dead_tuples(mem, ERASED_TABLES)

    report = mem.admin.sweep()

    vacuumed = {v.table: v.dead_tuples for v in report.vacuumed}
    assert vacuumed.keys() == set(USER_TABLES), "every table holding user data, no other"
    assert all(vacuumed[t] > 0 for t in ERASED_TABLES)
    after = _stats(mem)
    for table in vacuumed:
        dead, vacuum_count = after[table]
        assert vacuum_count > before[table][1], f"{table} was vacuumed"
        assert dead < before[table][0] or dead == 0, f"{table} has fewer dead tuples"
    statements = [(s, m) for s, m in marked if s.startswith("VACUUM")]
    assert len(statements) == len(vacuumed)
    assert all(m for _, m in statements), "VACUUM statements are marked as cross-user work"
    with (
        mem.admin.database.transaction() as conn
    ):  # the pool got its connections back transactional
        driver = conn.connection.driver_connection
        assert driver is not None
        assert not driver.autocommit


def test_sweep_without_vacuum_vacuums_nothing(mem: MemoryClient) -> None:
    _erase_a_buyer(mem, "buyer-001")
    _await_dead_tuples(mem, {"memory_fragment"})
    assert mem.admin.sweep(vacuum=False).vacuumed == ()


def test_the_sweep_command_prints_the_tables_it_vacuumed(
    mem: MemoryClient, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert settings.postgres_dsn is not None
    assert settings.pii_keys is not None
    monkeypatch.setenv("DUALTRACK_POSTGRES_DSN", settings.postgres_dsn.get_secret_value())
    monkeypatch.setenv("DUALTRACK_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("DUALTRACK_PII_KEYS", settings.pii_keys.get_secret_value())
    _erase_a_buyer(mem, "buyer-001")
    _await_dead_tuples(mem, {"memory_fragment", "user_profile"})

    result = CliRunner().invoke(app, ["sweep"], terminal_width=200)

    assert result.exit_code == 0, result.output
    assert "dead tuples before" in result.output
    assert "memory_fragment" in result.output
    assert "user_profile" in result.output
