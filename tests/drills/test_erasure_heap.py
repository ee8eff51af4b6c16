"""Drill: right after ``forget_user`` returns, no heap tuple on disk holds the erased user.

Issue 19, item 7. The dump drill (``test_erasure_dump``) sees only live rows; here
the tables' files are read as PostgreSQL wrote them, after a ``CHECKPOINT``, page
by page: every tuple a page's line pointers still give storage to (live or dead)
is searched for the erased user's values, as UTF-8 text, and for their ids and
ciphertexts as the bytes PostgreSQL stores. The erasure vacuums the tables it
touched itself, so nothing is found without a sweep; the other user's values are
all found (and the erased user's were before: the needles are real). Bytes a
vacuum leaves in a page's free space are not tuples; what remains there, in
indexes, WAL and backups is measured and documented in the README ("Erasure").
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import event, text

from benchmarks.erasure import file_tuples, relation_files
from policies.errors import UserNotFound
from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory.models import Base
from tests.drills.test_erasure_dump import (
    AUDIT_LOG,
    ERASED,
    EXPLICIT,
    KEPT,
    Footprint,
    _populate,
)

TABLES = [t.name for t in Base.metadata.sorted_tables]
SHORTEST = 8  # bytes; shorter needles could match by chance


Needle = tuple[bytes, ...]
"""The forms one value may take in a tuple: found if any of them is there."""


def _forms(category: str, value: str) -> Needle:
    """How ``value`` of the footprint sits in a tuple: a UUID as its 16 bytes or as
    text (inside JSON), a binary value as its bytes, anything else as UTF-8."""
    if _is_uuid_text(value.encode()):
        return (uuid.UUID(value).bytes, value.encode())
    if category.endswith("row ids and bytes"):
        return (bytes.fromhex(value),)
    return (value.encode(),)


def needles(footprint: Footprint) -> dict[str, set[Needle]]:
    """The footprint's stored values as byte strings, by category."""
    found: dict[str, set[Needle]] = {}
    for category, values in footprint.stored.items():
        forms = {_forms(category, v) for v in values}
        found[category] = {f for f in forms if min(map(len, f)) >= SHORTEST}
    return found


def heap_tuples(mem: MemoryClient) -> dict[str, bytes]:
    """After a CHECKPOINT, every tuple with storage in each table's heap and TOAST files,
    joined, by table."""
    block, files = relation_files(mem, TABLES)
    if not all(p.exists() for paths in files.values() for p in paths):
        pytest.skip("the server's data directory is not on this machine")
    heaps: dict[str, list[bytes]] = {}
    for place, paths in files.items():
        kind, table = place.split(":")[:2]
        if kind in ("heap", "toast"):
            heaps.setdefault(table, []).extend(file_tuples(paths, block))
    return {table: b"\x00".join(tuples) for table, tuples in heaps.items()}


def _holds(blob: bytes, needle: Needle) -> bool:
    return any(form in blob for form in needle)


def found_in(heaps: dict[str, bytes], wanted: dict[str, set[Needle]]) -> dict[str, list[str]]:
    """Per category, the needles some table's tuples hold (with the tables)."""
    hits: dict[str, list[str]] = {}
    for category, values in wanted.items():
        for needle in values:
            where = sorted(t for t, blob in heaps.items() if _holds(blob, needle))
            if where:
                hits.setdefault(category, []).append(f"{needle[-1]!r} in {','.join(where)}")
    return hits


def missing_from(heaps: dict[str, bytes], wanted: dict[str, set[Needle]]) -> dict[str, int]:
    """Per category, how many needles no table's tuples hold."""
    blob = b"\x01".join(heaps.values())
    gaps = {c: sum(1 for n in values if not _holds(blob, n)) for c, values in wanted.items()}
    return {c: n for c, n in gaps.items() if n}


def _without_ids(wanted: dict[str, set[Needle]]) -> dict[str, set[Needle]]:
    """The needles that are not a row's random id (the audit log keeps those)."""
    rest = {c: {n for n in values if not _is_uuid_text(n[-1])} for c, values in wanted.items()}
    return {c: values for c, values in rest.items() if values}


def _is_uuid_text(value: bytes) -> bool:
    try:
        return str(uuid.UUID(value.decode())) == value.decode()
    except (ValueError, UnicodeDecodeError):
        return False


