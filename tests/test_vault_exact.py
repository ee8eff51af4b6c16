"""The vault never reveals another string than the one stored under an id.

Each exact value is an entry of its own (``"+86 138-1234-5678"`` and ``"13812345678"``
are two), while the blind index of the normalised value still finds every spelling
(``pii.find``, ``find_user_ids_by_pii``, search by a phone number). A value with
nothing to index (a phone or bank card number without a digit, ``"n/a"``) is refused.
Entries written before revision 0014 (one per normalised value, holding its first
spelling) are checked when a store meets them, and all of them by ``repair-vault``.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from policies.errors import InvalidField
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from service.cli import app
from structured_memory.cross_user import count_vault_repairs, find_user_ids_by_pii

USER = "buyer-001"
SPELLINGS = {
    "phone": ["+86 138-1234-5678", "13812345678", "138 1234 5678", "(+86)13812345678"],
    "email": ["Zhang.Wei@Example.com", "zhang.wei@example.com"],
    "bank_card": ["6222 0212 3456 7890 128", "6222021234567890128"],
    "id_card": ["11010519491231002x", "11010519491231002X"],
    "address": ["上海市浦东新区 世纪大道100号", "上海市浦东新区世纪大道100号"],
}


def _rows(mem: MemoryClient) -> int:
    with mem.admin.database.transaction() as conn:
        return int(conn.execute(text("SELECT count(*) FROM pii_vault")).scalar_one())


@pytest.mark.parametrize("kind", sorted(SPELLINGS))
def test_each_spelling_reveals_itself_and_every_one_is_found(mem: MemoryClient, kind: str) -> None:
    mem.profiles.ensure(USER)
    mem.profiles.ensure("buyer-002")
    spellings = SPELLINGS[kind]
    refs = [mem.pii.store(USER, kind, value) for value in spellings]
    assert len({r.id for r in refs}) == len(spellings)
    for ref, value in zip(refs, spellings, strict=True):
        assert mem.pii.reveal(USER, ref.id) == value
        assert mem.pii.store(USER, kind, value) == ref, "one exact value, one entry"
        assert mem.pii.find(USER, kind, value) == ref, "the exact spelling first"
    mem.pii.store("buyer-002", kind, spellings[-1])
    for value in spellings:
        assert find_user_ids_by_pii(mem.admin.database, mem.admin.cipher, kind, value) == [
            USER,
            "buyer-002",
        ]


@pytest.mark.parametrize(("kind", "value"), [("bank_card", "n/a"), ("phone", "unknown")])
def test_a_value_with_nothing_to_index_is_refused(mem: MemoryClient, kind: str, value: str) -> None:
    mem.profiles.ensure(USER)
    with pytest.raises(InvalidField) as refused:
        mem.pii.store(USER, kind, value)
    assert value not in str(refused.value)
    assert _rows(mem) == 0


def test_search_by_a_number_finds_the_memories_of_every_spelling(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    ids = [
        mem.write(USER, f"退款有问题打 {phone}", lifecycle_policy=LifecyclePolicy.EXPLICIT)
        for phone in ("138-1234-5678", "13812345678")
    ]
    assert _rows(mem) == 2
    hits = mem.search(USER, "13812345678 打过吗", limit=5)
    assert set(ids) <= {h.memory_id for h in hits}
    exported = mem.export_user(USER)
    assert "138-1234-5678" in str(exported)
    assert "13812345678" in str(exported)


def _as_before_0014(mem: MemoryClient, entry: uuid.UUID, kind: str, value: str) -> None:
    """Make an entry what the release before wrote: indexed by its normalised value only."""
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text("UPDATE pii_vault SET blind_mac = :m, match_mac = NULL WHERE id = :i"),
            {"m": mem.admin.cipher.blind_index(kind, value), "i": entry},
        )


def test_an_entry_of_before_0014_is_checked_when_a_store_meets_it(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    old = mem.pii.store(USER, "phone", "+86 138-1234-5678")
    _as_before_0014(mem, old.id, "phone", "+86 138-1234-5678")
    assert mem.pii.find(USER, "phone", "13812345678") == old, "found before it is checked"
    new = mem.pii.store(USER, "phone", "13812345678")
    assert new != old
    assert mem.pii.reveal(USER, new.id) == "13812345678"
    assert mem.pii.reveal(USER, old.id) == "+86 138-1234-5678"
    assert mem.pii.store(USER, "phone", "+86 138-1234-5678") == old
    assert count_vault_repairs(mem.admin.database) == 0, "the store indexed the old entry exactly"


def test_repair_vault_indexes_every_entry_of_before_0014_exactly(
    mem: MemoryClient, cli_env: None
) -> None:
    refs = {}
    for i in range(3):
        user = f"buyer-{i:03d}"
        mem.profiles.ensure(user)
        for value in ("+86 139-0000-000" + str(i), "Zhang.Wei@Example.com"):
            kind = "email" if "@" in value else "phone"
            ref = mem.pii.store(user, kind, value)
            _as_before_0014(mem, ref.id, kind, value)
            refs[(user, kind)] = (ref, value)
    assert count_vault_repairs(mem.admin.database) == 3
    runner = CliRunner()
    result = runner.invoke(app, ["repair-vault"])
    assert result.exit_code == 0, result.output
    assert count_vault_repairs(mem.admin.database) == 0
    for (user, kind), (ref, value) in refs.items():
        assert mem.pii.find(user, kind, value) == ref
        assert mem.pii.store(user, kind, value) == ref
        canonical = "13900000000"[:-1] + user[-1] if kind == "phone" else "zhang.wei@example.com"
        other = mem.pii.store(user, kind, canonical)
        assert other != ref
        assert mem.pii.reveal(user, other.id) == canonical
    assert find_user_ids_by_pii(
        mem.admin.database, mem.admin.cipher, "email", "zhang.wei@example.com"
    ) == [
        "buyer-000",
        "buyer-001",
        "buyer-002",
    ]
    again = runner.invoke(app, ["repair-vault"])
    assert again.exit_code == 0, again.output
    assert "merged 0 duplicate entries" in again.output
