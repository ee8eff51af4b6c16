"""Unstructured track through the SDK: write, search, PII, TTL, sweep, bad input."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from policies.errors import InvalidField, InvalidText, InvalidUserId, PolicyMissing, UserNotFound
from policies.lifecycle import LifecyclePolicy
from policies.ttl import MemoryKind
from sdk.client import MemoryClient
from sdk.settings import Settings
from structured_memory.cross_user import sweep_expired
from unstructured_memory.errors import EmbeddingDimensionMismatch
from unstructured_memory.tokenize import stem
from values.inputs import MemoryInput
from values.sessions import Turn

EXPLICIT = LifecyclePolicy.EXPLICIT
IMPLICIT = LifecyclePolicy.IMPLICIT

REFUND = (
    "用户因订单 88231 的比特 S10 Pro 扫地机（1999 元）无法回充申请退款，"
    "退款编号 RF20260629001，预计 1-3 个工作日到账"
)
PURIFIER = "我想买一台空气净化器，预算 2000 元以内，家里有猫"
TRACKING = "顺丰运单号 SF1234567890 显示包裹还在杭州中转站"
INVOICE = "请帮我开增值税专用发票，抬头是上海某某科技有限公司"


def _count(mem: MemoryClient, sql: str, **params: object) -> int:
    with mem.admin.database.transaction() as conn:
        return int(conn.execute(text(sql), params).scalar_one())


USERS = ("buyer-001", "buyer-002", "buyer-en", "bulk-0", "bulk-1", "bulk-2", "loco")


@pytest.fixture(autouse=True)
def users(mem: MemoryClient) -> None:
    """Users exist only through ``profiles.ensure``; these are the ones the tests use."""
    for user in USERS:
        mem.profiles.ensure(user)


@pytest.fixture
def shop(mem: MemoryClient) -> MemoryClient:
    for t in (REFUND, PURIFIER, TRACKING, INVOICE):
        mem.write("buyer-001", t, lifecycle_policy=IMPLICIT, session_id="s-1")
    mem.write(
        "buyer-002", "退款到账了吗？我的订单 99999 退款 RF20260101999", lifecycle_policy=IMPLICIT
    )
    return mem


def test_refund_question_finds_the_refund_record(shop: MemoryClient) -> None:
    hits = shop.search("buyer-001", "退款到账了吗", limit=3)
    assert hits[0].text == REFUND
    assert hits[0].score == pytest.approx(1.0)
    assert hits[0].keyword_score is not None
    assert {e["text"] for e in hits[0].entities} >= {"88231", "RF20260629001"}
    assert shop.search("buyer-001", "SF1234567890 到哪了", limit=1)[0].text == TRACKING
    assert shop.search("buyer-001", "发票抬头", limit=1)[0].text == INVOICE


def test_english_and_mixed_text(mem: MemoryClient) -> None:
    mem.write(
        "buyer-en",
        "The robot vacuum S10 Pro cannot dock; refund requested",
        lifecycle_policy=IMPLICIT,
    )
    mem.write("buyer-en", "Prefers WeChat notifications over email", lifecycle_policy=EXPLICIT)
    mem.write("buyer-en", "我的 iPhone 15 Pro 还没发货 😡", lifecycle_policy=IMPLICIT)
    assert mem.search("buyer-en", "vacuum refund", limit=1)[0].text.startswith("The robot vacuum")
    assert mem.search("buyer-en", "notifications", limit=1)[0].text.startswith("Prefers WeChat")
    assert "iPhone" in mem.search("buyer-en", "iPhone 发货", limit=1)[0].text


def test_search_never_crosses_users(shop: MemoryClient) -> None:
    for query in ("退款到账了吗 99999", "RF20260101999", "订单"):
        for hit in shop.search("buyer-001", query, limit=10):
            assert "99999" not in hit.text
    other = shop.search("buyer-002", "退款", limit=10)
    assert len(other) == 1
    assert "99999" in other[0].text
    shop.profiles.ensure("buyer-003")
    assert shop.search("buyer-003", "退款", limit=10) == []
    with pytest.raises(UserNotFound):
        shop.search("buyer-004", "退款", limit=10)


def test_pii_is_masked_in_the_ledger_and_kept_in_the_vault(mem: MemoryClient) -> None:
    mid = mem.write(
        "buyer-001",
        "请记住我的邮箱是 zhang.wei@example.com，手机 13812345678",
        lifecycle_policy=EXPLICIT,
    )
    hit = mem.search("buyer-001", "邮箱", limit=1)[0]
    assert hit.memory_id == mid
    assert "zhang.wei@example.com" not in hit.text
    assert "13812345678" not in hit.text
    kinds = sorted(ref["kind"] for ref in hit.metadata["pii"])
    assert kinds == ["email", "phone"]
    revealed = {mem.pii.reveal("buyer-001", r.id) for r in mem.pii.list("buyer-001")}
    assert revealed == {"zhang.wei@example.com", "13812345678"}
    with mem.admin.database.transaction() as conn:
        row = conn.execute(
            text("SELECT row_to_json(f)::text FROM memory_fragment f WHERE id = :i"), {"i": mid}
        ).scalar_one()
    assert "zhang.wei" not in row
    assert "13812345678" not in row


def test_lifecycle_policy_is_required(mem: MemoryClient) -> None:
    with pytest.raises(TypeError):
        mem.write("buyer-001", "记住我喜欢文字说明")  # type: ignore[call-arg]
    with pytest.raises(PolicyMissing):
        mem.write("buyer-001", "记住我喜欢文字说明", lifecycle_policy=None)  # type: ignore[arg-type]
    assert _count(mem, "SELECT count(*) FROM memory_fragment") == 0


def _expiry(mem: MemoryClient, mid: object) -> tuple[datetime | None, int | None]:
    with mem.admin.database.transaction() as conn:
        row = conn.execute(
            text("SELECT expires_at, renew_days FROM memory_fragment WHERE id = :i"), {"i": mid}
        ).one()
    return row.expires_at, row.renew_days


def test_ttl_follows_policy_and_kind(mem: MemoryClient) -> None:
    """EXPLICIT means "until changed or deleted" whatever the kind; IMPLICIT kinds differ."""
    now = datetime.now(UTC)
    cases = [
        (EXPLICIT, MemoryKind.NOTE, None, None),
        (EXPLICIT, MemoryKind.SESSION_SUMMARY, None, None),
        (EXPLICIT, MemoryKind.INTERACTION_RECORD, None, None),
        (LifecyclePolicy.SENSITIVE, MemoryKind.NOTE, None, None),
        (LifecyclePolicy.BUSINESS, MemoryKind.NOTE, None, None),
        (IMPLICIT, MemoryKind.NOTE, 7, 7),
        (IMPLICIT, MemoryKind.SESSION_SUMMARY, 7, 7),
        (IMPLICIT, MemoryKind.INTERACTION_RECORD, 90, None),
    ]
    for policy, kind, days, renew in cases:
        mid = mem.write("buyer-001", f"{kind} {policy} 测试", lifecycle_policy=policy, kind=kind)
        expires, renew_days = _expiry(mem, mid)
        assert renew_days == renew, (policy, kind)
        if days is None:
            assert expires is None, (policy, kind)
        else:
            assert expires is not None
            assert abs(expires - (now + timedelta(days=days))) < timedelta(minutes=1)


def _set_expiry(mem: MemoryClient, mid: object, expires: datetime) -> None:
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text("UPDATE memory_fragment SET expires_at = :e WHERE id = :i"),
            {"e": expires, "i": mid},
        )


def test_a_frequent_users_memory_is_renewed_for_thirty_days(mem: MemoryClient) -> None:
    """Renewal on use follows the memory's own lifetime, not the global seven days."""
    for s in range(5):
        mem.write("buyer-001", f"第 {s} 次咨询", lifecycle_policy=EXPLICIT, session_id=f"s-{s}")
    mid = mem.write("buyer-001", "偏好空气净化器的静音款", lifecycle_policy=IMPLICIT)
    _set_expiry(mem, mid, datetime.now(UTC) + timedelta(days=1))
    assert mem.search("buyer-001", "空气净化器 静音", limit=1)[0].memory_id == mid
    expires, _ = _expiry(mem, mid)
    assert expires is not None
    assert expires > datetime.now(UTC) + timedelta(days=29)


