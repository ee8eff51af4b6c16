"""Entries written before envelope encryption (revision 0003 and older clients):
migration 0004 over duplicates, ``repair-vault``, and rotation that skips what it cannot read.

The legacy format is written here from its definition (AES-256-GCM under
HKDF(ring key, "dualtrack-pii-enc-v1"), blind index HMAC under
HKDF(ring key, "dualtrack-pii-blind-index-v1")), as a client of the previous
release writes it, so a change of the readers cannot go unnoticed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from sqlalchemy import Connection, make_url, text
from typer.testing import CliRunner

from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from sdk.client import MemoryClient
from service.cli import app
from structured_memory import migrate
from structured_memory.cross_user import (
    find_user_ids_by_pii,
    pending_rotation,
    repair_vault,
    rotate_keys,
)
from structured_memory.database import Database
from structured_memory.pii.cipher import PiiCipher, normalise
from structured_memory.pii.keyring import KeyRing
from structured_memory.pii.vault import PiiVault
from tests.conftest import key_line

SECRET = bytes([7]) * 32  # the session ring's k-test-1
PHONE = "13812345678"


def _hkdf(secret: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret)


def insert_legacy(
    conn: Connection,
    user_id: str,
    kind: str,
    value: str,
    *,
    key_id: str = "k-test-1",
    secret: bytes = SECRET,
) -> uuid.UUID:
    """Insert one vault row exactly as a client before revision 0004 did."""
    entry_id = uuid.uuid4()
    aad = b"\x1f".join([entry_id.bytes, user_id.encode(), kind.encode()])
    nonce = os.urandom(12)
    ciphertext = AESGCM(_hkdf(secret, b"dualtrack-pii-enc-v1")).encrypt(nonce, value.encode(), aad)
    message = kind.encode() + b"\x1f" + normalise(kind, value).encode()
    blind = hmac.new(
        _hkdf(secret, b"dualtrack-pii-blind-index-v1"), message, hashlib.sha256
    ).digest()
    conn.execute(
        text(
            "INSERT INTO pii_vault (id, user_id, kind, key_id, nonce, ciphertext, blind_index, "
            "created_at) VALUES (:i, :u, :k, :kid, :n, :c, :b, clock_timestamp())"
        ),
        {
            "i": entry_id,
            "u": user_id,
            "k": kind,
            "kid": key_id,
            "n": nonce,
            "c": ciphertext,
            "b": blind,
        },
    )
    return entry_id


def insert_fragment(conn: Connection, user_id: str, refs: list[tuple[uuid.UUID, str]]) -> uuid.UUID:
    """A ledger row whose ``metadata["pii"]`` references vault entries (columns of 0003)."""
    pii = [{"vault_id": str(i), "kind": k} for i, k in refs]
    return uuid.UUID(
        str(
            conn.execute(
                text(
                    "INSERT INTO memory_fragment (user_id, kind, policy, text, index_text, "
                    "token_count, metadata) VALUES (:u, 'note', 'explicit', '手机 138****5678', "
                    "'手机', 1, CAST(:m AS jsonb)) RETURNING id"
                ),
                {"u": user_id, "m": json.dumps({"pii": pii, "channel": "app"})},
            ).scalar_one()
        )
    )


def _pii_refs(conn: Connection, fragment_id: uuid.UUID) -> list[dict[str, Any]]:
    return list(
        conn.execute(
            text("SELECT metadata->'pii' FROM memory_fragment WHERE id = :i"), {"i": fragment_id}
        ).scalar_one()
    )


@pytest.fixture
def scratch_db(dsn: str) -> Iterator[Database]:
    """A fresh, empty database on the test server, dropped afterwards."""
    url = make_url(dsn)
    host = url.query.get("host") or url.host
    admin = f"host={host} user={url.username or 'postgres'} dbname={url.database}"
    if url.port:
        admin += f" port={url.port}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS dualtrack_vault_legacy")
        conn.execute("CREATE DATABASE dualtrack_vault_legacy")
    db = Database.from_dsn(url.set(database="dualtrack_vault_legacy").render_as_string(False))
    yield db
    db.dispose()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE dualtrack_vault_legacy WITH (FORCE)")


def test_migration_0004_over_duplicates_then_repair_and_rotate(scratch_db: Database) -> None:
    migrate.upgrade(scratch_db, "0003")
    with scratch_db.transaction() as conn:
        conn.execute(text("INSERT INTO user_profile (user_id) VALUES ('buyer-001')"))
        dups = [
            insert_legacy(conn, "buyer-001", "phone", p)
            for p in (PHONE, "+86 138 1234 5678", PHONE)
        ]
        email = insert_legacy(conn, "buyer-001", "email", "a@b.com")
        fragment = insert_fragment(conn, "buyer-001", [(dups[2], "phone"), (email, "email")])
    migrate.upgrade(scratch_db, "0004")  # duplicates do not stop the expand step
    with scratch_db.transaction() as conn:
        rows = conn.execute(text("SELECT dek, blind_mac FROM pii_vault")).all()
    assert {(r.dek, r.blind_mac) for r in rows} == {(False, None)}
    migrate.upgrade(scratch_db)  # this code runs on its supported schemas only

    cipher = PiiCipher(KeyRing.parse(key_line("k-test-1", 7)))
    vault = PiiVault(scratch_db, cipher)
    scope = UserScope("buyer-001")
    assert vault.find(scope, "phone", PHONE) is not None  # no MultipleResultsFound before repair
    report = repair_vault(scratch_db, cipher)
    # one exact duplicate merged; the other spelling stays an entry of its own
    assert (report.users, report.merged, report.references, report.indexed) == (1, 1, 1, 3)
    assert report.failed == ()
    kept = vault.find(scope, "phone", PHONE)
    assert kept is not None
    assert kept.id == dups[0]  # the oldest of the group stays
    with scratch_db.transaction() as conn:
        assert _pii_refs(conn, fragment) == [
            {"vault_id": str(dups[0]), "kind": "phone"},
            {"vault_id": str(email), "kind": "email"},
        ]
        assert conn.execute(text("SELECT count(*) FROM pii_vault")).scalar_one() == 3
    assert vault.store(scope, "phone", PHONE) == kept
    assert vault.store(scope, "phone", "+86 138 1234 5678").id == dups[1]
    assert repair_vault(scratch_db, cipher).merged == 0  # idempotent

    assert pending_rotation(scratch_db, cipher) == 3
    rotated = rotate_keys(scratch_db, cipher)
    assert (rotated.migrated, rotated.failed, rotated.remaining) == (3, (), 0)
    assert vault.reveal(scope, dups[0]) == PHONE
    assert vault.reveal(scope, dups[1]) == "+86 138 1234 5678"
    assert vault.reveal(scope, email) == "a@b.com"


def test_rotation_skips_a_tampered_legacy_entry(mem: MemoryClient) -> None:
    ids: list[tuple[str, uuid.UUID]] = []
    with mem.admin.database.transaction() as conn:
        for i in range(30):
            user = f"buyer-{i:03d}"
            conn.execute(text("INSERT INTO user_profile (user_id) VALUES (:u)"), {"u": user})
            ids.append((user, insert_legacy(conn, user, "phone", f"1380000{i:04d}")))
        tampered = ids[11][1]
        conn.execute(
            text(
                "UPDATE pii_vault SET ciphertext = set_byte(ciphertext, 0, "
                "get_byte(ciphertext, 0) # 1) WHERE id = :i"
            ),
            {"i": tampered},
        )
    assert mem.pii.reveal("buyer-000", ids[0][1]) == "13800000000"  # legacy rows stay readable
    assert pending_rotation(mem.admin.database, mem.admin.cipher) == 30
    report = rotate_keys(mem.admin.database, mem.admin.cipher, batch_size=7)
    assert (report.migrated, report.failed, report.remaining) == (29, (tampered,), 1)
    assert mem.admin.health().entries_unreadable == 1
    for user, entry in ids:
        if entry != tampered:
            assert mem.pii.reveal(user, entry) == f"1380000{int(user[-3:]):04d}"
    assert find_user_ids_by_pii(mem.admin.database, mem.admin.cipher, "phone", "13800000007") == [
        "buyer-007"
    ]


def test_repair_vault_command_merges_and_reports(mem: MemoryClient, cli_env: None) -> None:
    mem.profiles.ensure("buyer-001")
    mem.profiles.ensure("buyer-002")
    with mem.admin.database.transaction() as conn:
        phones = [insert_legacy(conn, "buyer-001", "phone", PHONE) for _ in range(3)]
        other = insert_legacy(conn, "buyer-002", "phone", PHONE)
        fragment = insert_fragment(conn, "buyer-001", [(phones[1], "phone"), (phones[2], "phone")])
    mem.facts.put(
        "buyer-001",
        "contact.phone",
        {"vault_id": str(phones[2]), "kind": "phone"},
        lifecycle_policy=LifecyclePolicy.SENSITIVE,
    )
    # before the repair every call still works (the oldest duplicate answers)
    assert mem.pii.store("buyer-001", "phone", PHONE).id == phones[0]
    mem.write(
        "buyer-001", f"退款 RF20260629001 请打 {PHONE}", lifecycle_policy=LifecyclePolicy.EXPLICIT
    )

    result = CliRunner().invoke(app, ["repair-vault"])
    assert result.exit_code == 0, result.output
    assert "merged 2 duplicate entries" in result.output
    assert [r.id for r in mem.pii.list("buyer-001")] == [phones[0]]
    assert [r.id for r in mem.pii.list("buyer-002")] == [other]
    with mem.admin.database.transaction() as conn:
        assert _pii_refs(conn, fragment) == [{"vault_id": str(phones[0]), "kind": "phone"}]
    fact = mem.facts.get("buyer-001", "contact.phone")
    assert fact is not None
    assert fact.value == {"vault_id": str(phones[0]), "kind": "phone"}
    assert find_user_ids_by_pii(mem.admin.database, mem.admin.cipher, "phone", PHONE) == [
        "buyer-001",
        "buyer-002",
    ]


def test_rotate_keys_command_exits_nonzero_on_unreadable_entries(
    mem: MemoryClient, cli_env: None
) -> None:
    mem.profiles.ensure("buyer-001")
    with mem.admin.database.transaction() as conn:
        good = insert_legacy(conn, "buyer-001", "phone", PHONE)
        bad = insert_legacy(conn, "buyer-001", "email", "a@b.com")
        conn.execute(  # flip bits: writing a fixed byte is no tamper when the nonce held it
            text(
                "UPDATE pii_vault SET nonce = set_byte(nonce, 1, get_byte(nonce, 1) # 9) "
                "WHERE id = :i"
            ),
            {"i": bad},
        )
    result = CliRunner().invoke(app, ["rotate-keys"])
    assert result.exit_code == 1, result.output
    assert "1 unreadable" in result.output
    assert str(bad) in result.output
    assert "a@b.com" not in result.output
    assert mem.pii.reveal("buyer-001", good) == PHONE
