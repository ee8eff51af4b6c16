"""The agent's last confirmation in the record: what the session settled on."""

from __future__ import annotations

from unstructured_memory.summariser.agreed import BUDGET, agreed, with_agreed
from unstructured_memory.summariser.amended import Amended
from unstructured_memory.summariser.summary import summarise
from values.sessions import Role, Turn


def _record(*turns: tuple[Role, str]) -> str:
    return summarise("u-agreed", "s-agreed", [Turn(r, t) for r, t in turns]).summary_text


def test_the_agents_confirmation_of_a_choice_is_kept() -> None:
    record = _record(
        ("user", "手机膜有几种？我是 iPhone 15 Pro"),
        ("assistant", "有高清款 29 元和防窥款 39 元两种，都是两片装。"),
        ("user", "防窥的吧，同事老爱偷看"),
        ("assistant", "好的，已为您下单：iPhone 15 Pro 防窥钢化膜两片装，39 元，明天发货。"),
    )
    assert "客服确认" in record
    assert "防窥钢化膜两片装" in record
    assert "39 元" in record
    assert "为用户下单" in record, "the agent's 您 is the user"


def test_an_english_confirmation_is_kept_in_the_third_person() -> None:
    record = _record(
        ("user", "Do you have the braided USB-C cable in 1 m and 2 m?"),
        ("assistant", "Yes, 1 m is $9.99 and 2 m is $12.99."),
        ("user", "The longer one, my desk is far from the socket."),
        ("assistant", "Done, your order is now the 2 m braided cable at $12.99."),
    )
    assert "(the agent confirmed: their order is now the 2 m braided cable at $12.99)" in record


def test_a_confirmation_the_user_changed_afterwards_is_not_kept() -> None:
    record = _record(
        ("user", "篮球鞋给我换 42 码"),
        ("assistant", "好的，已为您换成 42 码，明天寄出。"),
        ("user", "算了，还是 41 吧，42 试了偏大"),
        ("assistant", "好的。"),
    )
    assert "已为用户换成 42 码" not in record
    assert "客服确认" not in record


def test_a_confirmation_before_the_users_last_value_is_not_kept() -> None:
    record = _record(
        ("user", "Can I change the ring on order 55120931 to a size 7?"),
        ("assistant", "Sure, size 7 it is, shipping Monday."),
        ("user", "Hmm, 6.5 please, I measured again."),
        ("assistant", "Sure thing, all updated."),
    )
    assert "size 7 it is" not in record


def test_general_rules_questions_and_standing_instructions_are_not_kept() -> None:
    record = _record(
        ("user", "运单 SF1234567890123 的快递啥时候到？"),
        ("assistant", "好的，一般 3-5 天到，这单已到杭州中转站。要不要帮您催一下 8 号仓？"),
    )
    assert "3-5 天" not in record.partition("客服确认")[2]
    assert "8 号仓" not in record
    record = _record(
        ("user", "以后大件都走德邦，顺丰太贵了"),
        ("assistant", "好的，已备注：以后大件都给您发德邦 3 天达。"),
    )
    assert "客服确认" not in record, "the profile keeps the standing instruction"


def test_pii_in_a_confirmation_is_masked() -> None:
    record = _record(
        ("user", "订单 2409155812 的收货电话改成 13912345678"),
        ("assistant", "好的，订单 2409155812 的收货电话已改为 13912345678，明天 18 点前送达。"),
    )
    assert "13912345678" not in record
    assert "明天 18 点前送达" in record


def test_the_confirmation_keeps_within_its_budget_and_reads_the_view() -> None:
    text = "好的，已为您下单：" + "，".join(f"第 {k} 件 A{k}00 型号" for k in range(1, 30))
    clauses = agreed(
        Amended(view=text, entities=[], wrong=frozenset()),
        [("assistant", 0, len(text))],
        0,
        "",
        lang="zh",
        specific=lambda a, b: False,
    )
    assert clauses
    assert sum(len(c) for c in clauses) <= BUDGET["zh"]
    assert with_agreed("用户下单", [], "zh") == "用户下单"
    assert with_agreed("用户下单", ["A100"], "zh") == "用户下单（客服确认：A100）"


def test_a_change_the_agent_reports_done_is_a_confirmation_wherever_the_turn_opens() -> None:
    record = _record(
        (
            "user",
            "has 8830417 shipped? if not can I switch the colour, the sage looks off... "
            "charcoal please",
        ),
        (
            "assistant",
            "It hadn't shipped yet, so I've changed it to charcoal. Same price, ships Thursday.",
        ),
    )
    assert "(the agent confirmed: so I've changed it to charcoal" in record, record
    record = _record(
        ("user", "九号那台还没发吧 颜色能换不 黑的夏天太晒了 要冰川白"),
        ("assistant", "亲，还没发货，已经帮您改成冰川白了，价格不变。"),
    )
    assert "（客服确认：已经帮用户改成冰川白了" in record, record


def test_a_turn_reporting_the_step_done_is_a_confirmation() -> None:
    """An agent opening with what it did (Started, Placed, Booked…) or saying an order *is*
    changed confirms what the session settled on."""
    record = _record(
        ("user", "The 3-month meal box or the 6-month one, which is cheaper per week?"),
        ("assistant", "The 6-month box works out at $41 a week against $45."),
        ("user", "6 months then"),
        ("assistant", "Placed the 6-month box at $41 a week, order MB-55027."),
    )
    assert "(the agent confirmed: Placed the 6-month box at $41 a week" in record, record
    record = _record(
        ("user", "the table length I gave you is wrong, it should be 160 not 180"),
        ("assistant", "Just in time: TB-30281 is updated to 160 cm."),
    )
    assert "TB-30281 is updated to 160 cm" in record, record
