"""Session end against the real store: what later acts amend is what every agent sees next.

A direct instruction is live for another agent's very next context; an instruction no
profile field holds is an explicit fact; a correction said in a later session rewrites
what an earlier one stored (records, links); a withdrawn topic leaves the profile.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sdk import LifecyclePolicy, MemoryClient, Settings
from unstructured_memory.summariser import Turn

USER = "buyer-amend-001"
T0 = datetime.now(UTC) - timedelta(days=3)


def _session(mem: MemoryClient, session: str, *said: tuple[str, str], day: int = 0) -> None:
    at = T0 + timedelta(days=day)
    turns = [
        Turn("user" if role == "u" else "assistant", text, at + timedelta(minutes=i))
        for i, (role, text) in enumerate(said)
    ]
    mem.end_session(USER, session, turns)


def _told(mem: MemoryClient, user: str, *sessions: list[tuple[str, str]]) -> list[str]:
    """Each of ``sessions`` (``(role, text)`` turns) ended three days after the one before,
    for ``user``; the texts of the user's memories after them."""
    mem.profiles.ensure(user)
    start = datetime.now(UTC) - timedelta(days=3 * len(sessions))
    for n, said in enumerate(sessions):
        at = start + timedelta(days=3 * n)
        turns = [Turn(r, t, at + timedelta(minutes=i)) for i, (r, t) in enumerate(said)]  # type: ignore[arg-type]
        mem.end_session(user, f"s-{n}", turns)
    return [m.text for m in mem.memories.list(user)]


def test_an_instruction_is_live_for_another_agent_at_once(
    mem: MemoryClient, settings: Settings
) -> None:
    mem.profiles.ensure(USER)
    with MemoryClient(settings, agent_id="refund-agent") as refunds:
        _session(refunds, "s-1", ("u", "以后有事微信通知我，别再发邮件了"), ("a", "好的。"))
    with MemoryClient(settings, agent_id="shopping-agent") as shopping:
        ctx = shopping.build_context(USER, "发货了告诉我", max_tokens=600)
        profile = shopping.profiles.get(USER)
    assert "通知渠道 wechat" in ctx.text
    assert "email" not in ctx.text, "the refused channel is switched off"
    assert [c for c, on in profile.notification_preference.items() if on] == ["wechat"]


def test_an_instruction_no_field_holds_is_an_explicit_fact_for_every_agent(
    mem: MemoryClient, settings: Settings
) -> None:
    mem.profiles.ensure(USER)
    _session(mem, "s-1", ("u", "大件都走德邦，放小区东门的丰巢柜"), ("a", "好的，已备注。"))
    facts = {f.key: f for f in mem.facts.list(USER)}
    assert facts["carrier"].policy == "explicit"
    assert "德邦" in str(facts["carrier"].value)
    assert "丰巢" in str(facts["dropoff"].value)
    with MemoryClient(settings, agent_id="logistics-agent") as logistics:
        ctx = logistics.build_context(USER, "我买的沙发什么时候到", max_tokens=600)
    assert "快递：" in ctx.text
    assert "德邦" in ctx.text
    assert "丰巢" in ctx.text
    _session(mem, "s-2", ("u", "以后别用德邦了，大件改走京东"), ("a", "好的。"), day=1)
    carrier = mem.facts.get(USER, "carrier")
    assert carrier is not None
    assert "京东" in str(carrier.value), "the newer instruction of a topic replaces the older"


