"""Agents of one user: a sandbox belongs to (user, agent, session), through the SDK and REST.

Agent B of the same user opening session S gets a sandbox of its own; naming
agent A's sandbox id is answered as any id B may not see (404). Merge and
discard act only on what the caller may see, even in a sandbox that old code
shared between agents.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from policies.errors import DualtrackError, NotFound
from policies.scope import UserScope
from sdk import LifecyclePolicy, MemoryClient
from service import create_app
from tests.test_service import SERVICE, auth, token

IMPLICIT = LifecyclePolicy.IMPLICIT
USER = "alice"
DRAFT = "草稿：想把订单 88231 的扫地机换成 S20 型号"


@pytest.fixture
def agents(mem: MemoryClient) -> tuple[MemoryClient, MemoryClient]:
    mem.profiles.ensure(USER)
    return mem.for_agent("agent-a"), mem.for_agent("agent-b")


def _texts(client: MemoryClient, query: str = "草稿 扫地机 S20 型号") -> set[str]:
    return {h.text for h in client.search(USER, query, limit=20, alpha=0.0)}


def test_each_agent_of_a_user_gets_its_own_sandbox_of_a_session(
    agents: tuple[MemoryClient, MemoryClient],
) -> None:
    a, b = agents
    with a.sandbox(USER, "S") as box_a:
        draft = a.write(USER, DRAFT, lifecycle_policy=IMPLICIT)
        assert DRAFT in _texts(a)
        assert DRAFT not in _texts(b), "another agent's client inside A's block sees nothing"
        with b.sandbox(USER, "S") as box_b:
            assert box_b.id != box_a.id
            assert DRAFT not in _texts(b)
            assert b.memories.get(USER, draft) is None
    assert [s.id for s in b.sandboxes.history(USER, "S")] == [box_b.id]
    assert [s.id for s in a.sandboxes.history(USER, "S")] == [box_a.id]
    with a.sandbox(USER, "S") as again:
        assert again.id == box_a.id, "A resumes its own sandbox"


def test_naming_another_agents_sandbox_is_not_found(
    agents: tuple[MemoryClient, MemoryClient],
) -> None:
    a, b = agents
    box_a = a.sandboxes.open(USER, "S").id
    with a.sandbox(USER, "S"):
        draft = a.write(USER, DRAFT, lifecycle_policy=IMPLICIT)
    for call in (
        lambda: b.sandboxes.merge(USER, "S", box_a, [draft]),
        lambda: b.sandboxes.discard(USER, "S", box_a),
        lambda: b.sandboxes.memories(USER, box_a),
        lambda: b.sandboxes.merge(USER, "S", uuid.uuid4(), [draft]),
    ):
        with pytest.raises(NotFound):
            call()
    assert [m.id for m in a.sandboxes.memories(USER, box_a)] == [draft], "untouched"
    assert a.memories.get(USER, draft) is None, "still unmerged"


def test_a_fork_of_one_agent_leaves_the_other_agents_sandbox_active(
    agents: tuple[MemoryClient, MemoryClient],
) -> None:
    a, b = agents
    box_b = b.sandboxes.open(USER, "S")
    with a.sandbox(USER, "S") as box_a:
        a.write(USER, DRAFT, lifecycle_policy=IMPLICIT)
        box_a.fork()
    with b.sandbox(USER, "S") as resumed:
        assert resumed.id == box_b.id
        kept = b.write(USER, "B 的草稿：偏好顺丰", lifecycle_policy=IMPLICIT)
    assert [m.id for m in b.sandboxes.memories(USER, box_b.id)] == [kept]
    assert [s.status for s in b.sandboxes.history(USER, "S")] == ["active"]
    assert [s.status for s in a.sandboxes.history(USER, "S")] == ["archived", "active"]


def test_the_fork_lock_keys_on_user_agent_and_session(
    agents: tuple[MemoryClient, MemoryClient],
) -> None:
    """While A forks session S (its transaction open), B opens S without waiting on it;
    another fork by A waits (here: fails on ``lock_timeout``)."""
    a, _ = agents
    rt = a._rt()
    repo, db = rt.sandboxes, rt.db
    scope_a, scope_b = UserScope(USER, "agent-a"), UserScope(USER, "agent-b")
    now = datetime.now(UTC)
    with db.transaction() as held:
        repo.fork(held, scope_a, "S", now)
        outcome: dict[str, object] = {}

        def other(name: str, scope: UserScope) -> None:
            try:
                with db.transaction() as conn:
                    conn.execute(text("SET LOCAL lock_timeout = '2s'"))
                    outcome[name] = repo.open(conn, scope, "S", now).agent_id
            except DualtrackError as exc:
                outcome[name] = exc.details.get("sqlstate")

        for name, scope in (("b", scope_b), ("a", scope_a)):
            worker = threading.Thread(target=other, args=(name, scope))
            worker.start()
            worker.join(30)
    assert outcome["b"] == "agent-b"
    assert outcome["a"] == "55P03", "lock_not_available: A's fork holds the lock"


def _shared_sandbox_holding(
    mem: MemoryClient, a: MemoryClient, b: MemoryClient, texts: list[str]
) -> tuple[uuid.UUID, list[uuid.UUID]]:
    """A's sandbox holding B's private memories, as a sandbox shared by old code left it."""
    box_a = a.sandboxes.open(USER, "S").id
    with b.sandbox(USER, "S-b"):
        ids = [b.write(USER, t, lifecycle_policy=IMPLICIT, private=True) for t in texts]
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text("UPDATE memory_fragment SET sandbox_id = :box WHERE id = ANY(:ids)"),
            {"box": box_a, "ids": ids},
        )
    return box_a, ids


def test_merge_and_discard_leave_what_the_caller_may_not_see(
    mem: MemoryClient, agents: tuple[MemoryClient, MemoryClient]
) -> None:
    a, b = agents
    box, (private, private_2) = _shared_sandbox_holding(
        mem, a, b, ["B 的私有草稿：发票抬头", "B 的私有草稿：收货时间"]
    )
    unknown = uuid.uuid4()
    assert a.sandboxes.merge(USER, "S", box, [private]) == []
    assert a.sandboxes.merge(USER, "S", box, [unknown]) == [], "the same answer"
    assert a.sandboxes.discard(USER, "S", box) == 0
    with mem.admin.database.transaction() as conn:
        rows = conn.execute(
            text("SELECT id, sandbox_id FROM memory_fragment WHERE id = ANY(:ids)"),
            {"ids": [private, private_2]},
        ).all()
    assert {r.id: r.sandbox_id for r in rows} == {private: box, private_2: box}


# -- the same through the REST service ------------------------------------------------------


@pytest.fixture
def api(mem: MemoryClient) -> Iterator[TestClient]:
    with TestClient(create_app(service=SERVICE, client=mem)) as client:
        client.put("/v1/profile", headers=auth(token(sub=USER, agent="agent-a")))
        yield client


def test_rest_agents_of_one_user_get_their_own_sandboxes(api: TestClient) -> None:
    tok_a, tok_b = token(sub=USER, agent="agent-a"), token(sub=USER, agent="agent-b")
    box_a = api.post("/v1/sessions/S/sandbox", headers=auth(tok_a)).json()["id"]
    in_a = {**auth(tok_a), "X-Dualtrack-Sandbox": box_a}
    body = {"text": DRAFT, "lifecycle_policy": "implicit"}
    draft = api.post("/v1/memories", headers=in_a, json=body).json()["memory_id"]
    box_b = api.post("/v1/sessions/S/sandbox", headers=auth(tok_b)).json()["id"]
    assert box_b != box_a
    query = {"query": "草稿 扫地机 S20", "alpha": 0.0}
    in_b = {**auth(tok_b), "X-Dualtrack-Sandbox": box_b}
    assert api.post("/v1/search", headers=in_b, json=query).json()["hits"] == []
    a_hits = api.post("/v1/search", headers=in_a, json=query).json()["hits"]
    assert [h["memory_id"] for h in a_hits] == [draft]

    b_names_a = {**auth(tok_b), "X-Dualtrack-Sandbox": box_a}
    not_found = [
        api.post("/v1/search", headers=b_names_a, json=query),
        api.post("/v1/memories", headers=b_names_a, json=body),
        api.post("/v1/sessions/S/sandbox/merge", headers=b_names_a, json={"memory_ids": [draft]}),
        api.post("/v1/sessions/S/sandbox/discard", headers=b_names_a),
        api.get(f"/v1/memories/{draft}", headers=b_names_a),
    ]
    assert [r.status_code for r in not_found] == [404] * len(not_found)
    assert {r.json()["error"]["code"] for r in not_found} == {"sandbox_not_found"}
    unknown = {**auth(tok_b), "X-Dualtrack-Sandbox": str(uuid.uuid4())}
    assert api.post("/v1/search", headers=unknown, json=query).json() == not_found[0].json()
    still = api.post("/v1/search", headers=in_a, json=query).json()["hits"]
    assert [h["memory_id"] for h in still] == [draft], "A's draft neither merged nor discarded"
