"""PII vault: round trip, tamper, wrong key, rotation, blind index, no plaintext at rest.

More in test_vault_race.py, test_vault_envelope.py and test_vault_legacy.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import text

from policies.errors import ConfigurationError, DecryptionError, InvalidField, InvalidText
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory.cross_user import find_user_ids_by_pii, pending_rotation, rotate_keys
from structured_memory.pii.cipher import PiiCipher, normalise
from structured_memory.pii.keyring import KeyRing
from tests.conftest import key_line

PHONE = "13812345678"
EMAIL = "Zhang.Wei@example.com"
ID_CARD = "11010519491231002X"
CARD = "6222021234567890123"
ADDRESS = "上海市浦东新区世纪大道100号"


ClientFactory = Callable[[str], MemoryClient]


@pytest.fixture
def other_client(settings: Settings, mem: MemoryClient) -> Iterator[ClientFactory]:
    """Builds more clients on the same database with another key ring."""
    clients: list[MemoryClient] = []

    def factory(keys: str) -> MemoryClient:
        client = MemoryClient(Settings(**{**settings.model_dump(), "pii_keys": keys})).start()
        clients.append(client)
        return client

    yield factory
    for c in clients:
        c.close()


def test_round_trip_every_kind(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    for kind, value in [
        ("phone", PHONE),
        ("email", EMAIL),
        ("id_card", ID_CARD),
        ("bank_card", CARD),
        ("address", ADDRESS),
    ]:
        ref = mem.pii.store("buyer-001", kind, value)
        assert mem.pii.reveal("buyer-001", ref.id) == value
        assert mem.pii.find("buyer-001", kind, value) == ref
    assert len(mem.pii.list("buyer-001")) == 5


def test_each_spelling_is_an_entry_found_in_other_formats(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    a = mem.pii.store("buyer-001", "phone", "138 1234 5678")
    b = mem.pii.store("buyer-001", "phone", "+86-138-1234-5678")
    assert a != b
    assert mem.pii.find("buyer-001", "phone", "13812345678") == a, "the oldest spelling"
    assert mem.pii.find("buyer-001", "phone", "+86-138-1234-5678") == b, "the exact one"
    assert mem.pii.find("buyer-001", "email", "zhang.wei@EXAMPLE.com") is None
    mem.pii.store("buyer-001", "email", EMAIL)
    assert mem.pii.find("buyer-001", "email", "zhang.wei@EXAMPLE.com") is not None


def test_find_users_by_phone_without_decrypting(mem: MemoryClient) -> None:
    for uid in ("buyer-001", "buyer-002", "buyer-003"):
        mem.profiles.ensure(uid)
    mem.pii.store("buyer-001", "phone", PHONE)
    mem.pii.store("buyer-003", "phone", "+86 138-1234-5678")
    mem.pii.store("buyer-002", "phone", "13900000000")
    assert find_user_ids_by_pii(mem.admin.database, mem.admin.cipher, "phone", PHONE) == [
        "buyer-001",
        "buyer-003",
    ]


def _tamper(mem: MemoryClient, sql: str, **params: object) -> None:
    with mem.admin.database.transaction() as conn:
        conn.execute(text(sql), params)


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE pii_vault SET ciphertext = set_byte(ciphertext, 0, get_byte(ciphertext, 0) # 1)",
        "UPDATE pii_vault SET nonce = set_byte(nonce, 11, get_byte(nonce, 11) # 128)",
        "UPDATE pii_vault SET kind = 'email'",
        "UPDATE pii_vault SET ciphertext = substring(ciphertext from 1 for 10)",
    ],
)
def test_tampered_ciphertext_raises_decryption_error(mem: MemoryClient, sql: str) -> None:
    mem.profiles.ensure("buyer-001")
    ref = mem.pii.store("buyer-001", "phone", PHONE)
    _tamper(mem, sql)
    with pytest.raises(DecryptionError) as err:
        mem.pii.reveal("buyer-001", ref.id)
    assert PHONE not in str(err.value)


def test_ciphertext_moved_to_another_user_fails(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    mem.profiles.ensure("buyer-002")
    ref = mem.pii.store("buyer-001", "phone", PHONE)
    _tamper(mem, "UPDATE pii_vault SET user_id = 'buyer-002' WHERE id = :i", i=ref.id)
    with pytest.raises(DecryptionError):
        mem.pii.reveal("buyer-002", ref.id)


def test_wrong_key_and_missing_key(mem: MemoryClient, other_client: ClientFactory) -> None:
    mem.profiles.ensure("buyer-001")
    ref = mem.pii.store("buyer-001", "phone", PHONE)
    same_id_other_secret = other_client(key_line("k-test-1", 99))
    with pytest.raises(DecryptionError):
        same_id_other_secret.pii.reveal("buyer-001", ref.id)
    missing = other_client(key_line("k-unknown", 7))
    with pytest.raises(DecryptionError) as err:
        missing.pii.reveal("buyer-001", ref.id)
    assert err.value.details["key_id"] == "k-test-1"


def test_rotation_rewraps_every_data_key(mem: MemoryClient, other_client: ClientFactory) -> None:
    refs = []
    for i in range(23):
        uid = f"buyer-{i:03d}"
        mem.profiles.ensure(uid)
        refs.append((uid, mem.pii.store(uid, "phone", f"1380000{i:04d}")))
    pinned = mem.admin.cipher.ring.blind.to_line()
    rotated = other_client(key_line("k-test-2", 8) + "," + key_line("k-test-1", 7))
    assert pending_rotation(rotated.admin.database, rotated.admin.cipher) == 23
    # lookups work mid-rotation: the blind key is the same under both rings
    assert find_user_ids_by_pii(
        rotated.admin.database, rotated.admin.cipher, "phone", "13800000005"
    ) == ["buyer-005"]
    batches: list[int] = []
    report = rotate_keys(
        rotated.admin.database, rotated.admin.cipher, batch_size=10, progress=batches.append
    )
    assert (report.rewrapped, report.migrated, report.remaining) == (23, 0, 0)
    assert batches == [10, 10, 3]
    with rotated.admin.database.transaction() as conn:
        assert conn.execute(text("SELECT DISTINCT key_id FROM pii_data_key")).scalars().all() == [
            "k-test-2"
        ]
    only_new = other_client(key_line("k-test-2", 8) + "," + pinned)
    for uid, ref in refs:
        assert only_new.pii.reveal(uid, ref.id) == f"1380000{int(uid[-3:]):04d}"
    assert only_new.pii.find("buyer-007", "phone", "13800000007") is not None
    with pytest.raises(DecryptionError):
        mem.pii.reveal("buyer-001", refs[1][1].id)  # the old ring lacks the new key


def test_stale_active_key_is_reported_and_logged(
    other_client: ClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    old = other_client(key_line("k-old", 5, age_days=120))
    assert old.admin.health().active_key_stale
    assert not old.admin.health().ok
    old.profiles.ensure("buyer-001")
    with caplog.at_level(logging.WARNING):
        old.pii.store("buyer-001", "phone", PHONE)
        old.pii.store("buyer-001", "email", EMAIL)
    stale = [r for r in caplog.records if "older than 90 days" in r.getMessage()]
    assert len(stale) == 1
    fresh = other_client(key_line("k-new", 6, age_days=10))
    assert not fresh.admin.health().active_key_stale


def test_no_plaintext_in_any_column_or_log(
    mem: MemoryClient, caplog: pytest.LogCaptureFixture
) -> None:
    values = [PHONE, EMAIL, ID_CARD, CARD, ADDRESS]
    with caplog.at_level(logging.DEBUG):
        mem.profiles.ensure("buyer-001")
        for kind, value in zip(
            ["phone", "email", "id_card", "bank_card", "address"], values, strict=True
        ):
            ref = mem.pii.store("buyer-001", kind, value)
            mem.facts.put(
                "buyer-001",
                f"contact.{kind}",
                {"vault_id": str(ref.id), "kind": kind},
                lifecycle_policy=LifecyclePolicy.SENSITIVE,
            )
    with mem.admin.database.transaction() as conn:
        columns = conn.execute(
            text(
                "SELECT table_name, column_name FROM information_schema.columns "
                "WHERE table_schema = 'public'"
            )
        ).all()
        dumped: list[str] = []
        for table, column in columns:
            dumped += (
                conn.execute(
                    text(f'SELECT "{column}"::text FROM "{table}" WHERE "{column}" IS NOT NULL')
                )
                .scalars()
                .all()
            )
    blob = "\n".join(dumped)
    assert len(columns) > 30
    for value in values:
        for form in (value, normalise("address", value), value.encode().hex()):
            assert form not in blob
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for value in values:
        assert value not in logged


def test_bad_vault_input(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    with pytest.raises(InvalidField):
        mem.pii.store("buyer-001", "blood_type", "O")
    with pytest.raises(InvalidText):
        mem.pii.store("buyer-001", "phone", "")
    with pytest.raises(InvalidText):
        mem.pii.store("buyer-001", "address", "路" * 400)
    with pytest.raises(InvalidField):
        mem.facts.put("buyer-001", "phone", PHONE, lifecycle_policy=LifecyclePolicy.SENSITIVE)
    assert mem.pii.list("buyer-001") == []
    assert mem.facts.list("buyer-001") == []


@pytest.mark.parametrize(
    "ring",
    [
        "",
        "k1:notbase64!!:2026-01-01",
        "k1:" + "QUJD" + ":2026-01-01",
        "k1:" + "A" * 44 + ":yesterday",
        "only-two:parts",
        key_line("dup", 1) + "," + key_line("dup", 2),
        key_line("bad id!", 1),
    ],
)
def test_bad_key_rings_are_configuration_errors(ring: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        KeyRing.parse(ring)
    assert "A" * 44 not in str(err.value)


def test_cipher_binds_associated_data() -> None:
    cipher = PiiCipher(KeyRing.parse(key_line("k", 3)))
    data_key = cipher.new_data_key()
    sealed = cipher.seal("秘密", aad=b"row-1", data_key=data_key)
    assert sealed.key_id is None
    assert cipher.open(sealed, aad=b"row-1", data_key=data_key) == "秘密"
    with pytest.raises(DecryptionError):
        cipher.open(sealed, aad=b"row-2", data_key=data_key)
    with pytest.raises(DecryptionError):
        cipher.open(sealed, aad=b"row-1", data_key=cipher.new_data_key())
    assert cipher.seal("秘密", aad=b"row-1", data_key=data_key).nonce != sealed.nonce
