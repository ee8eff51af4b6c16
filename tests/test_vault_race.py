"""The vault is a unique upsert: concurrent and cross-ring stores of one value make one row."""

from __future__ import annotations

import base64
import threading
import uuid
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import text

from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory.cross_user import find_user_ids_by_pii, rotate_keys
from tests.conftest import key_line
from values.records import VaultRef

PHONE = "13900000000"
BLIND = f"@blind:{base64.b64encode(bytes([66]) * 32).decode()}:2026-01-01"  # pinned in both rings

ClientFactory = Callable[[str], MemoryClient]


@pytest.fixture
def client_with(settings: Settings, mem: MemoryClient) -> Iterator[ClientFactory]:
    """More clients on the same database, each with a key ring of its own."""
    clients: list[MemoryClient] = []

    def factory(keys: str) -> MemoryClient:
        client = MemoryClient(Settings(**{**settings.model_dump(), "pii_keys": keys})).start()
        clients.append(client)
        return client

    yield factory
    for c in clients:
        c.close()


def _vault_rows(mem: MemoryClient, user_id: str) -> int:
    with mem.admin.database.transaction() as conn:
        return int(
            conn.execute(
                text("SELECT count(*) FROM pii_vault WHERE user_id = :u"), {"u": user_id}
            ).scalar_one()
        )


def _race(threads: int, call: Callable[[], VaultRef]) -> list[VaultRef]:
    barrier = threading.Barrier(threads)
    refs: list[VaultRef] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            barrier.wait()
            refs.append(call())
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    return refs


def test_eight_threads_store_one_phone_once(mem: MemoryClient) -> None:
    user = "buyer-race-01"
    mem.profiles.ensure(user)
    refs = _race(8, lambda: mem.pii.store(user, "phone", PHONE))
    assert len(set(refs)) == 1
    assert _vault_rows(mem, user) == 1
    assert mem.pii.find(user, "phone", PHONE) == refs[0]
    other = mem.pii.store(user, "phone", "+86 139-0000-0000")
    assert other != refs[0], "another spelling, another entry"
    assert mem.pii.find(user, "phone", "+86 139-0000-0000") == other
    assert mem.pii.reveal(user, refs[0].id) == PHONE
    memory_id = mem.write(
        user,
        f"我的手机号是 {PHONE}，订单 88231 的退款到了吗",
        lifecycle_policy=LifecyclePolicy.EXPLICIT,
    )
    assert isinstance(memory_id, uuid.UUID)
    assert _vault_rows(mem, user) == 2, "the write found the entry of its exact value"


def test_eight_threads_of_writes_mentioning_one_phone(mem: MemoryClient) -> None:
    user = "buyer-race-02"
    mem.profiles.ensure(user)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            barrier.wait()
            mem.write(
                user,
                f"第 {n} 次：手机 {PHONE}，退款 RF20260629001",
                lifecycle_policy=LifecyclePolicy.EXPLICIT,
            )
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert _vault_rows(mem, user) == 1
    assert mem.pii.find(user, "phone", PHONE) is not None


def test_pod_with_the_old_ring_finds_what_rotation_rewrapped(
    mem: MemoryClient, client_with: ClientFactory
) -> None:
    old = client_with(BLIND + "," + key_line("k-pod-1", 31))
    new = client_with(BLIND + "," + key_line("k-pod-2", 32) + "," + key_line("k-pod-1", 31))
    old.profiles.ensure("buyer-race-03")
    first = old.pii.store("buyer-race-03", "phone", PHONE)
    report = rotate_keys(new.admin.database, new.admin.cipher)
    assert report.rewrapped == 1
    assert report.failed == ()
    # the old pod still holds only k-pod-1, which no longer wraps the user's data key
    assert old.pii.store("buyer-race-03", "phone", PHONE) == first
    assert old.pii.find("buyer-race-03", "phone", PHONE) == first
    assert _vault_rows(mem, "buyer-race-03") == 1
    assert find_user_ids_by_pii(old.admin.database, old.admin.cipher, "phone", PHONE) == [
        "buyer-race-03"
    ]
    assert new.pii.reveal("buyer-race-03", first.id) == PHONE
