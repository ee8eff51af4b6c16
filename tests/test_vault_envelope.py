"""Envelope encryption: a data key per user, wrapped by the ring; rotation re-wraps; erasure
destroys the data key; a client reloads its key file on meeting an unknown key id."""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from policies.errors import ConfigurationError, DecryptionError
from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory.cross_user import pending_rotation, rotate_keys
from structured_memory.pii.cipher import PiiCipher
from structured_memory.pii.keyring import KeyRing
from tests.conftest import key_line

PHONE = "13912345678"
EMAIL = "li.na@example.com"
BLIND = f"@blind:{base64.b64encode(bytes([66]) * 32).decode()}:2026-01-01"

ClientFactory = Callable[..., MemoryClient]


@pytest.fixture
def client_with(settings: Settings, mem: MemoryClient) -> Iterator[ClientFactory]:
    """More clients on the same database: ``keys`` is a ring text, ``key_file`` a ring file."""
    clients: list[MemoryClient] = []

    def factory(keys: str | None = None, key_file: Path | None = None) -> MemoryClient:
        overrides = {"pii_keys": keys, "pii_key_file": key_file}
        client = MemoryClient(Settings(**{**settings.model_dump(), **overrides})).start()
        clients.append(client)
        return client

    yield factory
    for c in clients:
        c.close()


def _sql(mem: MemoryClient, sql: str, **params: object) -> list[tuple[object, ...]]:
    with mem.admin.database.transaction() as conn:
        result = conn.execute(text(sql), params)
        return [tuple(r) for r in result.all()] if result.returns_rows else []


def test_values_are_sealed_with_a_data_key_per_user(mem: MemoryClient) -> None:
    for user in ("buyer-env-1", "buyer-env-2"):
        mem.profiles.ensure(user)
        mem.pii.store(user, "phone", PHONE)
        mem.pii.store(user, "email", EMAIL)
    assert _sql(mem, "SELECT DISTINCT dek, key_id FROM pii_vault") == [(True, None)]
    keys = _sql(mem, "SELECT user_id, key_id, octet_length(wrapped) FROM pii_data_key ORDER BY 1")
    assert keys == [("buyer-env-1", "k-test-1", 48), ("buyer-env-2", "k-test-1", 48)]
    assert pending_rotation(mem.admin.database, mem.admin.cipher) == 0


def test_rotation_rewraps_data_keys_and_leaves_values(
    mem: MemoryClient, client_with: ClientFactory
) -> None:
    refs = {}
    for i in range(5):
        user = f"buyer-env-{i}"
        mem.profiles.ensure(user)
        refs[user] = [
            mem.pii.store(user, "phone", f"1391234{i:04d}"),
            mem.pii.store(user, "email", f"u{i}@qq.com"),
        ]
    before = _sql(mem, "SELECT id, nonce, ciphertext FROM pii_vault ORDER BY id")
    pinned = (
        mem.admin.cipher.ring.blind.to_line()
    )  # the derived blind key, pinned before k-test-1 goes
    rotated = client_with(key_line("k-test-2", 8) + "," + key_line("k-test-1", 7) + "," + pinned)
    assert pending_rotation(rotated.admin.database, rotated.admin.cipher) == 5
    batches: list[int] = []
    report = rotate_keys(
        rotated.admin.database, rotated.admin.cipher, batch_size=2, progress=batches.append
    )
    assert (report.rewrapped, report.migrated, report.failed, report.remaining) == (5, 0, (), 0)
    assert report.failed_data_keys == ()
    assert batches == [2, 2, 1]
    assert _sql(mem, "SELECT id, nonce, ciphertext FROM pii_vault ORDER BY id") == before
    assert _sql(mem, "SELECT DISTINCT key_id FROM pii_data_key") == [("k-test-2",)]
    only_new = client_with(key_line("k-test-2", 8) + "," + pinned)
    for i, (user, (phone, email)) in enumerate(refs.items()):
        assert only_new.pii.reveal(user, phone.id) == f"1391234{i:04d}"
        assert only_new.pii.reveal(user, email.id) == f"u{i}@qq.com"
        assert only_new.pii.find(user, "phone", f"+86 1391234{i:04d}") == phone
    with pytest.raises(DecryptionError):
        mem.pii.reveal("buyer-env-1", refs["buyer-env-1"][0].id)  # old ring lacks k-test-2


