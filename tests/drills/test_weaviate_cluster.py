"""Drill: the index on Weaviate's own three-node cluster loses a node mid-load.

Issue 11 ("Scale-out on Weaviate's own cluster"). ``scripts/weaviate.sh cluster-start``
runs three nodes on loopback the way Weaviate's dev scripts do (REST 8110/8120/8130,
``GOMAXPROCS=1`` each, data dirs under this test's temp dir). A client indexes into a
collection with replication factor 3, a tenant per user and QUORUM reads and writes,
talking to a Raft follower. While ``write_many`` feeds the client's outbox thread and
another thread searches, one node is killed with SIGKILL and later restarted on its data:

- ``follower``: the other follower. QUORUM holds with 2 of 3 nodes, so no search fails or
  falls back to the ledger.
- ``leader``: the Raft leader. Every node reports not ready until the two left elect a
  new leader (5-15 s at Weaviate's default timeouts), and tenants of users first seen
  meanwhile cannot be created: searches fall back to the ledger (counted, none fails)
  and the outbox retries the writes.

Asserted in both: every write commits and, once the outbox has drained, every ledger row
is in the index (a QUORUM read); the killed node rejoins (three healthy nodes) and
Weaviate's async replication repairs it: every node holds every ledger row of every
tenant, read from that node alone (``node_name``). Waits are bounded; the timeline and
counts are printed, never asserted. Runs in ``make test`` (about 50 s per case;
deselect with ``-m "not slow"``).
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from sdk.settings import Settings
from unstructured_memory.index.weaviate import WeaviateIndex, object_uuid
from values.inputs import MemoryInput

pytestmark = [pytest.mark.weaviate, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "weaviate.sh"
PORTS = (8110, 8120, 8130)
GRPC_PORTS = (18110, 18120, 18130)
NODES = (1, 2, 3)
COLLECTION = "ClusterDrill"
USERS = [f"cluster-buyer-{i}" for i in range(6)]
EARLY = USERS[:4]
"""Written to from the start; the others are first seen (new tenants) while a node is down."""
BATCHES, PER_BATCH, KILL_AFTER, RESTART_AFTER = 40, 8, 6, 36


def _name(node: int) -> str:
    return f"dualtrack-node{node}"


def _script(env: dict[str, str], *args: str) -> None:
    subprocess.run(["bash", str(SCRIPT), *args], env={**os.environ, **env}, check=True, timeout=240)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Three fresh nodes; always stopped, whatever the drill did."""
    binary = subprocess.run(
        ["bash", str(SCRIPT), "path"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if not os.access(binary, os.X_OK):
        reason = f"no weaviate-server at {binary}; run scripts/weaviate.sh build"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    env = {
        "WEAVIATE_CLUSTER_DIR": str(tmp_path / "cluster"),
        "WEAVIATE_CLUSTER_PORTS": " ".join(map(str, PORTS)),
        "WEAVIATE_CLUSTER_GRPC_PORTS": " ".join(map(str, GRPC_PORTS)),
        "WEAVIATE_READY_TIMEOUT": "90",
        "WEAVIATE_STOP_TIMEOUT": "10",
        # Weaviate's defaults (a hashbeat every 30 s, objects younger than 30 s not yet
        # propagated) repair a returning node in about a minute; the drill waits less.
        "ASYNC_REPLICATION_FREQUENCY": "5s",
        "ASYNC_REPLICATION_PROPAGATION_DELAY": "2s",
    }
    try:
        _script(env, "cluster-start")
        yield env
    finally:
        _script(env, "cluster-stop")


def _raft_roles(node: int) -> dict[int, str]:
    url = f"http://127.0.0.1:{PORTS[node - 1]}/v1/cluster/statistics"
    stats = httpx.get(url, timeout=5).json()["statistics"]
    by_name = {s["name"]: s["raft"]["state"] for s in stats}
    return {n: by_name.get(_name(n), "?") for n in NODES}


def _healthy(node: int) -> list[str]:
    nodes = httpx.get(f"http://127.0.0.1:{PORTS[node - 1]}/v1/nodes", timeout=5).json()["nodes"]
    return sorted(n["name"] for n in nodes if n["status"] == "HEALTHY")


class FailedBatches(logging.Handler):
    """Counts the outbox worker's failed (to be retried) batches."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += "failed" in record.getMessage()


@dataclass
class Load:
    """Writes through ``write_many`` and searches on two threads; records what happened."""

    client: MemoryClient
    start: float
    written: list[uuid.UUID] = field(default_factory=list)
    write_errors: list[str] = field(default_factory=list)
    searches: int = 0
    slowest_s: float = 0.0
    degraded: list[float] = field(default_factory=list)
    search_errors: list[str] = field(default_factory=list)
    batches: int = 0
    progress: threading.Condition = field(default_factory=threading.Condition)
    stop: threading.Event = field(default_factory=threading.Event)

    def write(self) -> None:
        try:
            for batch in range(BATCHES):
                users = EARLY if batch < KILL_AFTER else USERS
                items = [
                    MemoryInput(
                        user_id=users[(batch + i) % len(users)],
                        text=f"订单 88231 第 {batch}-{i} 次咨询：退款 RF20260629001 到账了吗"
                        if i % 2
                        else f"order 88231, note {batch}-{i}: prefers WeChat notifications",
                        lifecycle_policy=LifecyclePolicy.EXPLICIT,
                    )
                    for i in range(PER_BATCH)
                ]
                ids = self.client.write_many(items, batch_size=PER_BATCH, progress=False)
                with self.progress:
                    self.written.extend(ids)
                    self.batches = batch + 1
                    self.progress.notify_all()
                time.sleep(0.5)
        except Exception as exc:
            self.write_errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            with self.progress:
                self.batches = BATCHES
                self.progress.notify_all()

    def search(self) -> None:
        n = 0
        while not self.stop.is_set():
            user = USERS[n % len(USERS)]
            n += 1
            began = time.monotonic()
            try:
                hits = self.client.search(user, "退款 RF20260629001 到账", limit=5)
            except Exception as exc:
                self.search_errors.append(f"{type(exc).__name__}: {exc}")
            else:
                self.searches += 1
                self.slowest_s = max(self.slowest_s, time.monotonic() - began)
                if hits.degraded:
                    self.degraded.append(time.monotonic() - self.start)
            time.sleep(0.05)

    def wait_for(self, batches: int) -> None:
        with self.progress:
            assert self.progress.wait_for(lambda: self.batches >= batches, timeout=120)


@dataclass
class Drill:
    """The cluster, the client and the timeline of one drill."""

    cluster: dict[str, str]
    start: float = field(default_factory=time.monotonic)
    events: list[tuple[float, str]] = field(default_factory=list)

    def mark(self, what: str) -> None:
        self.events.append((time.monotonic() - self.start, what))

    def client(self, settings: Settings, coordinator: int) -> MemoryClient:
        values = {
            **settings.model_dump(),
            "index": "weaviate",
            "index_config": {
                "port": PORTS[coordinator - 1],
                "grpc_port": GRPC_PORTS[coordinator - 1],
                "collection": COLLECTION,
                "replication_factor": 3,
                "consistency_level": "QUORUM",
                "timeout_s": 5.0,
            },
            "outbox_worker": "thread",
            "outbox_max_delay_s": 2.0,
        }
        client = MemoryClient(Settings(**values), agent_id="cluster-drill").start()
        for user in USERS:
            client.profiles.ensure(user)
        return client

    def held(
        self, node: int, index: WeaviateIndex, ledger: dict[str, set[uuid.UUID]]
    ) -> dict[str, int]:
        """Per user, how many of its ledger rows node ``node`` itself holds."""
        base = f"http://127.0.0.1:{PORTS[node - 1]}/v1/objects/{COLLECTION}"
        counts: dict[str, int] = {}
        with httpx.Client(timeout=5) as http:
            for user, ids in ledger.items():
                params = {"tenant": index.tenant(user), "node_name": _name(node)}
                counts[user] = sum(
                    http.get(f"{base}/{object_uuid(i)}", params=params).status_code == 200
                    for i in ids
                )
        return counts


def _ledger(client: MemoryClient) -> dict[str, set[uuid.UUID]]:
    with client.admin.database.transaction() as conn:
        return {
            user: set(
                conn.execute(
                    text("SELECT id FROM memory_fragment WHERE user_id = :u"), {"u": user}
                ).scalars()
            )
            for user in USERS
        }


@dataclass
class Outcome:
    """What one drill did and found."""

    coordinator: int
    victim: int
    killed_role: str
    load: Load
    failed_batches: int
    ledger: dict[str, set[uuid.UUID]]
    in_index: dict[str, set[uuid.UUID]]
    per_node: dict[int, dict[str, int]]
    healthy: list[str]

    def report(self, drill: Drill) -> None:
        load = self.load
        print(
            f"\nclient on node {self.coordinator}, killed node {self.victim} ({self.killed_role})"
        )
        for at, what in drill.events:
            print(f"  {at:6.1f} s  {what}")
        window = f" at {load.degraded[0]:.1f}-{load.degraded[-1]:.1f} s" if load.degraded else ""
        print(
            f"  writes {len(load.written)}, searches {load.searches} (degraded "
            f"{len(load.degraded)}{window}, failed {len(load.search_errors)}, "
            f"slowest {load.slowest_s:.2f} s), "
            f"outbox batches retried {self.failed_batches}"
        )
        for node in NODES:
            held = " ".join(f"{self.per_node[node][u]}/{len(self.ledger[u])}" for u in USERS)
            print(f"  node {node} holds (per tenant): {held}")


def _run(drill: Drill, client: MemoryClient, coordinator: int, victim_role: str) -> Outcome:
    """Load, kill a node, restart it, drain, then wait (bounded) for its repair."""
    index = client.admin.index
    assert isinstance(index, WeaviateIndex)
    failed_batches = FailedBatches()
    worker_log = logging.getLogger("unstructured_memory.outbox.worker")
    worker_log.addHandler(failed_batches)
    load = Load(client, drill.start)
    threads = [threading.Thread(target=load.write), threading.Thread(target=load.search)]
    try:
        for thread in threads:
            thread.start()
        drill.mark(f"writes and searches started, client on node {coordinator}")
        load.wait_for(KILL_AFTER)
        roles = _raft_roles(coordinator)
        wanted = "Leader" if victim_role == "leader" else "Follower"
        others = [n for n in NODES if n != coordinator]
        victim = next((n for n in others if roles[n] == wanted), others[-1])
        _script(drill.cluster, "node-kill", str(victim))
        drill.mark(f"node {victim} ({roles[victim]}) SIGKILLed after {len(load.written)} writes")
        load.wait_for(RESTART_AFTER)
        drill.mark(f"node {victim} restarting after {len(load.written)} writes")
        _script(drill.cluster, "node-start", str(victim))
        drill.mark(f"node {victim} ready again")
    finally:
        if threads[0].ident is not None:
            threads[0].join(120)
        drill.mark(f"writer done: {len(load.written)} writes")
        deadline = time.monotonic() + 60
        while client.admin.outbox_lag().pending and time.monotonic() < deadline:
            time.sleep(0.5)
        drill.mark("outbox drained")
        load.stop.set()
        if threads[1].ident is not None:
            threads[1].join(30)
        worker_log.removeHandler(failed_batches)

    ledger = _ledger(client)
    full = {u: len(ledger[u]) for u in USERS}
    in_index = {user: index.fragment_ids(user) for user in USERS}  # QUORUM reads
    deadline = time.monotonic() + 120
    while (held := drill.held(victim, index, ledger)) != full and time.monotonic() < deadline:
        time.sleep(1)
    drill.mark(f"node {victim} holds every ledger row: {held == full}")
    return Outcome(
        coordinator=coordinator,
        victim=victim,
        killed_role=roles[victim],
        load=load,
        failed_batches=failed_batches.count,
        ledger=ledger,
        in_index=in_index,
        per_node={n: held if n == victim else drill.held(n, index, ledger) for n in NODES},
        healthy=_healthy(victim),
    )


@pytest.mark.parametrize("victim_role", ["follower", "leader"])
def test_a_killed_node_loses_no_write_and_is_repaired(
    mem: MemoryClient, settings: Settings, cluster: dict[str, str], victim_role: str
) -> None:
    drill = Drill(cluster)
    drill.mark("cluster of 3 ready")
    roles = _raft_roles(1)
    coordinator = next(n for n in NODES if roles[n] != "Leader")
    client = drill.client(settings, coordinator)
    try:
        assert isinstance(client.admin.index, WeaviateIndex)
        client.admin.index.setup("hashing", 0)
        schema = httpx.get(f"http://127.0.0.1:{PORTS[0]}/v1/schema/{COLLECTION}").json()
        assert schema["replicationConfig"]["factor"] == 3
        assert schema["replicationConfig"]["deletionStrategy"] == "DeleteOnConflict"
        outcome = _run(drill, client, coordinator, victim_role)
    finally:
        client.close()
    outcome.report(drill)

    load = outcome.load
    assert load.write_errors == []
    assert len(load.written) == BATCHES * PER_BATCH
    assert sum(map(len, outcome.ledger.values())) == BATCHES * PER_BATCH
    assert outcome.in_index == outcome.ledger, "an acknowledged write is missing from the index"
    assert load.search_errors == []
    assert load.searches > 0
    if outcome.killed_role != "Leader":
        assert load.degraded == [], "QUORUM with 2 of 3 nodes must answer every search"
    assert outcome.healthy == [_name(n) for n in NODES]
    full = {u: len(outcome.ledger[u]) for u in USERS}
    for node in NODES:
        assert outcome.per_node[node] == full, f"node {node} was not repaired"
