"""Session-aware re-ranking (``unstructured_memory.search.rerank``) and its stage in
``mem.search``: the pure functions, then the behaviour on a real PostgreSQL."""

from __future__ import annotations

import uuid

import pytest

from policies.lifecycle import LifecyclePolicy
from sdk import MemoryClient
from unstructured_memory.search.rerank import Candidate, RerankConfig, names, rerank, words

EXPLICIT = LifecyclePolicy.EXPLICIT
IMPLICIT = LifecyclePolicy.IMPLICIT
USER = "buyer-rerank-01"


# -- pure functions -------------------------------------------------------------------------


def test_a_turn_in_a_matching_session_outranks_an_isolated_near_match() -> None:
    ranked = rerank(
        "refund for order 88231",
        [
            Candidate("lone", 0.80, "s-1"),
            Candidate("turn", 0.75, "s-2"),
            Candidate("next", 0.60, "s-2"),
            Candidate("then", 0.55, "s-2"),
            Candidate("more", 0.50, "s-2"),
        ],
    )
    assert [k for k, _ in ranked] == ["turn", "next", "lone", "then", "more"]


def test_a_strong_lone_match_keeps_its_place() -> None:
    ranked = rerank(
        "退款 RF20260629001 到账了吗",
        [Candidate("lone", 1.0, "s-1"), *(Candidate(f"t{i}", 0.5, "s-2") for i in range(3))],
    )
    assert ranked[0][0] == "lone"


def test_scores_stay_in_the_given_range_and_ties_keep_their_order() -> None:
    given = [Candidate(i, 0.4, None) for i in range(5)]
    ranked = rerank("订单 88231", given)
    assert [k for k, _ in ranked] == [0, 1, 2, 3, 4]  # no session: each alone, all equal
    assert all(0.0 <= s <= 0.4 for _, s in ranked)
    assert rerank("q", []) == []
    zeros = [Candidate("a", 0.0, "s"), Candidate("b", 0.0, "s")]
    assert rerank("q", zeros) == [("a", 0.0), ("b", 0.0)]


def test_the_order_does_not_depend_on_the_scale_of_the_scores() -> None:
    """Reciprocal-rank fusion scores (about 1/60) rank as relative scores do."""
    scores = [(0.8, "s-1", None), (0.75, "s-2", "Caroline"), (0.6, "s-2", None), (0.3, "s-3", None)]
    order = [
        [k for k, _ in rerank("What did Caroline paint?", cands)]
        for cands in (
            [Candidate(i, s * scale, sess, who) for i, (s, sess, who) in enumerate(scores)]
            for scale in (1.0, 1 / 60, 1000.0)
        )
    ]
    assert order[0] == order[1] == order[2]


@pytest.mark.parametrize(
    ("query", "speaker", "named"),
    [
        ("What did Caroline research?", "Caroline", True),
        ("what did caroline's friend say", "Caroline", True),
        ("Also, when is the refund due?", "Al", False),
        ("When did the agent promise the refund?", "agent", True),
        ("客服说退款几天到账", "客服", True),
        ("张伟的订单 88231 发货了吗", "张伟", True),
        ("退款到账了吗", "张伟", False),
        ("订单 88231", "  ", False),
    ],
)
def test_names_finds_a_speaker_in_english_and_chinese(
    query: str, speaker: str, named: bool
) -> None:
    assert names(query, speaker) is named


def test_a_memory_whose_speaker_the_query_names_is_boosted() -> None:
    given = [Candidate("buyer", 0.8, "s-1", "买家"), Candidate("agent", 0.7, "s-2", "客服")]
    assert [k for k, _ in rerank("客服说退款几天到账", given)] == ["agent", "buyer"]
    assert [k for k, _ in rerank("退款几天到账", given)] == ["buyer", "agent"]
    off = RerankConfig(speaker_boost=0.0)
    assert [k for k, _ in rerank("客服说退款几天到账", given, off)] == ["buyer", "agent"]
    english = [Candidate("mel", 0.8, "s-1", "Melanie"), Candidate("car", 0.7, "s-2", "Caroline")]
    assert [k for k, _ in rerank("What did Caroline paint?", english)] == ["car", "mel"]