def test_an_interaction_record_is_not_renewed_past_its_retention(mem: MemoryClient) -> None:
    record = mem.end_session(
        "buyer-001",
        "s-0629",
        [Turn(role="user", text="订单 88231 的扫地机不回充，我要退款")],
    )
    soon = datetime.now(UTC) + timedelta(days=1)
    _set_expiry(mem, record.memory_id, soon)
    assert record.memory_id in [h.memory_id for h in mem.search("buyer-001", "扫地机 退款")]
    expires, _ = _expiry(mem, record.memory_id)
    assert expires == soon


def test_facts_renew_like_fragments(mem: MemoryClient) -> None:
    for s in range(5):
        mem.write("buyer-001", f"第 {s} 次咨询", lifecycle_policy=EXPLICIT, session_id=f"s-{s}")
    fact = mem.facts.put("buyer-001", "内容偏好", "图文", lifecycle_policy=IMPLICIT)
    assert fact.expires_at is not None
    assert fact.expires_at > datetime.now(UTC) + timedelta(days=29)
    with mem.admin.database.transaction() as conn:
        conn.execute(
            text("UPDATE memory_fact SET expires_at = now() + interval '1 day' WHERE id = :i"),
            {"i": fact.id},
        )
    renewed = mem.facts.get("buyer-001", "内容偏好")
    assert renewed is not None
    assert renewed.expires_at is not None
    assert renewed.expires_at > datetime.now(UTC) + timedelta(days=29)


