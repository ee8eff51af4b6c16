"""``import sdk`` loads no NLP, numeric or HTTP stack: those load on first use."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("jieba", "spacy", "numpy", "httpx", "weaviate", "fastapi")


def test_importing_the_sdk_loads_none_of_the_heavy_packages() -> None:
    code = (
        f"import sys, sdk\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()
    assert out == "[]"
