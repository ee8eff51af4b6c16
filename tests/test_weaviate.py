"""The Weaviate backend through the SDK: outbox, fallback, erasure, cold tenants, TTL, drill."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from policies.errors import IndexUnavailable, UserNotFound
from policies.lifecycle import LifecyclePolicy
from policies.outbox import OutboxOp
from policies.scope import UserScope
from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory.cross_user import sweep_expired
from structured_memory.repositories.outbox import Outbox
from unstructured_memory.index.base import IndexedFragment, Upsert
from unstructured_memory.index.registry import WeaviateConfig
from unstructured_memory.index.weaviate import WeaviateIndex, tenant_name
from values.inputs import MemoryInput

pytestmark = pytest.mark.weaviate

ROOT = Path(__file__).resolve().parents[1]
IMPLICIT = LifecyclePolicy.IMPLICIT
EXPLICIT = LifecyclePolicy.EXPLICIT


def _client(settings: Settings, config: WeaviateConfig, **overrides: Any) -> MemoryClient:
    values = {
        **settings.model_dump(),
        "index": "weaviate",
        "index_config": config.model_dump(),
        "outbox_worker": "external",
        "outbox_max_delay_s": 1.0,
        **overrides,
    }
    client = MemoryClient(Settings(**values), agent_id="refund-agent").start()
    for user in ("buyer-001", "buyer-002", "buyer-003"):
        client.profiles.ensure(user)  # users exist only through profiles.ensure
    return client


@pytest.fixture
def wmem(
    mem: MemoryClient, settings: Settings, weaviate_server: WeaviateConfig
) -> Iterator[MemoryClient]:
    """A client whose index is a fresh Weaviate collection; the outbox is drained by hand."""
    config = weaviate_server.model_copy(update={"collection": f"Test{uuid.uuid4().hex[:12]}"})
    client = _client(settings, config)
    yield client
    index = client.admin.index
    assert isinstance(index, WeaviateIndex)
    index.reset()
    client.close()


def _weaviate(client: MemoryClient) -> WeaviateIndex:
    index = client.admin.index
    assert isinstance(index, WeaviateIndex)
    return index


def _ledger_ids(client: MemoryClient, user: str) -> set[uuid.UUID]:
    with client.admin.database.transaction() as conn:
        rows = conn.execute(
            text("SELECT id FROM memory_fragment WHERE user_id = :u"), {"u": user}
        ).scalars()
        return set(rows)


def _queued(client: MemoryClient, user: str) -> int:
    with client.admin.database.transaction() as conn:
        return int(
            conn.execute(
                text("SELECT count(*) FROM fragment_outbox WHERE user_id = :u"), {"u": user}
            ).scalar_one()
        )


def test_writes_reach_weaviate_through_the_outbox(wmem: MemoryClient) -> None:
    refund = wmem.write(
        "buyer-001",
        "用户因订单 88231 的扫地机无法回充申请退款，退款编号 RF20260629001，预计 1-3 个工作日到账",
        lifecycle_policy=IMPLICIT,
    )
    wmem.write("buyer-001", "想买一台空气净化器，预算 2000 元", lifecycle_policy=IMPLICIT)
    assert _queued(wmem, "buyer-001") == 2  # the outbox is shared: count this user's entries
    assert _weaviate(wmem).count("buyer-001") == 0
    assert wmem.admin.drain_outbox().applied >= 2
    assert _queued(wmem, "buyer-001") == 0
    hits = wmem.search("buyer-001", "退款到账了吗", limit=2)
    assert not hits.degraded
    assert hits[0].memory_id == refund
    assert _weaviate(wmem).fragment_ids("buyer-001") == _ledger_ids(wmem, "buyer-001")


@pytest.mark.parametrize("prefilter_limit", [0, 2000])
def test_filtered_search_with_and_without_ledger_prefilter(
    mem: MemoryClient, settings: Settings, weaviate_server: WeaviateConfig, prefilter_limit: int
) -> None:
    config = weaviate_server.model_copy(update={"collection": f"Test{uuid.uuid4().hex[:12]}"})
    wmem = _client(settings, config, prefilter_limit=prefilter_limit)
    try:
        _filtered_searches(wmem)
    finally:
        _weaviate(wmem).reset()
        wmem.close()


def _filtered_searches(wmem: MemoryClient) -> None:
    t0 = datetime(2026, 6, 1, tzinfo=UTC)
    for day in range(10):
        wmem.write(
            "buyer-001",
            f"第 {day} 天 订单 {88230 + day} 咨询",
            lifecycle_policy=EXPLICIT,
            occurred_at=t0 + timedelta(days=day),
            session_id=f"s{day % 2}",
        )
    wmem.admin.drain_outbox()
    hits = wmem.search("buyer-001", "订单 咨询", limit=10, occurred_after=t0 + timedelta(days=7))
    assert sorted(h.text for h in hits) == [f"第 {d} 天 订单 {88230 + d} 咨询" for d in (7, 8, 9)]
    assert {h.session_id for h in wmem.search("buyer-001", "订单", session_id="s1")} == {"s1"}


def test_forget_user_drops_the_tenant(wmem: MemoryClient) -> None:
    for i in range(3):
        wmem.write("buyer-001", f"订单 {i} 退款", lifecycle_policy=IMPLICIT)
    wmem.write("buyer-002", "订单 9 退款", lifecycle_policy=IMPLICIT)
    wmem.admin.drain_outbox()
    assert _weaviate(wmem).tenant_status("buyer-001") == "ACTIVE"
    wmem.forget_user("buyer-001")
    wmem.admin.drain_outbox()
    assert _weaviate(wmem).tenant_status("buyer-001") is None
    assert _weaviate(wmem).count("buyer-001") == 0
    with pytest.raises(UserNotFound):
        wmem.search("buyer-001", "退款")  # erased: as unknown as a user never seen
    assert len(wmem.search("buyer-002", "退款")) == 1


def test_swept_fragments_leave_the_index(wmem: MemoryClient) -> None:
    keep = wmem.write("buyer-001", "订单 1 退款", lifecycle_policy=EXPLICIT)
    gone = wmem.write("buyer-001", "订单 2 退款", lifecycle_policy=IMPLICIT)
    wmem.admin.drain_outbox()
    with wmem.admin.database.transaction() as conn:
        conn.execute(
            text("UPDATE memory_fragment SET expires_at = now() - interval '1 s' WHERE id = :i"),
            {"i": gone},
        )
    assert [h.memory_id for h in wmem.search("buyer-001", "退款")] == [keep]
    assert sweep_expired(wmem.admin.database, datetime.now(UTC), outbox=True).fragments == 1
    wmem.admin.drain_outbox()
    assert _weaviate(wmem).fragment_ids("buyer-001") == {keep}


def test_cold_users_are_reactivated_on_access(wmem: MemoryClient) -> None:
    wmem.write("buyer-001", "订单 88231 退款", lifecycle_policy=IMPLICIT)
    wmem.admin.drain_outbox()
    index = _weaviate(wmem)
    assert index.set_cold(["buyer-001", "never-seen"]) == 1
    assert index.tenant_status("buyer-001") == "INACTIVE"
    assert len(wmem.search("buyer-001", "退款")) == 1
    assert index.tenant_status("buyer-001") == "ACTIVE"


def test_native_ttl_deletes_expired_objects(wmem: MemoryClient) -> None:
    """Needs the server's OBJECTS_TTL_DELETE_SCHEDULE (``.ci/run`` sets every 5 s)."""
    index = _weaviate(wmem)
    fid = wmem.write("buyer-001", "订单 1 退款", lifecycle_policy=IMPLICIT)
    wmem.admin.drain_outbox()
    with wmem.admin.database.transaction() as conn:
        conn.execute(
            text("UPDATE memory_fragment SET expires_at = now() + interval '2 s' WHERE id = :i"),
            {"i": fid},
        )
    with wmem.admin.database.transaction() as conn:
        Outbox(wmem.admin.database).enqueue(conn, [(OutboxOp.UPSERT, "buyer-001", fid)])
    wmem.admin.drain_outbox()
    assert index.count("buyer-001") == 1
    deadline = time.monotonic() + 90
    while index.count("buyer-001") and time.monotonic() < deadline:
        time.sleep(2)
    assert index.count("buyer-001") == 0, "the server's TTL sweeper did not delete the object"


