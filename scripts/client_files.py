"""Which files of this repository the client-only distribution (``dualtrack-client``) ships.

The file list is traced, not written down: starting from :data:`ROOTS` (the two remote
clients), every first-party module imported at module level is followed (class bodies,
``try`` and ``if`` blocks included; function bodies and ``if TYPE_CHECKING:`` blocks are
not, since they do not run on import), with the ``__init__`` of every package on the way
and each such package's ``py.typed``, plus the sync client's stub (:data:`GENERATED`).
The thin wheel's build hook (``clients/python/hatch_build.py``) ships exactly
:func:`thin_files`, and the full
distribution's ``setup.py`` leaves the same files out and depends on ``dualtrack-client``
instead, so no file has two owners.

Standard library only: it runs inside the build backends' isolated environments.
``python -m scripts.client_files`` prints the list.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

__all__ = ["GENERATED", "REPO", "ROOTS", "thin_files", "thin_modules"]

REPO = Path(__file__).resolve().parent.parent
"""The repository root: the top-level packages live directly under it."""

ROOTS = ("sdk.remote", "sdk.remote_async")
"""What the client-only distribution is for; everything else is traced from these."""

GENERATED = ("sdk/remote.pyi",)
"""Files the client ships that its build writes (``sdk/_unasync.py``), not the repository."""


def _source(root: Path, module: str) -> Path | None:
    """The first-party file of ``module`` (a package's ``__init__.py``), or None."""
    base = root.joinpath(*module.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_on_import(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of ``body`` that run when the module is imported."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _run_on_import(node.body)
            yield from _run_on_import(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _run_on_import(block)
            for handler in node.handlers:
                yield from _run_on_import(handler.body)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _run_on_import(node.body)


def _imports(path: Path, module: str) -> Iterator[str]:
    """Every module name ``module`` (whose file is ``path``) imports on import; for
    ``from a import b`` both ``a`` and ``a.b`` (the latter counts only if it is a module)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in _run_on_import(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


def thin_modules(root: Path = REPO, roots: tuple[str, ...] = ROOTS) -> set[str]:
    """The first-party modules importing ``roots`` loads, by name."""
    found: set[str] = set()
    queue = list(roots)
    while queue:
        name = queue.pop()
        if name in found or (path := _source(root, name)) is None:
            continue
        found.add(name)
        parts = name.split(".")
        queue.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        queue.extend(_imports(path, name))
    return found


def thin_files(root: Path = REPO, roots: tuple[str, ...] = ROOTS) -> list[str]:
    """The files the client-only distribution ships, relative to ``root`` (POSIX): the
    traced ones and the :data:`GENERATED` ones (which need not exist yet)."""
    files: set[Path] = {root / name for name in GENERATED}
    for module in thin_modules(root, roots):
        path = _source(root, module)
        assert path is not None
        files.add(path)
        if path.name == "__init__.py" and (marker := path.parent / "py.typed").is_file():
            files.add(marker)
    return sorted(p.relative_to(root).as_posix() for p in files)


if __name__ == "__main__":
    print("\n".join(thin_files()))
