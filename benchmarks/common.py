"""Helpers shared by the benchmarks: a client on a scratch data dir, percentiles, output."""

from __future__ import annotations

import json
import os
import platform
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from sdk.client import MemoryClient
from sdk.settings import Settings

__all__ = ["RESULTS", "bench_client", "console", "percentile", "print_table", "write_result"]

RESULTS = Path(__file__).parent / "results"
console = Console()


def bench_client(name: str, **overrides: Any) -> MemoryClient:
    """A started client on ``DUALTRACK_POSTGRES_DSN`` or an embedded server under
    ``.dualtrack/bench-<name>`` (kept apart from the demo's data)."""
    settings = Settings.from_env(**overrides)
    if settings.postgres_dsn is None and "DUALTRACK_DATA_DIR" not in os.environ:
        settings = Settings(
            **{**settings.model_dump(), "data_dir": Path(f".dualtrack/bench-{name}")}
        )
    return MemoryClient(settings, agent_id="bench").start()


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[max(0, min(98, round(q) - 1))]


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print a Rich table of ``rows``; floats get three significant decimals."""
    table = Table(*columns, title=title)
    for row in rows:
        table.add_row(*(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row))
    console.print(table)


def write_result(name: str, payload: dict[str, Any]) -> Path:
    """Write ``payload`` with machine facts to ``benchmarks/results/<name>.json``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    meta = {
        "benchmark": name,
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    path.write_text(json.dumps({**meta, **payload}, indent=2, ensure_ascii=False, default=str))
    console.print(f"wrote {path}")
    return path
