"""The full distribution (``dualtrack-memory``) leaves out the files of ``dualtrack-client``,
which it depends on: each file has one owner when both are installed. The metadata is in
pyproject.toml; the list is traced by scripts/client_files.py."""

from __future__ import annotations

import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scripts.client_files import thin_files

CLIENT_FILES = frozenset(thin_files())


def _shipped_by_client(path: str) -> bool:
    return Path(path).resolve().relative_to(Path.cwd().resolve()).as_posix() in CLIENT_FILES


class BuildPy(build_py):
    """``build_py`` without the modules and ``py.typed`` files ``dualtrack-client`` ships."""

    def find_package_modules(self, package: str, package_dir: str) -> list[tuple[str, str, str]]:
        modules = super().find_package_modules(package, package_dir)
        return [m for m in modules if not _shipped_by_client(m[2])]

    def run(self) -> None:
        super().run()
        for relative in CLIENT_FILES:  # a copy an earlier build left in build/lib
            Path(self.build_lib, relative).unlink(missing_ok=True)

    def find_data_files(self, package: str, src_dir: str) -> list[str]:
        files = super().find_data_files(package, src_dir)
        return [f for f in files if not _shipped_by_client(f)]


setup(cmdclass={"build_py": BuildPy})
