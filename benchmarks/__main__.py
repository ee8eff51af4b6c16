"""``make bench``: run every benchmark, repeated, and print one summary table.

``python -m benchmarks [--quick] [--repeat N] [--only a,b]`` runs structured,
unstructured, LoCoMo through the SDK, MADial-Bench and the project's dialogue-as-query
set (each beside a character-bigram BM25 computed in the same run), the analysis of
adversarial texts, the mixed concurrent load, the audit log's cost, the cross-session
scenario suite, search beside the bare-SQL floor, write throughput and the service's HTTP
overhead, the client-only distribution's size and import time beside the full install,
with a progress bar over the runs.
Each benchmark writes its own ``benchmarks/results/<name>[-quick].json`` (the last
repeat's) and its tables go to
``benchmarks/results/bench[-quick].log``; a few headline figures of each run are kept,
and the summary shows their median over the repeats (ratios are taken within one run,
then their median). The summary and the machine it ran on go to
``benchmarks/results/summary[-quick].json`` (``summary[-quick]-only.json`` and
``bench[-quick]-only.log`` for an ``--only`` run).

Repeats: 3 for the short benchmarks, 1 for the long ones (unstructured, LoCoMo, the
scenario suite, the search floor, writes), unless ``--repeat`` sets them all. The in-memory
LoCoMo reference (``python -m benchmarks.locomo_offline``) is not run here: ``benchmarks.locomo``
evaluates it beside the SDK numbers. The Weaviate benchmarks need a server:
``make bench-weaviate`` starts one and runs them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from benchmarks import (
    adversarial,
    audit,
    dialogue_recall,
    locomo,
    madial,
    mixed_load,
    search_floor,
    service,
    structured,
    thin_client,
    unstructured,
    writes,
)
from benchmarks.common import RESULTS, console, git_state
from benchmarks.scenarios import run as scenarios

Figures = dict[str, float]


def _structured(r: dict[str, Any]) -> Figures:
    return {
        "profile read p50 (ms)": r["reads"]["p50_ms"],
        "profile read p95 (ms)": r["reads"]["p95_ms"],
        "optimistic updates/s (distinct users)": r["optimistic_throughput"]["updates_per_s"],
        "hot user p95 ratio optimistic / FOR UPDATE": r[
            "latency_p95_ratio_optimistic_over_for_update"
        ],
    }


def _unstructured(r: dict[str, Any]) -> Figures:
    stage = r["backends"][0]["stages"][-1]
    n = stage["fragments_total"]
    return {
        f"ingest fragments/s (to {n:,})": stage["ingest"]["fragments_per_s"],
        f"hybrid search p50 (ms, {n:,})": stage["search"]["hybrid"]["p50_ms"],
        f"hybrid search p95 (ms, {n:,})": stage["search"]["hybrid"]["p95_ms"],
    }


def _locomo(r: dict[str, Any]) -> Figures:
    splits = r["splits"]
    return {
        "hybrid recall@10, tuning (%)": splits["tuning"]["sdk"]["hybrid"]["overall"]["recall@10"],
        "hybrid recall@10, held-out (%)": splits["held_out"]["sdk"]["hybrid"]["overall"][
            "recall@10"
        ],
        "ingest memories/s": r["ingest"]["memories_per_s"],
        "hybrid search p95 (ms)": r["search_latency"]["hybrid"]["p95_ms"],
    }


def _adversarial(r: dict[str, Any]) -> Figures:
    return {
        "worst time ratio to ordinary text (64 KiB)": max(
            w["ratio"] for w in r["worst_ratio"].values()
        )
    }


def _mixed_load(r: dict[str, Any]) -> Figures:
    calls = sum(op["calls"] for op in r["operations"].values())
    return {
        "operations/s, all kinds": calls / r["seconds"],
        "invariant violations": sum(r["invariant_violations"].values()),
        "untyped errors": len(r["untyped"]),
    }


def _audit(r: dict[str, Any]) -> Figures:
    single = r["single_entry"]
    return {
        "audited / unaudited change p50 ratio": single["with"]["p50_ms"]
        / single["without"]["p50_ms"],
        "audit share of a write batch (%)": 100 * r["batch"]["share"],
    }


def _scenarios(suite: scenarios.Suite) -> Figures:
    figures: Figures = {}
    for split, results in suite.splits().items():
        if split == "dev" or not results:
            continue
        m = suite.metrics(results)
        figures |= {
            f"{split}: continuity (%)": 100 * m["continuity"],
            f"{split}: completion (%)": 100 * m["completion"],
            f"{split}: accuracy (%)": 100 * m["accuracy"],
            f"{split}: leaking scenarios": m["leaking_scenarios"],
        }
    return figures


def _dialogue(r: dict[str, Any]) -> Figures:
    if "skipped" in r:  # MADial-Bench without its dataset (the log says why)
        return {"skipped: no dataset": 1}
    return dialogue_recall.headline(r)


def _search_floor(r: dict[str, Any]) -> Figures:
    figures: Figures = {}
    for name, result in r["backends"].items():
        for size, stage in result["sizes"].items():
            ours, floor = stage["latency"]["ours: mem.search"], stage["latency"][result["floor"]]
            figures |= {
                f"{name} search p95 (ms, {size})": ours["p95_ms"],
                f"{name} floor p95 (ms, {size})": floor["p95_ms"],
                f"{name} ours / floor p95 ({size})": stage["ratio_ours_over_floor_p95"],
            }
        if flat := result["flatness_p95_large_over_small"]:
            figures[f"{name} search p95 100k / 10k"] = flat["ours: mem.search"]
    return figures


def _service(r: dict[str, Any]) -> Figures:
    http, sdk = r["http"]["routes"], r["sdk"]["routes"]
    return {
        **{
            f"HTTP / SDK p50 ratio, {route}": http[route]["p50_ms"] / sdk[route]["p50_ms"]
            for route in http
            if route in sdk
        },
        "HTTP / SDK ops/s ratio": r["http"]["ops_per_s"] / r["sdk"]["ops_per_s"],
    }


def _thin_client(r: dict[str, Any]) -> Figures:
    thin, full = r["thin"], r["full"]
    return {
        "client-only installed (MB, with dependencies)": thin["installed_mb"],
        "client-only import sdk.remote (s)": thin["import"]["median_s"],
        "full install import sdk.remote (s)": full["import"]["median_s"],
        "client-only modules loaded": thin["import"]["modules"],
        "full install modules loaded": full["import"]["modules"],
    }


def _writes(r: dict[str, Any]) -> Figures:
    default, large = r["write_many"][0], r["write_many"][-1]
    return {
        f"write_many memories/s (batch {default['batch_size']})": default["memories_per_s"],
        f"write_many memories/s (batch {large['batch_size']:,})": large["memories_per_s"],
        "mem.write p50 (ms)": r["single_write"]["p50_ms"],
        "mem.write p95 (ms)": r["single_write"]["p95_ms"],
        "peak RSS (MiB)": r["memory"]["peak_rss_mib"],
    }


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: its ``main``, the headline figures of its result, its default repeats."""

    run: Callable[[list[str]], Any]
    figures: Callable[[Any], Figures]
    repeats: int