@pytest.mark.parametrize(
    ("user", "key", "old", "said", "new"),
    [
        (
            "buyer-dropoff-fact-zh",
            "delivery_dropoff",
            "南门菜鸟驿站",
            "以后快递直接放我家门口的鞋柜上 别放驿站了",
            "鞋柜",
        ),
        (
            "buyer-dropoff-fact-en",
            "preferred_drop_off",
            "parcel locker on Birch St",
            "from now on just leave parcels on the bench by my front door",
            "bench",
        ),
    ],
)
def test_an_instruction_replaces_an_agents_fact_whose_key_names_its_topic(
    mem: MemoryClient, *, user: str, key: str, old: str, said: str, new: str
) -> None:
    """An agent stored the drop-off under a key of its own (``delivery_dropoff``); the
    user's later instruction on the drop-off is the newest word on it: the agent's fact
    goes, whatever key it was under."""
    mem.profiles.ensure(user)
    mem.facts.put(user, key, old, lifecycle_policy=LifecyclePolicy.EXPLICIT)
    _told(mem, user, [("user", said), ("assistant", "OK / 好的")])
    values = [str(f.value) for f in mem.facts.list(user)]
    assert any(new in v for v in values), values
    assert not [v for v in values if old in v], values


@pytest.mark.parametrize(
    ("user", "key", "old", "said", "new"),
    [
        (
            "buyer-car-fact-zh",
            "vehicle",
            "丰田卡罗拉2018款",
            "车载冰箱到了挺好 对了卡罗拉卖了 上周提了台极氪001",
            "极氪001",
        ),
        (
            "buyer-car-fact-en",
            "my_car",
            "2014 Ford Focus",
            "the seat covers fit great. btw we're a Kia EV6 household now",
            "EV6",
        ),
        (
            "buyer-birth-fact-zh",
            "pregnancy",
            "孕32周 预产期12月初",
            "奶瓶收到了 闺女上周生的 七斤 母女平安",
            "闺女",
        ),
        (
            "buyer-shift-fact-zh",
            "occupation",
            "夜班保安",
            "耳塞效果不错 我调到白班了 现在晚上才在家",
            "白班",
        ),
    ],
)
def test_news_of_a_fact_replaces_an_agents_fact_whose_key_names_its_topic(
    mem: MemoryClient, settings: Settings, *, user: str, key: str, old: str, said: str, new: str
) -> None:
    """An agent stored the user's car (or work) under a key of its own; the user's later
    news of it is the newest word: the agent's fact goes, the new value stands."""
    mem.profiles.ensure(user)
    mem.facts.put(user, key, old, lifecycle_policy=LifecyclePolicy.EXPLICIT)
    _told(mem, user, [("user", said), ("assistant", "OK / 好的")])
    assert mem.facts.get(user, key) is None
    with MemoryClient(settings, agent_id="shopping-agent") as other:
        ctx = other.build_context(user, "给我的车配个手机支架 / a phone mount", max_tokens=600)
    assert new in ctx.text
    assert old not in ctx.text


def test_the_same_car_named_again_keeps_an_agents_fact(mem: MemoryClient) -> None:
    user = "buyer-car-fact-same"
    mem.profiles.ensure(user)
    mem.facts.put(user, "vehicle", "比亚迪海豹", lifecycle_policy=LifecyclePolicy.EXPLICIT)
    _told(mem, user, [("user", "给我的车买套脚垫 比亚迪海豹 要黑色"), ("assistant", "好的")])
    car = mem.facts.get(user, "vehicle")
    assert car is not None
    assert "海豹" in str(car.value)


def test_an_instruction_on_part_of_a_topic_leaves_an_agents_fact_of_another_part(
    mem: MemoryClient,
) -> None:
    """An invoice is kept in parts by an agent (its title); the user's word on its format
    (电子的) replaces no title."""
    user = "buyer-invoice-title-kept"
    mem.profiles.ensure(user)
    mem.facts.put(
        user, "invoice_title", "苏州沐岚文化传媒有限公司", lifecycle_policy=LifecyclePolicy.EXPLICIT
    )
    _told(mem, user, [("user", "以后发票都开电子的 不要纸质的"), ("assistant", "好的")])
    title = mem.facts.get(user, "invoice_title")
    assert title is not None
    assert "沐岚" in str(title.value)


