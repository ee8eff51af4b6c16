"""The service's commands of ``dualtrack``: serve, token, openapi and mcp.

``service.cli`` assembles them with the SDK's (``sdk.cli``) into the one ``dualtrack``.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from enum import StrEnum
from typing import Annotated, Any

import typer
from rich.markup import escape

from policies.errors import DualtrackError
from sdk.cli import console, err_console
from service.auth import Scope
from service.settings import ServiceSettings
from service.shutdown import exit_cleanly_on_signals

__all__ = ["NO_TOKEN_KEY", "McpTransport", "commands"]

NO_TOKEN_KEY = (
    "no token key: set DUALTRACK_JWT_SECRET (e.g. `export DUALTRACK_JWT_SECRET=$(openssl "
    "rand -hex 32)`) or DUALTRACK_JWT_PUBLIC_KEY_FILE / DUALTRACK_JWT_JWKS_FILE; "
    "the service refuses to start without one"
)
"""What ``serve`` says, exiting 1, when no key to verify tokens is configured."""

commands = typer.Typer()
"""The service's commands, in the order ``dualtrack --help`` lists them."""


@commands.command()
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, max=64, help="Worker processes.")] = 1,
) -> None:
    """Run the REST service (uvicorn) with the DUALTRACK_* settings.

    The access log names route templates, not paths (``service.middleware.metrics``):
    uvicorn's own access log is off and :data:`ACCESS_LOGGER` takes its handler.

    SIGTERM, SIGINT and SIGHUP shut it down gracefully and stop the embedded PostgreSQL
    it started. With several workers this process joins the embedded server first: the
    workers end by their signal, and this one, exiting last, stops it.
    """
    import uvicorn
    from uvicorn.config import LOGGING_CONFIG

    from sdk.settings import Settings
    from service.middleware.metrics import ACCESS_LOGGER
    from structured_memory.embedded import start_embedded_server

    try:
        service = ServiceSettings()
        settings = Settings.from_env()
    except ValueError as exc:
        console.print(f"[red]error[/red] invalid service settings: {exc}")
        raise typer.Exit(code=1) from None
    if not service.has_token_key():
        console.print(f"[red]error[/red] {NO_TOKEN_KEY}", soft_wrap=True)
        raise typer.Exit(code=1)
    exit_cleanly_on_signals()
    if workers > 1 and settings.dsn() is None:
        start_embedded_server(settings.resolved_data_dir())
    uvicorn.run(
        "service.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="info",
        access_log=False,
        log_config=_log_config(LOGGING_CONFIG, ACCESS_LOGGER, service.log_format),
        proxy_headers=False,  # X-Forwarded-For is the app's to trust (trusted_proxies)
    )


def _log_config(
    base: dict[str, Any], access_logger: str, log_format: str = "text"
) -> dict[str, Any]:
    """uvicorn's logging configuration with ``access_logger`` on its access handler, its
    lines JSON objects with ``log_format="json"`` (``service.log_format``)."""
    from service.log_format import json_log_config

    config = copy.deepcopy(base if log_format == "text" else json_log_config(base))
    config["loggers"][access_logger] = {
        "handlers": ["access"],
        "level": "INFO",
        "propagate": False,
    }
    return config


@commands.command()
def token(
    sub: Annotated[str, typer.Option(help="The user the token speaks for.")],
    agent: Annotated[str | None, typer.Option(help="The calling agent (azp).")] = None,
    scope: Annotated[
        list[str] | None,
        typer.Option(
            help="memory:read, memory:write, memory:erase, account:export or ops (repeatable)."
        ),
    ] = None,
    ttl_minutes: Annotated[int, typer.Option(min=1, max=60 * 24 * 30)] = 60,
) -> None:
    """Print a development token signed with DUALTRACK_JWT_SECRET."""
    from service.tokens import mint

    scopes = scope or [Scope.READ.value, Scope.WRITE.value]
    known = {s.value for s in Scope}
    unknown = [s for s in scopes if s not in known]
    if unknown:
        console.print(f"[red]error[/red] unknown scope; known: {', '.join(sorted(known))}")
        raise typer.Exit(code=1)
    try:
        minted = mint(
            ServiceSettings(),
            sub=sub,
            agent=agent,
            scopes=scopes,
            ttl=timedelta(minutes=ttl_minutes),
        )
    except DualtrackError as exc:
        err_console.print(f"[red]error[/red] {escape(f'[{exc.code}] {exc.message}')}")
        raise typer.Exit(code=1) from None
    print(minted)


@commands.command()
def openapi() -> None:
    """Print the REST service's OpenAPI document (JSON) to generate a client from."""
    import json

    from service.app import openapi_document

    print(json.dumps(openapi_document(), ensure_ascii=False, indent=2))


class McpTransport(StrEnum):
    """How ``dualtrack mcp`` is reached."""

    STDIO = "stdio"
    HTTP = "http"


@commands.command()
def mcp(
    transport: Annotated[
        McpTransport,
        typer.Option(
            help="stdio: one user and agent, those of the token in DUALTRACK_MCP_TOKEN; "
            "http: streamable HTTP at /mcp, a Bearer token per request."
        ),
    ] = McpTransport.STDIO,
    host: Annotated[str, typer.Option(help="Interface to listen on (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port (http).")] = 8001,
) -> None:
    """Run the MCP server: tools remember, recall, context, end_session, feedback, forget."""
    from service.mcp_server import main

    main(http=(host, port) if transport is McpTransport.HTTP else None)
