"""A later session changes a plan: earlier records show the replaced values as updated."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sdk import MemoryClient, Turn
from unstructured_memory.summariser import summarise
from unstructured_memory.summariser.replanned import (
    changes_plan,
    named_again,
    on_the_same_thing,
    plan_values,
    replanned_words,
)
from values.context import Section


@pytest.mark.parametrize(
    ("earlier", "later", "replaced"),
    [
        (
            "用户预约订单 7731 的格力空调周六上午 9 点到 12 点安装",
            "用户把订单 7731 的空调安装改到下周二下午 2 点到 6 点",
            ("周六", "上午", "9 点到 12 点"),
        ),
        (
            "用户订了 10 盒坚果礼盒，送到洛阳",
            "用户把坚果礼盒改成 15 盒，改寄郑州",
            ("10 盒", "洛阳"),
        ),
        ("用户开通牛奶周期购，每周二配送", "用户把牛奶周期购改成每两周一次", ("每周",)),
        ("用户定制沙发，燕麦色，1.5米", "用户把沙发改成墨绿色，1.8米", ("燕麦色", "1.5米")),
        (  # a colour named without 色: a shade word and its base colour
            "用户咨询 F90：电动车有曜石黑的吗",
            "用户进行了一般咨询：黑色的不要了，夏天太晒，改看冰川白",
            ("曜石黑",),
        ),
        ("用户购买手机壳，远峰蓝", "用户把手机壳换成石墨灰", ("远峰蓝",)),
        (
            "The user ordered 24 folding chairs for delivery on the 12th.",
            "The user cut the order to 18 folding chairs, delivery on the 9th.",
            ("24 folding chairs", "the 12th"),
        ),
        (
            "Dog food every 4 weeks; install Tuesday 8am.",
            "Dog food every 6 weeks; install Friday 1-5 pm.",
            ("every 4 weeks", "Tuesday", "8am"),
        ),
        (
            "用户购买 vivo X100 手机 512G（4999 元），花呗 12 期",
            "用户把手机改成 256G（4499 元），分 6 期",
            ("512G", "4999 元", "12 期"),
        ),
        (
            "The user bought the tablet with 256GB, paid in 12 monthly payments",
            "The user switched to the 128GB tablet, 6 payments",
            ("256GB", "12 monthly payments"),
        ),
        (  # paid in full since: the plan's count, per-instalment amount and dates go
            "用户办理订单 5520 的冰箱分期"
            "（客服确认：招行信用卡 12 期，每期 499 元，首期 15 号入账）",
            "用户咨询冰箱：分期不要了 直接全款（客服确认：已一次性扣款 5988 元）",
            ("12 期", "499 元", "15 号"),
        ),
        (
            "The user asked about order TB-1102 (tablet) (the agent confirmed: Pay in 4, "
            "four payments of $87.25 every two weeks)",
            "The user asked: put it all on my card instead",
            ("four payments", "$87.25", "every two weeks"),
        ),
        (
            "用户咨询订单 5512 的婴儿床：收件人写我妈张秀兰 她白天在家"
            "（客服确认：收件人已改为张秀兰）",
            "用户进行了一般咨询：婴儿床收件人改成我老公陈伟",
            ("张秀兰",),
        ),
        (
            "The user asked about the crib: the recipient is my sister Dana Whitfield",
            "The user asked: change the recipient to my husband, Marcus Hale",
            ("Dana Whitfield",),
        ),
    ],
)
def test_the_values_a_later_plan_replaced(
    earlier: str, later: str, replaced: tuple[str, ...]
) -> None:
    assert set(replanned_words(earlier, later)) == set(replaced)


def test_a_kind_the_later_record_does_not_name_and_a_value_it_keeps_stay() -> None:
    earlier = "用户订了格力空调，周三送货，白色"
    assert replanned_words(earlier, "用户把空调改成 2 台") == ()
    assert replanned_words(earlier, "用户问空调周三能不能早点送，星期三上午") == ()
    assert plan_values("颜色随便，出色的就行") == {}
    assert plan_values("我不明白为啥被拉黑，蛋白粉退押金，柜子都落了灰") == {}


@pytest.mark.parametrize(
    ("earlier", "later", "replaced"),
    [
        (  # the size that set the price changed: the old price goes with it
            "用户咨询订单 357190824466 的乳胶床垫 1.5米 x 2米的（2399 元）",
            "用户咨询床垫：要求床垫那个订单帮我改成 1.8 米",
            ("1.5米", "2米", "2399 元"),
        ),
        (
            "用户咨询订单 935810627249 的华为 Mate60（272.88 元）"
            "（客服确认：花呗 24 期，每期 272.88 元）",
            "用户要求手机分期换成 6 期",
            ("24 期", "272.88 元"),
        ),
        (
            "The user ordered 6 bottles of olive oil ($54)",
            "The user cut the olive oil to 4 bottles",
            ("6 bottles", "$54"),
        ),
    ],
)
def test_a_price_goes_with_the_quantity_size_or_plan_it_was_the_price_of(
    earlier: str, later: str, replaced: tuple[str, ...]
) -> None:
    assert set(replanned_words(earlier, later)) == set(replaced)


@pytest.mark.parametrize(
    ("earlier", "later", "replaced"),
    [
        (
            "The user asked about order RG-90217 (the agent confirmed: it's routed to the "
            "Amazon Hub Locker inside the Kroger on Maple, held for 3 days)",
            "The user switched the rug to the UPS Access Point at the CVS by their office",
            ("Amazon Hub Locker", "Kroger on Maple"),
        ),
        (
            "The user asked to hold the parcel at the Walgreens on 5th Avenue",
            "The user moved the pickup to the Target at Westfield Mall",
            ("Walgreens on 5th Avenue",),
        ),
    ],
)
def test_a_named_pickup_place_is_a_place(
    earlier: str, later: str, replaced: tuple[str, ...]
) -> None:
    """A shop or venue a parcel waits at, by its name (the Kroger on Maple, the CVS by my
    office), is a place: the later one replaces it."""
    assert set(replanned_words(earlier, later)) == set(replaced)


def test_a_price_stays_when_only_what_does_not_set_it_changed() -> None:
    earlier = "用户订了 2 台格力空调（5998 元），周三送货"
    assert replanned_words(earlier, "用户把空调送货改到周五") == ("周三",)
    assert replanned_words("The sofa, sage ($899)", "The user switched the sofa to charcoal") == (
        "sage",
    )


def test_an_order_pointed_back_at_is_the_last_records_whatever_its_product_word() -> None:
    """ "手机那单 … 内存改小一档": the order the user points back at without naming it is the
    last record's, though it called the phone 荣耀 Magic6 and the later session 手机."""
    earlier = [("ORDER_ID", "573290148826"), ("PRODUCT", "荣耀 Magic6")]
    later = [("PRODUCT", "手机")]
    assert on_the_same_thing(earlier, later, last=True, referred=True)
    assert not on_the_same_thing(earlier, later, last=True), "another product word, unpointed"
    assert not on_the_same_thing(earlier, later, last=False, referred=True), "not the last"
    other = [("ORDER_ID", "66120093")]
    assert not on_the_same_thing(earlier, other, last=True, referred=True), "another order named"
    assert changes_plan("手机那单还没发吧 内存改小一档 256 的够用了")


