"""Device fingerprints are keyed per user: an HMAC under a key derived from the ring's
blind key with the user id, over the SHA-256 of device id, OS and browser.

The same device has another fingerprint in every account, and the stored value
cannot be recovered from a device id's public prefix without the key. Rows written
before revision 0013 (the plain SHA-256) are re-keyed by ``dualtrack rekey-devices``;
for one release the plain SHA-256 still names its device.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from sdk.client import MemoryClient
from service.cli import app
from structured_memory.pii.keyring import derive_key
from structured_memory.repositories.device import device_digest

IMEI_PREFIX = "35693803"  # a type allocation code: public, names the model
IMEI = IMEI_PREFIX + "564318"


def _stored(mem: MemoryClient) -> dict[str, tuple[str, bool]]:
    with mem.admin.database.transaction() as conn:
        rows = conn.execute(
            text("SELECT user_id, fingerprint, fingerprint_keyed FROM user_device")
        ).all()
    return {r.user_id: (r.fingerprint, r.fingerprint_keyed) for r in rows}


def test_the_same_device_has_another_fingerprint_in_each_account(mem: MemoryClient) -> None:
    for user in ("buyer-001", "buyer-002"):
        mem.profiles.ensure(user)
        mem.devices.register(user, device_id=IMEI, os="Android 14", browser="Chrome")
    stored = _stored(mem)
    assert stored["buyer-001"][0] != stored["buyer-002"][0]
    assert all(keyed for _, keyed in stored.values())


def test_the_stored_value_does_not_give_the_device_id_away_without_the_key(
    mem: MemoryClient,
) -> None:
    mem.profiles.ensure("buyer-001")
    device = mem.devices.register("buyer-001", device_id=IMEI, os="Android 14", browser="Chrome")
    assert _stored(mem)["buyer-001"][0] == device.fingerprint
    plain = device_digest(IMEI, "Android 14", "Chrome")
    assert device.fingerprint != plain
    # the attack: every serial under the public prefix, hashed as the old fingerprint was
    guesses = {
        device_digest(f"{IMEI_PREFIX}{serial:06d}", "Android 14", "Chrome"): serial
        for serial in range(564000, 565000)
    }
    assert plain in guesses, "the guesses cover the device"
    assert device.fingerprint not in guesses
    # and with a key of another ring (another blind key), nothing matches either
    wrong = derive_key(b"\x09" * 32, b"dualtrack-device-fingerprint-v1\x1fbuyer-001")
    keyed = {hmac.new(wrong, bytes.fromhex(g), hashlib.sha256).hexdigest() for g in guesses}
    assert device.fingerprint not in keyed


def _legacy_row(mem: MemoryClient, user: str, device_id: str, **state: object) -> str:
    """A device row as the release before 0013 wrote it: the plain SHA-256."""
    digest = device_digest(device_id, "iOS 17", "Safari")
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text(
                "INSERT INTO user_device (user_id, fingerprint, os, browser, verified_count,"
                " is_trusted) VALUES (:u, :f, 'iOS 17', 'Safari', :n, :t)"
            ),
            {"u": user, "f": digest, "n": state.get("n", 0), "t": state.get("t", False)},
        )
    return digest


def test_old_fingerprints_still_resolve_before_and_after_the_rekey(
    mem: MemoryClient, cli_env: None
) -> None:
    mem.profiles.ensure("buyer-001")
    old = _legacy_row(mem, "buyer-001", "IMEI-OLD")
    assert mem.devices.verify("buyer-001", old, succeeded=True).verified_count == 1
    result = CliRunner().invoke(app, ["rekey-devices"])
    assert result.exit_code == 0, result.output
    [device] = mem.devices.list("buyer-001")
    assert device.fingerprint != old
    assert mem.devices.verify("buyer-001", old, succeeded=True).is_trusted
    assert mem.devices.verify("buyer-001", device.fingerprint, succeeded=False).is_trusted
    assert not mem.devices.revoke_trust("buyer-001", old).is_trusted
    assert mem.devices.remove("buyer-001", old)
    assert mem.devices.list("buyer-001") == []


def test_registering_a_device_of_an_old_row_rekeys_that_row(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")
    _legacy_row(mem, "buyer-001", "IMEI-OLD", n=1)
    device = mem.devices.register("buyer-001", device_id="IMEI-OLD", os="iOS 17", browser="Safari")
    assert device.verified_count == 1, "the old row, not a new one"
    assert [d.id for d in mem.devices.list("buyer-001")] == [device.id]
    assert _stored(mem)["buyer-001"] == (device.fingerprint, True)


def _device_rows(mem: MemoryClient) -> list[Any]:
    with mem.admin.database.transaction() as conn:
        return list(
            conn.execute(
                text(
                    "SELECT user_id, fingerprint, fingerprint_keyed, is_trusted FROM user_device"
                    " ORDER BY user_id, fingerprint"
                )
            ).all()
        )


def test_the_rekey_command_converts_old_rows_and_is_idempotent(
    mem: MemoryClient, cli_env: None
) -> None:
    users = [f"buyer-{i:03d}" for i in range(5)]
    for user in users:
        mem.profiles.ensure(user)
        _legacy_row(mem, user, "IMEI-SHARED")
    # a pod of the old release registered again a device a new pod had re-keyed
    mem.devices.register(users[0], device_id="IMEI-TWICE", os="iOS 17", browser="Safari")
    _legacy_row(mem, users[0], "IMEI-TWICE", n=2, t=True)
    runner = CliRunner()
    first = runner.invoke(app, ["rekey-devices", "--batch-size", "2"])
    assert first.exit_code == 0, first.output
    assert "re-keyed 6 device fingerprints, 1 of them merged" in first.output
    rows = _device_rows(mem)
    assert len(rows) == 6
    assert all(r.fingerprint_keyed for r in rows)
    assert len({r.fingerprint for r in rows}) == 6, "one device, five accounts: five values"
    twice = [d for d in mem.devices.list(users[0]) if d.verified_count == 2]
    assert len(twice) == 1
    assert twice[0].is_trusted, "the merge keeps the stronger trust"
    again = runner.invoke(app, ["rekey-devices"])
    assert again.exit_code == 0, again.output
    assert "re-keyed 0 device fingerprints" in again.output
    assert _device_rows(mem) == rows


@pytest.mark.parametrize("fingerprint", ["0" * 64, "F" * 64])
def test_an_unknown_fingerprint_of_either_form_is_not_found(
    mem: MemoryClient, fingerprint: str
) -> None:
    from policies.errors import RecordNotFound

    mem.profiles.ensure("buyer-001")
    mem.devices.register("buyer-001", device_id=IMEI, os="Android 14", browser="Chrome")
    with pytest.raises(RecordNotFound):
        mem.devices.verify("buyer-001", fingerprint, succeeded=True)
