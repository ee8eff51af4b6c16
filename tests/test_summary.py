"""Session summaries and single-text analysis (unstructured_memory/summariser/summary.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from policies.errors import InvalidField, InvalidText, InvalidUserId
from policies.pii import PiiKind
from unstructured_memory.summariser import analyse_text, summarise
from unstructured_memory.summariser.summary import taken_back
from values.sessions import Intent, Outcome, Turn

_T0 = datetime(2026, 6, 29, 10, 0, tzinfo=UTC)

_REFUND_ZH = [
    Turn("user", "你好，我订单88231买的比特S10 Pro扫地机，1999元，现在无法回充了，我要退款", _T0),
    Turn(
        "assistant",
        "非常抱歉，已为您提交退款申请，退款编号RF20260629001",
        _T0 + timedelta(minutes=1),
    ),
    Turn("user", "好的，多久能到账？有问题打我手机13812345678", _T0 + timedelta(minutes=2)),
    Turn("assistant", "预计1-3个工作日到账", _T0 + timedelta(minutes=3)),
    Turn("user", "谢谢"),
    Turn("assistant", "不客气，祝您生活愉快"),
]


def test_chinese_refund_record() -> None:
    s = summarise("u-1", "s-1", _REFUND_ZH)
    assert s.summary_text == (
        "用户因订单 88231 的比特 S10 Pro 扫地机（1999 元）无法回充申请退款，"
        "退款编号 RF20260629001，客服已发起退款，预计 1-3 个工作日到账"
    )
    assert s.outcomes == (Outcome.REFUND_ISSUED,)
    assert s.intent is Intent.RETURN_REQUEST
    assert 0.5 < s.intent_confidence <= 1.0
    assert s.language == "zh"
    assert s.occurred_at == _T0 + timedelta(minutes=3)
    assert (s.user_id, s.session_id) == ("u-1", "s-1")


def test_pii_is_masked_everywhere_but_returned_for_the_vault() -> None:
    s = summarise("u-1", "s-1", _REFUND_ZH)
    assert [(p.kind, p.value) for p in s.pii] == [(PiiKind.PHONE, "13812345678")]
    transcript = "\n".join(t.text for t in _REFUND_ZH)
    assert transcript[s.pii[0].start : s.pii[0].end] == "13812345678"
    assert "13812345678" not in s.summary_text
    assert all("13812345678" not in e.text for e in s.entities)
    assert ("PHONE", "138****5678") in [(e.type, e.text) for e in s.entities]


def test_entities_are_deduplicated() -> None:
    turns = [Turn("user", "订单88231没到"), Turn("assistant", "订单88231已发出，运单号SF123456789")]
    s = summarise("u-1", "s-1", turns)
    assert [(e.type, e.text) for e in s.entities] == [
        ("ORDER_ID", "88231"),
        ("TRACKING_NO", "SF123456789"),
    ]


def test_english_record() -> None:
    turns = [
        Turn(
            "user",
            "Hi, my order #88231, a Dyson V15 vacuum for $499.99, won't charge anymore. "
            "I want a refund.",
        ),
        Turn(
            "assistant",
            "Sorry! Refund RF20260629001 is submitted; it should arrive in 3-5 business days.",
        ),
    ]
    s = summarise("u-2", "s-9", turns)
    assert s.language == "en"
    assert s.intent is Intent.RETURN_REQUEST
    assert s.summary_text == (
        "The user requested a refund for order 88231 (Dyson V15 vacuum, $499.99) because it "
        "won't charge anymore; refund RF20260629001; expected within 3-5 business days."
    )


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        (
            [
                Turn("user", "我的快递到哪了？订单号2024061800123"),
                Turn("assistant", "运单号SF123456789，预计明天送达"),
            ],
            "用户查询订单 2024061800123 的物流进度，运单号 SF123456789，预计明天送达",
        ),
        ([Turn("user", "这款扫地机器人能扫地毯吗")], "用户咨询扫地机器人：能扫地毯吗"),
        (
            [Turn("user", "你们客服态度太差了，耳机坏了三次，我要投诉")],
            "用户因耳机坏了三次进行投诉（用户原话：客服态度太差）",
        ),
        ([Turn("user", "订单88231能开发票吗")], "用户申请为订单 88231 开具发票"),
        ([Turn("user", "退款怎么还没到账，订单88231")], "用户查询订单 88231 的退款进度"),
        (
            [Turn("user", "Where is my package? order 88231")],
            "The user asked about the delivery of order 88231.",
        ),
    ],
)
def test_templates_omit_missing_slots(turns: list[Turn], expected: str) -> None:
    assert summarise("u-1", "s-1", turns).summary_text == expected


def test_address_and_email_never_reach_the_summary() -> None:
    turns = [
        Turn("user", "耳机坏了要退货，寄到北京市朝阳区建国路88号，邮箱zhang@qq.com"),
        Turn("user", "'; DROP TABLE memories; -- 😡"),
    ]
    s = summarise("u-1", "s-1", turns)
    assert {p.kind for p in s.pii} == {PiiKind.ADDRESS, PiiKind.EMAIL}
    for secret in ("建国路88号", "zhang@qq.com"):
        assert secret not in s.summary_text
        assert all(secret not in e.text for e in s.entities)


@pytest.mark.parametrize(
    "turns",
    [
        [],
        [Turn("user", "   "), Turn("assistant", "\n\t")],
        [Turn("assistant", "您好，请问有什么可以帮您")],
    ],
)
def test_transcript_without_user_text_is_refused(turns: list[Turn]) -> None:
    with pytest.raises(InvalidText):
        summarise("u-1", "s-1", turns)


def test_oversized_turn_is_refused() -> None:
    with pytest.raises(InvalidText):
        summarise("u-1", "s-1", [Turn("user", "退" * 30_000)])


def test_megabyte_transcript_is_cut_to_its_ends() -> None:
    filler = [Turn("user" if i % 2 else "assistant", "请稍等，" * 250) for i in range(350)]
    turns = [
        Turn("user", "订单88231的耳机坏了，我要退货"),
        *filler,
        Turn("assistant", "已为您办理，退款编号RF20260629001"),
    ]
    assert sum(len(t.text.encode()) for t in turns) > 1_000_000
    s = summarise("u-1", "s-1", turns)
    assert "88231" in s.summary_text
    assert "RF20260629001" in s.summary_text


def test_naive_and_missing_times() -> None:
    naive = datetime(2026, 6, 29, 8, 30)
    assert summarise("u", "s", [Turn("user", "在吗", naive)]).occurred_at == naive.replace(
        tzinfo=UTC
    )
    east8 = datetime(2026, 6, 29, 8, 30, tzinfo=timezone(timedelta(hours=8)))
    assert summarise("u", "s", [Turn("user", "在吗", east8)]).occurred_at == east8
    before = datetime.now(UTC)
    assert summarise("u", "s", [Turn("user", "在吗")]).occurred_at >= before


def test_bad_ids_and_roles() -> None:
    with pytest.raises(InvalidUserId):
        summarise("", "s", [Turn("user", "在吗")])
    with pytest.raises(InvalidText):
        summarise("u", " ", [Turn("user", "在吗")])
    with pytest.raises(InvalidField):
        Turn("customer", "hi")  # type: ignore[arg-type]


def test_analyse_text() -> None:
    a = analyse_text("我的iPhone 15 Pro屏幕碎了，要退货，电话13812345678")
    assert a.masked_text == "我的iPhone 15 Pro屏幕碎了，要退货，电话138****5678"
    assert a.intent is Intent.RETURN_REQUEST
    assert a.language == "zh"
    assert [(p.kind, p.value) for p in a.pii] == [(PiiKind.PHONE, "13812345678")]
    assert [(e.type, e.text) for e in a.entities] == [
        ("MODEL", "iPhone 15 Pro"),
        ("PHONE", "138****5678"),
    ]
    with pytest.raises(InvalidText):
        analyse_text("  ")


def test_a_general_enquiry_keeps_what_the_user_talked_about() -> None:
    """A consultation or other enquiry without a question or problem clause keeps the
    user's first sentence that names something (a product, model, amount or id), else
    their first sentence, masked; before, such a record said only "相关事宜"."""
    zh = summarise(
        "u-1",
        "s-1",
        [
            Turn("user", "你好。订单 88231 的那款猫爬架我家猫很喜欢，想再买一个"),
            Turn("assistant", "好的，已为您加入购物车。"),
        ],
    )
    assert "猫爬架" in zh.summary_text
    en = summarise(
        "u-2",
        "s-1",
        [
            Turn("user", "Hello there. I am after a gift for my wife and myself, around $50"),
            Turn("assistant", "How about a silk scarf?"),
        ],
    )
    assert "a gift for their wife and themselves" in en.summary_text
    assert "they are after" in en.summary_text
    masked = summarise(
        "u-3", "s-1", [Turn("user", "以后的东西寄到北京市朝阳区建国路88号，订单 88231")]
    )
    assert "建国路88号" not in masked.summary_text


# ------------------------------------------------------------- identifiers and open words


def test_ids_of_any_shape_are_recorded_with_the_cue_said_and_no_act_is_invented() -> None:
    turns = [
        Turn("user", "工单 WX-37-01958 还没处理，订单 3107-2264-9015 的提货码 K3P9 也不对"),
        Turn("assistant", "抱歉，我帮您催一下，核实完回复您"),
    ]
    text = summarise("u-1", "s-1", turns).summary_text
    for said in ("WX-37-01958", "3107-2264-9015", "提货码 K3P9"):
        assert said in text
    for invented in ("退货", "退款", "换货", "编号 K3P9"):
        assert invented not in text


def test_a_symptom_said_mid_session_in_other_words_reaches_the_record() -> None:
    turns = [
        Turn("user", "键盘有问题"),
        Turn("assistant", "您好，请问是哪个订单？"),
        Turn("user", "订单 7715302，上个月买的机械键盘"),
        Turn("assistant", "请问具体是什么情况？"),
        Turn("user", "空格键一按下去就咔咔响，回弹也慢，感觉是底下卫星轴那里"),
        Turn("assistant", "给您补发一套卫星轴，工单 KB-77-15302。"),
        Turn("user", "好的，谢谢"),
    ]
    text = summarise("u-1", "s-1", turns).summary_text
    for said in ("一按下去就咔咔响", "卫星轴", "KB-77-15302", "7715302"):
        assert said in text  # the symptom, not the generic 键盘有问题


@pytest.mark.parametrize(
    ("turns", "problem", "question"),
    [
        (
            [
                Turn("user", "电脑老蓝屏 烦死了，拯救者Y9000P 订单6020118874"),
                Turn("assistant", "可以寄修，顺丰上门取件，您看可以吗？"),
                Turn("user", "寄修吧"),
                Turn("assistant", "已为您创建寄修单 LX-RMA-240611-7。"),
                Turn("user", "加了一根内存条 要拆吗"),
            ],
            "蓝屏",
            "内存条",
        ),
        (
            [
                Turn("user", "My kettle from order 6610042 leaks from the base"),
                Turn("assistant", "Sorry! We can repair it for free, shall I book it?"),
                Turn("user", "Yes please repair it"),
                Turn("assistant", "Booked, repair ticket RP-66-10042."),
                Turn("user", "Do I need to send the lid too?"),
            ],
            "leaks",
            "lid",
        ),
    ],
)
def test_a_requests_record_keeps_its_problem_over_a_later_question(
    turns: list[Turn], problem: str, question: str
) -> None:
    text = summarise("u-1", "s-1", turns).summary_text
    head = text.split("（用户原话")[0].split(" (in the user's words")[0]
    assert problem in head
    assert question not in head


def test_an_english_symptom_and_a_budget_in_words_reach_the_record() -> None:
    squeak = [
        Turn("user", "Hi, my laptop from order 7719034 has a problem"),
        Turn("assistant", "Sorry, what is wrong with it?"),
        Turn("user", "The hinge squeaks every time I open the lid and the screen wobbles"),
        Turn("assistant", "I have opened ticket HX-77-19034 for a repair."),
    ]
    text = summarise("u-1", "s-1", squeak).summary_text
    assert "hinge squeaks" in text
    assert "HX-77-19034" in text
    budget = [
        Turn("user", "Looking for a desk lamp for my study, under three hundred bucks"),
        Turn("assistant", "Here are three."),
        Turn("user", "I will think about it"),
    ]
    text = summarise("u-1", "s-2", budget).summary_text
    assert "three hundred bucks" in text
    assert "think about it" not in text  # "I will" is no question


def test_models_outside_the_lexicon_are_named_in_the_record() -> None:
    turns = [
        Turn("user", "订单 7722108 的极米 H6 投影，开机十分钟就自动关机"),
        Turn("assistant", "抱歉，已为您登记寄修，寄修单 RP-77-22108。"),
    ]
    text = summarise("u-1", "s-1", turns).summary_text
    for said in ("极米 H6", "开机十分钟就自动关机", "RP-77-22108"):
        assert said in text


def test_the_record_takes_the_price_the_agent_confirmed_and_the_accessory_asked_for() -> None:
    turns = [
        Turn("user", "我家美的空气炸锅用了两年，最近加热很慢，想换台新的"),
        Turn("assistant", "新款是 499 元；如果只是加热管老化，换一根原装加热管 69 元就行。"),
        Turn("user", "那不换新了，帮我补个加热管"),
        Turn("assistant", "好的，原装加热管 69 元已下单，订单 7741203。"),
    ]
    text = summarise("u-1", "s-1", turns).summary_text
    assert "69 元" in text
    assert "499" not in text  # the option quoted first and turned down
    assert "美的空气炸锅" in text  # Chinese parts of the product joined without a space
    assert "加热管" in text


def test_an_approval_to_come_is_no_approval() -> None:
    """ "审核通过后安排上门取件" says what happens once it is approved: the return is
    submitted, under its id, for the reason the user gave."""
    turns = [
        Turn("user", "洗地机拖完地上一道一道的水痕，滚刷用两天就一股馊味，想退", _T0),
        Turn("assistant", "已为您提交退货申请 TH-0917-4426，审核通过后安排上门取件。", _T0),
    ]
    s = summarise("u-1", "s-1", turns)
    assert s.outcomes == (Outcome.RETURN_SUBMITTED,)
    assert ("RETURN_ID", "TH-0917-4426") in [(e.type, e.text) for e in s.entities]
    assert "同意退货" not in s.summary_text


@pytest.mark.parametrize(
    ("said", "kept", "gone"),
    [
        ("我们家三口人，冰箱要大一点", "用户家三口人", "们家"),
        ("咱们家老人多，想买个防滑的拖鞋", "用户家老人多", "咱们家"),
        ("我俩白天都上班，快递放驿站吧", "用户两人白天都上班", "：俩"),
        ("我们公司的打印机老是卡纸，想报修", "用户公司的打印机", "们公司"),
        ("我们楼下驿站老关门，放快递柜吧", "用户楼下驿站", "们楼下"),
        ("它们都坏了，我要退货", "都坏", "们都坏"),
        ("这些衣服都小了，想换大一号", "这些衣服都小", "：些衣服"),
        ("这边想问一下，空调什么时候到", "这边想问一下", "：边想"),
    ],
)
def test_the_record_never_cuts_a_word_opening_the_users_clause(
    said: str, kept: str, gone: str
) -> None:
    """The lead words the record drops (我, 这, 它) go as whole words: 我们/我俩/我家 become
    the user's household, 这些/这边 stay, 它们 goes whole; never a dangling 们, 些, 边."""
    text = summarise("u-1", "s-1", [Turn("user", said)]).summary_text
    assert kept in text
    assert gone not in text