def test_what_counts_as_a_change_of_plan() -> None:
    assert changes_plan("那个空调安装改到下周二吧")
    assert changes_plan("Can you make it 18 chairs instead?")
    assert not changes_plan("空调什么时候到")
    assert not changes_plan("Where is my order?")
    assert changes_plan("上回的内存我说错了 其实是256G的")
    assert changes_plan("my bad, I meant the 128GB one")
    assert not changes_plan("应该是明天到吧")  # probably: no value put right
    assert not changes_plan("it should be here by Friday")
    assert changes_plan("the size I told you is wrong, she's a 7")
    assert changes_plan("turns out the ring I swiped is her pinky ring")


def test_an_earlier_record_shows_the_plan_a_later_session_changed(mem: MemoryClient) -> None:
    """Session 1 books an install for Saturday morning; session 2 moves it to Tuesday
    afternoon: the context shows Saturday as updated, Tuesday as the plan; another order's
    plan is untouched."""
    user = "buyer-replanned"
    mem.profiles.ensure(user)
    then = datetime.now(UTC) - timedelta(days=10)
    sessions = [
        (
            "订单 7731-2208 的空调约周六上午 9 点到 12 点装",
            "好的，已为您预约周六上午 9 点到 12 点上门安装。",
        ),
        ("订单 5520-1937 的热水器约周日下午装", "好的，已预约周日下午安装热水器。"),
        (
            "订单 7731-2208 的空调安装改到下周二下午吧，周六家里没人",
            "好的，已改约下周二下午 2 点到 6 点安装。",
        ),
    ]
    for n, (said, answer) in enumerate(sessions):
        at = then + timedelta(days=3 * n)
        mem.end_session(
            user,
            f"s-{n}",
            [Turn("user", said, at), Turn("assistant", answer, at + timedelta(minutes=1))],
        )
    ctx = mem.build_context(user, "空调哪天来装", max_tokens=800)
    records = [i.text for i in ctx.items if i.section is Section.RECORD]
    first = [r for r in records if "7731-2208" in r and "改" not in r]
    assert first, records
    assert all("周六" not in r and "9 点到 12 点" not in r and "[已更新]" in r for r in first), (
        records
    )
    assert any("周二" in r for r in records)
    assert any("周日下午" in r for r in records if "5520-1937" in r), "another order's plan stays"


