"""An expired memory is unfindable at once, also through a neighbour's index context.

Contextual indexing gives the next turns of a session the words of the turns
before them (``unstructured_memory.contextual``). When such a turn expires, a
search for its words must not return the neighbour that borrowed them, on
either backend, before any sweep runs; the neighbour stays findable by its own
words.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from sdk import LifecyclePolicy, MemoryClient, Settings
from tests.test_weaviate import _client as weaviate_client
from unstructured_memory.index.registry import WeaviateConfig

USER = "buyer-expiry-01"
SECRET = "我家的保险柜密码写在 鸢尾花 那张卡片上"
REPLY = "好的 记下了"
RARE = "鸢尾花"


@pytest.fixture(params=["pgvector", "weaviate"])
def client(request: pytest.FixtureRequest, mem: MemoryClient, settings: Settings) -> Iterator[Any]:
    """The session client (pgvector), or one over a fresh Weaviate collection."""
    if request.param == "pgvector":
        mem.profiles.ensure(USER)
        yield mem
        return
    server: WeaviateConfig = request.getfixturevalue("weaviate_server")
    config = server.model_copy(update={"collection": f"Test{uuid.uuid4().hex[:12]}"})
    with weaviate_client(settings, config) as wmem:
        wmem.profiles.ensure(USER)
        yield wmem
        wmem.admin.index.reset()  # type: ignore[attr-defined]


def _keyword(client: MemoryClient, query: str) -> list[uuid.UUID]:
    return [h.memory_id for h in client.search(USER, query, limit=10, alpha=0.0)]


def _expire(client: MemoryClient, memory_id: uuid.UUID) -> None:
    """Age the memory past its expiry in the ledger, as time would (no sweep runs)."""
    with client.admin.database.transaction() as conn:
        conn.execute(
            text(
                "UPDATE memory_fragment SET expires_at = now() - interval '1 second' WHERE id = :i"
            ),
            {"i": memory_id},
        )


def test_an_expired_turn_is_not_found_through_its_neighbours_context(client: MemoryClient) -> None:
    implicit = LifecyclePolicy.IMPLICIT
    secret = client.write(USER, SECRET, lifecycle_policy=implicit, session_id="s-1")
    reply = client.write(USER, REPLY, lifecycle_policy=implicit, session_id="s-1")
    client.admin.drain_outbox()
    assert set(_keyword(client, RARE)) == {secret, reply}, "precondition: the context holds it"
    _expire(client, secret)
    assert _keyword(client, RARE) == [], "neither the expired turn nor its neighbour"
    assert _keyword(client, "记下") == [reply], "the neighbour, by its own words"
    assert _keyword(client, RARE) == [], "and again"
    client.admin.drain_outbox()
    assert _keyword(client, RARE) == [], "once the index caught up too"
    assert _keyword(client, "记下") == [reply]


def test_with_weaviate_unreachable_the_ledger_answers_without_the_expired_words(
    mem: MemoryClient, settings: Settings, weaviate_server: WeaviateConfig
) -> None:
    dead = weaviate_server.model_copy(update={"port": 1, "grpc_port": 2, "timeout_s": 2.0})
    with weaviate_client(settings, dead) as client:
        client.profiles.ensure(USER)
        implicit = LifecyclePolicy.IMPLICIT
        secret = client.write(USER, SECRET, lifecycle_policy=implicit, session_id="s-1")
        reply = client.write(USER, REPLY, lifecycle_policy=implicit, session_id="s-1")
        _expire(client, secret)
        found = client.search(USER, RARE, limit=10, alpha=0.0)
        assert found.degraded
        assert list(found) == []
        assert _keyword(client, "记下") == [reply]
