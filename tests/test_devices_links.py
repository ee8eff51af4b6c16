"""Devices (fingerprint, trust flow) and business links (validity now vs past/future)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from policies.errors import InvalidField, InvalidInput, InvalidText, RecordNotFound, UserNotFound
from sdk.client import MemoryClient
from structured_memory.repositories.device import device_digest


def test_device_digest_is_sha256_of_device_os_browser() -> None:
    expected = hashlib.sha256(b"IMEI-1\x1fiOS 17\x1fSafari").hexdigest()
    assert device_digest("IMEI-1", "iOS 17", "Safari") == expected
    assert device_digest("IMEI-1", "iOS 17", "Chrome") != expected


def test_device_trusted_only_after_second_successful_verification(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    d = mem.devices.register("buyer-001", device_id="IMEI-1", os="iOS 17", browser="微信")
    assert (d.is_trusted, d.verified_count) == (False, 0)
    d = mem.devices.verify("buyer-001", d.fingerprint, succeeded=True)
    assert (d.is_trusted, d.verified_count) == (False, 1)
    d = mem.devices.verify("buyer-001", d.fingerprint, succeeded=False)
    assert (d.is_trusted, d.verified_count) == (False, 1)
    d = mem.devices.verify("buyer-001", d.fingerprint, succeeded=True)
    assert (d.is_trusted, d.verified_count) == (True, 2)
    d = mem.devices.revoke_trust("buyer-001", d.fingerprint)
    assert (d.is_trusted, d.verified_count) == (False, 0)


def test_reregistering_refreshes_last_active_without_duplicating(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    a = mem.devices.register("buyer-001", device_id="IMEI-1", os="Android 14", browser="Chrome")
    b = mem.devices.register("buyer-001", device_id="IMEI-1", os="Android 14", browser="Chrome")
    assert a.id == b.id
    assert b.last_active >= a.last_active
    assert len(mem.devices.list("buyer-001")) == 1


def test_raw_device_id_is_not_stored(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    mem.devices.register("buyer-001", device_id="IMEI-SECRET-42", os="iOS", browser="Safari")
    with mem.admin.database.transaction() as conn:
        row = conn.execute(text("SELECT row_to_json(d)::text FROM user_device d")).scalar_one()
    assert "IMEI-SECRET-42" not in row


def test_device_errors(mem: MemoryClient) -> None:
    with pytest.raises(UserNotFound):
        mem.devices.register("ghost", device_id="x", os="iOS", browser="Safari")
    mem.profiles.ensure("buyer-001")
    with pytest.raises(RecordNotFound):
        mem.devices.verify("buyer-001", "0" * 64, succeeded=True)
    with pytest.raises(InvalidField):
        mem.devices.register("buyer-001", device_id="x", os="o" * 65, browser="b")
    with pytest.raises(InvalidText):
        mem.devices.register(
            "buyer-001",
            device_id=b"\xff\xfe".decode("utf-8", "surrogateescape"),
            os="o",
            browser="b",
        )
    assert mem.devices.list("buyer-001") == []


def test_links_valid_now_exclude_expired_and_future(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    now = datetime.now(UTC)
    open_link = mem.links.add("buyer-001", entity_type="order", entity_id="88231", role="owner")
    assert open_link.effective_to is None
    mem.links.add(
        "buyer-001",
        entity_type="contract",
        entity_id="HT-1",
        role="approver",
        effective_from=now - timedelta(days=30),
        effective_to=now - timedelta(days=1),
    )
    mem.links.add(
        "buyer-001",
        entity_type="warehouse",
        entity_id="WH-SH-01",
        role="viewer",
        effective_from=now + timedelta(days=1),
    )
    bounded = mem.links.add(
        "buyer-001",
        entity_type="supplier",
        entity_id="SUP-9",
        role="admin",
        effective_from=now - timedelta(days=1),
        effective_to=now + timedelta(days=1),
    )
    valid = {link.entity_id for link in mem.links.valid_now("buyer-001")}
    assert valid == {"88231", "SUP-9"}
    assert {x.entity_id for x in mem.links.valid_now("buyer-001", entity_type="order")} == {"88231"}
    assert len(mem.links.list("buyer-001")) == 4
    later = {x.entity_id for x in mem.links.valid_at("buyer-001", now + timedelta(days=3))}
    assert later == {"88231", "WH-SH-01"}
    assert bounded.is_valid_at(now)
    assert not bounded.is_valid_at(now + timedelta(days=2))
    with mem.admin.database.transaction() as conn:
        raw = conn.execute(
            text("SELECT effective_to = 'infinity' FROM user_business_link WHERE id = :i"),
            {"i": open_link.id},
        ).scalar_one()
    assert raw is True


def test_ending_a_link(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    link = mem.links.add("buyer-001", entity_type="refund", entity_id="RF20260629001", role="owner")
    ended = mem.links.end("buyer-001", link.id)
    assert ended.effective_to is not None
    assert mem.links.valid_now("buyer-001") == []
    with pytest.raises(RecordNotFound):
        mem.links.end("buyer-002", link.id)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"entity_type": "spaceship", "entity_id": "1", "role": "owner"}, "entity_type"),
        ({"entity_type": "order", "entity_id": "1", "role": "emperor"}, "role"),
        ({"entity_type": "order", "entity_id": "9" * 129, "role": "owner"}, "entity_id"),
        ({"entity_type": "order", "entity_id": " ", "role": "owner"}, "entity_id"),
        (
            {
                "entity_type": "order",
                "entity_id": "1",
                "role": "owner",
                "effective_from": datetime(2026, 1, 1),
            },
            "effective_from",
        ),
        (
            {
                "entity_type": "order",
                "entity_id": "1",
                "role": "owner",
                "effective_from": datetime(2026, 2, 1, tzinfo=UTC),
                "effective_to": datetime(2026, 1, 1, tzinfo=UTC),
            },
            "effective_to",
        ),
    ],
)
def test_bad_links_are_refused_and_write_nothing(
    mem: MemoryClient, kwargs: dict[str, object], field: str
) -> None:
    mem.profiles.ensure("buyer-001")
    with pytest.raises(InvalidField) as err:
        mem.links.add("buyer-001", **kwargs)  # type: ignore[arg-type]
    assert err.value.details["field"] == field
    assert mem.links.list("buyer-001") == []


def test_check_constraint_refuses_unknown_entity_type_even_in_raw_sql(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    with pytest.raises(InvalidInput) as err, mem.admin.database.transaction() as conn:
        conn.execute(
            text(
                "INSERT INTO user_business_link (user_id, entity_type, entity_id, role) "
                "VALUES ('buyer-001', 'spaceship', '1', 'owner')"
            )
        )
    assert "entity_type_known" in err.value.message
    assert "buyer-001" not in err.value.message


def test_link_for_unknown_user(mem: MemoryClient) -> None:
    with pytest.raises(UserNotFound):
        mem.links.add("ghost", entity_type="order", entity_id="1", role="owner")