def test_frequent_users_keep_implicit_memories_thirty_days(mem: MemoryClient) -> None:
    for s in range(5):
        mem.write("buyer-001", f"第 {s} 次咨询", lifecycle_policy=EXPLICIT, session_id=f"s-{s}")
    mid = mem.write("buyer-001", "偏好文字说明", lifecycle_policy=IMPLICIT)
    with mem.admin.database.transaction() as conn:
        expires = conn.execute(
            text("SELECT expires_at FROM memory_fragment WHERE id = :i"), {"i": mid}
        ).scalar_one()
    assert expires > datetime.now(UTC) + timedelta(days=29)


def test_expired_fragments_are_never_returned_and_swept(shop: MemoryClient) -> None:
    shop.admin.database.engine.dispose()
    with shop.admin.database.transaction() as conn:
        conn.execute(
            text(
                "UPDATE memory_fragment SET expires_at = now() - interval '1 second' "
                "WHERE text LIKE '%RF20260629001%'"
            )
        )
    hits = shop.search("buyer-001", "RF20260629001 退款", limit=10)
    assert all("RF20260629001" not in h.text for h in hits)
    report = sweep_expired(shop.admin.database, datetime.now(UTC), batch_size=1)
    assert report.fragments == 1
    assert _count(shop, "SELECT count(*) FROM memory_fragment") == 4


def test_search_renews_implicit_fragments_it_returns(shop: MemoryClient) -> None:
    with shop.admin.database.transaction() as conn:
        conn.execute(text("UPDATE memory_fragment SET expires_at = now() + interval '1 hour'"))
    hit = shop.search("buyer-001", "空气净化器", limit=1)[0]
    assert hit.text == PURIFIER
    with shop.admin.database.transaction() as conn:
        rows: dict[str, bool] = dict(
            conn.execute(
                text(
                    "SELECT text, expires_at > now() + interval '6 days' FROM memory_fragment "
                    "WHERE user_id = 'buyer-001'"
                )
            ).all()
        )
    assert rows[PURIFIER] is True
    assert rows[INVOICE] is False


