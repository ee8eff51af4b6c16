"""Drill: PostgreSQL is killed under load (writes, searches, a key rotation in flight).

Issue 11: the embedded server of a data dir of its own is SIGKILLed while threads run
``write_many`` with phones and emails for several users, ``search``, and
``rotate_keys`` (a new ring key put first, so every data key has to be re-wrapped);
then it is started again the way a new process would (``start_embedded_server``).
The index is Weaviate at a port where nothing answers, with an external outbox
worker: every write queues an outbox row that nobody applies, and searches degrade to
the ledger. The loop is bounded; nothing is timed.

Asserted: only :class:`DualtrackError` subclasses escape; the same client serves
writes and searches again; every write either committed whole (all of its fragments,
tagged by its own session id) or not at all, and every id a successful write returned
exists; every vault id a fragment's ``metadata["pii"]`` names exists; every fragment
has its outbox upsert row; a rerun of ``rotate_keys`` completes and every vault entry
decrypts.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import threading
import time
import traceback
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import pytest
from sqlalchemy import text

from benchmarks.mixed_load import INVARIANTS
from policies.errors import DualtrackError
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory.cross_user import rotate_keys
from structured_memory.embedded import start_embedded_server
from tests.conftest import key_line
from values.inputs import MemoryInput

USERS = tuple(f"kill-buyer-{i:02d}" for i in range(6))
SEEDED_USERS = 120
"""Users whose data keys the rotation has to re-wrap (it is still running at the kill)."""
TEXTS = (
    "我的手机号是 1391234{n:04d}，订单 88231 的退款 RF20260629001 到账了吗",
    "通知发到邮箱 buyer{n}@example.cn，订单 88231 已签收",
    "Please call 1380000{n:04d} about order 88231",
)
QUERIES = ("退款到账了吗", "订单 88231 到哪了", "order 88231")


class Outcomes:
    """Every call's outcome by operation: ``ok``, a DualtrackError code, or ``untyped``."""

    def __init__(self) -> None:
        self.phase = "before"  # before the kill, "down", then "restarted"
        self.counts: defaultdict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self.untyped: list[str] = []
        self.written: dict[str, list[uuid.UUID] | None] = {}  # session id -> ids (None: raised)
        self.sizes: dict[str, int] = {}
        self._lock = threading.Lock()

    def call(self, op: str, fn: Callable[[], object]) -> object | None:
        """Run ``fn``, counting its outcome under ``op`` and the phase it started in;
        ``None`` when it raised."""
        phase = self.phase
        try:
            result = fn()
        except DualtrackError as exc:
            outcome, result = exc.code, None
        except Exception as exc:  # the drill's subject: counted and kept for the report
            outcome, result = "untyped", None
            with self._lock:
                self.untyped.append(f"{op}: {type(exc).__qualname__}\n{traceback.format_exc()}")
        else:
            outcome = "ok"
        with self._lock:
            self.counts[op, phase][outcome] += 1
        return result


def _kill_postmaster(pgdata: Path) -> int:
    pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    os.kill(pid, signal.SIGKILL)
    return pid


def _stop_server(pgdata: Path) -> None:
    """Stop this data dir's server (fast shutdown) rather than keep it to the session's end."""
    with contextlib.suppress(OSError, ValueError, psutil.Error):
        server = psutil.Process(int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0]))
        if str(pgdata) in server.cmdline():  # this drill's server, not another's
            server.send_signal(signal.SIGINT)
            server.wait(30)