def test_unreachable_weaviate_degrades_to_the_ledger(
    mem: MemoryClient, settings: Settings, weaviate_server: WeaviateConfig
) -> None:
    dead = weaviate_server.model_copy(update={"port": 1, "grpc_port": 2, "timeout_s": 2.0})
    client = _client(settings, dead)
    try:
        mid = client.write(
            "buyer-001", "订单 88231 退款编号 RF20260629001", lifecycle_policy=IMPLICIT
        )
        hits = client.search("buyer-001", "RF20260629001")
        assert hits.degraded
        assert [h.memory_id for h in hits] == [mid]
        assert client.admin.drain_outbox().failed == 1
        lag = client.admin.outbox_lag()
        assert (lag.pending, lag.failing) == (1, 1)
        health = client.admin.health()
        assert health.database
        assert not health.index_reachable
        assert not health.ok
    finally:
        client.close()


def test_a_refused_write_leaves_searches_on_the_index(wmem: MemoryClient) -> None:
    """The circuit breaker is for an unreachable server: a batch that a ready server
    refuses (here a vector of another length; also a node gone read-only on a full disk)
    is retried by the outbox and must not send searches to the ledger."""
    mid = wmem.write("buyer-001", "订单 88231 退款编号 RF20260629001", lifecycle_policy=IMPLICIT)
    assert wmem.admin.drain_outbox().applied == 1
    now = datetime.now(UTC)
    refused = IndexedFragment(
        id=uuid.uuid4(),
        user_id="buyer-001",
        text="订单 88232",
        index_text="订单 88232",
        vector=[1.0, 0.0],
        embedding_model="hashing",
        intent="other",
        occurred_at=now,
        expires_at=None,
    )
    with pytest.raises(IndexUnavailable):
        _weaviate(wmem).apply([Upsert(UserScope("buyer-001"), refused)])
    hits = wmem.search("buyer-001", "RF20260629001")
    assert not hits.degraded
    assert [h.memory_id for h in hits] == [mid]


