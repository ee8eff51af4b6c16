"""News of a lasting fact, told in passing in a later session, takes the old value's slot
(a child who walks now, a new job, a move to the ground floor): the profile keeps the new
value, not the old one beside it. Pure: no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from policies.births import BIRTH
from policies.profile_merge import ProfileState, merge, slot_of
from unstructured_memory.profile.rules import RuleExtractor
from unstructured_memory.summariser.summary import summarise
from unstructured_memory.summariser.topics import topics_of
from unstructured_memory.summariser.vehicles import driven
from values.sessions import Turn


def _merged(*sessions: str) -> dict[str, str]:
    """The profile's facts after each one-turn session in order, a day apart, merged."""
    state = ProfileState()
    for k, said in enumerate(sessions):
        at = datetime(2026, 11, 1, tzinfo=UTC) + timedelta(days=k)
        turns = [Turn("user", said, at), Turn("assistant", "好的 / Sure.", at)]
        extraction = RuleExtractor().extract(turns, summarise("u-news", f"s-{k}", turns))
        state = merge(state, extraction.observations).state
    return {slot: stable.value for slot, stable in state.facts.items()}


def _slots(*sessions: str) -> dict[str, str]:
    """The fact slots after each one-turn session in order, the newest value of each."""
    out: dict[str, str] = {}
    for k, said in enumerate(sessions):
        turns = [Turn("user", said), Turn("assistant", "好的 / Sure.")]
        extraction = RuleExtractor().extract(turns, summarise("u-news", f"s-{k}", turns))
        for o in extraction.observations:
            out[slot_of(o.key, o.scenario)] = o.value
    return out


@pytest.mark.parametrize(
    ("before", "news", "slot", "new", "old"),
    [
        (
            "闺女七个月 还不会走 天天满地爬 想买个爬行垫 要没味道的",
            "包裹咋显示签收了 我一天都在家啊 闺女都会走路了满屋跑 门口啥也没看见",
            "family@女儿",
            "会走路",
            "满地爬",
        ),
        (
            "儿子三岁 还不会自己穿鞋 有没有魔术贴的",
            "快递到哪了 儿子现在都上幼儿园了 早上得送他 家里九点后才有人",
            "family@儿子",
            "上幼儿园",
            "不会自己穿鞋",
        ),
        (
            "My son is 9 months, crawling everywhere, need a foam play mat.",
            "where's my parcel? it says delivered. fwiw my son is walking now so I'm chasing "
            "him around all day",
            "family@son",
            "walking now",
            "crawling",
        ),
        (
            "I'm a nurse doing 12-hour shifts, which of your clogs has the best arch support?",
            "the desk lamp flickers. the clogs were great but I left the hospital last month "
            "and I'm teaching at the community college now, so I barely wear them",
            "occupation",
            "teaching",
            "12-hour",
        ),
        (
            "我是外卖骑手 一天在路上十来个钟头 有没有防水的雨衣",
            "手机支架用不上了 能退不 考了个证 现在去工地开塔吊了 风吹不着",
            "occupation",
            "塔吊",
            "外卖",
        ),
        (
            "heads up I'm on the 4th floor of a walk-up, no elevator, the treadmill needs two guys",
            "do you have the knee brace in a large? my knees gave up on the stairs so we swapped "
            "into the ground floor unit in our building",
            "home",
            "ground floor",
            "walk-up",
        ),
        (
            "我住6楼 没电梯 大件得送上楼",
            "上次的柜子挺好 跟你说下我们搬到一楼了 以后送货不用爬楼",
            "home",
            "一楼",
            "没电梯",
        ),
        (
            "每日坚果哪个牌子好吃 我不挑 啥都吃 没啥忌口",
            "燕麦片箱子压扁了 上个月去医院一查对花生过敏 现在买啥都得先看配料表",
            "diet",
            "花生过敏",
            "没啥忌口",
        ),
        (
            "电饭煲2升的够用不 我家就俩人 我跟老公",
            "床垫啥时候到啊 婆婆搬过来跟我们住了 只能先睡沙发床",
            "household",
            "婆婆",
            "就俩人",
        ),
        (
            "我在医院上夜班 白天要补觉 别早上送货",
            "加湿器有点响 我调到白班了 现在晚上才在家",
            "occupation",
            "白班",
            "夜班",
        ),
        (
            "我现在居家办公 白天都在家 啥时候送都行",
            "椅子腿有点晃 公司取消远程了 我又回公司坐班了 白天家里没人",
            "occupation",
            "坐班",
            "居家办公",
        ),
        (
            "我在家办公 白天都在 师傅随时来",
            "耳塞有没有 换了个新工作 在仓库做理货 现在两班倒 白天经常在睡觉",
            "occupation",
            "两班倒",
            "在家办公",
        ),
        (
            "想换台平板 画画用 预算三千以内",
            "分期能免息吗 奖金到手了 预算可以到六千 一步到位",
            "budget",
            "6000",
            "3000",
        ),
        (
            "a new desk chair, budget around $200",
            "got a raise, so the chair budget can go up to $450 now",
            "budget",
            "450",
            "200",
        ),
        (
            "I work nights at the depot so please don't ring the bell before 2pm",
            "the kettle arrived dented. also I'm on day shifts now, evenings are best",
            "occupation",
            "day shifts",
            "nights",
        ),
        (
            "I work from home full time, so any delivery slot is fine",
            "the mouse double-clicks. btw I'm back in the office five days a week now",
            "occupation",
            "office",
            "from home",
        ),
        (
            "给车买个遮阳挡 我开的是丰田卡罗拉 前挡风玻璃比较大",
            "洗车液到了 对了卡罗拉卖了 上个月提了台理想L6 空间大多了",
            "vehicle",
            "理想L6",
            "卡罗拉",
        ),
        (
            "need a trunk organiser for my 2017 Subaru Outback",
            "the tyre inflator works great. we traded the Outback in, I'm driving a Kia EV6 now",
            "vehicle",
            "EV6",
            "Outback",
        ),
        (
            "is a 1.5 litre kettle enough? it's just me at home",
            "where's the shower chair? my dad moved in with us after his hip surgery",
            "household",
            "moved in",
            "just me",
        ),
    ],
)
def test_news_takes_the_old_values_slot(
    before: str, news: str, slot: str, new: str, old: str
) -> None:
    slots = _slots(before, news)
    assert new in slots.get(slot, ""), slots
    assert old not in slots.get(slot, ""), slots