def test_the_named_speakers_turn_on_the_topic_outranks_their_small_talk() -> None:
    english = [
        Candidate("chat", 0.90, "s-1", "Caroline", "Caroline: Take care, talk soon!"),
        Candidate("art", 0.80, "s-2", "Caroline", "Caroline: I painted a sunrise last week."),
    ]
    assert [k for k, _ in rerank("What did Caroline paint?", english)] == ["art", "chat"]
    chinese = [
        Candidate("chat", 0.90, "s-1", "客服", "客服：好的，请您稍等"),
        Candidate("refund", 0.80, "s-2", "客服", "客服：退款 RF20260629001 三天内到账"),
    ]
    assert [k for k, _ in rerank("客服说退款几天到账", chinese)] == ["refund", "chat"]
    gated = RerankConfig(topic_weight=0.0)  # the speaker boost alone, halved for small talk
    assert [k for k, _ in rerank("客服说退款几天到账", chinese, gated)] == ["refund", "chat"]
    off = RerankConfig(topic_weight=0.0, off_topic_speaker=1.0)
    assert [k for k, _ in rerank("客服说退款几天到账", chinese, off)] == ["chat", "refund"]


def test_a_term_rare_among_the_candidates_weighs_more_than_a_common_one() -> None:
    given = [
        *(
            Candidate(f"refund-{n}", 0.5, None, None, f"refund requested, ticket {n}")
            for n in range(3)
        ),
        Candidate("order", 0.5, None, None, "88231 shipped on Monday"),
    ]
    assert rerank("refund of 88231", given)[0][0] == "order"  # one term each, the rarer wins
    chinese = [
        *(Candidate(f"退款-{n}", 0.5, None, None, f"退款申请第{n}次") for n in range(3)),
        Candidate("订单", 0.5, None, None, "88231 周一发货"),
    ]
    assert rerank("88231 的退款", chinese)[0][0] == "订单"


def test_a_latin_term_matches_at_the_start_of_a_word_and_digits_in_any_width() -> None:
    given = [
        Candidate("film", 0.8, "s-1", None, "An Oscar night and a scary film"),
        Candidate("car", 0.7, "s-2", None, "Cars break down in winter"),
    ]
    assert [k for k, _ in rerank("car repair", given)] == ["car", "film"]
    wide = [  # full-width digits, as a Chinese keyboard types them
        Candidate("other", 0.8, "s-1", None, "退款申请已提交"),
        Candidate("order", 0.7, "s-2", None, "订单８８２３１已发货"),
    ]
    assert [k for k, _ in rerank("88231", wide)] == ["order", "other"]


def test_a_speakers_name_is_not_a_topic_term() -> None:
    """A turn that only addresses the person the query names does not match its topic."""
    given = [
        Candidate("hello", 0.80, "s-1", "Melanie", "Melanie: Caroline, you are the best!"),
        Candidate("camp", 0.70, "s-2", "Melanie", "Melanie: We love camping at the beach."),
        Candidate("thanks", 0.30, "s-3", "Caroline", "Caroline: Thanks!"),
    ]
    ranked = rerank("Where did Caroline go camping?", given)
    assert [k for k, _ in ranked] == ["camp", "hello", "thanks"]
    chinese = [
        Candidate("hello", 0.80, "s-1", "买家", "买家：张伟你好"),
        Candidate("refund", 0.70, "s-2", "买家", "买家：退款 RF20260629001 还没到账"),
        Candidate("thanks", 0.30, "s-3", "张伟", "张伟：收到"),
    ]
    assert rerank("张伟 退款", chinese)[0][0] == "refund"


