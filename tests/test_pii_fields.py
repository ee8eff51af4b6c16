"""PII in structured fields: write ``metadata``, fact values, profile attributes and summary.

Each holds a phone or e-mail only masked; the clear value is in the vault,
referenced from the row (``metadata["pii"]``, a masked leaf's ``"pii"``, a
SENSITIVE fact's ``{"vault_id", "kind"}``), so search by blind index,
``export_user`` and the release of unreferenced entries keep working.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from policies.errors import ConcurrentModificationError, InvalidField, RecordNotFound
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from structured_memory.cross_user import repair_vault
from structured_memory.models import Base
from structured_memory.repositories.profile import SUMMARY_PII_KEY
from tests.test_vault_legacy import insert_legacy

USER = "buyer-001"
PHONE, EMAIL = "13912345678", "zhang.wei@example.com"
FACT_PHONE, SPARE_PHONE = "13800138000", "13700137000"
CLEAR = (PHONE, EMAIL, FACT_PHONE, SPARE_PHONE, "zhang.wei")
TABLES = [t.name for t in Base.metadata.sorted_tables]
EXPLICIT, SENSITIVE = LifecyclePolicy.EXPLICIT, LifecyclePolicy.SENSITIVE


def _dump(mem: MemoryClient) -> str:
    """Every row of every table, as JSON text."""
    with mem.admin.database.transaction() as conn:
        return "\n".join(
            row
            for table in TABLES
            for row in conn.execute(text(f"SELECT row_to_json(t)::text FROM {table} t")).scalars()
        )


def _assert_no_clear_pii(mem: MemoryClient) -> None:
    dump = _dump(mem)
    for value in CLEAR:
        assert value not in dump


def _vault(mem: MemoryClient) -> dict[str, str]:
    """The user's vault: clear value -> entry id."""
    return {mem.pii.reveal(USER, r.id): str(r.id) for r in mem.pii.list(USER)}


def _ref(mem: MemoryClient, value: str, kind: str) -> dict[str, str]:
    return {"vault_id": _vault(mem)[value], "kind": kind}


# -- metadata of a write -------------------------------------------------------------------


