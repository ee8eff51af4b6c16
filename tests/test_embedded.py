"""The embedded server: shared by the processes of one data dir, stopped by the last live one.

Every test starts its own server in a temporary data dir and stops it in
``finally``, whatever the test left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from policies.errors import DatabaseUnavailable
from structured_memory.database import Database
from structured_memory.embedded import start_embedded_server

REPO = Path(__file__).resolve().parents[1]
WAIT_S = 90
"""Bound on every wait for a child process or the server (a slow machine, not a timing claim)."""

HOLDER = """
import sys
from pathlib import Path
from structured_memory.database import Database
from structured_memory.embedded import start_embedded_server
from sqlalchemy import text
db = Database.from_dsn(start_embedded_server(Path(sys.argv[1])))
with db.transaction() as conn:
    conn.execute(text("CREATE TABLE IF NOT EXISTS seen (who text)"))
    conn.execute(text("INSERT INTO seen VALUES (:w)"), {"w": sys.argv[2]})
    count = conn.execute(text("SELECT count(*) FROM seen")).scalar_one()
print("ready", count, flush=True)
sys.stdin.readline()
db.dispose()
"""

RACER = """
import sys
from pathlib import Path
from structured_memory.database import Database
from structured_memory.embedded import start_embedded_server
from sqlalchemy import text
print("armed", flush=True)
sys.stdin.readline()  # every racer starts at the same moment
db = Database.from_dsn(start_embedded_server(Path(sys.argv[1])))
with db.transaction() as conn:
    print("ready", conn.execute(text("SELECT 1")).scalar_one(), flush=True)
sys.stdin.readline()
db.dispose()
"""

FAILING = """
import sys
from pathlib import Path
from policies.errors import DatabaseUnavailable
from structured_memory.embedded import start_embedded_server
try:
    start_embedded_server(Path(sys.argv[1]))
except DatabaseUnavailable as exc:
    print(exc.code, "postmaster.pid" in exc.message, flush=True)
"""


def _postmaster_pid(pgdata: Path) -> int | None:
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return None
    return int(pid_file.read_text().splitlines()[0])


def _spawn(children: list[subprocess.Popen[str]], script: str, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONWARNINGS": "ignore"},
    )
    children.append(proc)
    return proc


def _line(proc: subprocess.Popen[str]) -> list[str]:
    """The child's next stdout line, split; its stderr in the failure if it died or hung."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], WAIT_S)
    line = proc.stdout.readline() if ready else ""
    if not line:
        proc.kill()
        _, err = proc.communicate(timeout=WAIT_S)
        pytest.fail(f"child {proc.pid} gave no line; stderr:\n{err[-3000:]}")
    return line.split()


