"""The sync remote client, derived from the async one (standard library only).

:mod:`sdk.remote` has no source of its own: on import it runs :func:`sync_code`, which
rewrites ``sdk/remote_async.py`` by AST as psycopg's ``tools/async_to_sync.py`` does
(``async def`` -> ``def``, no ``await``, ``async with`` -> ``with``, ``Async*`` -> the sync
names, ``Awaitable[T]`` -> ``T``) and compiles it under the async file's name, so a
traceback shows the line that ran. :func:`sync_stub` is the same module as source:
``sdk/remote.pyi``, the sync client's types for mypy and editors, a build artifact
written by ``make`` and by the thin wheel's build hook (gitignored, never committed).

The hook (``clients/python/hatch_build.py``) loads this file by path, so it imports only
the standard library.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import marshal
import os
import re
import sys
from pathlib import Path
from types import CodeType

__all__ = ["ASYNC_SOURCE", "STUB_HEADER", "sync_code", "sync_stub", "sync_tree", "write_stub"]

ASYNC_SOURCE = Path(__file__).with_name("remote_async.py")
"""The one written client; :mod:`sdk.remote` is derived from it."""

STUB_HEADER = (
    "# Generated from sdk/remote_async.py by sdk/_unasync.py (make generate): do not edit.\n"
)
"""The first line of ``sdk/remote.pyi``."""

_SYNC_NAMES = {
    "AsyncRemoteMemoryClient": "RemoteMemoryClient",
    "AsyncRemoteSandboxSession": "RemoteSandboxSession",
    "AsyncClient": "Client",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "aclose": "close",
}
_SYNC_TEXT = [
    (", for asyncio (httpx.AsyncClient)", " (httpx, synchronous)"),
    (
        "Its operation methods are generated from :mod:`sdk.api` by ``scripts/remote_clients.py``"
        "\n(``make generate``); :mod:`sdk.remote` is this module, rewritten without async when it"
        "\nis imported (:mod:`sdk._unasync`).",
        "It is :mod:`sdk.remote_async` rewritten without async on import (:mod:`sdk._unasync`);"
        "\nits types are in ``sdk/remote.pyi``, the same rewrite as source (``make generate``).",
    ),
    ("async with", "with"),
    ("AsyncRemote", "Remote"),
    ("httpx.AsyncClient", "httpx.Client"),
    (" (per task)", " (per thread)"),
]


class _Unasync(ast.NodeTransformer):
    """The sync twin of an async module's tree."""

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        return ast.copy_location(
            ast.FunctionDef(
                name=_SYNC_NAMES.get(node.name, node.name),
                args=node.args,
                body=node.body,
                decorator_list=node.decorator_list,
                returns=node.returns,
            ),
            node,
        )

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        node.name = _SYNC_NAMES.get(node.name, node.name)
        return node

    def visit_Await(self, node: ast.Await) -> ast.expr:
        return self.visit(node.value)  # type: ignore[no-any-return]

    def visit_AsyncWith(self, node: ast.AsyncWith) -> ast.With:
        self.generic_visit(node)
        return ast.copy_location(ast.With(items=node.items, body=node.body), node)

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        self.generic_visit(node)
        node.name = _SYNC_NAMES.get(node.name, node.name)
        return node

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = _SYNC_NAMES.get(node.id, node.id)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.Attribute:
        self.generic_visit(node)
        node.attr = _SYNC_NAMES.get(node.attr, node.attr)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "Awaitable":
            return node.slice
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if isinstance(node.value, str):
            for old, new in _SYNC_TEXT:
                node.value = node.value.replace(old, new)
            node.value = re.sub(r"\bawait ", "", node.value)
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.ImportFrom:
        node.names = [a for a in node.names if a.name != "Awaitable"]
        return node


def sync_tree(async_text: str) -> ast.Module:
    """``async_text`` (an async module's source) rewritten without async; every node keeps
    the location of the async one it comes from."""
    tree = _Unasync().visit(ast.parse(async_text))
    assert isinstance(tree, ast.Module)
    return tree


def sync_code(path: Path = ASYNC_SOURCE) -> CodeType:
    """The sync module's code, compiled under ``path`` (the async file) for tracebacks.

    Rewriting and compiling take about 15 ms, so the code is cached beside the async
    module's bytecode (``__pycache__/remote_async.<tag>.opt-sync.pyc``), keyed by a hash of
    both sources, the path and the interpreter; like ``.pyc`` files, not written under
    ``-B`` or where the folder is read-only."""
    source = path.read_bytes()
    key = hashlib.sha256(
        b"\0".join(
            [
                source,
                Path(__file__).read_bytes(),
                str(path).encode(),
                importlib.util.MAGIC_NUMBER,
                str(sys.flags.optimize).encode(),
            ]
        )
    ).digest()
    cache = Path(importlib.util.cache_from_source(str(path), optimization="sync"))
    try:
        cached = cache.read_bytes()
        if cached.startswith(key):
            code = marshal.loads(cached[len(key) :])
            if isinstance(code, CodeType):
                return code
    except (OSError, ValueError, EOFError, TypeError):
        pass  # no cache, or a damaged one: made again below
    code = compile(sync_tree(source.decode("utf-8")), str(path), "exec")
    if not sys.dont_write_bytecode:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            partial = cache.with_name(f"{cache.name}.{os.getpid()}")
            partial.write_bytes(key + marshal.dumps(code))
            partial.replace(cache)  # atomic: a concurrent import reads all or nothing
        except OSError:
            pass  # a read-only install: derive on every import
    return code


def sync_stub(async_text: str) -> str:
    """``sdk/remote.pyi``: the sync module of ``async_text`` as source. Bodies kept, so
    ``mypy --strict`` checks the derived code too, not just its signatures."""
    return STUB_HEADER + ast.unparse(sync_tree(async_text)) + "\n"


def write_stub() -> Path:
    """Write ``sdk/remote.pyi`` from the async client as it is now; its path."""
    stub = ASYNC_SOURCE.with_name("remote.pyi")
    stub.write_text(sync_stub(ASYNC_SOURCE.read_text(encoding="utf-8")), encoding="utf-8")
    return stub


if __name__ == "__main__":
    write_stub()
