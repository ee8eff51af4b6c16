"""The SDK's commands of ``dualtrack``: migrate, new-key, rotate-keys, rekey-devices,
repair-vault, sweep, decay, audit, worker, reindex, retokenise, reembed, health and demo.

Each reads the same ``DUALTRACK_*`` settings as the SDK. :data:`commands` is not a CLI of
its own: ``service.cli`` assembles the one ``dualtrack`` from it and the service's commands,
so this module imports nothing of the service.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from policies.audit import AuditAction
from policies.errors import DualtrackError
from sdk.admin import Admin
from sdk.client import MemoryClient
from sdk.feed import reindex as reindex_all
from sdk.settings import Settings
from structured_memory import migrate as migrations
from structured_memory.cross_user import (
    count_decay_due,
    count_expired,
    count_fragments,
    count_vault_repairs,
    idle_users,
    pending_rotation,
    repair_vault,
    rotate_keys,
)
from structured_memory.cross_user.device_rekey import count_unkeyed_devices, rekey_devices
from structured_memory.pii.keyring import PiiKey
from unstructured_memory.index.base import ColdTenants, Resettable

__all__ = ["commands", "console", "err_console"]

commands = typer.Typer()
"""The SDK's commands, in the order ``dualtrack --help`` lists them."""
console = Console()
err_console = Console(stderr=True)


@contextmanager
def _admin(**overrides: Any) -> Iterator[Admin]:
    """The operator's surface of a client configured from the environment, closed after."""
    with MemoryClient.from_env(**overrides) as mem:
        yield mem.admin


def _fail(exc: DualtrackError) -> None:
    err_console.print(f"[red]error[/red] {escape(f'[{exc.code}] {exc.message}')}")
    raise typer.Exit(code=1)


def _bar(label: str) -> Progress:
    return Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    )


def _mark(ok: bool) -> str:
    return "[green]yes[/green]" if ok else "[red]no[/red]"


@commands.command()
def migrate(
    revision: Annotated[str, typer.Option(help="Target revision.")] = "head",
    down: Annotated[bool, typer.Option("--down", help="Downgrade to REVISION instead.")] = False,
) -> None:
    """Apply (or revert) Alembic migrations: the deploy step of a service, run before
    pods of the new release start (expand-only, so the old pods keep serving)."""
    from sdk.runtime import open_database

    try:
        db = open_database(Settings.from_env())
        try:
            before = migrations.current_revision(db)
            if down:
                migrations.downgrade(db, revision)
            else:
                migrations.upgrade(db, revision)
            after = migrations.current_revision(db)
        finally:
            db.dispose()
    except DualtrackError as exc:
        _fail(exc)
    console.print(f"schema: {before or 'empty'} -> {after or 'empty'}")


@commands.command("new-key")
def new_key(
    key_id: Annotated[str | None, typer.Option(help="Key id.")] = None,
    blind: Annotated[
        bool,
        typer.Option(
            "--blind",
            help="Print the configured ring's blind key as an @blind entry instead (derived "
            "from its oldest key when the ring has none): pin it before retiring that key.",
        ),
    ] = False,
) -> None:
    """Print a new PII key line; put it first in DUALTRACK_PII_KEYS, then rotate-keys."""
    if blind:
        try:
            with _admin() as admin:
                line = admin.cipher.ring.blind.to_line()
        except DualtrackError as exc:
            _fail(exc)
        console.print(line, soft_wrap=True)
        return
    console.print(PiiKey.generate(datetime.now(UTC).date(), key_id).to_line(), soft_wrap=True)


