"""Rolling upgrades: the previous release and this one share a database.

The previous release (commit :data:`PREVIOUS_RELEASE`, schema head 0003) is
extracted from git and its client runs in a subprocess with ``PYTHONPATH``
pointing at it, on the same virtualenv. It creates and fills a database at its
own head; this release migrates it to head and reads everything the old client
wrote; the old client, with ``auto_migrate`` off as in service mode, keeps
working on the new schema, and every error it meets is typed. Then the
declared range: a client refuses a schema older than it needs, and serves a
schema newer than its head only when that schema declares it compatible.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from policies.errors import ConfigurationError, DecryptionError, SchemaMismatch
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from sdk.settings import Settings
from service.cli import app
from structured_memory import migrate
from structured_memory.database import Database
from tests.conftest import key_line

PREVIOUS_RELEASE = "b40aaa2"
"""The last commit of the previous release (schema head 0003)."""

REPO = Path(__file__).resolve().parents[1]
KEYS = key_line("k-test-1", 7)
OLD_USER, NEW_USER, OLD_USER_LATE = "buyer-old", "buyer-new", "buyer-old-2"
PHONE, EMAIL = "13912345678", "zhang.wei@example.com"

# Runs under the previous release's code: only its public API, results as JSON on stdout.
_OLD_CLIENT = r"""
import json, sys
from policies.errors import DualtrackError
from policies.lifecycle import LifecyclePolicy as P
from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory import migrate

args = json.load(sys.stdin)
out = {"errors": {}}


def attempt(name, fn):
    try:
        return fn()
    except Exception as exc:
        out["errors"][name] = {
            "type": type(exc).__name__, "typed": isinstance(exc, DualtrackError),
        }
        return None