@pytest.fixture
def killable(tmp_path: Path) -> Iterator[MemoryClient]:
    """A client with a two-key ring on an embedded server of its own, whose data keys
    were all wrapped under the older key by a client holding only that one."""
    dsn = start_embedded_server(tmp_path)
    base: dict[str, Any] = {
        "postgres_dsn": dsn,
        "data_dir": tmp_path,
        "index": "weaviate",
        "index_config": {"port": 1, "grpc_port": 2, "timeout_s": 1},
        "outbox_worker": "external",
    }
    old = key_line("k-kill-1", 7, age_days=100)
    with MemoryClient(Settings(**{**base, "pii_keys": old}), agent_id="refund-agent") as seeder:
        blind = seeder.admin.cipher.ring.blind.to_line()  # pinned: the blind index stays valid
        for i in range(SEEDED_USERS):
            user = f"kill-seed-{i:03d}"
            seeder.profiles.ensure(user)
            seeder.pii.store(user, "phone", f"1391234{i:04d}")
        for user in USERS:
            seeder.profiles.ensure(user)
    ring = ",".join([key_line("k-kill-2", 8), old, blind])
    settings = Settings(**{**base, "pii_keys": ring})
    try:
        with MemoryClient(settings, agent_id="refund-agent") as mem:
            yield mem
    finally:
        _stop_server(tmp_path / "pg")


def _items(w: int, session: str, serial: Iterator[int]) -> list[MemoryInput]:
    return [
        MemoryInput(
            user_id=USERS[(w + j) % len(USERS)],
            text=TEXTS[j % len(TEXTS)].format(n=next(serial) % 10_000),
            lifecycle_policy=LifecyclePolicy.SENSITIVE if j % 2 else LifecyclePolicy.EXPLICIT,
            session_id=session,
        )
        for j in range(3)
    ]


def _load_with_a_kill(mem: MemoryClient, data_dir: Path) -> tuple[Outcomes, int]:
    """Writers, searchers and a rotation; the postmaster killed once the rotation and the
    writes are under way, started again 1.5 s later; the load stops 1 s after that."""
    out = Outcomes()
    stop = threading.Event()
    rotation_started = threading.Event()
    serial = itertools.count()

    def writer(w: int) -> None:
        while not stop.is_set():
            session = f"kill-session-{w}-{next(serial)}"
            items = _items(w, session, serial)
            out.sizes[session] = len(items)
            ids = out.call("write_many", partial(mem.write_many, items, progress=False))
            out.written[session] = ids if isinstance(ids, list) else None

    def searcher(s: int) -> None:
        for n in itertools.count():
            if stop.is_set():
                return
            user, query = USERS[(s + n) % len(USERS)], QUERIES[n % len(QUERIES)]
            out.call("search", partial(mem.search, user, query, limit=3))

    def slow(_: int) -> None:
        rotation_started.set()
        time.sleep(0.05)  # keeps the rotation in flight when the server dies

    rotation = partial(
        rotate_keys, mem.admin.database, mem.admin.cipher, batch_size=4, progress=slow
    )
    mem.search(USERS[0], QUERIES[0], limit=3)  # loads the analysers before the load starts
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    threads += [threading.Thread(target=searcher, args=(s,)) for s in range(2)]
    threads.append(threading.Thread(target=out.call, args=("rotate_keys", rotation)))
    for t in threads:
        t.start()
    try:
        assert rotation_started.wait(20), "the rotation never started"
        deadline = time.monotonic() + 20
        while out.counts["write_many", "before"]["ok"] < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        killed = _kill_postmaster(data_dir / "pg")
        out.phase = "down"
        time.sleep(1.5)  # calls meet the dead server
        start_embedded_server(data_dir)  # what a new process of the data dir does
        out.phase = "restarted"
        time.sleep(1.0)  # and the restarted one
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not any(t.is_alive() for t in threads), "a call hung after the restart"
    return out, killed


def _scalar(mem: MemoryClient, sql: str) -> int:
    with mem.admin.database.transaction() as conn:
        return int(conn.execute(text(sql)).scalar_one())


def _rows(mem: MemoryClient, sql: str) -> list[tuple[Any, ...]]:
    with mem.admin.database.transaction() as conn:
        return [tuple(row) for row in conn.execute(text(sql)).all()]