@commands.command("rotate-keys")
def rotate_keys_command(
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Rows per transaction.")] = 500,
) -> None:
    """Re-wrap every user's data key under the active ring key, and move entries written
    before envelope encryption to it. Entries that cannot be read are skipped and listed
    (exit code 1); the rest rotate."""
    try:
        with _admin() as admin:
            with _bar("rotating") as bar:
                task = bar.add_task("rotate", total=pending_rotation(admin.database, admin.cipher))
                report = rotate_keys(
                    admin.database,
                    admin.cipher,
                    batch_size=batch_size,
                    progress=lambda n: bar.advance(task, n),
                )
            ring = admin.cipher.ring
    except DualtrackError as exc:
        _fail(exc)
    unreadable = len(report.failed) + len(report.failed_data_keys)
    console.print(
        f"re-wrapped {report.rewrapped} data keys and moved {report.migrated} entries to "
        f"envelope encryption with key {ring.active.key_id}; {unreadable} unreadable, "
        f"{report.remaining} remaining"
    )
    for entry_id in report.failed:
        err_console.print(f"unreadable vault entry {entry_id}")
    for user_id in report.failed_data_keys:
        err_console.print(f"unreadable data key of user {escape(user_id)}")
    if not ring.blind_pinned:
        err_console.print(
            "[yellow]the key ring has no @blind entry:[/yellow] its blind key derives from its "
            "oldest key; pin it (`dualtrack new-key --blind`) before retiring that key"
        )
    if unreadable:
        raise typer.Exit(code=1)


@commands.command("rekey-devices")
def rekey_devices_command(
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Rows per transaction.")] = 500,
) -> None:
    """Re-key the device fingerprints written before revision 0013 (a plain SHA-256) as
    an HMAC keyed per user; the old fingerprints still name their devices for one release."""
    try:
        with _admin() as admin, _bar("re-keying") as bar:
            task = bar.add_task("rekey", total=count_unkeyed_devices(admin.database))
            report = rekey_devices(
                admin.database,
                admin.cipher,
                batch_size=batch_size,
                progress=lambda n: bar.advance(task, n),
            )
    except DualtrackError as exc:
        _fail(exc)
    console.print(
        f"re-keyed {report.rekeyed} device fingerprints, {report.merged} of them merged "
        "into the re-keyed row of the same device"
    )


@commands.command("repair-vault")
def repair_vault_command() -> None:
    """Merge duplicate PII vault entries (of one exact value) written before the unique
    index, rewrite the references to them, and index every readable entry written before
    revision 0014 by its exact value (two spellings of one number stay two entries)."""
    try:
        with _admin() as admin, _bar("repairing") as bar:
            task = bar.add_task("repair", total=count_vault_repairs(admin.database))
            report = repair_vault(
                admin.database, admin.cipher, progress=lambda n: bar.advance(task, n)
            )
    except DualtrackError as exc:
        _fail(exc)
    table = Table("users examined", "merged", "references rewritten", "indexed", "unreadable")
    table.add_row(
        str(report.users),
        str(report.merged),
        str(report.references),
        str(report.indexed),
        str(len(report.failed)),
    )
    console.print(table)
    console.print(f"merged {report.merged} duplicate entries; {len(report.failed)} unreadable")
    for entry_id in report.failed:
        err_console.print(f"unreadable vault entry {entry_id}")
    if report.failed:
        raise typer.Exit(code=1)


@commands.command()
def sweep(
    batch_size: Annotated[
        int, typer.Option(min=1, max=100_000, help="Rows per transaction.")
    ] = 1000,
    vacuum: Annotated[bool, typer.Option(help="VACUUM (ANALYZE) every user table.")] = True,
) -> None:
    """End idle sessions (record and profile update); delete expired fragments and facts;
    set idle users' index tenants cold; vacuum every user table (the dead tuples of deletes and
    the sweep, the index entries of erased rows)."""
    cold = 0
    try:
        with _admin() as admin:
            now = datetime.now(UTC)
            with _bar("sweeping") as bar:
                task = bar.add_task("sweep", total=count_expired(admin.database, now))
                report = admin.sweep(
                    now=now,
                    batch_size=batch_size,
                    progress=lambda n: bar.advance(task, n),
                    vacuum=vacuum,
                )
            if isinstance(admin.index, ColdTenants):
                since = now - timedelta(days=admin.settings.cold_after_days)
                cold = admin.index.set_cold(idle_users(admin.database, since))
            admin.drain_outbox()
    except DualtrackError as exc:
        _fail(exc)
    console.print(
        f"ended {report.sessions_ended} idle sessions; swept {report.fragments} fragments "
        f"and {report.facts} facts; {cold} users set cold; "
        f"{report.flagged} memories of large users flagged for approximate search"
    )
    if report.decay is not None:
        console.print(
            f"decayed {report.decay.decayed} inferred memories; "
            f"{report.decay.pending} moved to pending confirmation"
        )
    if vacuum:
        table = Table("table vacuumed", "dead tuples before")
        for vacuumed in report.vacuumed:
            table.add_row(vacuumed.table, str(vacuumed.dead_tuples))
        console.print(table)
        console.print(f"vacuumed {len(report.vacuumed)} tables")