def test_a_turn_that_tells_outranks_the_question_it_answers() -> None:
    given = [
        Candidate("ask", 0.80, "s-1", None, "订单 88231 什么时候发货？"),
        Candidate("tell", 0.70, "s-2", None, "订单 88231 周一已发货"),
    ]
    assert [k for k, _ in rerank("订单 88231 发货", given)] == ["tell", "ask"]
    english = [
        Candidate("ask", 0.80, "s-1", None, "Did the refund for order 88231 arrive?"),
        Candidate("tell", 0.70, "s-2", None, "The refund for order 88231 arrived on Monday."),
    ]
    assert [k for k, _ in rerank("refund order 88231", english)] == ["tell", "ask"]
    off = RerankConfig(question_penalty=0.0)
    assert [k for k, _ in rerank("refund order 88231", english, off)] == ["ask", "tell"]


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Caroline: I painted a sunrise last week.", 7),
        ("Wow, cool!", 2),
        ("订单 88231 周一已发货", 4.5),  # 88231, and half a word per character
        ("客服：退款 RF20260629001 三天内到账", 5.5),
        ("手机 13912345678", 2),
        ("Refund 退款 RF20260629001, OK?", 4),
        ("", 0),
        ("  ", 0),
    ],
)
def test_words_counts_latin_words_and_half_a_word_per_cjk_character(
    text: str, count: float
) -> None:
    assert words(text) == count


def test_a_turn_that_tells_something_outranks_a_short_reply_with_the_same_match() -> None:
    english = [
        Candidate("wow", 0.80, "s-1", "Caroline", "Caroline: Wow, counseling, cool!"),
        Candidate(
            "plan",
            0.75,
            "s-2",
            "Caroline",
            "Caroline: I'm keen on counseling or working in mental health - I'd love to "
            "support those with similar issues, and I start the course in May.",
        ),
    ]
    assert [k for k, _ in rerank("What does Caroline plan?", english)] == ["plan", "wow"]
    off = RerankConfig(length_weight=0.0)
    assert [k for k, _ in rerank("What does Caroline plan?", english, off)] == ["wow", "plan"]
    chinese = [
        Candidate("ok", 0.80, "s-1", "客服", "客服：退款好的"),
        Candidate(
            "refund",
            0.75,
            "s-2",
            "客服",
            "客服：订单 88231 的退款 RF20260629001 已经原路退回您尾号 5678 的银行卡，"
            "一般三到五个工作日到账，到账后会短信通知手机 13912345678，请您留意查收",
        ),
    ]
    assert [k for k, _ in rerank("客服说退款", chinese)] == ["refund", "ok"]
    assert [k for k, _ in rerank("客服说退款", chinese, off)] == ["ok", "refund"]


def test_the_length_term_is_capped_at_length_words() -> None:
    """Past ``length_words`` a longer memory earns nothing more: the match decides."""
    given = [
        Candidate("long", 0.75, None, None, " ".join(["refund"] * 50)),
        Candidate("longer", 0.70, None, None, " ".join(["refund"] * 500)),
    ]
    assert [k for k, _ in rerank("refund", given)] == ["long", "longer"]
    assert [k for k, _ in rerank("refund", given[::-1])] == ["long", "longer"]
    short = RerankConfig(length_floor=0, length_words=10)
    mixed = [
        Candidate("a", 0.70, None, None, "退款 " * 20),
        Candidate("b", 0.72, None, None, "退款"),
    ]
    assert [k for k, _ in rerank("退款", mixed, short)] == ["a", "b"]


def test_length_says_nothing_about_memories_up_to_length_floor_words() -> None:
    """Short facts (a wish, a parcel number) keep the order of their match."""
    given = [
        Candidate("fridge", 0.702, None, None, "想买车载冰箱，自驾游用"),
        Candidate("reply", 0.701, None, None, "Okay, the fridge then."),
        Candidate("parcel", 0.700, None, None, "退货用顺丰到付，单号 SF1822201938455，周一寄出"),
    ]
    floor = RerankConfig(topic_weight=0.0)
    assert [k for k, _ in rerank("车载冰箱", given, floor)] == ["fridge", "reply", "parcel"]
    no_floor = RerankConfig(topic_weight=0.0, length_floor=0)
    assert next(k for k, _ in rerank("车载冰箱", given, no_floor)) == "parcel"


def test_penalties_keep_scores_in_the_given_range() -> None:
    given = [
        Candidate(0, 0.9, None, None, "退款三天内到账"),
        Candidate(1, 0.01, None, None, "到账了吗？"),
    ]
    ranked = rerank("退款", given)
    assert [k for k, _ in ranked] == [0, 1]
    assert ranked[0][1] == pytest.approx(0.9)
    assert all(0.0 <= s <= 0.9 for _, s in ranked)
    asking = [Candidate(i, s, None, None, "退款到账了吗？") for i, s in enumerate((0.9, 0.1))]
    ranked = rerank("退款", asking, RerankConfig(question_penalty=2.0))
    assert [k for k, _ in ranked] == [0, 1]
    assert all(0.0 <= s <= 0.9 for _, s in ranked)