def test_forget_destroys_the_data_key(mem: MemoryClient) -> None:
    for user in ("buyer-env-1", "buyer-env-2"):
        mem.profiles.ensure(user)
        mem.pii.store(user, "phone", PHONE)
    _sql(mem, "DELETE FROM user_profile WHERE user_id = 'buyer-env-1'")
    assert _sql(mem, "SELECT user_id FROM pii_data_key") == [("buyer-env-2",)]
    assert _sql(mem, "SELECT DISTINCT user_id FROM pii_vault") == [("buyer-env-2",)]
    assert mem.forget_user("buyer-env-2")
    assert _sql(mem, "SELECT count(*) FROM pii_data_key") == [(0,)]


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE pii_data_key SET wrapped = set_byte(wrapped, 3, get_byte(wrapped, 3) # 1)",
        "UPDATE pii_data_key SET nonce = set_byte(nonce, 0, get_byte(nonce, 0) # 1)",
        "UPDATE pii_data_key SET user_id = 'buyer-env-2' WHERE user_id = 'buyer-env-1'",
    ],
)
def test_tampered_or_moved_data_key_raises_decryption_error(mem: MemoryClient, sql: str) -> None:
    mem.profiles.ensure("buyer-env-1")
    mem.profiles.ensure("buyer-env-2")
    ref = mem.pii.store("buyer-env-1", "phone", PHONE)
    _sql(mem, "DELETE FROM pii_data_key WHERE user_id = 'buyer-env-2'")
    _sql(mem, sql)
    owner = "buyer-env-2" if "user_id =" in sql else "buyer-env-1"
    _sql(mem, "UPDATE pii_vault SET user_id = :u", u=owner)
    with pytest.raises(DecryptionError) as err:
        mem.pii.reveal(owner, ref.id)
    assert PHONE not in str(err.value)
    with pytest.raises(DecryptionError):
        mem.pii.store(owner, "email", EMAIL)


def test_rotation_skips_a_tampered_data_key_and_health_counts_it(
    mem: MemoryClient, client_with: ClientFactory
) -> None:
    for i in range(6):
        user = f"buyer-env-{i}"
        mem.profiles.ensure(user)
        mem.pii.store(user, "phone", f"1391234{i:04d}")
        mem.pii.store(user, "email", f"u{i}@qq.com")
    _sql(
        mem,
        "UPDATE pii_data_key SET wrapped = set_byte(wrapped, 0, get_byte(wrapped, 0) # 1) "
        "WHERE user_id = 'buyer-env-3'",
    )
    rotated = client_with(key_line("k-test-2", 8) + "," + key_line("k-test-1", 7))
    report = rotate_keys(rotated.admin.database, rotated.admin.cipher, batch_size=4)
    assert report.rewrapped == 5
    assert report.failed_data_keys == ("buyer-env-3",)
    assert report.remaining == 1
    assert rotated.admin.health().entries_unreadable == 2
    assert rotated.admin.health().ok  # unreadable data is reported, not an outage


def _write_ring(path: Path, *lines: str) -> None:
    path.write_text("\n".join(lines) + "\n")