@pytest.mark.parametrize(
    "bad",
    ["", "   \n\t", "长" * 30_000, b"\xff\xfe invalid", "bad \udcff surrogate", "nul \x00 byte"],
)
def test_bad_texts_are_typed_errors_and_write_nothing(mem: MemoryClient, bad: object) -> None:
    with pytest.raises(InvalidText):
        mem.write("buyer-001", bad, lifecycle_policy=EXPLICIT)  # type: ignore[arg-type]
    assert _count(mem, "SELECT count(*) FROM memory_fragment") == 0
    assert _count(mem, "SELECT count(*) FROM pii_vault") == 0


def test_one_megabyte_text_is_refused_with_the_limit(mem: MemoryClient) -> None:
    with pytest.raises(InvalidText) as err:
        mem.write("buyer-001", "a" * 1_000_000, lifecycle_policy=EXPLICIT)
    assert err.value.details["limit"] == 64 * 1024


@pytest.mark.parametrize(
    "query",
    ["'&|!():*", "退款' OR 1=1 --", "a:* & !b", "\\", "(((", "😀", "退款" * 1000],
)
def test_hostile_queries_do_not_crash_or_leak(shop: MemoryClient, query: str) -> None:
    if len(query.encode()) > 4096:
        with pytest.raises(InvalidText):
            shop.search("buyer-001", query)
        return
    for hit in shop.search("buyer-001", query, limit=10):
        assert "99999" not in hit.text


def test_bad_search_arguments(shop: MemoryClient) -> None:
    with pytest.raises(InvalidText):
        shop.search("buyer-001", "  ")
    with pytest.raises(InvalidField):
        shop.search("buyer-001", "退款", limit=0)
    with pytest.raises(InvalidField):
        shop.search("buyer-001", "退款", alpha=1.5)
    with pytest.raises(InvalidField):
        shop.search("buyer-001", "退款", preset="magic")


def test_filters_intent_time_and_session(mem: MemoryClient) -> None:
    t0 = datetime(2026, 6, 1, tzinfo=UTC)
    mem.write("buyer-001", REFUND, lifecycle_policy=EXPLICIT, occurred_at=t0, session_id="a")
    mem.write(
        "buyer-001",
        TRACKING,
        lifecycle_policy=EXPLICIT,
        occurred_at=t0 + timedelta(days=10),
        session_id="b",
    )
    late = mem.search("buyer-001", "订单 包裹 退款", occurred_after=t0 + timedelta(days=1))
    assert [h.text for h in late] == [TRACKING]
    early = mem.search("buyer-001", "订单 包裹 退款", occurred_before=t0 + timedelta(days=1))
    assert [h.text for h in early] == [REFUND]
    assert [h.text for h in mem.search("buyer-001", "订单 包裹 退款", session_id="b")] == [TRACKING]
    intent = mem.search("buyer-001", "订单 包裹 退款", limit=1).__getitem__(0).intent
    only = mem.search("buyer-001", "订单 包裹 退款", intents=[intent])
    assert {h.intent for h in only} == {intent}


def test_private_memories_stay_with_their_agent(mem: MemoryClient, settings: Settings) -> None:
    mem.write(
        "buyer-001", "只给退款助手看的备注：用户情绪激动", lifecycle_policy=EXPLICIT, private=True
    )
    mem.write("buyer-001", "公开备注：用户情绪平稳", lifecycle_policy=EXPLICIT)
    assert len(mem.search("buyer-001", "用户情绪", limit=5)) == 2
    with MemoryClient(settings, agent_id="shopping-agent") as other:
        seen = other.search("buyer-001", "用户情绪", limit=5)
    assert [h.text for h in seen] == ["公开备注：用户情绪平稳"]