def test_sensitive_write_keeps_metadata_pii_only_in_the_vault(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    mid = mem.write(
        USER,
        "客户要求修改订单 88231 的联系方式",
        lifecycle_policy=SENSITIVE,
        metadata={"联系电话": PHONE, "备注": f"邮箱 {EMAIL}", "渠道": "app"},
    )
    with mem.admin.database.transaction() as conn:
        row = conn.execute(
            text("SELECT metadata, text FROM memory_fragment WHERE id = :i"), {"i": mid}
        ).one()
        as_json = conn.execute(
            text("SELECT row_to_json(t)::text FROM memory_fragment t WHERE id = :i"), {"i": mid}
        ).scalar_one()
    meta = row.metadata
    assert meta["联系电话"] == "139****5678"
    assert meta["备注"] == "邮箱 z***@example.com"
    assert meta["渠道"] == "app"
    assert sorted(meta["pii"], key=lambda r: r["kind"]) == [
        _ref(mem, EMAIL, "email"),
        _ref(mem, PHONE, "phone"),
    ]
    for value in CLEAR:
        assert value not in as_json
    _assert_no_clear_pii(mem)
    assert set(_vault(mem)) == {PHONE, EMAIL}
    assert mid in [h.memory_id for h in mem.search(USER, f"手机 {PHONE}", limit=3)]
    assert mid in [h.memory_id for h in mem.search(USER, EMAIL, limit=3)]
    exported = mem.export_user(USER)
    assert {p["value"] for p in exported["pii"]} == {PHONE, EMAIL}
    assert PHONE not in str(exported["memories"])


def test_nested_metadata_and_pii_shared_with_the_text(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    mid = mem.write(
        USER,
        f"退款 RF20260629001 到账后短信通知 {PHONE}",
        lifecycle_policy=EXPLICIT,
        metadata={"收货": {"电话": [PHONE, "  "], "次数": 2}, "订单": "88231", "备用": 13700137000},
    )
    record = mem.memories.get(USER, mid)
    assert record is not None
    assert record.metadata["收货"] == {"电话": ["139****5678", "  "], "次数": 2}
    assert record.metadata["订单"] == "88231"
    assert record.metadata["备用"] == "137****7000"  # an integer phone too
    assert record.metadata["pii"] == [  # one reference per value
        _ref(mem, PHONE, "phone"),
        _ref(mem, SPARE_PHONE, "phone"),
    ]
    _assert_no_clear_pii(mem)


def test_a_key_holding_pii_or_the_reserved_key_is_refused(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    refused: list[dict[str, Any]] = [{PHONE: "备用"}, {"联系人": {EMAIL: True}}, {"pii": []}]
    for metadata in refused:
        with pytest.raises(InvalidField) as err:
            mem.write(USER, "改地址", lifecycle_policy=SENSITIVE, metadata=metadata)
        assert PHONE not in str(err.value)
        assert EMAIL not in str(err.value)
    with pytest.raises(InvalidField):
        mem.facts.put(USER, f"phone {PHONE}", "x", lifecycle_policy=EXPLICIT)
    with pytest.raises(InvalidField) as err:
        mem.facts.put(USER, "备用", {13912345678: "手机"}, lifecycle_policy=EXPLICIT)
    assert PHONE not in str(err.value)
    with pytest.raises(InvalidField):
        mem.profiles.update(USER, expected_version=1, attributes={EMAIL: "主邮箱"})
    assert mem.memories.list(USER) == []
    assert mem.pii.list(USER) == []
    _assert_no_clear_pii(mem)


def test_deleting_a_memory_releases_its_metadata_entries(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    mid = mem.write(USER, "联系方式", lifecycle_policy=SENSITIVE, metadata={"电话": PHONE})
    mem.facts.put(USER, "备用邮箱", f"邮箱 {EMAIL}", lifecycle_policy=EXPLICIT)
    other = mem.write(USER, "发票", lifecycle_policy=EXPLICIT, metadata={"邮箱": EMAIL})
    assert set(_vault(mem)) == {PHONE, EMAIL}
    assert mem.memories.delete(USER, mid)
    assert set(_vault(mem)) == {EMAIL}
    assert mem.memories.delete(USER, other)
    assert set(_vault(mem)) == {EMAIL}  # the fact still references it


# -- fact values ---------------------------------------------------------------------------


def test_fact_value_holding_a_phone_is_masked_and_referenced(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    fact = mem.facts.put(USER, "收货电话", f"收货电话 {FACT_PHONE}", lifecycle_policy=EXPLICIT)
    ref = _ref(mem, FACT_PHONE, "phone")
    assert fact.value == {"masked": "收货电话 138****8000", "pii": [ref]}
    read = mem.facts.get(USER, "收货电话")
    assert read is not None
    assert read.value == fact.value
    nested = mem.facts.put(
        USER,
        "收件人",
        {"姓名": "张伟", "电话": [FACT_PHONE, f"备用 {SPARE_PHONE}"], "默认": True},
        lifecycle_policy=EXPLICIT,
    )
    assert nested.value == {
        "姓名": "张伟",
        "电话": [
            {"masked": "138****8000", "pii": [ref]},
            {"masked": "备用 137****7000", "pii": [_ref(mem, SPARE_PHONE, "phone")]},
        ],
        "默认": True,
    }
    _assert_no_clear_pii(mem)
    assert {p["value"] for p in mem.export_user(USER)["pii"]} == {FACT_PHONE, SPARE_PHONE}


def test_fact_round_trip_keeps_references_and_replacing_releases(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    first = mem.facts.put(USER, "收货电话", f"收货电话 {FACT_PHONE}", lifecycle_policy=EXPLICIT)
    again = mem.facts.put(USER, "收货电话", first.value, lifecycle_policy=EXPLICIT)
    assert again.value == first.value  # a masked leaf read back is kept as it is
    assert set(_vault(mem)) == {FACT_PHONE}
    mem.facts.put(USER, "收货电话", f"改为 {SPARE_PHONE}", lifecycle_policy=EXPLICIT)
    assert set(_vault(mem)) == {SPARE_PHONE}  # the replaced value's entry is released
    with pytest.raises(RecordNotFound):  # a stale read written back names a released entry
        mem.facts.put(USER, "收货电话", first.value, lifecycle_policy=EXPLICIT)
    assert set(_vault(mem)) == {SPARE_PHONE}
    assert mem.facts.delete(USER, "收货电话")
    assert mem.pii.list(USER) == []


def test_a_sensitive_fact_keeps_its_reference_and_deleting_it_releases(
    mem: MemoryClient,
) -> None:
    mem.profiles.ensure(USER)
    entry = mem.pii.store(USER, "phone", PHONE)
    ref = {"vault_id": str(entry.id), "kind": "phone"}
    fact = mem.facts.put(USER, "contact.phone", ref, lifecycle_policy=SENSITIVE)
    assert fact.value == ref
    with pytest.raises(InvalidField):  # a SENSITIVE fact holds a reference, never the value
        mem.facts.put(USER, "contact.note", f"电话 {EMAIL}", lifecycle_policy=SENSITIVE)
    assert set(_vault(mem)) == {PHONE}  # the refused put vaulted nothing
    mem.profiles.ensure("buyer-002")
    theirs = mem.pii.store("buyer-002", "phone", PHONE)
    with pytest.raises(RecordNotFound):  # another user's entry
        mem.facts.put(
            USER,
            "contact.other",
            {"vault_id": str(theirs.id), "kind": "phone"},
            lifecycle_policy=SENSITIVE,
        )
    mem.facts.put(USER, "收货电话", f"收货电话 {PHONE}", lifecycle_policy=EXPLICIT)
    assert mem.facts.delete(USER, "contact.phone")
    assert set(_vault(mem)) == {PHONE}  # still referenced by 收货电话
    assert mem.facts.delete(USER, "收货电话")
    assert mem.pii.list(USER) == []


def test_a_value_shaped_like_a_reference_is_still_scanned(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    fact = mem.facts.put(
        USER, "伪引用", {"vault_id": PHONE, "kind": "phone"}, lifecycle_policy=EXPLICIT
    )
    assert fact.value["vault_id"] == {"masked": "139****5678", "pii": [_ref(mem, PHONE, "phone")]}
    _assert_no_clear_pii(mem)


# -- profile attributes and summary --------------------------------------------------------


def test_profile_attributes_and_summary_keep_pii_only_in_the_vault(mem: MemoryClient) -> None:
    p = mem.profiles.ensure(USER)
    q = mem.profiles.update(
        USER,
        expected_version=p.version,
        attributes={"备用手机": SPARE_PHONE, "会员等级": "PLUS"},
        profile_summary=f"老客户，发票发 {EMAIL}",
    )
    spare, email = _ref(mem, SPARE_PHONE, "phone"), _ref(mem, EMAIL, "email")
    assert q.attributes == {
        "备用手机": {"masked": "137****7000", "pii": [spare]},
        "会员等级": "PLUS",
        SUMMARY_PII_KEY: [email],
    }
    assert q.profile_summary == "老客户，发票发 z***@example.com"
    assert q.version == p.version + 1
    _assert_no_clear_pii(mem)
    assert {x["value"] for x in mem.export_user(USER)["pii"]} == {SPARE_PHONE, EMAIL}

    # read-modify-write with the retry helper keeps the references
    r = mem.profiles.update_with_retry(
        USER, lambda cur: {"attributes": {**cur.attributes, "咨询次数": 1}}
    ).profile
    assert r.attributes["备用手机"] == q.attributes["备用手机"]
    assert r.attributes[SUMMARY_PII_KEY] == [email]
    assert set(_vault(mem)) == {SPARE_PHONE, EMAIL}

    # a caller cannot drop or forge the summary's references; a new summary replaces them
    s = mem.profiles.update(
        USER, expected_version=r.version, attributes={"会员等级": "PLUS", SUMMARY_PII_KEY: []}
    )
    assert s.attributes == {"会员等级": "PLUS", SUMMARY_PII_KEY: [email]}
    assert set(_vault(mem)) == {EMAIL}  # the spare phone is released
    t = mem.profiles.update(USER, expected_version=s.version, profile_summary="老客户")
    assert t.attributes == {"会员等级": "PLUS"}
    assert mem.pii.list(USER) == []


def test_profile_create_and_a_stale_update_with_pii(mem: MemoryClient) -> None:
    p = mem.profiles.create(USER, attributes={"备用手机": SPARE_PHONE})
    assert p.version == 1
    spare = {"masked": "137****7000", "pii": [_ref(mem, SPARE_PHONE, "phone")]}
    assert p.attributes == {"备用手机": spare}
    mem.profiles.update(USER, expected_version=1, language="en-US")
    with pytest.raises(ConcurrentModificationError):
        mem.profiles.update(USER, expected_version=1, attributes={"主手机": PHONE})
    assert set(_vault(mem)) == {SPARE_PHONE}  # the stale update vaulted nothing
    _assert_no_clear_pii(mem)


def test_an_entry_shared_by_a_memory_a_fact_and_the_profile(mem: MemoryClient) -> None:
    p = mem.profiles.ensure(USER)
    mid = mem.write(USER, f"手机 {PHONE}", lifecycle_policy=EXPLICIT)
    mem.facts.put(USER, "主手机", PHONE, lifecycle_policy=EXPLICIT)
    mem.profiles.update(USER, expected_version=p.version, attributes={"主手机": PHONE})
    assert len(mem.pii.list(USER)) == 1
    mem.memories.delete(USER, mid)
    mem.facts.delete(USER, "主手机")
    assert set(_vault(mem)) == {PHONE}  # the profile still references it
    mem.profiles.update(USER, expected_version=p.version + 1, attributes={})
    assert mem.pii.list(USER) == []


# -- repair-vault --------------------------------------------------------------------------


def test_repair_vault_moves_references_in_facts_and_profiles(mem: MemoryClient) -> None:
    PHONE_LEGACY = "13812345678"
    p = mem.profiles.ensure(USER)
    with mem.admin.database.transaction() as conn:
        dups = [insert_legacy(conn, USER, "phone", PHONE_LEGACY) for _ in range(2)]
    leaf: dict[str, Any] = {
        "masked": "138****5678",
        "pii": [{"vault_id": str(dups[1]), "kind": "phone"}],
    }
    mem.facts.put(USER, "收件人", {"电话": [leaf]}, lifecycle_policy=EXPLICIT)
    mem.profiles.update(USER, expected_version=p.version, attributes={"主手机": leaf})
    report = repair_vault(mem.admin.database, mem.admin.cipher)
    assert report.merged == 1
    assert report.references == 2
    kept = {"masked": "138****5678", "pii": [{"vault_id": str(dups[0]), "kind": "phone"}]}
    fact = mem.facts.get(USER, "收件人")
    assert fact is not None
    assert fact.value == {"电话": [kept]}
    profile = mem.profiles.get(USER)
    assert profile.attributes == {"主手机": kept}
    assert profile.version == p.version + 2  # moved references bump the lock token