settings = Settings(
    postgres_dsn=args["dsn"], data_dir=args["data_dir"], pii_keys=args["keys"],
    auto_migrate=args["auto_migrate"],
)
with MemoryClient(settings, agent_id="old-pod") as mem:
    if args["phase"] == "seed":
        u = "buyer-old"
        mem.profiles.ensure(u)
        mem.facts.put(u, "notify_channel", "wechat", lifecycle_policy=P.EXPLICIT)
        out["pii"] = str(mem.pii.store(u, "email", "zhang.wei@example.com").id)
        out["refund"] = str(mem.write(
            u, "订单 88231 的退款 RF20260629001 还没到账", lifecycle_policy=P.EXPLICIT,
            session_id="s-0629"))
        out["phone"] = str(mem.write(
            u, "退款有问题请打我手机 13912345678", lifecycle_policy=P.SENSITIVE,
            session_id="s-0629"))
        out["english"] = str(mem.write(
            u, "Prefers refunds to the original card, not store credit",
            lifecycle_policy=P.IMPLICIT))
    else:
        u = "buyer-old-2"
        attempt("ensure", lambda: mem.profiles.ensure(u))
        mid = attempt("write", lambda: mem.write(
            u, "订单 88231 换货，手机 13700001111", lifecycle_policy=P.SENSITIVE,
            session_id="s-0701"))
        out["own_memory"] = None if mid is None else str(mid)
        hits = attempt("search", lambda: mem.search(u, "订单 88231 换货", limit=3)) or []
        out["own_hits"] = [str(h.memory_id) for h in hits]
        ref = attempt("pii.store", lambda: mem.pii.store(u, "phone", "13700002222"))
        out["own_pii"] = None if ref is None else str(ref.id)
        out["own_reveal"] = ref and attempt(
            "pii.reveal", lambda: mem.pii.reveal(u, ref.id))
        found = attempt("pii.find", lambda: mem.pii.find(u, "phone", "13700002222"))
        out["own_find"] = None if found is None else str(found.id)
        attempt("facts.put", lambda: mem.facts.put(
            u, "refund_to", "original_card", lifecycle_policy=P.EXPLICIT))
        fact = attempt("facts.get", lambda: mem.facts.get(u, "refund_to"))
        out["own_fact"] = None if fact is None else fact.value
        # rows the new release wrote
        hits = attempt("search new", lambda: mem.search(
            "buyer-new", "退款 RF20260701002 到哪了", limit=3)) or []
        out["new_hits"] = [str(h.memory_id) for h in hits]
        attempt("reveal new", lambda: mem.pii.reveal("buyer-new", args["new_pii"]))
        attempt("export old", lambda: mem.export_user("buyer-old"))
    out["revision"] = migrate.current_revision(mem.database)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def previous_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The previous release's packages, extracted from git."""
    packages = ["policies", "sdk", "structured_memory", "unstructured_memory"]
    done = subprocess.run(
        ["git", "-C", str(REPO), "archive", PREVIOUS_RELEASE, *packages],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        reason = f"commit {PREVIOUS_RELEASE} is not in {REPO} (a shallow clone?)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("previous_release")
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        tar.extractall(root, filter="data")
    return root


def run_old_client(root: Path, args: dict[str, Any]) -> dict[str, Any]:
    """Run the previous release's client on ``args``; its JSON output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DUALTRACK_")}
    env["PYTHONPATH"] = str(root)
    done = subprocess.run(
        [sys.executable, "-c", _OLD_CLIENT],
        input=json.dumps({"keys": KEYS, "data_dir": str(root / "state"), **args}),
        capture_output=True,
        text=True,
        cwd=root,  # sys.path[0] is the working directory: never this release's tree
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def new_client(dsn: str, data_dir: Path, *, auto_migrate: bool = False) -> MemoryClient:
    """This release's client in service mode (no migration at start) unless told."""
    settings = Settings(
        postgres_dsn=dsn,  # type: ignore[arg-type]
        data_dir=data_dir,
        pii_keys=KEYS,  # type: ignore[arg-type]
        auto_migrate=auto_migrate,
    )
    return MemoryClient(settings, agent_id="new-pod")


def test_old_and_new_clients_share_a_database(
    previous_release: Path, fresh_dsn: str, tmp_path: Path
) -> None:
    # (a) the previous release creates its schema and writes
    old = run_old_client(
        previous_release, {"dsn": fresh_dsn, "phase": "seed", "auto_migrate": True}
    )
    assert old["revision"] == "0003"

    # (b) the deploy step: this release migrates; its client reads everything
    db = Database.from_dsn(fresh_dsn)
    try:
        migrate.upgrade(db)
        assert migrate.current_revision(db) == migrate.head_revision()
    finally:
        db.dispose()
    with new_client(fresh_dsn, tmp_path) as mem:
        assert mem.admin.health().schema_supported
        fact = mem.facts.get(OLD_USER, "notify_channel")
        assert fact is not None
        assert fact.value == "wechat"
        assert mem.pii.reveal(OLD_USER, uuid.UUID(old["pii"])) == EMAIL
        found = mem.pii.find(OLD_USER, "email", EMAIL)
        assert found is not None
        assert str(found.id) == old["pii"]
        refund = [str(h.memory_id) for h in mem.search(OLD_USER, "退款 RF20260629001", limit=3)]
        assert old["refund"] in refund
        card = [str(h.memory_id) for h in mem.search(OLD_USER, "refund to original card")]
        assert old["english"] in card
        by_phone = [str(h.memory_id) for h in mem.search(OLD_USER, f"手机 {PHONE}", limit=3)]
        assert old["phone"] in by_phone, "the old memory's phone is found by blind index"
        export = mem.export_user(OLD_USER)
        assert {p["value"] for p in export["pii"]} >= {EMAIL, PHONE}
        assert {m["id"] for m in export["memories"]} >= {old["refund"], old["phone"]}
        # rows of this release, for the old client to meet
        mem.profiles.ensure(NEW_USER)
        mem.write(
            NEW_USER,
            "退款 RF20260701002 已提交，订单 88232",
            lifecycle_policy=LifecyclePolicy.EXPLICIT,
        )
        new_pii = mem.pii.store(NEW_USER, "phone", "13600003333")
        mem.pii.store(OLD_USER, "phone", "13600004444")  # envelope format, for an old user
        new_memory = mem.search(NEW_USER, "退款 RF20260701002", limit=1)[0].memory_id

    # (c) the previous release, without auto_migrate, keeps serving on the new schema
    served = run_old_client(
        previous_release,
        {"dsn": fresh_dsn, "phase": "serve", "auto_migrate": False, "new_pii": str(new_pii.id)},
    )
    assert served["revision"] == migrate.head_revision()
    assert served["own_memory"] in served["own_hits"]
    assert served["own_reveal"] == "13700002222"
    assert served["own_find"] == served["own_pii"]
    assert served["own_fact"] == "original_card"
    assert str(new_memory) in served["new_hits"], "the old client searches new rows"
    # the one thing it cannot do: open the envelope format this release writes
    errors = served["errors"]
    assert set(errors) == {"reveal new", "export old"}, errors
    for error in errors.values():
        assert error == {"type": DecryptionError.__name__, "typed": True}

    # and this release reads what the old client wrote on the new schema
    with new_client(fresh_dsn, tmp_path) as mem:
        assert mem.pii.reveal(OLD_USER_LATE, uuid.UUID(served["own_pii"])) == "13700002222"
        found = mem.pii.find(OLD_USER_LATE, "phone", "13700002222")
        assert found is not None
        assert str(found.id) == served["own_pii"]
        hits = mem.search(OLD_USER_LATE, "订单 88231 换货", limit=3)
        assert served["own_memory"] in [str(h.memory_id) for h in hits]
        assert mem.pii.store(OLD_USER_LATE, "phone", "13700002222").id == found.id


def test_schema_range() -> None:
    head = migrate.head_revision()
    assert migrate.schema_supported(head)
    assert migrate.schema_supported(migrate.OLDEST_SUPPORTED)
    assert not migrate.schema_supported(None)
    assert not migrate.schema_supported("0003"), "this release reads columns of 0004 and 0005"
    # a schema of a later release: served only when it declares this release compatible
    assert not migrate.schema_supported("0099")
    assert migrate.schema_supported("0099", min_client_revision="0003")
    assert migrate.schema_supported("0099", min_client_revision=head)
    assert not migrate.schema_supported("0099", min_client_revision="0099")


def test_every_migration_declares_a_revision_at_or_before_itself() -> None:
    known = migrate.revisions()
    for position, revision in enumerate(known):
        declared = migrate.min_client_revision(revision)
        assert declared in known[: position + 1], (revision, declared)


def test_an_older_schema_needs_the_migrate_step(fresh_dsn: str, tmp_path: Path) -> None:
    db = Database.from_dsn(fresh_dsn)
    try:
        migrate.upgrade(db, "0004")
        with pytest.raises(SchemaMismatch) as refused:
            new_client(fresh_dsn, tmp_path).start()
        assert isinstance(refused.value, ConfigurationError)
        assert "dualtrack migrate" in refused.value.message
        assert refused.value.details == {"revision": "0004", "needs": migrate.OLDEST_SUPPORTED}

        deploy = CliRunner().invoke(app, ["migrate"], env={"DUALTRACK_POSTGRES_DSN": fresh_dsn})
        assert deploy.exit_code == 0, deploy.output
        assert f"schema: 0004 -> {migrate.head_revision()}" in deploy.output
        with new_client(fresh_dsn, tmp_path) as mem:
            health = mem.admin.health()
            assert health.schema_revision == migrate.head_revision()
            assert health.schema_supported
        with db.transaction() as conn:
            compat = conn.execute(text("SELECT revision, min_client_revision FROM schema_compat"))
            assert compat.one() == (
                migrate.head_revision(),
                migrate.min_client_revision(migrate.head_revision()),
            )
    finally:
        db.dispose()


def _pretend_later_release(db: Database, revision: str, min_client_revision: str) -> None:
    with db.transaction() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
        conn.execute(
            text("UPDATE schema_compat SET revision = :r, min_client_revision = :m"),
            {"r": revision, "m": min_client_revision},
        )


def test_a_newer_schema_is_served_only_when_declared_compatible(
    fresh_dsn: str, tmp_path: Path
) -> None:
    db = Database.from_dsn(fresh_dsn)
    try:
        migrate.upgrade(db)
        _pretend_later_release(db, "0099", min_client_revision=migrate.OLDEST_SUPPORTED)
        with new_client(fresh_dsn, tmp_path, auto_migrate=True) as mem:
            health = mem.admin.health()
            assert (health.schema_revision, health.schema_supported) == ("0099", True)
            mem.profiles.ensure("buyer-001")
            migrate.upgrade(db)  # the deploy step of this release: nothing to do
            assert migrate.current_revision(db) == "0099"

            # the later release contracts: this pod must leave the pool
            _pretend_later_release(db, "0099", min_client_revision="0099")
            health = mem.admin.health()
            assert not health.schema_supported
            assert not health.ok
        with pytest.raises(SchemaMismatch) as refused:
            new_client(fresh_dsn, tmp_path, auto_migrate=True).start()
        assert "upgrade this client" in refused.value.message
        with pytest.raises(SchemaMismatch):
            migrate.upgrade(db)
        with pytest.raises(SchemaMismatch):
            migrate.downgrade(db, "0004")
    finally:
        db.dispose()
