"""The agent's acknowledgement of a standing arrangement the user's words gave no rule."""

from __future__ import annotations

from unstructured_memory.profile.base import Instruction
from unstructured_memory.profile.rules import RuleExtractor
from unstructured_memory.summariser.summary import summarise
from values.sessions import Role, Turn


def _instructions(*turns: tuple[Role, str]) -> tuple[Instruction, ...]:
    said = [Turn(r, t) for r, t in turns]
    return RuleExtractor().extract(said, summarise("u-ack", "s-ack", said)).instructions


def test_an_acknowledged_arrangement_the_rules_missed_is_kept_in_the_agents_words() -> None:
    kept = _instructions(
        ("user", "退货的快递员三次都没来 算了 退货我都自己拿楼下驿站寄 不用安排上门取件了 等不起"),
        ("assistant", "好的，已记下：您退货自行送驿站寄回，不安排上门取件。"),
    )
    notes = [i.text for i in kept if "驿站" in i.text]
    assert notes == ["用户退货自行送驿站寄回，不安排上门取件"]


def test_an_english_acknowledgement_is_kept_in_the_third_person() -> None:
    kept = _instructions(
        ("user", "Company: Lakeside Studio Ltd. Electronic only."),
        (
            "assistant",
            "Done, an electronic fapiao to Lakeside Studio Ltd., saved as your default "
            "for work purchases.",
        ),
    )
    assert any("Lakeside Studio" in i.text and "their default" in i.text for i in kept), kept


def test_no_arrangement_of_one_order_a_channel_a_question_or_what_the_user_said() -> None:
    assert not _instructions(("user", "这单帮我放门卫吧"), ("assistant", "好的，已备注放门卫。"))
    assert not _instructions(
        ("user", "上班接不了电话"), ("assistant", "好的，之后改为短信通知您。")
    )
    assert not [
        i
        for i in _instructions(
            ("user", "床垫这种大件一般怎么发"), ("assistant", "以后大件都给您发德邦可以吗？")
        )
        if "德邦" in i.text
    ]
    assert not _instructions(
        ("user", "heads up the treadmill delivery is gonna need two guys, no elevator"),
        ("assistant", "Noted, I've booked a two-person crew with the stair-carry add-on."),
    )
    kept = _instructions(
        ("user", "师傅周六上午来装吧 那会儿家里有人"),
        ("assistant", "好的，已记下，已为您预约周六上午上门安装。"),
    )
    assert not [i for i in kept if "预约" in i.text]
    kept = _instructions(("user", "以后都发顺丰吧"), ("assistant", "好的，已备注以后都发顺丰。"))
    assert [i.text for i in kept if "顺丰" in i.text] == ["以后都发顺丰吧"]


def test_an_acknowledgement_goes_under_its_topic_or_the_instruction_it_restates() -> None:
    kept = _instructions(
        ("user", "猫砂能发顺丰吗，我们这别的快递都放驿站太远了"),
        ("assistant", "可以的亲，已备注发顺丰。"),
    )
    assert [i.text for i in kept if i.key == "carrier"] == ["发顺丰"]
    kept = _instructions(
        ("user", "床垫送到了，大件以后都走德邦吧，上门送还挺稳"),
        ("assistant", "好的，已备注大件优先德邦物流。"),
    )
    assert [i.text for i in kept if "德邦" in i.text] == ["大件以后都走德邦吧；大件优先德邦物流"]


def test_an_acknowledgement_the_user_amended_afterwards_is_not_kept() -> None:
    kept = _instructions(
        ("user", "快递柜老满 你们让快递员放一楼物业那儿"),
        ("assistant", "好的，已备注：以后快递放一楼物业处。"),
        ("user", "不对 物业晚上不开门 算了 还是放门口吧"),
        ("assistant", "好的。"),
    )
    assert not [i for i in kept if "物业处" in i.text]


def test_pii_in_an_acknowledgement_is_masked() -> None:
    kept = _instructions(
        ("user", "快递员老找不到门 以后让他到了先打我同事电话"),
        ("assistant", "好的，已备注：以后快递到了先联系您同事 13912345678。"),
    )
    assert kept
    assert not [i for i in kept if "13912345678" in i.text]


def test_an_acknowledgement_in_other_words_of_noting_counts() -> None:
    kept = _instructions(
        ("user", "上回说的不对 我家老大其实是芒果过敏 菠萝没事"),
        ("assistant", "明白了，是芒果过敏，菠萝可以吃，已经记下。"),
    )
    assert any("芒果过敏" in i.text for i in kept), kept


def test_an_acknowledgement_after_another_sentence_starts_at_its_own_words() -> None:
    """The agent's turn opens on something else (凝珠买一送一。); the acknowledgement kept is
    its own sentence, no stop carried over from the one before."""
    kept = _instructions(
        ("user", "以后我的东西直接放我家门口 门口有个白色鞋柜 放鞋柜上面就行"),
        ("assistant", "凝珠这周买一送一，给您加了两袋。以后快递放您家门口鞋柜上，已更新备注。"),
    )
    assert kept, kept
    assert not [i.text for i in kept if "。" in i.text or "；。" in i.text], kept