def test_the_agents_confirmation_in_the_later_record_says_what_holds() -> None:
    later = (
        "用户把空调安装改到下周二下午，周六家里没人（客服确认：已改约下周二下午 2 点到 6 点安装）"
    )
    assert set(replanned_words("用户约了周六上午装空调", later)) == {"周六", "上午"}


def test_which_earlier_record_is_on_the_same_thing() -> None:
    order, other = ("ORDER_ID", "316520847391"), ("ORDER_ID", "552083647315")
    work = ("WORK_ORDER_ID", "AZ2026111403")
    assert on_the_same_thing([order, work], [order], last=False)
    assert not on_the_same_thing([order], [other], last=True), "another order"
    assert not on_the_same_thing([order, other], [other], last=True), "two orders: which one?"
    assert on_the_same_thing([("BRAND", "格力"), order], [("PRODUCT", "空调")], last=True)
    assert not on_the_same_thing([("BRAND", "格力"), order], [("PRODUCT", "空调")], last=False)
    assert not on_the_same_thing([("PRODUCT", "洗碗机")], [("PRODUCT", "油烟机")], last=True), (
        "another thing"
    )
    assert on_the_same_thing([("PRODUCT", "油烟机")], [("PRODUCT", "油烟机")], last=False)
    code = ("CODE", "316520847391")  # the order, read as a code by the later session
    assert on_the_same_thing([order], [code], last=False), "one id, whatever its label"


def test_a_value_the_later_record_refuses_is_no_plan_of_it() -> None:
    later = "用户咨询按摩椅：能不能别寄洛阳了 直接寄郑州金水区"
    assert replanned_words("用户的按摩椅直接寄洛阳老家", later) == ("洛阳",)
    assert on_the_same_thing([("PRODUCT", "定制布艺沙发")], [("PRODUCT", "沙发")], last=False)


def test_which_earlier_record_a_later_session_names_again() -> None:
    """A request taken back naming only the product or a code: the earlier record on it."""
    earlier = [("PRODUCT", "扫地机器人"), ("ORDER_ID", "962041853370"), ("TICKET_ID", "WX26-3378")]
    assert named_again(earlier, [("PRODUCT", "扫地机")], "扫地机不用修了", last=False)
    assert named_again(earlier, [("CODE", "WX26-3378")], "WX26-3378 关了吧", last=False)
    assert named_again(
        [("PRODUCT", "air fryer")],
        [("PRODUCT", "plug")],
        "never mind the air fryer repair",
        last=False,
    )
    assert not named_again(earlier, [("PRODUCT", "洗碗机")], "洗碗机不用修了", last=True)
    two = [("ORDER_ID", "746208315592"), ("ORDER_ID", "746208331184"), ("PRODUCT", "鼠标")]
    assert not named_again(two, [("PRODUCT", "鼠标")], "鼠标不退了 留着", last=True), (
        "which order is not known"
    )
    assert named_again(earlier, [], "上次那个维修不用了", last=True), (
        "nothing named: the last record"
    )
    assert not named_again(earlier, [], "上次那个维修不用了", last=False)


def _record(*said: str) -> str:
    turns = [Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(said)]
    return summarise("buyer-settled", "s-settled", turns).summary_text


