"""``structured_memory.cross_user`` is a package of jobs, and the only place that marks
statements as cross-user work (beside the outbox's claim, which takes every user's entries).

The statements themselves are checked in ``test_user_filter.py``; this checks where they
are built, so a new job cannot mark its statements from anywhere else.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "structured_memory" / "cross_user"
LAYERS = ("policies", "structured_memory", "unstructured_memory", "sandbox", "sdk", "service")
MARKING = re.compile(r"\b(cross_user_transaction|cross_user_autocommit|CROSS_USER)\b\s*[(\]:,]")
MARKS_TOO = {"structured_memory/repositories/outbox.py"}
"""Outside the package: the outbox's claim and lag, which read every user's entries."""


def test_each_job_is_a_module_of_at_most_300_lines() -> None:
    lines = {p.name: len(p.read_text().splitlines()) for p in PACKAGE.glob("*.py")}
    assert {"pii_lookup.py", "rotation.py", "vault_repair.py", "sweep.py", "decay.py"} <= set(lines)
    assert {"reindex.py", "idle_sessions.py", "stats.py"} <= set(lines)
    assert {name: n for name, n in lines.items() if n > 300} == {}


def test_only_the_package_marks_statements_as_cross_user() -> None:
    marking = {
        str(path.relative_to(ROOT))
        for layer in LAYERS
        for path in (ROOT / layer).rglob("*.py")
        if PACKAGE not in path.parents and MARKING.search(path.read_text())
    }
    assert marking == MARKS_TOO
