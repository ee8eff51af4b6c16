"""One ``dualtrack``: the SDK's and the service's commands in one app, assembled in
``service.cli``, with the SDK importing nothing of the service."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import typer.main
from typer.testing import CliRunner

from service.cli import app

ROOT = Path(__file__).resolve().parent.parent

COMMANDS = [
    "migrate",
    "new-key",
    "rotate-keys",
    "rekey-devices",
    "repair-vault",
    "sweep",
    "decay",
    "audit",
    "worker",
    "reindex",
    "retokenise",
    "reembed",
    "health",
    "demo",
    "serve",
    "token",
    "openapi",
    "mcp",
]
"""What ``dualtrack --help`` lists, in its order (the SDK's, then the service's)."""


def test_help_lists_every_command_in_order() -> None:
    result = CliRunner().invoke(app, ["--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    assert result.output.count("dualtrack: user memory infrastructure for agents.") == 1
    listed = re.findall(r"^│ ([a-z][a-z-]*) {2,}\S", result.output, re.MULTILINE)
    assert listed == COMMANDS
    assert list(typer.main.get_command(app).commands) == COMMANDS  # type: ignore[attr-defined]


def test_no_arguments_prints_the_help() -> None:
    result = CliRunner().invoke(app, [])
    assert result.exit_code == 2
    assert "Commands" in result.output


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_sdk_imports_nothing_of_the_service() -> None:
    upward = {
        str(path.relative_to(ROOT)): sorted(
            n for n in _imports(path) if n.split(".")[0] == "service"
        )
        for path in (ROOT / "sdk").rglob("*.py")
    }
    assert {path: names for path, names in upward.items() if names} == {}


def test_the_mcp_server_does_not_import_the_command_line() -> None:
    names = _imports(ROOT / "service" / "mcp_server.py")
    assert not names & {"service.cli", "service.commands", "sdk.cli"}