def test_replacing_an_old_thing_at_home_is_no_exchange_request() -> None:
    """换个电视 for the bedroom is a purchase: no goods of an order, no problem, nothing
    received; 这双鞋小了 换个大一码的 is an exchange."""
    record = summarise(
        "u1",
        "s1",
        [
            Turn("user", "想给卧室换个电视 55寸的 预算三千以内 别太贵了"),
            Turn("assistant", "三千以内 55 寸可以看看海信 E3N 和 TCL V8G，都在 2500-2900 之间。"),
        ],
    ).summary_text
    assert "换货" not in record
    assert "55 寸" in record or "55寸" in record
    record = summarise(
        "u1",
        "s1",
        [Turn("user", "这双鞋小了 换个大一码的吧"), Turn("assistant", "好的，已为您申请换货。")],
    ).summary_text
    assert "换货" in record


@pytest.mark.parametrize(
    ("user", "agent", "kept"),
    [
        (
            "床垫那个订单帮我改成1.8米的 我们换了张大床 差价多少我补上",
            "好的，已帮您改了。",
            "1.8米",
        ),
        ("这单改一次性付清吧，分期不要了", "好的，已改", "一次性付清"),
        ("那个订单改到下周二下午送吧，下午能准时到吗？", "可以的。", "改到下周二下午"),
        ("can you move order 8310264 to the 12th? when does the fitter come", "At 9.", "the 12th"),
        (
            "scratch the Affirm plan, just put the whole sofa on my Amex",
            "Done.",
            "sofa on their Amex",
        ),
    ],
)
def test_a_change_of_plan_is_in_the_record_whatever_else_was_asked(
    user: str, agent: str, kept: str
) -> None:
    turns = [Turn("user", user), Turn("assistant", agent)]
    text = summarise("buyer-ch-01", "s-1", turns).summary_text
    assert kept.replace(" ", "") in text.replace(" ", ""), text


