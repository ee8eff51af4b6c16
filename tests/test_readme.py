"""Every Python block of the README runs as written, in order, in one namespace.

The documented API cannot drift from the code: a renamed method or a changed
result breaks this test. The blocks run against the test database through the
same ``DUALTRACK_*`` variables a deployment sets.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sdk import Settings

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK_RE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks() -> list[str]:
    """The README's Python blocks, in order."""
    return _BLOCK_RE.findall(README.read_text(encoding="utf-8"))


def test_the_readme_has_python_blocks() -> None:
    assert len(python_blocks()) >= 2


def test_every_python_block_runs(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, mem: object
) -> None:
    assert settings.postgres_dsn is not None
    assert settings.pii_keys is not None
    monkeypatch.setenv("DUALTRACK_POSTGRES_DSN", settings.postgres_dsn.get_secret_value())
    monkeypatch.setenv("DUALTRACK_PII_KEYS", settings.pii_keys.get_secret_value())
    monkeypatch.setenv("DUALTRACK_DATA_DIR", str(settings.data_dir))
    namespace: dict[str, object] = {"__name__": "readme"}
    for number, block in enumerate(python_blocks(), start=1):
        code = compile(block, f"README.md python block {number}", "exec")
        exec(code, namespace)
