"""The documentation stays in the repo, current and whole.

- the README stays short (≤ 12 KB) and points into ``docs/``;
- no Markdown link of the README, the changelog, the results or ``docs/``
  leaves the repo, and every relative link (and its anchor) resolves;
- ``mkdocs build --strict`` passes (a page missing from the nav, a broken link
  or anchor is a warning, hence a failure), into a temporary directory;
- the REST reference is the one the service's OpenAPI schema gives today;
- the settings reference names every setting of the SDK and of the service.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify
from pydantic_settings import BaseSettings

from scripts.rest_reference import PAGE, openapi_schema, render
from sdk import Settings
from service.settings import ServiceSettings

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "benchmarks" / "RESULTS.md",
    *sorted(DOCS.rglob("*.md")),
]
_CODE_RE = re.compile(r"^```.*?^```[ \t]*$|`[^`\n]*`", re.MULTILINE | re.DOTALL)
_COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)
_LINK_RE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_RE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.MULTILINE)
_AUTOLINK_RE = re.compile(r"<([a-z][a-z0-9+.-]*:[^>\s]*)>", re.IGNORECASE)
_BARE_URL_RE = re.compile(r"\b(?:https?|ftp)://[^\s)>\]]+", re.IGNORECASE)
_HEADING_RE = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def _prose(page: Path) -> str:
    """The page without code blocks, code spans or comments: what renders as text."""
    text = page.read_text(encoding="utf-8")
    return _CODE_RE.sub("", _COMMENT_RE.sub("", text))


def links(page: Path) -> list[str]:
    """Every link target of a page, inline, reference-style or bare."""
    prose = _prose(page)
    found = []
    for pattern in (_LINK_RE, _REFERENCE_RE, _AUTOLINK_RE):
        found += pattern.findall(prose)
        prose = pattern.sub(" ", prose)
    return found + _BARE_URL_RE.findall(prose)


def anchors(page: Path) -> set[str]:
    """The heading ids a page gets (Python-Markdown's toc, as mkdocs renders it)."""
    text = _CODE_RE.sub("", page.read_text(encoding="utf-8"))
    seen: set[str] = set()
    for heading in _HEADING_RE.findall(text):
        slug = base = slugify(re.sub(r"[`*_]", "", heading), "-")
        number = 0
        while slug in seen:
            number += 1
            slug = f"{base}_{number}"
        seen.add(slug)
    return seen


def test_the_readme_is_short_and_points_into_the_docs() -> None:
    readme = ROOT / "README.md"
    assert readme.stat().st_size <= 12 * 1024
    targets = links(readme)
    assert any(t.startswith("docs/") for t in targets)
    assert "CHANGELOG.md" in targets
    assert "benchmarks/RESULTS.md" in targets


def test_the_link_checker_sees_every_kind_of_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "[a](https://example.com) <http://example.org> see https://x.test/y\n"
        "[b]: ftp://host/file\n`[c](https://in.code)` [d](other.md#part)\n",
        encoding="utf-8",
    )
    assert links(page) == [
        "https://example.com",
        "other.md#part",
        "ftp://host/file",
        "http://example.org",
        "https://x.test/y",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_link_leaves_the_repo_and_every_link_resolves(page: Path) -> None:
    assert page.exists(), f"{page.relative_to(ROOT)} is missing"
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("//"):
            broken.append(f"{target}: leaves the repo")
            continue
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.is_relative_to(ROOT) or not resolved.exists():
            broken.append(f"{target}: no such file in the repo")
        elif page.is_relative_to(DOCS) and not resolved.is_relative_to(DOCS):
            broken.append(f"{target}: a docs page links only inside docs/ (the site)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading '{anchor}' there")
    assert broken == []


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    assert (site / "index.html").exists()
    assert (site / "reference" / "rest" / "index.html").exists()


def test_the_rest_reference_is_current() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(openapi_schema()), (
        "docs/reference/rest.md is stale: run python -m scripts.rest_reference"
    )


@pytest.mark.parametrize("model", [Settings, ServiceSettings], ids=lambda m: m.__name__)
def test_the_settings_reference_names_every_setting(model: type[BaseSettings]) -> None:
    page = (DOCS / "reference" / "settings.md").read_text(encoding="utf-8")
    names = [f"DUALTRACK_{name.upper()}" for name in model.model_fields]
    missing = [name for name in names if name not in page]
    assert missing == []