@pytest.mark.parametrize(
    ("user", "agent", "kept"),
    [
        ("热水器不用师傅来了 我自己装好了", "好的，已为您取消上门安装。", "取消上门安装"),
        ("耳机找到了 补发那个别发了", "好的，已为您拦截并取消补发。", "取消补发"),
        (
            "skip the install for the washer, my neighbour hooked it up",
            "Done, visit cancelled.",
            "visit cancelled",
        ),
    ],
)
def test_the_agent_undoing_an_arrangement_is_in_the_record(
    user: str, agent: str, kept: str
) -> None:
    """The agent's confirmation that it undid an arrangement names no number or thing, yet
    it is what the session settled: the record keeps it."""
    text = summarise(
        "buyer-undo-01", "s-1", [Turn("user", user), Turn("assistant", agent)]
    ).summary_text
    assert kept in text, text


def test_a_request_withdrawn_by_name_keeps_no_date_of_the_undoing() -> None:
    """The record already says the request was withdrawn: the agent's words of undoing
    (with the date of what was called off) are not kept beside it."""
    turns = [
        Turn("user", "Please cancel return RT5518842, my son likes the jacket after all."),
        Turn("assistant", "Done, RT5518842 is cancelled and the Tuesday pickup is called off."),
    ]
    text = summarise("buyer-undo-02", "s-1", turns).summary_text
    assert "withdrew the return request" in text, text
    assert "Tuesday" not in text, text