def test_keyword_only_and_vector_only(shop: MemoryClient) -> None:
    kw = shop.search("buyer-001", "RF20260629001", alpha=0.0, limit=5)
    assert kw[0].text == REFUND
    assert kw[0].vector_score is None
    # later turns of the session match through their context, always ranked lower
    assert all(h.keyword_score < kw[0].keyword_score for h in kw[1:])  # type: ignore[operator]
    assert all(h.session_id == "s-1" for h in kw)
    vec = shop.search("buyer-001", "退款什么时候到账", alpha=1.0, limit=4)
    assert len(vec) == 4
    assert all(h.keyword_score is None for h in vec)
    assert vec[0].text == REFUND


def test_write_many_batches_with_positions_in_errors(mem: MemoryClient) -> None:
    items = [
        MemoryInput(
            user_id=f"bulk-{i % 3}",
            text=f"第 {i} 条记录 订单 {10000 + i}",
            lifecycle_policy=EXPLICIT,
        )
        for i in range(250)
    ]
    ids = mem.write_many(items, batch_size=100, progress=False)
    assert len(set(ids)) == 250
    assert mem.search("bulk-1", "10007", alpha=0.0, limit=1)[0].text == "第 7 条记录 订单 10007"
    bad = [*items[:120], MemoryInput(user_id="bulk-0", text="   ", lifecycle_policy=EXPLICIT)]
    with pytest.raises(InvalidText) as err:
        mem.write_many(bad, batch_size=100, progress=False)
    assert err.value.details["item"] == 120
    assert _count(mem, "SELECT count(*) FROM memory_fragment") == 350


@pytest.fixture
def small_embedder_client(settings: Settings) -> Iterator[MemoryClient]:
    overrides = {"embedder": "hashing", "embedder_config": {"dimensions": 256}}
    with MemoryClient(Settings(**{**settings.model_dump(), **overrides})) as client:
        yield client


def test_embedder_mismatch_is_a_clear_error(
    shop: MemoryClient, small_embedder_client: MemoryClient
) -> None:
    with pytest.raises(EmbeddingDimensionMismatch) as err:
        small_embedder_client.search("buyer-001", "退款")
    assert str(shop.admin.embedder.dimensions) in err.value.message
    assert "256" in err.value.message
    with pytest.raises(EmbeddingDimensionMismatch):
        small_embedder_client.write("buyer-001", "退款", lifecycle_policy=EXPLICIT)


def test_end_session_stores_a_masked_interaction_record(mem: MemoryClient) -> None:
    from values.sessions import Turn

    t = datetime(2026, 6, 29, 10, 0, tzinfo=UTC)
    transcript = [
        Turn("user", "你好，我订单 88231 买的比特 S10 Pro 扫地机无法回充，想退款", t),
        Turn("assistant", "抱歉给您带来不便，请问付款金额是多少？", t + timedelta(minutes=1)),
        Turn("user", "1999 元，我的手机是 13812345678", t + timedelta(minutes=2)),
        Turn(
            "assistant",
            "已为您提交退款，退款编号 RF20260629001，预计 1-3 个工作日到账",
            t + timedelta(minutes=3),
        ),
    ]
    record = mem.end_session("buyer-001", "session-0629", transcript)
    assert "88231" in record.summary.summary_text
    assert "RF20260629001" in record.summary.summary_text
    assert "13812345678" not in record.summary.summary_text
    hit = mem.search("buyer-001", "上次的退款到账了吗", limit=1)[0]
    assert hit.memory_id == record.memory_id
    assert hit.kind == "interaction_record"
    assert hit.session_id == "session-0629"
    assert hit.occurred_at == t + timedelta(minutes=3)
    assert [r.kind for r in mem.pii.list("buyer-001")] == ["phone"]
    with mem.admin.database.transaction() as conn:
        expires = conn.execute(
            text("SELECT expires_at FROM memory_fragment WHERE id = :i"), {"i": record.memory_id}
        ).scalar_one()
    assert expires > datetime.now(UTC) + timedelta(days=89)


