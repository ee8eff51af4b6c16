"""Every Python block of the adapter pages runs as written, in order, in one namespace per
page, against the test database through the ``DUALTRACK_*`` variables a deployment sets
(as ``test_readme.py`` runs the README's): the documented adapters cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sdk import MemoryClient, Settings

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ["adapters-langgraph.md", "adapters-tools.md", "mcp-resources.md"]
_BLOCK_RE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(page: str) -> list[str]:
    """The page's Python blocks, in order."""
    return _BLOCK_RE.findall((DOCS / page).read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", PAGES)
def test_every_python_block_of_the_page_runs(
    page: str, settings: Settings, monkeypatch: pytest.MonkeyPatch, mem: MemoryClient
) -> None:
    blocks = python_blocks(page)
    assert blocks, f"{page} has a runnable example"
    assert settings.postgres_dsn is not None
    assert settings.pii_keys is not None
    monkeypatch.setenv("DUALTRACK_POSTGRES_DSN", settings.postgres_dsn.get_secret_value())
    monkeypatch.setenv("DUALTRACK_PII_KEYS", settings.pii_keys.get_secret_value())
    monkeypatch.setenv("DUALTRACK_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("DUALTRACK_JWT_SECRET", "docs-test-secret-0123456789abcdef0123")
    namespace: dict[str, object] = {"__name__": "docs"}
    for number, block in enumerate(blocks, start=1):
        exec(compile(block, f"docs/{page} python block {number}", "exec"), namespace)
    assert mem.memories.list("buyer-001"), "the example stored what it says it stores"
