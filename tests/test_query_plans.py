"""A session end with a correction reads the user's records, not the whole table, while the
planner's statistics lag behind the table.

Until autovacuum analyses it, a table last measured empty (its rows deleted and vacuumed,
or a burst of writes since) looks empty to the planner. Asked as one ``ORDER BY id ...
FOR UPDATE``, the records naming a corrected id were then read by walking the whole primary
key of ``memory_fragment``, every user's rows filtered away: 1.5 ms of a session end's
7 ms of statements on the 4,000 rows of the writes benchmark, and growing with the table.
The plan is read with ``EXPLAIN (ANALYZE)``: the rows a node removed by its filter count
rows read, not time, so the check is exact.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import Connection, event, text

from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk.client import MemoryClient
from structured_memory.repositories.fragments import FragmentLedger
from values.inputs import MemoryInput

USER = "buyer-plan-01"
OTHER = "buyer-plan-02"
RECORD = MemoryKind.INTERACTION_RECORD.value


_EMPTY_STATISTICS = text(
    "SELECT pg_restore_relation_stats('schemaname', 'public', 'relname', 'memory_fragment',"
    " 'reltuples', 0::real, 'relpages', 1::integer)"
)
"""What the planner knows of a table last measured empty (PostgreSQL 18's
``pg_restore_relation_stats``); the next analyse replaces it."""


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _rows_filtered(mem: MemoryClient, run: Callable[[Connection], object]) -> int:
    """Rows the plan of the one statement ``run`` executes read and threw away, under
    statistics that say the table is empty."""
    seen: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen.append((statement, parameters))

    engine = mem.admin.database.engine
    with engine.begin() as conn:
        conn.execute(_EMPTY_STATISTICS)
        event.listen(engine, "before_cursor_execute", capture)
        try:
            run(conn)
        finally:
            event.remove(engine, "before_cursor_execute", capture)
        ((statement, parameters),) = seen
        explained = conn.exec_driver_sql(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}", parameters)
        (plan,) = explained.scalar_one()
    return sum(int(node.get("Rows Removed by Filter", 0)) for node in _nodes(plan["Plan"]))


def test_the_records_naming_a_corrected_id_are_read_from_the_users_rows_alone(
    mem: MemoryClient,
) -> None:
    for user in (USER, OTHER):
        mem.profiles.ensure(user)
    mem.write_many(
        [
            MemoryInput(
                user_id=OTHER,
                text=f"订单 {5530000 + i} 的保温杯盖子漏水",
                lifecycle_policy=LifecyclePolicy.IMPLICIT,
            )
            for i in range(300)
        ],
        progress=False,
    )
    mine = mem.write(
        USER,
        "用户就订单 5530217 的耳机申请退货",
        lifecycle_policy=LifecyclePolicy.IMPLICIT,
        kind=MemoryKind.INTERACTION_RECORD,
    )
    ledger = FragmentLedger(mem.admin.database)
    found: list[object] = []

    def naming(conn: Connection) -> None:
        rows = ledger.naming(conn, mem.scope(USER), ["5530217"], [RECORD])
        found.append([row[0] for row in rows])

    filtered = _rows_filtered(mem, naming)
    assert filtered <= 1, f"read {filtered} rows of other users"
    assert found == [[mine]]