@pytest.mark.parametrize(
    ("said", "gone", "kept"),
    [
        (  # another day proposed, the agent books it: the first day is no plan
            (
                "Can the fridge come Tuesday morning? order FR-55218",
                "Tuesday 9-12 works for order FR-55218.",
                "hmm, mornings are bad for me, what about Thursday afternoon?",
                "Thursday 1-5pm it is, you're booked.",
            ),
            ["Tuesday"],
            "Thursday",
        ),
        (  # sizes tried in turn, the last one taken
            (
                "这款登山鞋给我拿42码的",
                "42码有货。",
                "我想了下平时都穿43 那43的呢",
                "43码也有，已为您下单43码，订单 550218837716。",
            ),
            ["42码"],
            "43",
        ),
        (  # a colour and then another, picked without a cue word of change
            (
                "空气净化器有白色的吗 白色的多少钱",
                "白色款 1299 元，有货。",
                "那雾霾蓝的呢",
                "雾霾蓝也是 1299 元。",
                "就雾霾蓝吧 下单",
                "好的，雾霾蓝已下单。",
            ),
            ["白色"],
            "雾霾蓝",
        ),
    ],
)
def test_a_value_the_session_moved_on_from_is_no_plan_in_its_record(
    said: tuple[str, ...], gone: list[str], kept: str
) -> None:
    """Within one session the user proposes another value of a kind (a day, a size, a
    colour) and settles on it: the record does not state the first one as the plan."""
    text = _record(*said)
    assert kept in text, text
    assert not [g for g in gone if g in text.replace("[已更新]", "").replace("[updated]", "")], text


@pytest.mark.parametrize(
    ("said", "gone", "kept"),
    [
        (  # a plan named, then a smaller one taken with no word of change
            (
                "I'll take the 1TB backup plan at $6.99 a month",
                "The 1TB plan is $6.99/month, shall I start it?",
                "actually I only need 100GB, that one's $1.49 right? fine",
                "Started the 100GB plan at $1.49/month, subscription QX-100-22817.",
            ),
            ["1TB", "$6.99"],
            "100GB",
        ),
        (  # a bandwidth, then a faster one
            (
                "宽带办个200M的 一个月59对吧",
                "是的，200M 59元/月。",
                "家里人多 上个500M的",
                "好的，已为您办理 500M 99 元/月，受理单 KD-3318-20417。",
            ),
            ["200M"],
            "500M",
        ),
        (  # a shoe size, then the next one up, said as a thought
            (
                "跑鞋拿44码",
                "好的，44码。",
                "穿厚袜子的话 45码稳妥点",
                "已为您下单45码跑鞋，订单 7712039944。",
            ),
            ["44码"],
            "45码",
        ),
        (  # a letter size, then the one below it
            (
                "卫衣拿XL的 灰色",
                "好的，灰色XL。",
                "最近瘦了不少 L应该够了",
                "好的，已为您下单灰色L码卫衣，订单 6610238841。",
            ),
            ["XL"],
            "L码",
        ),
    ],
)
def test_a_value_the_agents_confirmation_settled_otherwise_is_no_plan_in_its_record(
    said: tuple[str, ...], gone: list[str], kept: str
) -> None:
    """The agent confirms the plan the session settled on (Started the 100GB plan, 已为您办理
    500M): a value of the same kind the record names and the confirmation does not is shown
    as updated, and so is its price."""
    text = "".join(_record(*said).split())
    assert kept in text, text
    assert not [g for g in gone if g in text.replace("[已更新]", "").replace("[updated]", "")], text


@pytest.mark.parametrize(
    "said",
    [
        (  # two things, each its own colour: both stand
            "黑色的保温杯来一个",
            "好的，黑色保温杯。",
            "再加一个白色的饭盒",
            "好的，黑色保温杯和白色饭盒都已下单。",
        ),
        (  # a compensation confirmed: no price of the order it was for
            "扫地机1999元买的 才用一个月就不回充了",
            "给您补偿 50 元，已发放到账户。",
        ),
        (  # a second order's day asked about: no change of the first
            "can the sofa come Saturday? order SF-22017",
            "Saturday works for SF-22017.",
            "great. and my sister's rug arrives Monday, right?",
            "Yes, Monday.",
        ),
    ],
)
def test_values_of_two_things_in_one_session_both_stand(said: tuple[str, ...]) -> None:
    text = _record(*said)
    assert "[已更新]" not in text, text
    assert "[updated]" not in text, text


def test_a_change_said_in_one_turn_is_the_corrections_not_a_move_between_turns() -> None:
    """浅色怕抓脏 换成墨绿色 names two colours in one turn; the agent's 改为墨绿色 holds the
    second: the new colour stays in the record."""
    text = _record(
        "沙发还没开始做吧 想换个颜色 家里新养了只猫 浅色怕抓脏 换成墨绿色行不",
        "还没排产，可以改。已为您把颜色改为墨绿色，工期不受影响。",
    )
    assert "墨绿" in text, text
