"""Forgetting completely: a deleted or expired memory leaves no words and no PII behind.

Contextual indexing copies a memory's words into the index text of the next
turns of its session; the vault keeps the PII it held. Deleting or sweeping
the memory must take both away, and a turn written after an expiry must not
be indexed with the expired text.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from sdk import LifecyclePolicy, MemoryClient, MemoryInput

EXPLICIT = LifecyclePolicy.EXPLICIT
IMPLICIT = LifecyclePolicy.IMPLICIT
SECRET = "我家的保险柜密码写在 鸢尾花 那张卡片上，手机 13912345678"


@pytest.fixture(autouse=True)
def buyer(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-001")


def _index_texts(mem: MemoryClient) -> dict[uuid.UUID, str]:
    with mem.admin.database.transaction() as conn:
        rows = conn.execute(text("SELECT id, index_text FROM memory_fragment")).all()
    return {r.id: r.index_text for r in rows}


def _session(mem: MemoryClient, first_policy: LifecyclePolicy) -> list[uuid.UUID]:
    return mem.write_many(
        [
            MemoryInput(user_id="buyer-001", text=t, lifecycle_policy=p, session_id="s-1")
            for t, p in [
                (SECRET, first_policy),
                ("好的，我记下了", EXPLICIT),
                ("订单 88231 什么时候发货", EXPLICIT),
            ]
        ],
        progress=False,
    )


def test_a_deleted_memory_leaves_no_words_in_its_neighbours(mem: MemoryClient) -> None:
    secret, reply, later = _session(mem, EXPLICIT)
    assert "鸢尾花" in _index_texts(mem)[reply], "precondition: contextual indexing copied it"
    assert mem.search("buyer-001", "鸢尾花", alpha=0.0)
    assert mem.memories.delete("buyer-001", secret)
    texts = _index_texts(mem)
    assert all("鸢尾花" not in t for t in texts.values())
    assert mem.search("buyer-001", "鸢尾花", alpha=0.0) == []
    assert set(texts) == {reply, later}


def test_a_deleted_memorys_vault_entry_goes_unless_still_referenced(mem: MemoryClient) -> None:
    secret, _, _ = _session(mem, EXPLICIT)
    kept = mem.write("buyer-001", "备用联系方式 13800138000", lifecycle_policy=EXPLICIT)
    assert {r.kind for r in mem.pii.list("buyer-001")} == {"phone"}
    assert len(mem.pii.list("buyer-001")) == 2
    mem.memories.delete("buyer-001", secret)
    export = mem.export_user("buyer-001")
    assert [p["value"] for p in export["pii"]] == ["13800138000"]
    assert mem.memories.get("buyer-001", kept) is not None


def test_a_swept_memory_leaves_no_words_and_no_pii(mem: MemoryClient) -> None:
    secret, _, _ = _session(mem, IMPLICIT)
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text(
                "UPDATE memory_fragment SET expires_at = now() - interval '1 minute' WHERE id = :i"
            ),
            {"i": secret},
        )
    report = mem.admin.sweep()
    assert report.fragments == 1
    assert all("鸢尾花" not in t for t in _index_texts(mem).values())
    assert mem.export_user("buyer-001")["pii"] == []


def test_a_turn_written_after_an_expiry_is_not_indexed_with_the_expired_text(
    mem: MemoryClient,
) -> None:
    t0 = datetime.now(UTC) - timedelta(hours=1)
    secret = mem.write(
        "buyer-001", SECRET, lifecycle_policy=IMPLICIT, session_id="s-2", occurred_at=t0
    )
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text(
                "UPDATE memory_fragment SET expires_at = now() - interval '1 second' WHERE id = :i"
            ),
            {"i": secret},
        )
    later = mem.write("buyer-001", "好的", lifecycle_policy=EXPLICIT, session_id="s-2")
    assert "鸢尾花" not in _index_texts(mem)[later]


def test_a_private_memory_lends_no_words_to_other_agents_turns(
    mem: MemoryClient, settings: object
) -> None:
    from sdk import Settings

    assert isinstance(settings, Settings)
    secret = mem.write(
        "buyer-001", SECRET, lifecycle_policy=EXPLICIT, session_id="s-3", private=True
    )
    with MemoryClient(settings, agent_id="shopping-agent") as other:
        public = other.write("buyer-001", "好的", lifecycle_policy=EXPLICIT, session_id="s-3")
        assert other.search("buyer-001", "鸢尾花", alpha=0.0) == []
        assert other.memories.get("buyer-001", secret) is None
        assert other.memories.delete("buyer-001", secret) is False
        assert secret not in [m.id for m in other.memories.list("buyer-001")]
    assert "鸢尾花" not in _index_texts(mem)[public]
    assert mem.memories.get("buyer-001", secret) is not None