def test_a_client_reloads_its_key_file_for_an_unknown_key(
    mem: MemoryClient, client_with: ClientFactory, tmp_path: Path
) -> None:
    ring_file = tmp_path / "pii.keys"
    _write_ring(ring_file, BLIND, key_line("k-file-1", 41))
    reader = client_with(key_file=ring_file)
    rotator = client_with(key_file=ring_file)
    reader.profiles.ensure("buyer-env-1")
    ref = reader.pii.store("buyer-env-1", "phone", PHONE)
    # an operator adds a key first in the file; the rotating client re-reads it and re-wraps
    _write_ring(ring_file, BLIND, key_line("k-file-2", 42), key_line("k-file-1", 41))
    rotator.admin.cipher.ring.reload()
    assert rotate_keys(rotator.admin.database, rotator.admin.cipher).rewrapped == 1
    assert reader.admin.cipher.ring.active.key_id == "k-file-1"
    assert reader.pii.reveal("buyer-env-1", ref.id) == PHONE  # reloaded once, then read
    assert reader.admin.cipher.ring.active.key_id == "k-file-2"
    _write_ring(ring_file, BLIND, key_line("k-file-2", 42))  # k-file-1 retired
    assert reader.pii.reveal("buyer-env-1", ref.id) == PHONE
    assert reader.pii.find("buyer-env-1", "phone", PHONE) == ref


def test_reload_is_thread_safe_and_keeps_the_blind_key(tmp_path: Path) -> None:
    ring_file = tmp_path / "pii.keys"
    _write_ring(ring_file, BLIND, key_line("k-file-1", 41))
    ring = KeyRing.load_or_create(ring_file)
    _write_ring(ring_file, BLIND, key_line("k-file-2", 42), key_line("k-file-1", 41))
    barrier = threading.Barrier(8)
    found: list[str | None] = []

    def run() -> None:
        barrier.wait()
        key = ring.find("k-file-2")
        found.append(None if key is None else key.key_id)

    workers = [threading.Thread(target=run) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert found == ["k-file-2"] * 8
    assert ring.find("k-never") is None
    _write_ring(ring_file, key_line("k-file-2", 42))  # the blind key would change
    with pytest.raises(ConfigurationError):
        ring.reload()
    assert ring.find("k-file-1") is not None  # the ring kept its keys


def test_generated_key_file_pins_a_blind_key(tmp_path: Path) -> None:
    ring = KeyRing.load_or_create(tmp_path / "new" / "pii.keys")
    assert ring.blind_pinned
    assert (tmp_path / "new" / "pii.keys").stat().st_mode & 0o777 == 0o600
    assert KeyRing.load_or_create(tmp_path / "new" / "pii.keys").blind == ring.blind


def test_a_ring_without_blind_entry_derives_it_from_its_oldest_key() -> None:
    old = KeyRing.parse(key_line("k1", 1, age_days=200))
    both = KeyRing.parse(key_line("k2", 2) + "\n" + key_line("k1", 1, age_days=200))
    assert not old.blind_pinned
    assert both.blind == old.blind
    pinned = KeyRing.parse(key_line("k2", 2) + "\n" + old.blind.to_line())
    assert pinned.blind_pinned
    assert pinned.blind.secret == old.blind.secret
    assert KeyRing.parse(key_line("k2", 2)).blind.secret != old.blind.secret
    index = PiiCipher(old).blind_index("phone", PHONE)
    assert PiiCipher(pinned).blind_index("phone", "+86 139 1234 5678") == index


@pytest.mark.parametrize(
    "ring",
    [
        BLIND,
        BLIND + "\n" + BLIND + "\n" + key_line("k1", 1),
        "@blind:QUJD:2026-01-01\n" + key_line("k1", 1),
        "@other:" + BLIND.split(":", 1)[1] + "\n" + key_line("k1", 1),
    ],
)
def test_bad_blind_entries_are_configuration_errors(ring: str) -> None:
    with pytest.raises(ConfigurationError):
        KeyRing.parse(ring)


def test_data_keys_are_bound_to_their_user() -> None:
    cipher = PiiCipher(KeyRing.parse(key_line("k", 3)))
    data_key = cipher.new_data_key()
    wrapped = cipher.wrap(data_key, "buyer-1")
    assert wrapped.key_id == "k"
    assert len(wrapped.ciphertext) == 48
    assert cipher.unwrap(wrapped, "buyer-1") == data_key
    with pytest.raises(DecryptionError):
        cipher.unwrap(wrapped, "buyer-2")