def _print_outcomes(out: Outcomes, killed: int) -> None:
    print(f"\npostmaster {killed} killed and restarted")
    codes = sorted({c for counts in out.counts.values() for c in counts})
    print(f"{'operation':12} {'phase':10} " + " ".join(f"{c:>20}" for c in codes))
    for (op, phase), counts in sorted(out.counts.items()):
        print(f"{op:12} {phase:10} " + " ".join(f"{counts[c]:>20}" for c in codes))


def test_postgres_killed_under_load_leaves_whole_writes_and_a_resumable_rotation(
    killable: MemoryClient, tmp_path: Path
) -> None:
    mem = killable
    out, killed = _load_with_a_kill(mem, tmp_path)
    _print_outcomes(out, killed)
    assert out.untyped == [], "\n\n".join(out.untyped[:3])
    assert out.counts["write_many", "before"]["ok"] > 0, "nothing written before the kill"
    assert out.counts["write_many", "down"]["database_unavailable"] > 0, (
        "no write met the dead server: the drill proves nothing"
    )

    # the same client serves again
    again = MemoryInput(
        user_id=USERS[0], text=TEXTS[0].format(n=1), lifecycle_policy=LifecyclePolicy.SENSITIVE
    )
    after = mem.write_many([again], progress=False)
    mem.search(USERS[0], QUERIES[0], limit=3)
    rerun = rotate_keys(mem.admin.database, mem.admin.cipher, batch_size=50)

    per_session = dict(
        _rows(
            mem,
            "SELECT session_id, count(*) FROM memory_fragment "
            "WHERE session_id LIKE 'kill-session-%' GROUP BY session_id",
        )
    )
    present = {row[0] for row in _rows(mem, "SELECT id FROM memory_fragment")}
    halves = [s for s, n in out.sizes.items() if per_session.get(s, 0) not in (0, n)]
    lost = [s for s, ids in out.written.items() if ids is not None and not set(ids) <= present]
    raised_but_committed = [s for s, ids in out.written.items() if ids is None and s in per_session]
    without_outbox = _scalar(
        mem,
        "SELECT count(*) FROM memory_fragment f WHERE NOT EXISTS (SELECT 1 FROM "
        "fragment_outbox o WHERE o.op = 'upsert' AND o.fragment_id = f.id)",
    )
    violations = {name: _scalar(mem, sql) for name, sql in INVARIANTS.items()}
    with_pii = _scalar(
        mem,
        "SELECT count(*) FROM memory_fragment WHERE jsonb_typeof(metadata -> 'pii') = 'array' "
        "AND jsonb_array_length(metadata -> 'pii') > 0",
    )
    vault = _rows(mem, "SELECT user_id, id FROM pii_vault")
    unreadable = Counter[str]()
    for user, entry in vault:
        try:
            mem.pii.reveal(user, entry)
        except DualtrackError as exc:
            unreadable[exc.code] += 1
    print(
        f"writes: {len(out.sizes)}, raised but committed whole: {len(raised_but_committed)}, "
        f"half written: {len(halves)}, acknowledged but missing: {len(lost)}; fragments "
        f"{len(present)} ({with_pii} naming vault entries), without an outbox row: "
        f"{without_outbox}; invariants: {violations}"
    )
    print(
        f"rotation rerun: rewrapped {rerun.rewrapped}, remaining {rerun.remaining}, "
        f"failed {len(rerun.failed) + len(rerun.failed_data_keys)}; vault entries "
        f"{len(vault)}, unreadable {dict(unreadable)}"
    )
    assert set(after) <= present
    assert halves == []
    assert lost == []
    assert with_pii > 0, "no fragment references the vault: the check proves nothing"
    assert without_outbox == 0
    assert violations == dict.fromkeys(violations, 0)
    assert (rerun.remaining, rerun.failed, rerun.failed_data_keys) == (0, (), ())
    assert unreadable == Counter()
    assert _rows(mem, "SELECT DISTINCT key_id FROM pii_data_key") == [("k-kill-2",)]