def test_get_list_delete_and_export(mem: MemoryClient) -> None:
    a = mem.write("buyer-001", "请记住我的邮箱是 zhang.wei@example.com", lifecycle_policy=EXPLICIT)
    b = mem.write("buyer-001", "订单 88231 退款中", lifecycle_policy=IMPLICIT)
    mem.write("buyer-002", "别人的记忆", lifecycle_policy=EXPLICIT)
    mem.profiles.update("buyer-001", expected_version=1, language="en-US")
    mem.links.add("buyer-001", entity_type="order", entity_id="88231", role="owner")
    record = mem.memories.get("buyer-001", a)
    assert record is not None
    assert "zhang.wei" not in record.text
    assert mem.memories.get("buyer-002", a) is None
    assert [r.id for r in mem.memories.list("buyer-001")] == [b, a]
    exported = mem.export_user("buyer-001")
    assert exported["profile"]["language"] == "en-US"
    assert [m["id"] for m in exported["memories"]] == [str(b), str(a)]
    assert exported["pii"][0]["value"] == "zhang.wei@example.com"
    assert exported["links"][0]["entity_id"] == "88231"
    assert "别人的记忆" not in str(exported)
    assert mem.memories.delete("buyer-001", b) is True
    assert mem.memories.delete("buyer-001", b) is False
    assert mem.memories.delete("buyer-002", a) is False
    assert [r.id for r in mem.memories.list("buyer-001")] == [a]


def test_contextual_indexing_finds_an_answer_through_its_question(mem: MemoryClient) -> None:
    t = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    turns = [
        "Melanie: How long have you been married?",
        "Caroline: 5 years already! Time flies.",
        "Melanie: Wow, congrats on the anniversary.",
    ]
    ids = mem.write_many(
        [
            MemoryInput(
                user_id="loco", text=x, lifecycle_policy=EXPLICIT, session_id="s1", occurred_at=t
            )
            for x in turns
        ],
        progress=False,
    )
    mem.write(
        "loco",
        "Caroline: I went hiking with my dog yesterday",
        lifecycle_policy=EXPLICIT,
        session_id="s2",
        occurred_at=t + timedelta(days=30),
    )
    hits = mem.search("loco", "How long has Caroline been married?", limit=3)
    assert ids[1] in [h.memory_id for h in hits[:2]]
    assert hits[0].text in turns  # the answer is returned as itself, without its context
    later = mem.write(
        "loco", "Caroline: Thanks!", lifecycle_policy=EXPLICIT, session_id="s1", occurred_at=t
    )
    with mem.admin.database.transaction() as conn:
        index_text = conn.execute(
            text("SELECT index_text FROM memory_fragment WHERE id = :i"), {"i": later}
        ).scalar_one()
    words = index_text.split()  # keyword terms: stemmed tokens
    assert words[:2] == [stem("caroline"), stem("thanks")]
    assert {stem(w) for w in ("congrats", "anniversary", "already", "may", "2023")} <= set(words)
    assert stem("married") not in words, "only the previous two turns are context"


def test_an_erasure_waits_for_a_write_that_holds_the_profile(mem: MemoryClient) -> None:
    import threading

    from structured_memory.repositories.fragments import hold_profiles

    mem.write("buyer-001", "旧记忆", lifecycle_policy=EXPLICIT)
    erased = threading.Event()
    with mem.admin.database.engine.connect() as conn, conn.begin():
        hold_profiles(conn, ["buyer-001"])

        def erase() -> None:
            mem.forget_user("buyer-001")
            erased.set()

        eraser = threading.Thread(target=erase)
        eraser.start()
        assert not erased.wait(0.5), "the erasure must wait for the write holding the profile"
        # the write goes on: without the lock its insert would now hit a deleted profile
        conn.execute(
            text(
                "INSERT INTO memory_fact (user_id, key, value, policy) "
                "VALUES ('buyer-001', 'k', '1', 'explicit')"
            )
        )
    eraser.join(30)
    assert erased.is_set()
    assert _count(mem, "SELECT count(*) FROM memory_fact") == 0
    assert _count(mem, "SELECT count(*) FROM memory_fragment") == 0