def test_the_undone_arrangements_date_is_not_kept_with_the_undoing() -> None:
    """The agent's words of undoing stay in the record, not the date of what was undone."""
    turns = [
        Turn("user", "热水器不用师傅来了 我自己装好了"),
        Turn("assistant", "好的，已为您取消周五下午的上门安装。"),
    ]
    text = summarise("buyer-undo-03", "s-1", turns).summary_text
    assert "取消" in text, text
    assert "上门安装" in text, text
    assert "周五" not in text, text


@pytest.mark.parametrize(
    ("then_said", "earlier", "after"),
    [
        (
            "价保不弄了 太麻烦",
            "用户就订单 662091357718 的美的电饭煲（120 元）申请价保：今天降了 120 帮我申请价保",
            "用户就订单 662091357718 的美的电饭煲撤回了保价申请：今天降了 120 帮我申请价保",
        ),
        (
            "never mind the refund, it works now",
            "The user requested a refund for order KM-88127 (mixer, $40): I requested a refund",
            "The user withdrew the refund request for order KM-88127 (mixer): I requested a refund",
        ),
        (  # an amount in words of money: its unit a word
            "forget the price adjustment on the TV",
            "The user asked about order TV-610388 (LG OLED, 150 bucks): can they get a refund",
            "The user asked about order TV-610388 (LG OLED): can they get a refund",
        ),
        (  # a subscription stopped: its schedule and terms go with it
            "每个月那个狗粮也给我停掉吧 狗狗送人了",
            "用户开通周期购：狗粮给我开个周期购 每月10号发（客服确认：已开通周期购 ZQ-55120，"
            "每月 10 号发货）",
            "用户取消了周期购：狗粮给我开个周期购 [已更新]发",
        ),
        (
            "please cancel my cat litter subscription, we're moving abroad",
            "The user set up a subscription: cat litter every 4 weeks on Mondays",
            "The user cancelled the subscription: cat litter [updated] on [updated]",
        ),
        (
            "保价不弄了",
            "用户咨询订单 550117 的空调（300块）：能保价不",
            "用户咨询订单 550117 的空调：能保价不",
        ),
    ],
)
def test_a_request_taken_back_later_reads_withdrawn_and_the_users_words_stay(
    then_said: str, earlier: str, after: str
) -> None:
    """The record's head says the request was withdrawn; the user's words it quotes are
    never rewritten (帮我申请价保 stays what the user said)."""
    then = taken_back(summarise("u-tb", "s-tb", [Turn("user", then_said)]).dialogue)
    assert then is not None
    assert then(earlier) == after


@pytest.mark.parametrize(
    ("said", "head"),
    [
        ("猫粮给我开个周期购 每月15号发 要4公斤装的", "开通周期购"),
        (
            "Set up the espresso subscription for me, every 2 weeks, 1 lb bag",
            "set up a subscription",
        ),
    ],
)
def test_a_subscription_set_up_is_recorded_as_one(said: str, head: str) -> None:
    assert head in summarise("u-sub", "s-sub", [Turn("user", said)]).summary_text


@pytest.mark.parametrize(
    ("said", "both"),
    [
        (
            (
                "猫抓板还没拆封 给我退了吧，每个月那个猫粮也给我停掉",
                "好的，猫抓板退货已提交，周期购已终止。",
            ),
            ("申请退货", "取消了周期购"),
        ),
        (
            ("return the scratching post please, and cancel my cat food subscription", "Done."),
            ("return", "cancelled the subscription"),
        ),
    ],
)
def test_a_request_taken_back_beside_another_request_is_recorded_too(
    said: tuple[str, str], both: tuple[str, str]
) -> None:
    turns = [Turn("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(said)]
    text = summarise("u-two", "s-two", turns).summary_text
    assert all(b in text for b in both), text
