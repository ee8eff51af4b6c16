"""Server work of one write and of the writer's export afterwards, through a started client.

:mod:`benchmarks.adversarial` runs :func:`measure` in process, and runs this file as a
script against another revision's code (its tree first on ``PYTHONPATH``) for the
``--before`` columns, so it imports only what every revision has::

    PYTHONPATH=<tree of REV> python -P benchmarks/store_costs.py IN.json OUT.json DATA_DIR N
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from policies.errors import InvalidInput
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from sdk.settings import Settings

__all__ = ["measure"]


def measure(mem: MemoryClient, texts: dict[str, str], repeats: int) -> dict[str, dict[str, Any]]:
    """Per text, best of ``repeats`` (a new user each): the seconds a write of it took
    (``stored`` or ``refused``), then the seconds the export of its (otherwise empty) user
    took and the vault entries it held; one untimed write and export first loads the
    analysers."""
    _once(mem, "订单88231的扫地机坏了，电话13812345678")
    out: dict[str, dict[str, Any]] = {}
    for name, text in texts.items():
        runs = [_once(mem, text) for _ in range(repeats)]
        out[name] = {
            "write_s": min(r["write_s"] for r in runs),
            "export_s": min(r["export_s"] for r in runs),
            "outcome": runs[0]["outcome"],
            "vault_entries": runs[0]["vault_entries"],
        }
    return out


def _once(mem: MemoryClient, text: str) -> dict[str, Any]:
    user = f"bench-costly-{uuid.uuid4().hex[:12]}"
    mem.profiles.ensure(user)
    started = time.perf_counter()
    try:
        mem.write(user, text, lifecycle_policy=LifecyclePolicy.IMPLICIT)
        outcome = "stored"
    except InvalidInput as exc:
        outcome = f"refused ({exc.code})"
    write_s = time.perf_counter() - started
    started = time.perf_counter()
    exported = mem.export_user(user)
    export_s = time.perf_counter() - started
    mem.forget_user(user)
    return {
        "write_s": round(write_s, 3),
        "outcome": outcome,
        "export_s": round(export_s, 3),
        "vault_entries": len(exported["pii"]),
    }


def _main(inputs: str, output: str, data_dir: str, repeats: str) -> None:
    texts = json.loads(Path(inputs).read_text(encoding="utf-8"))
    with MemoryClient(Settings.from_env(data_dir=Path(data_dir)), agent_id="bench") as mem:
        result = measure(mem, texts, int(repeats))
    Path(output).write_text(json.dumps(result), encoding="utf-8")


if __name__ == "__main__":
    _main(*sys.argv[1:5])