BENCHMARKS: dict[str, Benchmark] = {
    "structured": Benchmark(structured.main, _structured, 3),
    "unstructured": Benchmark(unstructured.main, _unstructured, 1),
    "locomo": Benchmark(locomo.main, _locomo, 1),
    "madial": Benchmark(madial.main, _dialogue, 1),
    "dialogue_recall": Benchmark(dialogue_recall.main, _dialogue, 1),
    "adversarial": Benchmark(adversarial.main, _adversarial, 3),
    "mixed_load": Benchmark(mixed_load.main, _mixed_load, 3),
    "audit": Benchmark(audit.main, _audit, 3),
    "scenarios": Benchmark(scenarios.main, _scenarios, 1),
    "search_floor": Benchmark(search_floor.main, _search_floor, 1),
    "writes": Benchmark(writes.main, _writes, 1),
    "service": Benchmark(service.main, _service, 3),
    "thin_client": Benchmark(thin_client.main, _thin_client, 1),
}


def machine() -> dict[str, Any]:
    """The facts of the machine and checkout a summary was measured on."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_gib = None
    with contextlib.suppress(ValueError, OSError, AttributeError):
        memory_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    postgres = None
    if "DUALTRACK_POSTGRES_DSN" not in os.environ:
        with contextlib.suppress(OSError, StopIteration):  # StopIteration: no bench data yet
            marker = next(Path(".dualtrack").glob("bench-*/pg/PG_VERSION"))
            postgres = f"{marker.read_text().strip()} (embedded, pgvector)"
    return {
        "platform": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory_gib": memory_gib,
        "python": platform.python_version(),
        "postgres": postgres,
        "git": git_state(),
    }


def machine_line(facts: dict[str, Any]) -> str:
    """One line naming the machine, for the summary and the README."""
    parts = [
        f"{facts['cpus']} cores" + (f" ({facts['cpu']})" if facts["cpu"] else ""),
        f"{facts['memory_gib']} GiB" if facts["memory_gib"] else "",
        facts["platform"],
        f"Python {facts['python']}",
        f"PostgreSQL {facts['postgres']}" if facts["postgres"] else "",
        f"git {facts['git']}" if facts["git"] else "",
    ]
    return ", ".join(p for p in parts if p)


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 or float(value).is_integer() else f"{value:.2f}"


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("--quick", action="store_true", help="the short run of each benchmark")
    parser.add_argument(
        "--repeat", type=int, help="runs of every benchmark (default: 3, 1 for the long ones)"
    )
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(BENCHMARKS)}")
    args = parser.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.only:
        args.only = [n.strip() for n in args.only.split(",") if n.strip()]
        if unknown := [n for n in args.only if n not in BENCHMARKS]:
            parser.error(f"unknown benchmarks: {', '.join(unknown)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks, print the summary table, write ``summary*.json``;
    1 if a benchmark failed (the others still run)."""
    args = _parse(argv)
    names = args.only or list(BENCHMARKS)
    plan = [(n, args.repeat or BENCHMARKS[n].repeats) for n in names]
    suffix = ("-quick" if args.quick else "") + ("-only" if args.only else "")
    RESULTS.mkdir(parents=True, exist_ok=True)
    log_path = RESULTS / f"bench{suffix}.log"
    runs: dict[str, list[Figures]] = {n: [] for n in names}
    seconds: dict[str, list[float]] = {n: [] for n in names}
    failures: dict[str, str] = {}
    out = Console(stderr=True)
    progress = Progress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=out,
        redirect_stdout=False,
        redirect_stderr=False,
    )
    with log_path.open("w", encoding="utf-8") as log, progress:
        task = progress.add_task("benchmarks", total=sum(r for _, r in plan))
        for name, repeats in plan:
            for i in range(repeats):
                progress.update(task, description=f"{name} ({i + 1}/{repeats})")
                started = time.perf_counter()
                try:
                    with contextlib.redirect_stdout(log):
                        print(f"\n=== {name} run {i + 1}/{repeats} ===", flush=True)
                        result = BENCHMARKS[name].run(["--quick"] if args.quick else [])
                    runs[name].append(BENCHMARKS[name].figures(result))
                except Exception as exc:  # one failed benchmark must not stop the others
                    log.write(traceback.format_exc())
                    failures[name] = f"{type(exc).__name__} (see {log_path.name})"
                    progress.advance(task, repeats - i)
                    break
                finally:
                    seconds[name].append(round(time.perf_counter() - started, 1))
                progress.advance(task)

    facts = machine()
    summary: dict[str, Any] = {}
    table = Table(
        "benchmark",
        "figure",
        "median",
        "runs",
        "min – max",
        title=f"Benchmarks{' (--quick)' if args.quick else ''}: medians of repeated runs",
        caption=machine_line(facts),
    )
    for name in names:
        if name in failures:
            table.add_row(name, f"[red]failed: {failures[name]}[/]", "", "", "")
            summary[name] = {"error": failures[name], "seconds": seconds[name]}
            continue
        labels = runs[name][0]
        medians = {k: statistics.median(r[k] for r in runs[name]) for k in labels}
        for k, median in medians.items():
            values = [r[k] for r in runs[name]]
            spread = f"{_fmt(min(values))} – {_fmt(max(values))}" if len(values) > 1 else ""
            table.add_row(name, k, _fmt(median), str(len(values)), spread)
        table.add_section()
        summary[name] = {"median": medians, "runs": runs[name], "seconds": seconds[name]}
    console.print(table)
    path = RESULTS / f"summary{suffix}.json"
    path.write_text(
        json.dumps(
            {
                "when": datetime.now(UTC).isoformat(timespec="seconds"),
                "quick": args.quick,
                "machine": facts,
                "benchmarks": summary,
            },
            indent=2,
            ensure_ascii=False,
        )
    )
    console.print(f"wrote {path} (tables of each run: {log_path})")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