def test_a_correction_in_a_later_session_rewrites_what_the_earlier_one_stored(
    mem: MemoryClient,
) -> None:
    mem.profiles.ensure(USER)
    _session(mem, "s-1", ("u", "订单 6334412 的钓鱼竿到哪了"), ("a", "好的，帮您查一下。"))
    assert "6334412" in {link.entity_id for link in mem.links.valid_now(USER)}
    _session(
        mem,
        "s-2",
        ("u", "昨天的订单号我说错了，是 6334421，不是 6334412"),
        ("a", "查到了，订单 6334421 运输中。"),
        day=1,
    )
    valid = {link.entity_id for link in mem.links.valid_now(USER)}
    assert "6334421" in valid
    assert "6334412" not in valid, "the link to the wrong number is ended"
    texts = [m.text for m in mem.memories.list(USER)]
    assert not [t for t in texts if "6334412" in t], texts
    hits = mem.search(USER, "6334421 钓鱼竿", limit=5)
    assert len([h for h in hits if "6334421" in h.text]) == 2, "the rewritten record is found"


@pytest.mark.parametrize(
    ("first", "later", "wrong", "right"),
    [
        (
            [
                ("u", "台灯到了少个灯罩，订单 7719354"),
                ("a", "系统里没有查到 7719354，麻烦您核对下？"),
            ],
            [("u", "昨天那个单号我看串了，应该是 7719534，台灯少了个灯罩"), ("a", "查到了。")],
            "7719354",
            "7719534",
        ),
        (
            [("u", "The desk lamp from order 5528147 came without a shade"), ("a", "Let me look.")],
            [("u", "Sorry, I misread the number yesterday, it's 5528417."), ("a", "Found it.")],
            "5528147",
            "5528417",
        ),
    ],
)
def test_an_id_put_right_after_a_word_of_error_replaces_its_slip_of_an_earlier_session(
    mem: MemoryClient,
    first: list[tuple[str, str]],
    later: list[tuple[str, str]],
    wrong: str,
    right: str,
) -> None:
    """The earlier session's id a slip away from the one given now after a word of error
    (看串了, misread) is the wrong one: its link ends and the records name the right one."""
    mem.profiles.ensure(USER)
    _session(mem, "s-1", *first)
    _session(mem, "s-2", *later, day=1)
    valid = {link.entity_id for link in mem.links.valid_now(USER)}
    assert right in valid
    assert wrong not in valid, "the link to the slip is ended"
    texts = [m.text for m in mem.memories.list(USER)]
    assert not [t for t in texts if wrong in t], texts