def _script(env: dict[str, str], command: str) -> None:
    subprocess.run(
        ["bash", str(ROOT / "scripts" / "weaviate.sh"), command],
        env={**os.environ, **env},
        check=True,
        timeout=600,
        capture_output=True,
    )


@pytest.fixture
def drill_server(tmp_path: Path, weaviate_server: WeaviateConfig) -> Iterator[dict[str, str]]:
    """A Weaviate of this test's own (port 8097), with a data dir that survives restarts."""
    env = {
        "WEAVIATE_PORT": "8097",
        "WEAVIATE_GRPC_PORT": "50067",
        "WEAVIATE_DATA_DIR": str(tmp_path / "weaviate-data"),
        "WEAVIATE_RUN_DIR": str(tmp_path / "weaviate-run"),
    }
    _script(env, "start")
    yield env
    _script(env, "stop")


def test_outage_drill_index_ends_equal_to_the_ledger(
    mem: MemoryClient, settings: Settings, drill_server: dict[str, str]
) -> None:
    config = WeaviateConfig(port=8097, grpc_port=50067, timeout_s=3.0, collection="Drill")
    client = _client(settings, config, outbox_worker="thread")
    users = [f"drill-{i}" for i in range(5)]
    for user in users:
        client.profiles.ensure(user)
    written: list[uuid.UUID] = []
    errors: list[BaseException] = []
    halfway = threading.Event()

    def bulk() -> None:
        try:
            for batch in range(12):
                items = [
                    MemoryInput(
                        user_id=users[(batch + i) % 5],
                        text=f"第 {batch}-{i} 条 订单 {i}",
                        lifecycle_policy=EXPLICIT,
                    )
                    for i in range(25)
                ]
                written.extend(client.write_many(items, batch_size=25, progress=False))
                if batch == 3:
                    halfway.set()
                time.sleep(0.3)
        except BaseException as exc:
            errors.append(exc)

    try:
        writer = threading.Thread(target=bulk)
        writer.start()
        assert halfway.wait(60)
        _script(drill_server, "stop")
        degraded = client.search(users[0], "订单")
        writer.join(120)
        assert errors == []
        assert len(written) == 300, "every write must succeed while Weaviate is down"
        assert degraded.degraded
        _script({**drill_server, "WEAVIATE_KEEP_DATA": "1"}, "start")
        deadline = time.monotonic() + 120
        while client.admin.outbox_lag().pending and time.monotonic() < deadline:
            client.admin.drain_outbox(deadline_s=5)
            time.sleep(0.5)
        assert client.admin.outbox_lag().pending == 0
        index = _weaviate(client)
        for user in users:
            assert index.fragment_ids(user) == _ledger_ids(client, user), user
        assert sum(len(index.fragment_ids(u)) for u in users) == 300
        assert not client.search(users[0], "订单").degraded
    finally:
        client.close()


def test_tenant_names_are_opaque_keyed_and_valid() -> None:
    import hashlib

    phone_id = "13912345678"
    name = tenant_name(phone_id, b"key-one")
    assert len(name) == 41
    assert name.isalnum()
    assert tenant_name(phone_id, b"key-one") == name
    assert tenant_name("13912345679", b"key-one") != name
    assert tenant_name(phone_id, b"key-two") != name, "without the key the name is not derivable"
    assert name != "u" + hashlib.sha256(phone_id.encode()).hexdigest()[:40]
    assert UserScope(phone_id).user_id not in name


def test_a_collection_with_unkeyed_tenants_is_refused_until_reindexed(
    weaviate_server: WeaviateConfig,
) -> None:
    """A collection of an earlier release (no naming marker) must not be searched with new
    tenant names: every user would look empty. It is refused, so searches fall back to the
    ledger, until `dualtrack reindex` (reset + rebuild) recreates it."""
    config = weaviate_server.model_copy(update={"collection": f"Old{uuid.uuid4().hex[:12]}"})
    index = WeaviateIndex(config, tenant_key=b"k")
    client = index._connect()
    try:
        client.collections.create(config.collection)  # as an earlier release left it
        with pytest.raises(IndexUnavailable, match="reindex"):
            index.ping()
        index._down_since = None
        index.reset()
        index.setup("hashing", 8)
        index.ping()
    finally:
        client.collections.delete(config.collection)
        client.close()
        index.close()
