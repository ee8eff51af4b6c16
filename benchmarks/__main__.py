"""``make bench``: run every benchmark in turn (``--quick`` for a short run).

structured, unstructured, LoCoMo through the SDK, the analysis of adversarial
texts, the mixed concurrent load, the audit log's cost, the cross-session scenario
suite, then the service's HTTP overhead; ``--quick`` is
passed to each. The in-memory LoCoMo reference
(``python -m benchmarks.locomo_offline``) is not run here: ``benchmarks.locomo``
evaluates it beside the SDK numbers. The Weaviate benchmarks need a server:
``make bench-weaviate`` starts one and runs them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks import (
    adversarial,
    audit,
    locomo,
    mixed_load,
    service,
    structured,
    unstructured,
)
from benchmarks.scenarios import run as scenarios

BENCHMARKS: dict[str, Callable[[list[str]], Any]] = {
    "structured": structured.main,
    "unstructured": unstructured.main,
    "locomo": locomo.main,
    "adversarial": adversarial.main,
    "mixed_load": mixed_load.main,
    "audit": audit.main,
    "scenarios": scenarios.main,
    "service": service.main,
}


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmarks, passing ``--quick`` through; other flags are rejected."""
    args = list(sys.argv[1:] if argv is None else argv)
    unknown = [a for a in args if a != "--quick"]
    if unknown:
        raise SystemExit(f"usage: python -m benchmarks [--quick] (unknown: {' '.join(unknown)})")
    for name, run in BENCHMARKS.items():
        print(f"\n=== {name} ===", flush=True)
        run(args)


if __name__ == "__main__":
    main()