def test_a_private_memory_needs_an_agent(settings: Settings, mem: MemoryClient) -> None:
    with MemoryClient(settings) as anonymous, pytest.raises(InvalidField) as err:
        anonymous.write("buyer-001", "私有备注", lifecycle_policy=EXPLICIT, private=True)
    assert err.value.details["field"] == "private"
    assert _count(mem, "SELECT count(*) FROM memory_fragment") == 0


def test_a_write_for_an_unknown_or_erased_user_raises_and_writes_nothing(
    mem: MemoryClient,
) -> None:
    with pytest.raises(UserNotFound):
        mem.write("stranger-1", "我想退款", lifecycle_policy=EXPLICIT)
    mem.write("buyer-002", "订单 99999 已签收", lifecycle_policy=EXPLICIT)
    mem.forget_user("buyer-002")
    with pytest.raises(UserNotFound):
        mem.write("buyer-002", "迟到的写入不能让用户复活", lifecycle_policy=EXPLICIT)
    assert _count(mem, "SELECT count(*) FROM user_profile WHERE user_id = 'buyer-002'") == 0
    assert _count(mem, "SELECT count(*) FROM memory_fragment") == 0


def test_writers_of_one_user_share_the_profile_lock(mem: MemoryClient) -> None:
    """An open write holds the profile FOR KEY SHARE, which a second write does not wait for."""
    from structured_memory.repositories.fragments import hold_profiles

    with mem.admin.database.engine.connect() as first, first.begin():
        hold_profiles(first, ["buyer-001"])
        with mem.admin.database.engine.connect() as second, second.begin():
            second.execute(text("SET LOCAL lock_timeout = '200ms'"))
            hold_profiles(second, ["buyer-001"])  # FOR NO KEY UPDATE would time out here


def test_clients_for_other_agents_share_the_stores_not_the_identity(mem: MemoryClient) -> None:
    refund, shopping = mem.for_agent("refund-agent-2"), mem.for_agent("shopping-agent-2")
    secret = refund.write(
        "buyer-001", "只给退款助手看的备注：用户情绪激动", lifecycle_policy=EXPLICIT, private=True
    )
    public = shopping.write("buyer-001", "偏好顺丰配送", lifecycle_policy=EXPLICIT)
    record = refund.memories.get("buyer-001", secret)
    assert record is not None
    assert record.agent_id == "refund-agent-2"
    other = refund.memories.get("buyer-001", public)
    assert other is not None
    assert other.agent_id == "shopping-agent-2"
    assert shopping.memories.get("buyer-001", secret) is None
    assert secret not in [h.memory_id for h in shopping.search("buyer-001", "用户情绪 备注")]
    shopping.close()  # forgets its view only: the shared stores stay open
    assert mem.memories.get("buyer-001", public) is not None
    with pytest.raises(InvalidUserId):
        mem.for_agent("bad agent id!")


def test_reads_for_an_unknown_user_raise_like_writes(mem: MemoryClient) -> None:
    """Every call for a user without a profile raises UserNotFound (reads too), and a known
    user with nothing stored gets empty results."""
    for read in (
        lambda: mem.search("stranger-2", "退款到账了吗"),
        lambda: mem.memories.list("stranger-2"),
        lambda: mem.facts.list("stranger-2"),
    ):
        with pytest.raises(UserNotFound):
            read()
    assert list(mem.search("buyer-002", "退款到账了吗")) == []
    assert mem.memories.list("buyer-002") == []
    assert mem.facts.list("buyer-002") == []