def test_a_withdrawn_topic_leaves_the_profile(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    _session(mem, "s-1", ("u", "以后大件都周末给我送吧，工作日家里没人"), ("a", "好的。"))
    assert mem.facts.get(USER, "delivery_time") is not None
    _session(mem, "s-2", ("u", "之前说的周末送货不用了，工作日家里也有人"), ("a", "好的。"), day=1)
    assert mem.facts.get(USER, "delivery_time") is None
    records = [m.text for m in mem.memories.list(USER) if m.kind == "interaction_record"]
    assert any("撤回了送货安排" in r for r in records)


def test_a_request_withdrawn_in_a_later_session_is_withdrawn_in_its_record(
    mem: MemoryClient,
) -> None:
    mem.profiles.ensure(USER)
    _session(
        mem, "s-1", ("u", "订单 6339001 的耳机左边没声音，我要退货"), ("a", "好的，请先拍照。")
    )
    _session(mem, "s-2", ("u", "上次那个退货不退了，我留着自己用"), ("a", "好的。"), day=1)
    records = sorted(
        (m for m in mem.memories.list(USER) if m.kind == "interaction_record"),
        key=lambda m: m.occurred_at,
    )
    assert "撤回了退货申请" in records[0].text, records[0].text
    assert "申请退货" not in records[0].text
    assert "6339001" in records[0].text


def test_a_changed_instruction_leaves_no_older_record_stating_the_old_one(
    mem: MemoryClient,
) -> None:
    mem.profiles.ensure(USER)
    _session(mem, "s-1", ("u", "快递放门口的地垫下面就行"), ("a", "好的，已备注。"))
    _session(
        mem,
        "s-2",
        ("u", "这单洗衣液订单 6167702 还是老样子，放门口地垫下面"),
        ("a", "好的。"),
        day=1,
    )
    assert any("地垫" in m.text for m in mem.memories.list(USER)), "a one-off is recorded"
    _session(
        mem,
        "s-3",
        ("u", "上次的包裹被偷了，以后别放门口了，交给小区门卫"),
        ("a", "好的，以后交给门卫。"),
        day=2,
    )
    texts = [m.text for m in mem.memories.list(USER)]
    assert not [t for t in texts if "地垫" in t], texts
    assert any("6167702" in t for t in texts), "the rest of the record stays"
    ctx = mem.build_context(USER, "洗衣液今天能送到吗", max_tokens=600)
    assert "门卫" in ctx.text
    assert "地垫" not in ctx.text
    assert not [h for h in mem.search(USER, "地垫", limit=5) if "地垫" in h.text]


def test_a_withdrawn_plan_leaves_no_note_of_it(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    _session(
        mem,
        "s-1",
        ("u", "订单 6353712 的包裹先别送上门了，我这周出差，放菜鸟驿站吧"),
        ("a", "好的，已备注放驿站。"),
    )
    assert any("驿站" in m.text for m in mem.memories.list(USER)), "the plan is noted"
    _session(
        mem,
        "s-2",
        ("u", "出差取消了，昨天说放驿站的不用了，正常送到家"),
        ("a", "好的，已改回送货上门。"),
        day=1,
    )
    texts = [m.text for m in mem.memories.list(USER)]
    assert not [t for t in texts if "驿站" in t], texts
    assert not [t for t in texts if "取消订单" in t], "taking a plan back cancels no order"
    ctx = mem.build_context(USER, "包裹今天能送到家吗", max_tokens=600)
    assert "驿站" not in ctx.text
    assert "6353712" in ctx.text


def test_a_request_cancelled_by_its_form_later_loses_its_reason_and_date(
    mem: MemoryClient,
) -> None:
    """The reason and the date of a request withdrawn since were the request's: the earlier
    record keeps the order and says the request was withdrawn."""
    mem.profiles.ensure(USER)
    _session(
        mem,
        "s-1",
        ("u", "I want to return the lamp from order 7781203, it flickers all the time."),
        ("a", "Return RT7781203 created; the courier comes Monday morning."),
    )
    _session(
        mem, "s-2", ("u", "Please cancel return RT7781203, it was the bulb."), ("a", "Done."), day=1
    )
    records = sorted(
        (m for m in mem.memories.list(USER) if m.kind == "interaction_record"),
        key=lambda m: m.occurred_at,
    )
    first = records[0].text
    assert "withdrew the return request" in first, first
    assert "flickers" not in first, first
    assert "Monday" not in first, first
    assert "7781203" in first


def test_a_request_taken_back_later_loses_its_date_though_recorded_in_other_words(
    mem: MemoryClient,
) -> None:
    """The complaint recorded as "客服已登记投诉工单，预计 72 小时内处理" is taken back in a
    later session ("那个投诉帮我撤了吧"): its expected date goes from the earlier record,
    though the record named the request in other words than "进行投诉"."""
    texts = _told(
        mem,
        "buyer-withdrawn-complaint",
        [
            ("user", "订单 550912736604 的空气炸锅 商家说好开专票一直不给 帮我投诉"),
            ("assistant", "理解您的心情。已登记投诉工单 TS-0331-2206，预计 72 小时内有专人跟进。"),
        ],
        [
            ("user", "商家把发票发过来了 投诉单 TS-0331-2206 那个投诉帮我撤了吧"),
            ("assistant", "好的，投诉单 TS-0331-2206 已撤回。"),
        ],
    )
    assert any("TS-0331-2206" in t and "撤回" in t for t in texts), texts
    assert not [t for t in texts if "72" in t], texts


@pytest.mark.parametrize(
    ("user", "first", "then", "gone", "kept"),
    [
        (  # a repair taken back naming only the product (洗碗机不用修了)
            "buyer-repair-dropped-zh",
            [
                ("user", "洗碗机不出热水了 订单 730215548812 还在保修 帮我报修"),
                ("assistant", "已为您创建维修工单 WX-5521-0093，预计 3 到 5 天内师傅上门。"),
            ],
            [
                ("user", "洗碗机不用修了 是进水阀没开 打开就好了"),
                ("assistant", "好的，已为您关闭维修工单。"),
            ],
            ["3 到 5 天"],
            "730215548812",
        ),
        (
            "buyer-repair-dropped-en",
            [
                ("user", "my air fryer stopped heating, order AF-55310, can you get it repaired"),
                (
                    "assistant",
                    "Repair ticket RP-77120 is open; a courier will collect it, "
                    "expected within 7 business days.",
                ),
            ],
            [
                ("user", "never mind the air fryer repair, the plug was loose"),
                ("assistant", "OK, I've closed it."),
            ],
            ["7 business days"],
            "AF-55310",
        ),
        (  # the agent undid the visit; the user's words name no request
            "buyer-visit-undone-zh",
            [
                ("user", "热水器订单 550317829946 约个师傅上门安装"),
                ("assistant", "已为您预约，工单 AZ27-11820，周五下午 2 点到 6 点师傅上门。"),
            ],
            [
                ("user", "热水器不用师傅来了 我自己装好了"),
                ("assistant", "好的，已为您取消上门安装。"),
            ],
            ["2 点到 6 点", "周五下午"],
            "550317829946",
        ),
        (
            "buyer-visit-undone-en",
            [
                ("user", "can someone install my Samsung washer? order WS-22817"),
                (
                    "assistant",
                    "Installation IN-55021 is booked; a technician will come out within 72 hours.",
                ),
            ],
            [
                ("user", "skip the install for the washer, my neighbour helped me hook it up"),
                ("assistant", "Done, visit cancelled."),
            ],
            ["72 hours"],
            "WS-22817",
        ),
        (  # taken back in words that name no request, the agent silent
            "buyer-return-dropped-zh",
            [
                ("user", "电动牙刷刷头松了 想退 订单 630518274419"),
                (
                    "assistant",
                    "已为您提交退货，退货单 TH5520931，周五上午快递上门取件，"
                    "签收后 159 元原路退回。",
                ),
            ],
            [("user", "牙刷那单算了 留着用吧"), ("assistant", "好的")],
            ["159", "周五上午"],
            "630518274419",
        ),
        (  # the later session names another thing (the free gift): the only record of
            # such a request is the one taken back
            "buyer-price-protect-dropped-zh",
            [
                ("user", "上周买的美的电饭煲 今天降了120 订单 662091357718 帮我申请价保"),
                ("assistant", "符合条件，已提交价保，审核后差价 120 元退回原支付账户。"),
            ],
            [
                ("user", "价保不弄了 还得把送的保温杯寄回去 太麻烦"),
                ("assistant", "好的，价保申请已撤销。"),
            ],
            ["120 元", "原支付账户"],
            "662091357718",
        ),
        (
            "buyer-price-adjust-dropped-en",
            [
                ("user", "the Kenwood mixer I bought dropped by $40, order KM-88127, can I get it"),
                ("assistant", "Yes, I've filed a price adjustment, $40 back to your card."),
            ],
            [
                ("user", "forget the price adjustment, I'd have to send back the free bowl set"),
                ("assistant", "Okay, withdrawn."),
            ],
            ["$40 back"],
            "KM-88127",
        ),
        (  # an exchange taken back: 不换了
            "buyer-exchange-dropped-zh",
            [
                ("user", "跑鞋 42 码挤脚 换大一码 订单 713600215588"),
                ("assistant", "已为您申请换货，换货单 HH71200934，换成 43 码，新鞋 3 天内发出。"),
            ],
            [("user", "鞋子不换了 穿开了 现在刚好"), ("assistant", "好的")],
            ["43 码", "3 天内"],
            "713600215588",
        ),
    ],
)
def test_an_arrangement_taken_back_later_leaves_its_record_without_its_specifics(
    mem: MemoryClient,
    *,
    user: str,
    first: list[tuple[str, str]],
    then: list[tuple[str, str]],
    gone: list[str],
    kept: str,
) -> None:
    """What an earlier session arranged and a later one took back (a request withdrawn
    naming only the product: 洗碗机不用修了; the agent undid it: 已为您取消上门安装, visit
    cancelled; or the user, in words naming no request: 那单算了 留着用吧) leaves the earlier
    record without the arrangement's date, time and amount."""
    texts = _told(mem, user, first, then)
    earlier = [t for t in texts if kept in t]
    assert earlier, texts
    assert not [g for g in gone for t in earlier if g in t], texts


def test_an_add_on_undone_leaves_the_earlier_arrangement(mem: MemoryClient) -> None:
    """Control: the agent swapping an add-on of the same order (已取消普通包装，改成礼品包装)
    undoes no arrangement: the earlier record keeps its date."""
    texts = _told(
        mem,
        "buyer-add-on-swapped",
        [("user", "乐高 42143 订单 770215836614 什么时候到"), ("assistant", "预计周六送达。")],
        [
            ("user", "乐高那单帮我加个礼品包装"),
            ("assistant", "好的，已取消普通包装，改成礼品包装。"),
        ],
    )
    assert [t for t in texts if "770215836614" in t and "周六" in t], texts


def test_an_instruction_voided_later_leaves_the_profile_and_the_records(
    mem: MemoryClient,
) -> None:
    texts = _told(
        mem,
        "buyer-void-zh",
        [
            ("user", "以后发货前先在群里跟我对一下货号 我们店里容易弄混"),
            ("assistant", "好的，已备注。"),
        ],
        [
            ("user", "补货挺急的 之前说发货前对货号那个作废 直接发就行"),
            ("assistant", "好的，以后直接发货。"),
        ],
    )
    facts = [str(f.value) for f in mem.facts.list("buyer-void-zh")]
    assert not [f for f in facts if "群里" in f], facts
    assert not [t for t in texts if "群里" in t], texts
    texts = _told(
        mem,
        "buyer-void-en",
        [
            ("user", "from now on please hold my orders and ship everything together in one box"),
            ("assistant", "Sure."),
        ],
        [
            (
                "user",
                "forget the ship-together thing, it was a mistake. send each item when it's ready",
            ),
            ("assistant", "Understood."),
        ],
    )
    facts = [str(f.value) for f in mem.facts.list("buyer-void-en")]
    assert not [f for f in facts if "one box" in f], facts
    ctx = mem.build_context("buyer-void-en", "will my lamp and rug come together?", max_tokens=600)
    assert "one box" not in ctx.text


def test_a_value_put_right_in_a_later_session_reads_as_updated_in_the_earlier_record(
    mem: MemoryClient,
) -> None:
    texts = _told(
        mem,
        "buyer-put-right",
        [
            ("user", "以旧换新我那台小米13能抵多少 512G的 成色还行"),
            ("assistant", "小米13 512G 大概能抵一千五，以质检为准。"),
        ],
        [
            ("user", "上回问的以旧换新 内存我说错了 其实是256G的"),
            ("assistant", "小米13 256G 大概能抵一千三，以质检为准。"),
        ],
    )
    assert not [t for t in texts if "512G" in t], texts
    assert any("256G" in t for t in texts), texts
    texts = _told(
        mem,
        "buyer-put-right-en",
        [
            ("user", "how much trade-in for my Pixel 7, it's the 256GB one"),
            ("assistant", "Pixel 7 256GB is worth about $180 in good condition."),
        ],
        [
            ("user", "about that trade-in quote, my bad, I said the wrong storage, I meant 128GB"),
            ("assistant", "Pixel 7 128GB is worth about $150 in good condition."),
        ],
    )
    assert not [t for t in texts if "256GB" in t], texts
