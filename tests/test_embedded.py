"""The embedded server: shared by the processes of one data dir, stopped by the last one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

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


def _postmaster_pid(pgdata: Path) -> int | None:
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return None
    return int(pid_file.read_text().splitlines()[0])


def _start(data_dir: Path, who: str, rows: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(data_dir), who],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().split() == ["ready", str(rows)]
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    assert proc.wait(60) == 0


def test_two_processes_share_one_server_and_the_last_stops_it(tmp_path: Path) -> None:
    first = _start(tmp_path, "first", 1)
    pid = _postmaster_pid(tmp_path / "pg")
    assert pid is not None
    second = _start(tmp_path, "second", 2)
    assert _postmaster_pid(tmp_path / "pg") == pid, "the second process joins, not restarts"
    _stop(first)
    assert psutil.pid_exists(pid), "the server outlives the first process while another uses it"
    _stop(second)
    deadline = time.monotonic() + 30
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not psutil.pid_exists(pid), "the last process stops the server"
    third = _start(tmp_path, "third", 3)  # the data survived the stop
    _stop(third)