def _send(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()


def _start(
    children: list[subprocess.Popen[str]], data_dir: Path, who: str, rows: int
) -> subprocess.Popen[str]:
    proc = _spawn(children, HOLDER, str(data_dir), who)
    assert _line(proc) == ["ready", str(rows)]
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    _send(proc)
    assert proc.wait(WAIT_S) == 0


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(WAIT_S)


def _wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + WAIT_S
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        with contextlib.suppress(psutil.Error):
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        time.sleep(0.2)
    return not psutil.pid_exists(pid)


@contextlib.contextmanager
def _cleanup(
    data_dir: Path, *procs: subprocess.Popen[str]
) -> Iterator[list[subprocess.Popen[str]]]:
    """Kill the children still running and the server of ``data_dir``, whatever happened."""
    children = list(procs)
    try:
        yield children
    finally:
        for proc in children:
            if proc.poll() is None:
                _kill(proc)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        pid = _postmaster_pid(data_dir / "pg")
        if pid is not None and psutil.pid_exists(pid):
            with contextlib.suppress(psutil.Error):
                server = psutil.Process(pid)
                if str(data_dir) in " ".join(server.cmdline()):  # ours, not another test's
                    server.send_signal(signal.SIGINT)  # fast shutdown
                    if not _wait_gone(pid):
                        server.kill()


def test_two_processes_share_one_server_and_the_last_stops_it(tmp_path: Path) -> None:
    with _cleanup(tmp_path) as children:
        first = _start(children, tmp_path, "first", 1)
        pid = _postmaster_pid(tmp_path / "pg")
        assert pid is not None
        second = _start(children, tmp_path, "second", 2)
        assert _postmaster_pid(tmp_path / "pg") == pid, "the second process joins, not restarts"
        _stop(first)
        assert psutil.pid_exists(pid), "the server outlives the first process while another uses it"
        _stop(second)
        assert _wait_gone(pid), "the last process stops the server"
        _stop(_start(children, tmp_path, "third", 3))  # the data survived the stop


def test_four_processes_start_together_on_a_fresh_data_dir(tmp_path: Path) -> None:
    with _cleanup(tmp_path) as racers:
        for _ in range(4):
            _spawn(racers, RACER, str(tmp_path))
        for racer in racers:
            assert _line(racer) == ["armed"]
        for racer in racers:
            _send(racer)
        for racer in racers:
            assert _line(racer) == ["ready", "1"]
        pid = _postmaster_pid(tmp_path / "pg")
        assert pid is not None
        for racer in racers:
            _stop(racer)
        assert _wait_gone(pid), "the last of the four stops the server"


def test_killed_users_do_not_keep_the_server_running(tmp_path: Path) -> None:
    handles = tmp_path / "pg" / ".handle_pids.json"  # the wheel's list of user pids
    with _cleanup(tmp_path) as children:
        killed_before = _start(children, tmp_path, "killed-before", 1)
        pid = _postmaster_pid(tmp_path / "pg")
        assert pid is not None
        _kill(killed_before)  # its pid stays in the handle file until the next start
        survivor = _start(children, tmp_path, "survivor", 2)
        assert killed_before.pid not in json.loads(handles.read_text())
        killed_after = _start(children, tmp_path, "killed-after", 3)
        _kill(killed_after)  # dropped when the survivor, the last live user, exits
        # a killed user whose pid another program got since: alive, but not a user
        recycled = subprocess.Popen(["sleep", str(WAIT_S)])
        try:
            handles.write_text(json.dumps([*json.loads(handles.read_text()), recycled.pid]))
            users = tmp_path / ".embedded_users.json"
            users.write_text(json.dumps({**json.loads(users.read_text()), recycled.pid: 1.0}))
            assert _postmaster_pid(tmp_path / "pg") == pid
            _stop(survivor)
            assert _wait_gone(pid), "the last live user stops the server"
            assert _postmaster_pid(tmp_path / "pg") is None
        finally:
            recycled.kill()
            recycled.wait(WAIT_S)


def test_a_dead_server_is_started_again_and_engines_reconnect(tmp_path: Path) -> None:
    with _cleanup(tmp_path) as children:
        dsn = start_embedded_server(tmp_path)
        db = Database.from_dsn(dsn)
        try:
            db.ping()
            pid = _postmaster_pid(tmp_path / "pg")
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            assert _wait_gone(pid)
            with pytest.raises(DatabaseUnavailable):
                db.ping()  # typed while the server is down
            assert start_embedded_server(tmp_path) == dsn
            restarted = _postmaster_pid(tmp_path / "pg")
            assert restarted is not None
            assert restarted != pid
            fresh = Database.from_dsn(dsn)
            fresh.ping()
            fresh.dispose()
            db.ping()  # the old engine's pool pre-pings and reconnects
            os.kill(restarted, signal.SIGKILL)
            assert _wait_gone(restarted)
            _stop(_start(children, tmp_path, "a new process restarts it", 1))
            db.ping()
        finally:
            db.dispose()


def test_a_stale_postmaster_pid_naming_another_process_is_database_unavailable(
    tmp_path: Path,
) -> None:
    """A ``postmaster.pid`` left by a crash whose pid now runs something else.

    The start fails typed, saying what to do, and the exiting process does not
    signal the stranger (``pg_ctl stop`` would).
    """
    with _cleanup(tmp_path) as children:
        holder = _start(children, tmp_path, "before the crash", 1)
        pgdata = tmp_path / "pg"
        lines = (pgdata / "postmaster.pid").read_text().splitlines(keepends=True)
        os.kill(int(lines[0]), signal.SIGKILL)
        assert _wait_gone(int(lines[0]))
        _stop(holder)
        # the dead server's file survives, naming the pid some other program got since
        stranger = subprocess.Popen(["sleep", str(WAIT_S)])
        try:
            (pgdata / "postmaster.pid").write_text("".join([f"{stranger.pid}\n", *lines[1:]]))
            failing = _spawn(children, FAILING, str(tmp_path))
            assert _line(failing) == ["database_unavailable", "True"]
            assert failing.wait(WAIT_S) == 0
            assert stranger.poll() is None, "the exiting process signalled an unrelated process"
        finally:
            stranger.kill()
            stranger.wait(WAIT_S)


BUFFERS = """
import sys
from pathlib import Path
from sqlalchemy import text
from structured_memory.database import Database
from structured_memory.embedded import start_embedded_server
db = Database.from_dsn(start_embedded_server(Path(sys.argv[1])))
with db.reading() as conn:
    print("ready", conn.execute(text("SHOW shared_buffers")).scalar_one(), flush=True)
sys.stdin.readline()
db.dispose()
"""


def test_a_new_data_dir_sizes_shared_buffers_to_the_machine(tmp_path: Path) -> None:
    """PostgreSQL's 128 MB default holds the rows of 10,000 memories, not of 100,000: a new
    data dir gets an eighth of the machine's memory, from 128 MB to 1 GB."""
    from structured_memory.embedded import shared_buffers_mb

    eighth = psutil.virtual_memory().total // 8 // 2**20
    mb = shared_buffers_mb()
    assert mb == max(128, min(1024, eighth))
    shown = f"{mb // 1024}GB" if mb % 1024 == 0 else f"{mb}MB"  # as SHOW prints it
    with _cleanup(tmp_path) as children:
        first = _spawn(children, BUFFERS, str(tmp_path))
        assert _line(first) == ["ready", shown]
        _stop(first)
        again = _spawn(children, BUFFERS, str(tmp_path))  # kept across a stop and a start
        assert _line(again) == ["ready", shown]
        _stop(again)


def test_shared_buffers_the_machine_cannot_map_fall_back_to_the_default(tmp_path: Path) -> None:
    """A size the server cannot start with leaves a working server at 128 MB, not a data
    dir that never starts again."""
    huge = BUFFERS.replace(
        "from structured_memory.embedded import start_embedded_server",
        "import structured_memory.embedded as embedded\n"
        "from structured_memory.embedded import start_embedded_server\n"
        "embedded.shared_buffers_mb = lambda: 1 << 22  # 4 TiB: accepted, then unmappable",
    )
    with _cleanup(tmp_path) as children:
        first = _spawn(children, huge, str(tmp_path))
        assert _line(first) == ["ready", "128MB"]
        _stop(first)
        again = _spawn(children, BUFFERS, str(tmp_path))  # not new: started as it is
        assert _line(again) == ["ready", "128MB"]
        _stop(again)