@pytest.mark.parametrize(
    ("before", "news", "old"),
    [
        ("我上夜班 家里三口人 白天没人收快递", "婆婆搬过来跟我们住了 白天家里有人了", "三口人"),
        ("我家两只猫 我上夜班 白天别敲门", "猫送给我妹养了 我现在一个人住", "两只猫"),
        (
            "我上早班 下午三点才到家 一进门就想躺着 直接放小区北门的快递柜就行 哦不对南门"
            " 南门那排蓝色的柜子 取件码发短信就行",
            "快递柜拆了 以后放物业前台吧",
            "北门",
        ),
    ],
)
def test_news_of_one_fact_leaves_no_slot_quoting_the_old_one(
    before: str, news: str, old: str
) -> None:
    """Facts said in one run of words ("我上夜班 家里三口人") are each kept in their own
    words: news of one leaves no other slot still saying the old value."""
    slots = _slots(before, news)
    assert all(old not in value for value in slots.values()), slots


@pytest.mark.parametrize(
    ("before", "news", "born"),
    [
        ("我怀孕六个月了 孕妇能用的防晒有哪些", "宝宝上周出生了 是个儿子 想买个婴儿床", "出生"),
        (
            "孕30周了 腰疼 想买个托腹带 预产期下个月",
            "有没有防胀气的奶瓶 闺女三号生的 六斤八两 现在在月子中心",
            "生的",
        ),
        (
            "we're expecting our first in May, what's a good bassinet?",
            "the stroller arrived. our daughter Ivy was born last week",
            "born",
        ),
    ],
)
def test_a_birth_ends_the_pregnancy(before: str, news: str, born: str) -> None:
    """A baby born is news of the pregnancy: no slot still says the user is expecting."""
    slots = _merged(before, news)
    assert any(born in v for v in slots.values()), slots
    pregnant = ("怀孕", "孕30周", "预产期", "expecting")
    assert not [v for v in slots.values() if any(w in v for w in pregnant)], slots


