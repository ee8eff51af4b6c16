"""``dualtrack``: the one command line of a deployment, assembled here.

The SDK contributes its commands (``sdk.cli``: migrate, keys, sweep, decay, audit,
worker, reindex, retokenise, reembed, health, demo) and the service its own
(``service.commands``: serve, token, mcp). Only this module sees both, so the layering
holds: ``service`` imports ``sdk``, never the reverse. ``dualtrack`` (pyproject's entry
point) and ``python -m service.cli`` run :data:`app`.
"""

from __future__ import annotations

import typer

from sdk.cli import commands as sdk_commands
from service.commands import commands as service_commands

__all__ = ["app"]

app = typer.Typer(help="dualtrack: user memory infrastructure for agents.", no_args_is_help=True)
app.add_typer(sdk_commands)
app.add_typer(service_commands)

if __name__ == "__main__":  # pragma: no cover
    app()
