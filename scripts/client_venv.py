"""The client-only distribution as a user gets it: its wheel built from this repository and
installed into a fresh venv, and what that install weighs (the thin-client tests and
benchmark). Only ``pip`` and ``python -m venv``: the wheel builds offline once PyPI's
``hatchling`` is in pip's cache."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from scripts.client_files import REPO

__all__ = ["CLIENT_PROJECT", "Footprint", "build_wheel", "installed", "venv_with"]

CLIENT_PROJECT = REPO / "clients" / "python"
"""The project of ``dualtrack-client`` (its pyproject and build hook)."""

_TIMEOUT_S = 600


def build_wheel(project: Path, out: Path) -> Path:
    """The wheel of ``project`` (no dependencies), built into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(project)],
        check=True,
        capture_output=True,
        timeout=_TIMEOUT_S,
    )
    (wheel,) = set(out.glob("*.whl")) - before
    return wheel


def venv_with(path: Path, *requirements: str) -> Path:
    """A new venv at ``path`` holding ``requirements`` (pip arguments); its interpreter."""
    subprocess.run(
        [sys.executable, "-m", "venv", str(path)], check=True, capture_output=True, timeout=120
    )
    python = path / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
        check=True,
        capture_output=True,
        timeout=_TIMEOUT_S,
    )
    return python


# Run in the venv: the files (RECORD) of a distribution and of every distribution it needs
_WEIGH = """
import importlib.metadata as md, json, re, sys
seen, queue, size = set(), [sys.argv[1]], 0
while queue:
    name = re.sub(r"[-_.]+", "-", queue.pop()).lower()
    if name in seen:
        continue
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:  # a requirement whose marker excludes this interpreter
        continue
    seen.add(name)
    size += sum(p.stat().st_size for f in dist.files or [] if (p := f.locate()).is_file())
    for req in dist.requires or []:
        if "extra ==" not in req:
            queue.append(re.match(r"[A-Za-z0-9._-]+", req).group())
print(json.dumps({"bytes": size, "distributions": sorted(seen)}))
"""


@dataclass(frozen=True)
class Footprint:
    """What a distribution and its dependencies occupy once installed."""

    bytes: int
    """The size of their files (their RECORDs, compiled ``.pyc`` included)."""
    distributions: list[str]
    """Their normalised names."""


def installed(python: Path, distribution: str) -> Footprint:
    """The footprint of ``distribution`` in the venv of ``python``."""
    done = subprocess.run(
        [str(python), "-c", _WEIGH, distribution],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = json.loads(done.stdout)
    return Footprint(int(found["bytes"]), list(found["distributions"]))