def test_right_after_forget_user_no_heap_tuple_holds_the_user(mem: MemoryClient) -> None:
    erased, kept = needles(_populate(mem, ERASED)), needles(_populate(mem, KEPT))
    before = heap_tuples(mem)
    assert missing_from(before, erased) == {}, "the needles are what the heap held"
    assert missing_from(before, kept) == {}

    assert mem.forget_user(ERASED.user_id)  # no sweep after it

    after = heap_tuples(mem)
    audit = {AUDIT_LOG: after.pop(AUDIT_LOG, b"")}
    assert found_in(after, erased) == {}, "no live or dead tuple holds the erased user"
    assert found_in(audit, _without_ids(erased)) == {}, "the audit log keeps ids only"
    assert missing_from({**after, **audit}, kept) == {}, "the other user is intact"


@pytest.fixture
def vacuum_locked(mem: MemoryClient) -> Iterator[Callable[[], None]]:
    """Holds ``memory_fragment``'s SHARE UPDATE EXCLUSIVE lock (VACUUM waits for it; reads
    and writes do not) until the returned function releases it."""
    conn = mem.admin.database.engine.connect()
    conn.execute(text("LOCK TABLE memory_fragment IN SHARE UPDATE EXCLUSIVE MODE"))
    yield conn.rollback
    conn.rollback()
    conn.close()


@pytest.fixture
def client_with(settings: Settings) -> Iterator[Callable[..., MemoryClient]]:
    """Clients on the test database with some settings changed, closed after the test."""
    clients: list[MemoryClient] = []

    def build(**changes: Any) -> MemoryClient:
        clients.append(MemoryClient(settings.model_copy(update=changes)).start())
        return clients[-1]

    yield build
    for client in clients:
        client.close()


def test_a_vacuum_that_cannot_run_leaves_the_erasure_done_and_the_next_one_clears_it(
    mem: MemoryClient,
    client_with: Callable[..., MemoryClient],
    vacuum_locked: Callable[[], None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = client_with(erasure_vacuum_timeout_s=0.5)
    erased, kept = needles(_populate(client, ERASED)), needles(_populate(client, KEPT))

    with caplog.at_level(logging.WARNING, logger="structured_memory.cross_user.erasure_vacuum"):
        assert client.forget_user(ERASED.user_id)  # returns: the vacuum gave up on the lock

    assert "erasure vacuum timeout" in caplog.text
    with pytest.raises(UserNotFound):
        client.profiles.get(ERASED.user_id)
    left = found_in(heap_tuples(mem), erased)
    assert any("memory_fragment" in hit for hits in left.values() for hit in hits)
    vacuum_locked()
    assert client.forget_user(KEPT.user_id)  # its vacuum prunes every dead tuple there
    after = heap_tuples(mem)
    after.pop(AUDIT_LOG)
    assert found_in(after, erased) == {}
    assert found_in(after, kept) == {}


BURST = 6
QUEUE_WAIT_S = 60.0
"""How long the burst may take to queue behind the blocked vacuum (a bound, not a timing)."""


def test_erasures_arriving_while_a_vacuum_runs_share_the_next_one(
    mem: MemoryClient,
    client_with: Callable[..., MemoryClient],
    vacuum_locked: Callable[[], None],
) -> None:
    client = client_with(erasure_vacuum_timeout_s=2 * QUEUE_WAIT_S)
    users = [f"buyer-burst-{i}" for i in range(BURST)]
    for user in users:
        client.profiles.ensure(user)
        client.write(user, f"{user} 的退货地址换成鸢尾花小区", lifecycle_policy=EXPLICIT)
    vacuums: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.startswith("VACUUM"):
            vacuums.append(statement)

    event.listen(client.admin.database.engine, "before_cursor_execute", record)
    with ThreadPoolExecutor(BURST) as pool:
        erasures = [pool.submit(client.forget_user, u) for u in users]
        deadline = time.monotonic() + QUEUE_WAIT_S
        while client._rt().erasure_vacuum.waiting < BURST - 1:  # the first one's vacuum waits
            assert time.monotonic() < deadline, "the burst queued behind the first vacuum"
            time.sleep(0.01)
        vacuum_locked()
        assert [e.result() for e in erasures] == [True] * BURST
    event.remove(client.admin.database.engine, "before_cursor_execute", record)

    assert len(vacuums) == 2, "one vacuum for the first erasure, one for the other five"
    heaps = heap_tuples(mem)
    heaps.pop(AUDIT_LOG)
    assert not [u for u in users if any(u.encode() in blob for blob in heaps.values())]