@commands.command()
def decay(
    batch_size: Annotated[
        int, typer.Option(min=1, max=100_000, help="Rows per transaction.")
    ] = 1000,
) -> None:
    """Lower the confidence of stale inferences, one step per day unused beyond a week;
    those below the threshold become pending confirmation. Idempotent per day (also run
    by `sweep`)."""
    try:
        with _admin() as admin:
            now = datetime.now(UTC)
            with _bar("decaying") as bar:
                due = count_decay_due(admin.database, now, admin.settings.confidence)
                task = bar.add_task("decay", total=due)
                report = admin.decay(
                    now=now, batch_size=batch_size, progress=lambda n: bar.advance(task, n)
                )
    except DualtrackError as exc:
        _fail(exc)
    table = Table("decayed", "moved to pending")
    table.add_row(str(report.decayed), str(report.pending))
    console.print(table)


@commands.command()
def audit(
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="Most entries listed.")] = 50,
    user: Annotated[
        str | None,
        typer.Option(
            help="Only this user's entries (ops): their pseudonym, computable while the "
            "user's audit key exists (erasure destroys it)."
        ),
    ] = None,
    action: Annotated[
        list[AuditAction] | None, typer.Option(help="Only these actions (repeatable).")
    ] = None,
    memory: Annotated[str | None, typer.Option(help="Only entries about this memory id.")] = None,
    daily: Annotated[
        int | None,
        typer.Option(min=1, max=3660, help="Counts per day, action and kind over N days."),
    ] = None,
) -> None:
    """List recent audit entries (time, action, agent, pseudonym, memory), newest first;
    or, with --daily, counts per day for the dashboard's plots."""
    from policies.scope import UserScope
    from policies.validation import check_uuid
    from structured_memory import audit as audit_log

    actions = tuple(action or ())
    try:
        with _admin() as admin:
            if daily is not None:
                since = datetime.now(UTC) - timedelta(days=daily)
                counts = audit_log.daily_counts(admin.database, since=since, actions=actions)
                table = Table("day", "action", "kind", "entries")
                for c in counts:
                    table.add_row(f"{c.day:%Y-%m-%d}", c.action.value, c.kind or "", str(c.count))
                console.print(table)
                return
            subject = None
            if user is not None:
                subject = audit_log.subject_of(admin.database, UserScope(user))
                if subject is None:
                    console.print("no audit key for this user: erased, or never audited")
                    return
                console.print(f"pseudonym {subject}")
            entries = audit_log.recent(
                admin.database,
                limit=limit,
                subject=subject,
                actions=actions,
                memory_id=None if memory is None else check_uuid(memory, "memory"),
            )
    except DualtrackError as exc:
        _fail(exc)
    table = Table("time (UTC)", "action", "agent", "pseudonym", "memory", "details")
    for e in entries:
        table.add_row(
            f"{e.at.astimezone(UTC):%Y-%m-%d %H:%M:%S}",
            e.action.value,
            escape(e.agent_id or "-"),
            (e.subject or "-")[:16],
            str(e.memory_id or "-"),
            escape(json.dumps(e.details, ensure_ascii=False, sort_keys=True)),
        )
    console.print(table)


@commands.command()
def worker(
    interval: Annotated[float, typer.Option(min=0.05, help="Seconds between polls.")] = 1.0,
) -> None:
    """Apply the outbox to the derived index until interrupted (Ctrl-C)."""
    try:
        with _admin(outbox_worker="external") as admin:
            if not admin.index.derived:
                console.print(f"index {admin.index.name!r} reads the ledger; no outbox to apply")
                return
            console.print(f"applying the outbox to {admin.index.name} every {interval}s")
            applied = 0
            try:
                while True:
                    report = admin.drain_outbox(deadline_s=max(interval * 5, 5.0))
                    applied += report.applied
                    if report.applied == 0:
                        time.sleep(interval)
            except KeyboardInterrupt:
                console.print(f"stopped after applying {applied} entries")
    except DualtrackError as exc:
        _fail(exc)


