"""The prompt context: budget, order of priority, PII, pending questions, sandboxes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.tokens import count_tokens
from sdk import InvalidField, LifecyclePolicy, MemoryClient, UserNotFound
from sdk.context import fit
from values.context import ContextItem, Section

EXPLICIT = LifecyclePolicy.EXPLICIT
IMPLICIT = LifecyclePolicy.IMPLICIT
PHONE = "13912345678"


@pytest.fixture
def buyer(mem: MemoryClient) -> MemoryClient:
    mem.profiles.ensure("buyer-001")
    mem.profiles.ensure("buyer-002")
    p = mem.profiles.get("buyer-001")
    mem.profiles.update(
        "buyer-001", expected_version=p.version, notification_preference={"wechat": True}
    )
    mem.links.add("buyer-001", entity_type="refund", entity_id="RF20260629001", role="owner")
    mem.facts.put("buyer-001", "售后偏好", "退款优先", lifecycle_policy=EXPLICIT)
    mem.write(
        "buyer-001",
        f"用户因订单 88231 的扫地机不回充申请退款 RF20260629001，联系电话 {PHONE}",
        lifecycle_policy=IMPLICIT,
    )
    mem.write("buyer-002", "别人的订单 99999 退款已到账", lifecycle_policy=EXPLICIT)
    return mem


def test_the_block_holds_profile_facts_business_and_records(buyer: MemoryClient) -> None:
    ctx = buyer.build_context("buyer-001", "昨天那个退款到账了吗", max_tokens=600)
    assert ctx.tokens <= 600
    assert ctx.tokens == count_tokens(ctx.text)
    assert ctx.text.startswith("【用户长期记忆】")
    assert "wechat" in ctx.text
    assert "售后偏好：退款优先" in ctx.text
    assert "退款 RF20260629001" in ctx.text
    assert "状态未核实" in ctx.text, "no verifier: flagged, not presented as current"
    assert "88231" in ctx.text
    assert [i.section for i in ctx.items][:1] == [Section.PROFILE]
    assert ctx.message() == {"role": "system", "content": ctx.text}


def test_no_pii_in_clear_and_no_other_users_content(buyer: MemoryClient) -> None:
    ref = buyer.pii.store("buyer-001", "phone", "13800138000")
    buyer.facts.put(
        "buyer-001",
        "备用手机",
        {"vault_id": str(ref.id), "kind": "phone"},
        lifecycle_policy=LifecyclePolicy.SENSITIVE,
    )
    ctx = buyer.build_context("buyer-001", "退款 电话", max_tokens=800)
    assert PHONE not in ctx.text
    assert "13800138000" not in ctx.text
    assert "138****8000" in ctx.text, "the masked form, with the vault reference"
    assert str(ref.id) in ctx.text
    assert "99999" not in ctx.text


def test_pending_memories_are_questions_not_facts(buyer: MemoryClient) -> None:
    buyer.facts.put("buyer-001", "内容偏好", "图文", lifecycle_policy=IMPLICIT, confidence=0.2)
    ctx = buyer.build_context("buyer-001", "推荐一个扫地机", max_tokens=800)
    questions = [i for i in ctx.items if i.section is Section.QUESTION]
    assert [q.status for q in questions] == ["pending_confirmation"]
    assert "内容偏好：图文" in questions[0].text
    assert "还是这样吗" in questions[0].text
    assert all("内容偏好" not in i.text for i in ctx.items if i.section is Section.FACT)


def test_a_small_budget_keeps_the_profile_and_drops_the_rest(buyer: MemoryClient) -> None:
    ctx = buyer.build_context("buyer-001", "退款", max_tokens=90)
    assert ctx.tokens <= 90
    assert [i.section for i in ctx.items] == [Section.PROFILE]
    assert ctx.omitted >= 3
    with pytest.raises(InvalidField):
        buyer.build_context("buyer-001", "退款", max_tokens=10)
    with pytest.raises(UserNotFound):
        buyer.build_context("stranger", "退款")


def test_inside_a_sandbox_the_block_includes_its_writes(buyer: MemoryClient) -> None:
    with buyer.sandbox("buyer-001", "s-2"):
        buyer.write("buyer-001", "这次想换 S20 扫地机", lifecycle_policy=IMPLICIT)
        inside = buyer.build_context("buyer-001", "扫地机", max_tokens=600)
    outside = buyer.build_context("buyer-001", "扫地机", max_tokens=600)
    assert "S20" in inside.text
    assert "S20" not in outside.text


def test_an_english_profile_gets_an_english_block(mem: MemoryClient) -> None:
    mem.profiles.ensure("buyer-en")
    p = mem.profiles.get("buyer-en")
    mem.profiles.update("buyer-en", expected_version=p.version, language="en-US")
    mem.write("buyer-en", "Refund for order 88231 requested", lifecycle_policy=EXPLICIT)
    ctx = mem.build_context("buyer-en", "refund", max_tokens=300)
    assert ctx.text.startswith("[Long-term memory of this user]")
    assert "order 88231" in ctx.text


_ITEMS = st.lists(
    st.builds(
        ContextItem,
        st.sampled_from(list(Section)),
        st.text(alphabet=st.sampled_from("退款订单 abc123，。😀"), min_size=1, max_size=60),
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(items=_ITEMS, budget=st.integers(min_value=40, max_value=400))
def test_fit_never_exceeds_the_budget_and_keeps_priority(
    items: list[ContextItem], budget: int
) -> None:
    titles = {s: s.value for s in Section}
    text, chosen, omitted = fit("HEADER", titles, items, budget)
    assert count_tokens(text) <= budget
    assert len(chosen) + omitted == len(items)
    order = [list(Section).index(i.section) for i in chosen]
    assert order == sorted(order)


def test_masked_fact_values_and_attributes_show_masked_text_only(buyer: MemoryClient) -> None:
    buyer.facts.put("buyer-001", "收货电话", "收货电话 13800138000", lifecycle_policy=EXPLICIT)
    p = buyer.profiles.get("buyer-001")
    buyer.profiles.update(
        "buyer-001", expected_version=p.version, attributes={"备用手机": "13700137000"}
    )
    ctx = buyer.build_context("buyer-001", "电话", max_tokens=800)
    vault_ids = {str(r.id) for r in buyer.pii.list("buyer-001")}
    assert "138****8000" in ctx.text
    assert "137****7000" in ctx.text
    assert "13800138000" not in ctx.text
    assert "13700137000" not in ctx.text
    assert not any(v in ctx.text for v in vault_ids), "no vault id of a masked leaf in the prompt"


def test_business_items_carry_the_state_verified_just_now(buyer: MemoryClient) -> None:
    from datetime import UTC, datetime

    from sdk import BusinessState

    system_of_record = {"RF20260629001": "处理中"}

    def refunds(entity_type: str, entity_id: str) -> BusinessState | None:
        state = system_of_record.get(entity_id)
        return None if state is None else BusinessState(state, None, datetime.now(UTC))

    buyer.register_verifier("refund", refunds)
    before = buyer.build_context("buyer-001", "退款到账了吗", max_tokens=600)
    assert "退款 RF20260629001：处理中（已核实" in before.text
    system_of_record["RF20260629001"] = "已到账"  # overnight, outside the conversation
    after = buyer.build_context("buyer-001", "退款到账了吗", max_tokens=600)
    assert "退款 RF20260629001：已到账（已核实" in after.text
    assert "处理中" not in after.text

    def down(entity_type: str, entity_id: str) -> BusinessState | None:
        raise ConnectionError("the refund service is down")

    buyer.register_verifier("refund", down)
    failed = buyer.build_context("buyer-001", "退款到账了吗", max_tokens=600)
    assert "退款 RF20260629001：已到账（此刻无法核实，这是上次记录的状态" in failed.text


def test_what_sessions_taught_reaches_the_block(mem: MemoryClient) -> None:
    """Facts and stable preferences learned at session end (``attributes["learned"]``) are
    lines of the block, masked; an address shows its masked form only."""
    from datetime import UTC, datetime, timedelta

    from sdk import Turn

    mem.profiles.ensure("buyer-learned")
    start = datetime.now(UTC) - timedelta(days=3)
    said = "我是 88VIP 会员，给爸妈买的话 800 元以内，寄到 上海市浦东新区张杨路500号"
    for n in range(3):  # a preference is stable once three sessions said it
        at = start + timedelta(hours=n)
        mem.end_session(
            "buyer-learned",
            f"s-{n}",
            [Turn("user", said, at), Turn("assistant", "好的。", at + timedelta(minutes=1))],
        )
    ctx = mem.build_context("buyer-learned", "给爸妈挑个按摩椅", max_tokens=600)
    facts = "\n".join(i.text for i in ctx.items if i.section is Section.FACT)
    assert "上海市浦东新区[地址]" in facts
    assert "88VIP会员" in facts
    assert "800元" in facts
    assert "张杨路" not in ctx.text


def test_a_record_naming_a_value_replaced_since_shows_it_as_replaced(mem: MemoryClient) -> None:
    """An old record names the phone the user has since replaced: the ledger keeps its words
    (search still finds them), the context shows the old model as updated, never as theirs."""
    from datetime import UTC, datetime, timedelta

    from sdk import Turn

    mem.profiles.ensure("buyer-replaced")
    then = datetime.now(UTC) - timedelta(days=40)
    sessions = [
        ("我用的是 iPhone 13，20W 的充电头有吗", "有的，这款 20W 快充适配 iPhone 13，39 元。"),
        ("之前那个苹果不用了，换了华为 Mate 60 Pro，66W 的快充能用吧", "可以的，完全兼容。"),
    ]
    for n, (said, answer) in enumerate(sessions):
        at = then + timedelta(days=30 * n)
        mem.end_session(
            "buyer-replaced",
            f"s-{n}",
            [Turn("user", said, at), Turn("assistant", answer, at + timedelta(minutes=1))],
        )
    ctx = mem.build_context("buyer-replaced", "iPhone 13 充电头还有吗", max_tokens=600)
    records = [i.text for i in ctx.items if i.section is Section.RECORD]
    assert any("[已更新]" in r and "充电头" in r for r in records), records
    assert "iPhone 13" not in ctx.text
    assert "iPhone13" not in ctx.text
    assert "Mate 60 Pro" in ctx.text
    hits = mem.search("buyer-replaced", "iPhone 13 充电头", limit=5)
    assert any("iPhone 13" in h.text for h in hits), "the ledger keeps what was said"


def test_a_record_naming_a_value_refused_since_shows_it_as_replaced(mem: MemoryClient) -> None:
    """An instruction now in force refuses a place an old record names: the record shows
    it as updated, the instruction keeps its own words."""
    mem.profiles.ensure("buyer-refused")
    mem.write("buyer-refused", "用户咨询：默认送到金融港B座 前台签收", lifecycle_policy=IMPLICIT)
    mem.facts.put(
        "buyer-refused",
        "收货方式",
        "以后别再往金融港B座送了 都送小区门口",
        lifecycle_policy=EXPLICIT,
    )
    ctx = mem.build_context("buyer-refused", "快递送哪", max_tokens=600)
    records = [i.text for i in ctx.items if i.section is Section.RECORD]
    assert any("前台签收" in r and "[已更新]" in r and "金融港B座" not in r for r in records)
    assert "别再往金融港B座送了" in ctx.text


def test_an_older_fact_naming_a_value_a_newer_instruction_refuses_shows_it_as_replaced(
    mem: MemoryClient,
) -> None:
    """A note says parcels may go to neighbour 3B; a later instruction refuses 3B: the note
    shows it as updated, the instruction keeps its own words; a newer note is untouched by
    an older instruction."""
    import time

    mem.profiles.ensure("buyer-refused-fact")
    mem.facts.put(
        "buyer-refused-fact",
        "note:neighbour",
        "家里没人就放 3B 邻居家，她天天在家",
        lifecycle_policy=EXPLICIT,
    )
    time.sleep(0.01)
    mem.facts.put(
        "buyer-refused-fact",
        "dropoff",
        "以后别再放 3B 了，都放物业前台",
        lifecycle_policy=EXPLICIT,
    )
    ctx = mem.build_context("buyer-refused-fact", "快递放哪", max_tokens=600)
    facts = [i.text for i in ctx.items if i.section is Section.FACT]
    assert any("邻居家" in f and "[已更新]" in f and "3B" not in f for f in facts), facts
    assert any("别再放 3B 了" in f for f in facts), facts


@pytest.mark.parametrize(("days", "shown"), [(20, False), (2, True)])
def test_a_temporary_intent_whose_week_is_over_is_left_out(
    mem: MemoryClient, days: int, shown: bool
) -> None:
    """A note of this week said 20 days ago is history: the context leaves it out."""
    from datetime import UTC, datetime, timedelta

    from sdk import Turn

    user = f"buyer-away-{days}"
    mem.profiles.ensure(user)
    at = datetime.now(UTC) - timedelta(days=days)
    mem.end_session(
        user,
        "s-away",
        [
            Turn("user", "这周我在外地培训 快递先放物业前台 回来了还是送家里", at),
            Turn("assistant", "好的，本周快递先放物业前台。", at + timedelta(minutes=1)),
        ],
    )
    ctx = mem.build_context(user, "快递放哪了", max_tokens=600)
    assert ("在外地培训" in ctx.text) is shown
