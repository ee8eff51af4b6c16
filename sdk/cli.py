"""``dualtrack``: the command line of a deployment (migrate, rotate keys, health, demo)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from policies.errors import DualtrackError
from sdk.client import MemoryClient
from structured_memory import migrate as migrations
from structured_memory.cross_user import (
    count_expired,
    pending_rotation,
    rotate_keys,
    sweep_expired,
)
from structured_memory.pii.keyring import PiiKey

app = typer.Typer(help="dualtrack: user memory infrastructure for agents.", no_args_is_help=True)
console = Console()
err_console = Console(stderr=True)


def _client(auto_migrate: bool = True) -> MemoryClient:
    return MemoryClient.from_env(auto_migrate=auto_migrate)


def _fail(exc: DualtrackError) -> None:
    err_console.print(f"[red]error[/red] {escape(f'[{exc.code}] {exc.message}')}")
    raise typer.Exit(code=1)


@app.command()
def migrate(
    revision: Annotated[str, typer.Option(help="Target revision.")] = "head",
    down: Annotated[bool, typer.Option("--down", help="Downgrade to REVISION instead.")] = False,
) -> None:
    """Apply (or revert) Alembic migrations of the structured track."""
    try:
        with _client(auto_migrate=False) as mem:
            before = migrations.current_revision(mem.database)
            if down:
                migrations.downgrade(mem.database, revision)
            else:
                migrations.upgrade(mem.database, revision)
            after = migrations.current_revision(mem.database)
    except DualtrackError as exc:
        _fail(exc)
    console.print(f"schema: {before or 'empty'} -> {after or 'empty'}")


@app.command("new-key")
def new_key(key_id: Annotated[str | None, typer.Option(help="Key id.")] = None) -> None:
    """Print a new PII key line; put it first in DUALTRACK_PII_KEYS, then rotate-keys."""
    console.print(PiiKey.generate(datetime.now(UTC).date(), key_id).to_line(), soft_wrap=True)


@app.command("rotate-keys")
def rotate_keys_command(
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Rows per transaction.")] = 500,
) -> None:
    """Re-encrypt every vault entry not sealed with the active key."""
    try:
        with _client() as mem:
            total = pending_rotation(mem.database, mem.cipher)
            with Progress(
                TextColumn("re-encrypting"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
            ) as bar:
                task = bar.add_task("rotate", total=total)
                report = rotate_keys(
                    mem.database,
                    mem.cipher,
                    batch_size=batch_size,
                    progress=lambda n: bar.advance(task, n),
                )
    except DualtrackError as exc:
        _fail(exc)
    console.print(
        f"re-encrypted {report.reencrypted} entries with key {mem.cipher.ring.active.key_id}; "
        f"{report.remaining} remaining"
    )


@app.command()
def sweep(
    batch_size: Annotated[
        int, typer.Option(min=1, max=100_000, help="Rows per transaction.")
    ] = 1000,
) -> None:
    """Delete expired fragments and facts (reads never return them anyway)."""
    try:
        with _client() as mem:
            now = datetime.now(UTC)
            total = count_expired(mem.database, now)
            with Progress(
                TextColumn("sweeping"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
            ) as bar:
                task = bar.add_task("sweep", total=total)
                report = sweep_expired(
                    mem.database,
                    now,
                    batch_size=batch_size,
                    progress=lambda n: bar.advance(task, n),
                )
    except DualtrackError as exc:
        _fail(exc)
    console.print(f"swept {report.fragments} fragments and {report.facts} facts")


@app.command()
def health() -> None:
    """Check the database, the schema revision and the PII key age."""
    try:
        with _client() as mem:
            h = mem.health()
    except DualtrackError as exc:
        _fail(exc)
    table = Table("check", "value", "ok")
    table.add_row("database", "reachable" if h.database else "down", _mark(h.database))
    table.add_row(
        "schema",
        f"{h.schema_revision} (head {h.schema_head})",
        _mark(h.schema_revision == h.schema_head),
    )
    table.add_row(
        "active PII key",
        f"{h.active_key_id}, {h.active_key_age_days} days old",
        _mark(not h.active_key_stale),
    )
    table.add_row("entries pending rotation", str(h.entries_pending_rotation), _mark(True))
    console.print(table)
    if not h.ok:
        raise typer.Exit(code=1)


def _mark(ok: bool) -> str:
    return "[green]yes[/green]" if ok else "[red]no[/red]"


@app.command()
def demo() -> None:
    """Run the demo: a returning customer recognised across sessions."""
    from sdk.demo import run

    try:
        run(console)
    except DualtrackError as exc:
        _fail(exc)


if __name__ == "__main__":  # pragma: no cover
    app()
