"""The client-only distribution (``dualtrack-client``) beside the full install: installed
size with its dependencies, modules and time of ``import sdk.remote, sdk.remote_async``
in a fresh interpreter. The wheel is built from this checkout and installed into a fresh
venv; the full install is this venv.

Usage: ``python -m benchmarks.thin_client [--quick]`` (7 imports each; 3 with --quick).
Aims (issue 22): at most 30 MB installed, an import of at most 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import console, print_table, write_result
from scripts.client_venv import CLIENT_PROJECT, build_wheel, installed, venv_with

_IMPORT = (
    "import sys, time\n"
    "started = time.perf_counter()\n"
    "import sdk.remote, sdk.remote_async\n"
    "print(time.perf_counter() - started, len(sys.modules))"
)


def _imports(python: Path, runs: int) -> dict[str, Any]:
    """Seconds and module count of the import in ``runs`` fresh interpreters (outside the
    checkout, so only what is installed is found)."""
    seconds, modules = [], 0
    with tempfile.TemporaryDirectory() as elsewhere:
        for _ in range(runs):
            done = subprocess.run(
                [str(python), "-c", _IMPORT],
                capture_output=True,
                text=True,
                check=True,
                cwd=elsewhere,
                timeout=120,
            )
            took, count = done.stdout.split()
            seconds.append(float(took))
            modules = int(count)
    return {
        "median_s": round(statistics.median(seconds), 3),
        "min_s": round(min(seconds), 3),
        "max_s": round(max(seconds), 3),
        "modules": modules,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="3 imports of each, not 7")
    args = parser.parse_args(argv)
    runs = 3 if args.quick else 7
    with tempfile.TemporaryDirectory(prefix="thin-client-") as tmp:
        wheel = build_wheel(CLIENT_PROJECT, Path(tmp) / "wheel")
        python = venv_with(Path(tmp) / "venv", str(wheel))
        thin = installed(python, "dualtrack-client")
        thin_import = _imports(python, runs)
    full = installed(Path(sys.executable), "dualtrack-memory")
    full_import = _imports(Path(sys.executable), runs)
    result: dict[str, Any] = {
        "runs": runs,
        "thin": {
            "installed_mb": round(thin.bytes / 1e6, 1),
            "distributions": thin.distributions,
            "import": thin_import,
        },
        "full": {
            "installed_mb": round(full.bytes / 1e6, 1),
            "distributions": len(full.distributions),
            "import": full_import,
        },
    }
    rows = []
    for name, r in (("dualtrack-client", result["thin"]), ("full (this venv)", result["full"])):
        took, n = r["import"], r["distributions"]
        spread = f"{took['median_s']:.3f} ({took['min_s']:.3f}-{took['max_s']:.3f})"
        count = len(n) if isinstance(n, list) else n
        rows.append([name, f"{r['installed_mb']:.1f}", str(count), str(took["modules"]), spread])
    print_table(
        f"dualtrack-client beside the full install: import sdk.remote, sdk.remote_async "
        f"(median of {runs} fresh interpreters)",
        ["install", "installed MB", "distributions", "modules loaded", "import s (min-max)"],
        rows,
    )
    console.print(json.dumps({"aims": {"installed_mb": 30, "import_s": 0.3}}))
    write_result("thin_client" + ("-quick" if args.quick else ""), result)
    return result


if __name__ == "__main__":
    main()