@pytest.mark.parametrize(
    "said",
    [
        "我生了场大病 最近在吃药",
        "孩子生了病 这几天请假在家",
        "闺女生了水痘",
        "宝宝出生证明怎么办",
        "孩子不能吃生的",
        "my son was born in 2015, he's nine now",
    ],
)
def test_an_illness_a_paper_or_a_birth_long_ago_is_no_birth(said: str) -> None:
    assert BIRTH.search(said) is None


def test_a_fact_of_a_member_said_before_stays_when_no_news_of_them_follows() -> None:
    slots = _slots(
        "闺女七个月 还不会走 天天满地爬 想买个爬行垫",
        "包裹咋显示签收了 我一天都在家啊 门口啥也没看见",
    )
    assert "满地爬" in slots.get("family@女儿", ""), slots


@pytest.mark.parametrize(
    "said",
    [
        "已经到货开箱了 发现屏幕碎了",
        "现在到店里做个保养要多久",
        "现在在家做饭呢 晚点再说",
        "I got a new job offer email",
        "我老公上夜班 白天在家睡觉",
        "my wife works nights so keep it quiet",
        "今天在家办公 下午送吧",
        "the office is closed today, deliver tomorrow",
    ],
)
def test_words_of_work_in_passing_name_no_job(said: str) -> None:
    assert "occupation" not in [t.key for t in topics_of(said)]


def test_the_car_kept_is_the_one_said_to_be_the_users() -> None:
    """A car named beside the user's (the one a wrong part fits) is not theirs."""
    slots = _slots("脚垫拍错了 我选的是丰田凯美瑞的 我车是本田雅阁 22款的 根本对不上")
    assert "雅阁" in slots.get("vehicle", ""), slots
    assert "凯美瑞" not in slots.get("vehicle", ""), slots


@pytest.mark.parametrize(
    "said",
    [
        "我朋友开宝马 想送他个车载香薰",
        "帮同事问一嘴 他刚提了辆小鹏P7 脚垫哪款合适",
        "要是我有车就好了 这么大的桶提不动",
        "my brother drives a Jeep, what would fit his dash?",
        "the Model 3 cable in the listing, is it the right one for a Dyson?",
    ],
)
def test_a_car_not_the_users_is_no_vehicle(said: str) -> None:
    assert "vehicle" not in [t.key for t in topics_of(said)]


@pytest.mark.parametrize(
    "said",
    [
        "我的车是大众朗逸",
        "给我家那台比亚迪宋买脚垫",
        "我开的本田飞度",
        "老车上礼拜出手了 提了台比亚迪海豹",
        "我车是特斯拉Model Y 后备箱垫要哪款",
        "I drive a 2015 Toyota Prius",
        "floor mats for my Tesla Model Y please",
        "we're a Model Y household now",
        "the mirror mount broke, also I sold the old car, driving a Kia Niro now",
    ],
)
def test_the_users_car_is_a_vehicle(said: str) -> None:
    assert "vehicle" in [t.key for t in topics_of(said)]


@pytest.mark.parametrize(
    ("said", "car"),
    [
        ("我车是 AION Y 后备箱垫要哪款", "AION Y"),
        ("上个月提了台 Zeekr X 想买个脚垫", "Zeekr X"),
        ("I drive a Fisker Ocean, which dash cam fits?", "Fisker Ocean"),
    ],
)
def test_a_car_the_lexicon_does_not_know_is_read_by_its_shape(said: str, car: str) -> None:
    """After the user's own word for their car, a Latin name is the car's, known or not."""
    assert driven(said) == car


@pytest.mark.parametrize("said", ["I drive a lot for work", "my car is a mess inside"])
def test_a_lower_case_word_after_a_word_for_the_car_is_no_car(said: str) -> None:
    assert driven(said) == ""


@pytest.mark.parametrize(
    "said", ["我在社区医院当护士 经常值夜班", "我在驾校当教练 周末最忙", "我做会计的 月底特别忙"]
)
def test_a_job_one_does_somewhere_is_the_occupation(said: str) -> None:
    assert "occupation" in [t.key for t in topics_of(said)]


def test_a_parcel_left_on_the_ground_floor_says_nothing_of_the_home() -> None:
    assert "home" not in [t.key for t in topics_of("just leave it on the ground floor by the lift")]
    assert "home" in [t.key for t in topics_of("we're on the ground floor now")]