# -- through mem.search ---------------------------------------------------------------------


def test_search_ranks_a_turn_of_the_matching_session_above_an_isolated_near_match(
    mem: MemoryClient,
) -> None:
    mem.profiles.ensure(USER)
    lone = mem.write(USER, "refund courier", lifecycle_policy=EXPLICIT, session_id="s-lone")
    turns = [
        "refund by courier for the parcel",
        "the courier took the parcel back for order 88231",
        "a refund for a returned parcel takes three days",
    ]
    ids = [mem.write(USER, t, lifecycle_policy=EXPLICIT, session_id="s-return") for t in turns]
    mem.write(
        USER,
        "the refund policy for large appliances and their extended warranty terms",
        lifecycle_policy=EXPLICIT,
        session_id="s-policy",
    )
    hits = mem.search(USER, "refund courier", limit=10, preset="keyword")
    by_id = {h.memory_id: h for h in hits}
    lone_kw, turn_kw = by_id[lone].keyword_score, by_id[ids[0]].keyword_score
    assert lone_kw is not None
    assert turn_kw is not None
    assert lone_kw > turn_kw  # alone, the lone match scores higher on keywords
    assert hits[0].memory_id == ids[0]  # its session lifts the turn above it
    assert hits[0].score >= hits[1].score


def test_search_boosts_the_speaker_the_query_names(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)

    def say(session: str, words: str, speaker: str | None) -> uuid.UUID:
        meta = {"speaker": speaker} if speaker else None
        return mem.write(USER, words, lifecycle_policy=EXPLICIT, session_id=session, metadata=meta)

    buyer = say("s-1", "退款几天到账", "买家")
    agent = say("s-2", "退款几天到账，三天内", "客服")
    say("s-3", "订单 88231 已发货，快递明天到", None)
    plain = mem.search(USER, "退款几天到账", limit=2)
    named = mem.search(USER, "客服说退款几天到账", limit=2)
    assert [h.memory_id for h in plain] == [buyer, agent]
    assert (plain[0].keyword_score or 0.0) > (plain[1].keyword_score or 0.0)
    assert [h.memory_id for h in named] == [agent, buyer]


def test_search_ranks_an_answer_above_the_question_it_answers(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    ask = mem.write(USER, "退款几天到账？", lifecycle_policy=EXPLICIT, session_id="s-1")
    tell = mem.write(USER, "退款几天到账，三天内", lifecycle_policy=EXPLICIT, session_id="s-2")
    mem.write(USER, "订单 88231 已发货，快递明天到", lifecycle_policy=EXPLICIT, session_id="s-3")
    hits = mem.search(USER, "退款几天到账", limit=2, preset="keyword")
    assert [h.memory_id for h in hits] == [tell, ask]
    assert (hits[1].keyword_score or 0.0) > (hits[0].keyword_score or 0.0)


def test_search_ranks_a_turn_that_tells_above_a_short_reply(mem: MemoryClient) -> None:
    mem.profiles.ensure(USER)
    reply = mem.write(USER, "Refund? Okay, sure.", lifecycle_policy=EXPLICIT, session_id="s-1")
    told = mem.write(
        USER,
        "The refund RF20260629001 for order 88231 went back to the card you paid with on "
        "Monday. Banks usually take three to five working days to show it, and you will "
        "get a text message on your phone as soon as it arrives; if it has not arrived by "
        "next Friday, just tell us and we will chase the bank for you.",
        lifecycle_policy=EXPLICIT,
        session_id="s-2",
    )
    terms = " ".join(f"clause{n} covers extended warranty and installation" for n in range(60))
    mem.write(USER, f"Refund policy: {terms}", lifecycle_policy=EXPLICIT, session_id="s-3")
    hits = mem.search(USER, "refund", limit=3, preset="keyword")
    assert [h.memory_id for h in hits[:2]] == [told, reply]
    assert (hits[1].keyword_score or 0.0) > (hits[0].keyword_score or 0.0)
