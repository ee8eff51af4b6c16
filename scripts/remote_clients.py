"""Generate the remote clients' operation methods, and the sync client's stub.

1. In ``sdk/remote_async.py``, the region between ``# <generated ...>`` and
   ``# </generated>`` gets a class per sub-API of ``sdk/api.py`` (``ProfilesAPI`` ->
   ``_Profiles``) and ``_Operations`` (``MemoryAPI``'s calls): each method keeps the
   protocol's signature and docstring, made ``async``, and sends
   ``ops.<NAME>.call(user_id, **arguments)``, ``<NAME>`` the operation of
   :mod:`sdk.operations` named after the member (``facts.put`` -> ``FACTS_PUT``).
2. ``sdk/remote.pyi``, the sync client's types: ``sdk/remote_async.py`` rewritten without
   async by :mod:`sdk._unasync`, the rewrite :mod:`sdk.remote` runs on import. The stub is
   a build artifact (gitignored); ``make`` writes it when the async client changes.

``python scripts/remote_clients.py`` writes both (``make generate``);
``tests/test_operations.py`` fails when either is not what this script makes.
"""

from __future__ import annotations

import ast
import copy
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from sdk import operations as ops
from sdk._unasync import sync_stub

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "sdk" / "api.py"
ASYNC = ROOT / "sdk" / "remote_async.py"
STUB = ROOT / "sdk" / "remote.pyi"

_REGION = re.compile(r"(# <generated[^\n]*>\n)(.*?)(# </generated>\n)", re.S)
_SUB_APIS = {
    "ProfilesAPI": "profiles",
    "DevicesAPI": "devices",
    "LinksAPI": "links",
    "FactsAPI": "facts",
    "MemoriesAPI": "memories",
}
_NOT_OPERATIONS = {"sandbox"}
"""``MemoryAPI`` members written by hand in the client (the sandbox block holds state)."""


def _operation(member: str) -> str:
    return member.replace(".", "_").upper()


def _forwarded(fn: ast.FunctionDef, member: str) -> ast.AsyncFunctionDef:
    """``fn`` of the protocol as an async method sending its operation's call."""
    args = fn.args
    positional = [a.arg for a in args.posonlyargs + args.args][1:]  # without self
    user, rest = positional[0], positional[1:]
    keywords = [ast.keyword(arg=name, value=ast.Name(name)) for name in rest]
    keywords += [ast.keyword(arg=a.arg, value=ast.Name(a.arg)) for a in args.kwonlyargs]
    if args.kwarg is not None:
        keywords.append(ast.keyword(arg=None, value=ast.Name(args.kwarg.arg)))
    call = ast.Call(
        func=ast.Attribute(
            value=ast.Attribute(value=ast.Name("ops"), attr=_operation(member)), attr="call"
        ),
        args=[ast.Name(user)],
        keywords=keywords,
    )
    send = ast.Await(
        ast.Call(func=ast.Attribute(value=ast.Name("self"), attr="_run"), args=[call], keywords=[])
    )
    doc = ast.get_docstring(fn, clean=False) or ""
    note = getattr(ops, _operation(member)).remote_note
    if note:
        doc += (
            "\n\n"
            + textwrap.fill(note, 88, initial_indent=" " * 8, subsequent_indent=" " * 8)
            + "\n        "
        )
    body: list[ast.stmt] = [ast.Expr(ast.Constant(doc))] if doc else []
    body.append(ast.Return(send))
    return ast.AsyncFunctionDef(
        name=fn.name,
        args=copy.deepcopy(args),
        body=body,
        decorator_list=[],
        returns=copy.deepcopy(fn.returns),
    )


def _methods(cls: ast.ClassDef, prefix: str) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for node in cls.body:
        if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
            continue
        if node.decorator_list or node.name in _NOT_OPERATIONS:
            continue  # properties: the sub-clients, set by the client
        out.append(_forwarded(node, f"{prefix}{node.name}"))
    return out


def _region() -> str:
    """The generated classes, as source."""
    api = ast.parse(API.read_text(encoding="utf-8"))
    classes: list[ast.stmt] = []
    protocols = {n.name: n for n in api.body if isinstance(n, ast.ClassDef)}
    for protocol, attr in _SUB_APIS.items():
        init = ast.parse("def __init__(self, run: _Run) -> None:\n    self._run = run").body
        classes.append(
            ast.ClassDef(
                name=f"_{attr.capitalize()}",
                bases=[],
                keywords=[],
                body=[
                    ast.Expr(ast.Constant(f"``client.{attr}`` over HTTP.")),
                    *init,
                    *_methods(protocols[protocol], f"{attr}."),
                ],
                decorator_list=[],
            )
        )
    head = ast.parse('"""The client\'s own calls; ``_run`` sends one."""\n_run: _Run').body
    classes.append(
        ast.ClassDef(
            name="_Operations",
            bases=[],
            keywords=[],
            body=[*head, *_methods(protocols["MemoryAPI"], "")],
            decorator_list=[],
        )
    )
    return "\n\n".join(ast.unparse(ast.fix_missing_locations(c)) for c in classes) + "\n"


def _format(source: str, name: Path) -> str:
    """``source`` with its imports sorted and formatted as ``ruff`` leaves it (the
    repository's settings)."""
    ruff = str(Path(sys.executable).parent / "ruff")
    for command in (["check", "--fix", "--select", "I", "--quiet"], ["format"]):
        source = subprocess.run(
            [ruff, *command, "--stdin-filename", str(name), "-"],
            input=source,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
    return source


def async_source() -> str:
    """``sdk/remote_async.py`` with its generated region made anew."""
    text = ASYNC.read_text(encoding="utf-8")
    if not _REGION.search(text):
        raise SystemExit(f"{ASYNC}: no '# <generated ...>' ... '# </generated>' region")
    region = _region()
    return _format(_REGION.sub(lambda m: m.group(1) + region + m.group(3), text), ASYNC)


def main() -> None:
    """Write the async client's generated region, then the sync client's stub."""
    async_text = async_source()
    ASYNC.write_text(async_text, encoding="utf-8")
    STUB.write_text(sync_stub(async_text), encoding="utf-8")


if __name__ == "__main__":
    main()
