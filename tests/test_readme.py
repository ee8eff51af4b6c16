"""Every Python block of the README and of ``docs/`` runs as written.

The blocks of one page run in order, in one namespace, so the documented API
cannot drift from the code: a renamed method or a changed result breaks this
test. They run against the test database through the same ``DUALTRACK_*``
variables a deployment sets.

A block may be left out only with its reason in the page itself, on the line
right above it, ``Not run by the tests: <reason>.``, where the reader sees it.
Code in other languages is shell, JSON and the like; a fence names one of a
known few, so no Python block escapes by being spelled ``py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from sdk import Settings

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE_RE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_SKIP_RE = re.compile(r"^Not run by the tests: (\S.*\S)\s*$")
_LANGUAGES = {"python", "bash", "json", "text", "yaml", "toml", "sql", "ts"}


@dataclass(frozen=True)
class Block:
    """One fenced Python block: its page, its line and, if left out, the reason."""

    page: Path
    line: int
    code: str
    skip_reason: str | None

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def fences(page: Path) -> list[tuple[str, int, str, str]]:
    """Every fenced block of a page: language, line, code, the line above it."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in _FENCE_RE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        found.append((match.group(1).strip(), line, match.group(2), before))
    return found


def python_blocks(page: Path) -> list[Block]:
    """The page's Python blocks, in order."""
    blocks = []
    for language, line, code, before in fences(page):
        if language == "python":
            reason = _SKIP_RE.match(before)
            blocks.append(Block(page, line, code, reason.group(1) if reason else None))
    return blocks


PAGES_WITH_CODE = [page for page in PAGES if python_blocks(page)]


def test_the_readme_and_the_guide_have_python_blocks() -> None:
    assert len(python_blocks(ROOT / "README.md")) >= 1
    guide_pages = ROOT.joinpath("docs", "guide").rglob("*.md")
    guide = [block for page in guide_pages for block in python_blocks(page)]
    assert len(guide) >= 6


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_names_a_known_language(page: Path) -> None:
    unknown = [(line, lang) for lang, line, _, _ in fences(page) if lang not in _LANGUAGES]
    assert unknown == [], f"{page.name}: fence languages must be one of {sorted(_LANGUAGES)}"


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_block_runs(
    page: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch, mem: object
) -> None:
    assert settings.postgres_dsn is not None
    assert settings.pii_keys is not None
    monkeypatch.setenv("DUALTRACK_POSTGRES_DSN", settings.postgres_dsn.get_secret_value())
    monkeypatch.setenv("DUALTRACK_PII_KEYS", settings.pii_keys.get_secret_value())
    monkeypatch.setenv("DUALTRACK_DATA_DIR", str(settings.data_dir))
    monkeypatch.setenv("DUALTRACK_JWT_SECRET", "docs-test-secret-0123456789abcdef0123")
    namespace: dict[str, object] = {"__name__": "docs"}
    ran = 0
    for block in python_blocks(page):
        if block.skip_reason is None:
            # line numbers in a traceback are the page's own
            code = compile("\n" * block.line + block.code, str(block.page), "exec")
            exec(code, namespace)
            ran += 1
    assert ran > 0, f"{page.name}: every Python block is left out"
