"""The default embedder of an existing deployment, and ``dualtrack reembed``.

A deployment whose vectors the hashing embedder made (the default before
``wordvectors``) keeps it under ``DUALTRACK_EMBEDDER=auto``; ``reembed`` moves its
vectors to the new default, each as the write path would make it now, after which every
``auto`` client uses the new embedder and finds a memory by a word of the same meaning.
Each test has a database of its own: the embedding space is deployment-wide.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from policies.lifecycle import LifecyclePolicy
from policies.scope import UserScope
from sdk import MemoryClient, MemoryInput, cli
from sdk.settings import Settings
from service.cli import app
from structured_memory.embedding_space import stored_embedding_space
from structured_memory.repositories.fragment_vectors import other_model_rows, replace_vectors
from tests.conftest import key_line
from unstructured_memory.errors import EmbeddingDimensionMismatch
from unstructured_memory.index.registry import WeaviateConfig
from unstructured_memory.index.weaviate import WeaviateIndex

KEYS = key_line("k-reembed", 5)
DAY = datetime(2026, 5, 8, 10, 0, tzinfo=UTC)
ZH = "buyer-reembed-zh"
TURNS = [
    "用户说周末带女儿去公园玩得很开心",
    "用户的猫最近不吃东西，带去宠物医院看了",
    "用户的手机屏幕碎了，申请了维修",
]


def client(dsn: str, data_dir: Path, **overrides: object) -> MemoryClient:
    settings = Settings(
        postgres_dsn=dsn,  # type: ignore[arg-type]
        data_dir=data_dir,
        pii_keys=KEYS,  # type: ignore[arg-type]
        **overrides,  # type: ignore[arg-type]
    )
    return MemoryClient(settings, agent_id="reembed").start()


def write(mem: MemoryClient, user: str) -> list[uuid.UUID]:
    """A session of three turns (contexts) and a memory alone."""
    mem.profiles.ensure(user)
    items = [
        MemoryInput(
            user_id=user,
            text=t,
            lifecycle_policy=LifecyclePolicy.IMPLICIT,
            session_id="s-1",
            occurred_at=DAY + timedelta(minutes=i),
        )
        for i, t in enumerate(TURNS)
    ]
    items.append(
        MemoryInput(
            user_id=user, text="用户偏好顺丰快递", lifecycle_policy=LifecyclePolicy.EXPLICIT
        )
    )
    return mem.write_many(items, progress=False)


def vectors(mem: MemoryClient, ids: list[uuid.UUID]) -> list[tuple[str, list[float]]]:
    with mem.admin.database.transaction() as conn:
        rows = conn.execute(
            text(
                "SELECT id, embedding_model, embedding::text AS v FROM memory_fragment "
                "WHERE id = ANY(:ids)"
            ),
            {"ids": ids},
        ).all()
    by_id = {
        r.id: (r.embedding_model, [float(x) for x in r.v.strip("[]").split(",")]) for r in rows
    }
    return [by_id[i] for i in ids]


@pytest.fixture
def hashed(fresh_dsn: str, tmp_path: Path) -> tuple[str, list[uuid.UUID]]:
    """A deployment whose memories the hashing embedder wrote."""
    with client(fresh_dsn, tmp_path, embedder="hashing") as old:
        ids = write(old, ZH)
    return fresh_dsn, ids


def test_auto_keeps_the_embedder_of_the_stored_vectors(
    hashed: tuple[str, list[uuid.UUID]], tmp_path: Path
) -> None:
    dsn, ids = hashed
    with client(dsn, tmp_path) as mem:
        assert mem.admin.embedder.name == "hashing-v1-1024"
        assert mem.search(ZH, "猫不吃东西", limit=1)[0].memory_id == ids[1]
        mem.write(ZH, "用户想买猫粮", lifecycle_policy=LifecyclePolicy.EXPLICIT)


def test_a_new_deployment_gets_wordvectors(fresh_dsn: str, tmp_path: Path) -> None:
    with client(fresh_dsn, tmp_path) as mem:
        write(mem, ZH)
        assert mem.admin.embedder.name == "wordvectors-v1-1224"
        assert stored_embedding_space(mem.admin.database) == ("wordvectors-v1-1224", 1224)


def test_reembed_moves_every_vector_as_the_write_path_makes_it(
    hashed: tuple[str, list[uuid.UUID]], tmp_path: Path
) -> None:
    dsn, ids = hashed
    with client(dsn, tmp_path) as mem:
        report = mem.admin.reembed(batch_size=2)
        assert (report.users, report.embedded, report.skipped) == (1, len(ids), 0)
        assert mem.admin.reembed().embedded == 0
    with client(dsn, tmp_path) as mem:
        assert mem.admin.embedder.name == "wordvectors-v1-1224"
        assert stored_embedding_space(mem.admin.database) == ("wordvectors-v1-1224", 1224)
        twin = write(mem, ZH + "-twin")  # the same memories, written by this release
        moved, fresh = vectors(mem, ids), vectors(mem, twin)
        assert {m for m, _ in moved} == {"wordvectors-v1-1224"}
        for (_, a), (_, b) in zip(moved, fresh, strict=True):
            assert np.allclose(a, b, atol=1e-6)
        # no word of the query is in the memory: found by meaning, vector leg alone
        hits = mem.search(ZH, "我今天特别高兴", alpha=1.0, limit=1)
        assert hits[0].memory_id == ids[0]
    with (
        client(dsn, tmp_path, embedder="hashing") as old,
        pytest.raises(EmbeddingDimensionMismatch),
    ):
        old.search(ZH, "猫")


def test_a_row_changed_meanwhile_is_not_overwritten(
    hashed: tuple[str, list[uuid.UUID]], tmp_path: Path
) -> None:
    dsn, ids = hashed
    with client(dsn, tmp_path) as mem:
        scope = UserScope(ZH)
        with mem.admin.database.reading() as conn:
            read = other_model_rows(conn, scope, "wordvectors-v1-1224", after=None, limit=10)
        assert [r.id for r in read] == sorted(ids)
        with mem.admin.database.transaction() as conn:
            conn.execute(
                text("UPDATE memory_fragment SET text = text || '。' WHERE id = :id"),
                {"id": read[0].id},
            )
        unit = [1.0] + [0.0] * 1223
        with mem.admin.database.transaction() as conn:
            written = replace_vectors(conn, scope, read[:3], [unit] * 3, "wordvectors-v1-1224")
        assert written == 2
        assert [m for m, _ in vectors(mem, [r.id for r in read[:3]])] == [
            "hashing-v1-1024",
            "wordvectors-v1-1224",
            "wordvectors-v1-1224",
        ]


def test_reembed_command(
    hashed: tuple[str, list[uuid.UUID]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn, ids = hashed
    monkeypatch.setattr(cli.console, "width", 200)
    env = {
        "DUALTRACK_POSTGRES_DSN": dsn,
        "DUALTRACK_DATA_DIR": str(tmp_path),
        "DUALTRACK_PII_KEYS": KEYS,
    }
    first = CliRunner().invoke(app, ["reembed", "--batch-size", "3"], env=env)
    assert first.exit_code == 0, first.output
    assert f"embedded {len(ids)} fragments of 1 users again (0 changed meanwhile" in first.output
    second = CliRunner().invoke(app, ["reembed"], env=env)
    assert second.exit_code == 0, second.output
    assert "embedded 0 fragments" in second.output


@pytest.mark.weaviate
def test_reembed_refills_weaviate(
    fresh_dsn: str, tmp_path: Path, weaviate_server: WeaviateConfig
) -> None:
    """One Weaviate tenant cannot hold vectors of two lengths: the collection is refilled."""
    config = weaviate_server.model_copy(update={"collection": f"Reembed{uuid.uuid4().hex[:12]}"})
    index = {"index": "weaviate", "index_config": config.model_dump()}
    with client(fresh_dsn, tmp_path, embedder="hashing", **index) as old:
        ids = write(old, ZH)
        old.admin.drain_outbox()
    with client(fresh_dsn, tmp_path, **index) as mem:
        assert mem.admin.reembed().reindexed == len(ids)
    with client(fresh_dsn, tmp_path, **index) as mem:
        try:
            assert mem.admin.embedder.name == "wordvectors-v1-1224"
            hits = mem.search(ZH, "我今天特别高兴", alpha=1.0, limit=1)
            assert hits[0].memory_id == ids[0]
        finally:
            weaviate = mem.admin.index
            assert isinstance(weaviate, WeaviateIndex)
            weaviate.reset()