@commands.command()
def reindex(
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Rows per batch.")] = 500,
) -> None:
    """Rebuild the search index from the ledger (a derived index is dropped first)."""
    try:
        with _admin() as admin:
            if isinstance(admin.index, Resettable):
                admin.index.reset()
            with _bar("reindexing") as bar:
                task = bar.add_task("reindex", total=count_fragments(admin.database))
                done = reindex_all(
                    admin.database,
                    admin.index,
                    batch_size=batch_size,
                    progress=lambda n: bar.advance(task, n),
                )
            name = admin.index.name
    except DualtrackError as exc:
        _fail(exc)
    console.print(f"reindexed {done} fragments into {name}")


@commands.command()
def retokenise(
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Rows per batch.")] = 500,
) -> None:
    """Recompute stored memories' keyword terms as this release writes them (run once after
    an upgrade that changed them); rows already current are not written, so it can be
    interrupted and run again."""
    try:
        with _admin() as admin:
            with _bar("retokenising") as bar:
                task = bar.add_task("retokenise", total=count_fragments(admin.database))
                report = admin.retokenise(
                    batch_size=batch_size, progress=lambda n: bar.advance(task, n)
                )
            admin.drain_outbox()
    except DualtrackError as exc:
        _fail(exc)
    console.print(
        f"examined {report.examined} fragments of {report.users} users; {report.changed} changed"
    )


@commands.command()
def reembed(
    batch_size: Annotated[int, typer.Option(min=1, max=10_000, help="Rows per batch.")] = 500,
) -> None:
    """Embed stored memories again with the configured embedder (DUALTRACK_EMBEDDER; auto:
    this release's default) and make it the deployment's; rows already of that embedder
    are not read, so it can be interrupted and run again."""
    try:
        with _admin() as admin, _bar("re-embedding") as bar:
            task = bar.add_task("reembed", total=count_fragments(admin.database))
            report = admin.reembed(batch_size=batch_size, progress=lambda n: bar.advance(task, n))
    except DualtrackError as exc:
        _fail(exc)
    console.print(
        f"embedded {report.embedded} fragments of {report.users} users again "
        f"({report.skipped} changed meanwhile: run it again); "
        f"{report.reindexed} refilled into the index"
    )


@commands.command()
def health() -> None:
    """Check the database, the index, the schema, the PII key age and the outbox lag."""
    try:
        with _admin() as admin:
            h = admin.health()
    except DualtrackError as exc:
        _fail(exc)
    table = Table("check", "value", "ok")
    table.add_row("database", "reachable" if h.database else "down", _mark(h.database))
    table.add_row(
        "index",
        f"{h.index}: {'reachable' if h.index_reachable else 'down'}",
        _mark(h.index_reachable),
    )
    table.add_row(
        "schema",
        f"{h.schema_revision} (head {h.schema_head})",
        _mark(h.schema_supported),
    )
    table.add_row(
        "active PII key",
        f"{h.active_key_id}, {h.active_key_age_days} days old",
        _mark(not h.active_key_stale),
    )
    table.add_row("entries pending rotation", str(h.entries_pending_rotation), _mark(True))
    table.add_row(
        "unreadable PII entries", str(h.entries_unreadable), _mark(h.entries_unreadable == 0)
    )
    table.add_row(
        "outbox",
        f"{h.outbox.pending} pending, oldest {h.outbox.oldest_age_s:.0f}s, "
        f"{h.outbox.failing} failing",
        _mark(h.outbox.failing == 0),
    )
    console.print(table)
    if not h.ok:
        raise typer.Exit(code=1)


@commands.command()
def demo() -> None:
    """Replay the design's story: day 1 refund, overnight verification, day 2 another agent."""
    from sdk.demo import run

    try:
        run(console)
    except DualtrackError as exc:
        _fail(exc)
