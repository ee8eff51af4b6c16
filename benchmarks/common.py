"""Helpers shared by the benchmarks: clients and users, timing and percentiles, tables,
result files, and the Weaviate server a benchmark talks to."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import statistics
import subprocess
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from sdk.client import MemoryClient
from sdk.settings import Settings

__all__ = [
    "RESULTS",
    "WeaviateAt",
    "add_weaviate_option",
    "bench_client",
    "console",
    "elapsed_ms",
    "fresh_users",
    "git_state",
    "latency_stats",
    "percentile",
    "print_table",
    "wait_for_index",
    "write_result",
]

RESULTS = Path(__file__).parent / "results"
_terminal = Console()
console = _terminal if _terminal.is_terminal else Console(width=150)
"""Output of every benchmark (150 columns off a terminal, where Rich would wrap at 80)."""


# -- clients and users ----------------------------------------------------------------------


def bench_client(name: str, **overrides: Any) -> MemoryClient:
    """A started client on ``DUALTRACK_POSTGRES_DSN`` or an embedded server under
    ``.dualtrack/bench-<name>`` (kept apart from the demo's data)."""
    settings = Settings.from_env(**overrides)
    if settings.postgres_dsn is None and "DUALTRACK_DATA_DIR" not in os.environ:
        settings = Settings(
            **{**settings.model_dump(), "data_dir": Path(f".dualtrack/bench-{name}")}
        )
    return MemoryClient(settings, agent_id="bench").start()


def fresh_users(mem: MemoryClient, user_ids: Iterable[str]) -> None:
    """Erase what earlier runs left for ``user_ids`` and create each user again, empty
    (a write for a user without a profile raises ``UserNotFound``)."""
    for user_id in user_ids:
        mem.forget_user(user_id)
        mem.profiles.ensure(user_id)


def wait_for_index(mem: MemoryClient, *, timeout_s: float = 600.0) -> float:
    """Seconds until a derived index has applied every outbox entry, draining in this
    process too; 0 for an index that reads the ledger itself (pgvector)."""
    if not mem.admin.index.derived:
        return 0.0
    started = time.perf_counter()
    while (lag := mem.admin.outbox_lag()).pending:
        if time.perf_counter() - started > timeout_s:
            raise RuntimeError(
                f"the index is still behind after {timeout_s:.0f} s ({lag.pending} pending, "
                f"{lag.failing} failing); a Weaviate log full of 'too many open files' means "
                "too many active tenants for the server's file descriptor limit"
            )
        if mem.admin.drain_outbox(deadline_s=30.0).applied == 0:
            time.sleep(0.2)  # a failed batch waits for its retry time
    return time.perf_counter() - started


# -- timing and percentiles -----------------------------------------------------------------


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()`` value)."""
    return (time.perf_counter() - started) * 1000.0


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[max(0, min(98, round(q) - 1))]


def latency_stats(samples_ms: Sequence[float]) -> dict[str, float]:
    """Count, p50, p95 and mean of latencies in milliseconds, rounded to 0.01 ms."""
    return {
        "n": len(samples_ms),
        "p50_ms": round(percentile(samples_ms, 50), 2),
        "p95_ms": round(percentile(samples_ms, 95), 2),
        "mean_ms": round(statistics.fmean(samples_ms), 2) if samples_ms else float("nan"),
    }


# -- output ---------------------------------------------------------------------------------


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a Rich table of ``rows``; floats get three decimals."""
    table = Table(*columns, title=title)
    for row in rows:
        table.add_row(*(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row))
    console.print(table)


def git_state() -> str:
    """The checkout's commit, ``+dirty`` when tracked files differ from it ("" outside git)."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
        except OSError:
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    return commit + ("+dirty" if commit and git("status", "--short", "-uno") else "")


def write_result(name: str, payload: dict[str, Any]) -> Path:
    """Write ``payload`` with machine facts and the git state to
    ``benchmarks/results/<name>.json``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    meta = {
        "benchmark": name,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": git_state(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    path.write_text(json.dumps({**meta, **payload}, indent=2, ensure_ascii=False, default=str))
    console.print(f"wrote {path}")
    return path


# -- Weaviate -------------------------------------------------------------------------------


@dataclass(frozen=True)
class WeaviateAt:
    """Where a benchmark's Weaviate server listens (``HOST:PORT:GRPC_PORT``)."""

    host: str
    port: int
    grpc_port: int

    @classmethod
    def parse(cls, text: str) -> WeaviateAt:
        """``127.0.0.1:8080:50051`` as a value; ``ValueError`` for another shape."""
        host, port, grpc_port = text.rsplit(":", 2)
        return cls(host, int(port), int(grpc_port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}:{self.grpc_port}"

    def index_config(self, collection: str, keyword_property: str = "index_text") -> dict[str, Any]:
        """The ``index_config`` of a client searching ``collection`` on this server."""
        return {
            "host": self.host,
            "port": self.port,
            "grpc_port": self.grpc_port,
            "collection": collection,
            "keyword_property": keyword_property,
        }

    def client(self) -> Any:
        """A bare weaviate-client connection (close it); ``SystemExit`` if the server is down."""
        with warnings.catch_warnings():
            # authlib installs an "always" filter for its deprecation warnings on import
            with contextlib.suppress(ImportError):
                importlib.import_module("authlib.deprecate")
            warnings.simplefilter("ignore", DeprecationWarning)
            import weaviate
        from weaviate.exceptions import WeaviateBaseError

        down = SystemExit(
            f"no Weaviate at {self}; start one, e.g. WEAVIATE_PORT={self.port} "
            f"WEAVIATE_GRPC_PORT={self.grpc_port} scripts/weaviate.sh start"
        )
        try:
            client = weaviate.connect_to_local(
                host=self.host, port=self.port, grpc_port=self.grpc_port, skip_init_checks=True
            )
        except WeaviateBaseError as exc:
            raise down from exc
        if not client.is_ready():
            client.close()
            raise down
        return client


def add_weaviate_option(parser: argparse.ArgumentParser) -> None:
    """``--weaviate HOST:PORT:GRPC_PORT`` (default ``127.0.0.1:8080:50051``)."""
    parser.add_argument(
        "--weaviate",
        type=WeaviateAt.parse,
        default=WeaviateAt("127.0.0.1", 8080, 50051),
        help="HOST:PORT:GRPC_PORT of the Weaviate server (default %(default)s)",
    )
