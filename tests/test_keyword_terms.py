"""Keyword terms: stemmed on both sides of a match, stop words dropped from queries."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text as sql

from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from unstructured_memory.embedders.hashing import HashingEmbedder
from unstructured_memory.search.presets import KEYWORD_ONLY
from unstructured_memory.search.query import build_query
from unstructured_memory.tokenize import (
    BIGRAM_WEIGHT,
    CONCEPT_WEIGHTS,
    EN_STOP_WORDS,
    STOP_WORDS,
    cjk_bigrams,
    concepts,
    index_text,
    is_bigram,
    is_concept,
    keyword_terms,
    query_terms,
    stem,
    tokens,
    weighted_query_terms,
)
from values.inputs import MemoryInput


def test_stem_strips_english_suffixes_only() -> None:
    assert [stem(w) for w in ("camping", "camped", "camps", "researching", "agencies")] == [
        "camp",
        "camp",
        "camp",
        "research",
        "agency",
    ]
    assert stem("refunds") == stem("refund") == "refund"
    assert stem("88231") == "88231"
    assert stem("退款") == "退款"
    assert stem("bus") == "bus"  # short words and -ss/-us/-is endings are kept


def test_keyword_terms_are_stemmed_tokens_then_bigrams_and_concepts() -> None:
    text = "Melanie: We went camping at the beach; refunds for 订单 88231 arrived"
    words = [stem(t) for t in tokens(text)]
    assert keyword_terms(text) == [*words, *cjk_bigrams(text), *concepts("订单")]
    english = "Melanie: We went camping at the beach"
    assert keyword_terms(english) == [stem(t) for t in tokens(english)]  # as before
    assert "camp" in keyword_terms(text)
    assert "refund" in keyword_terms(text)
    assert {"订单", "88231"} <= set(keyword_terms(text))
    assert index_text(text) == " ".join(keyword_terms(text))


def test_query_terms_drop_english_stop_words_only() -> None:
    assert query_terms("What did Caroline research?") == [stem("caroline"), "research"]
    # Chinese function words stay: dropping them lost keyword-only recall on the zh set
    zh = query_terms("我的退款 RF20260629001 什么时候到账")
    assert zh == keyword_terms("我的退款 RF20260629001 什么时候到账")
    assert {"退款", "rf20260629001"} <= set(zh)
    # a query made of stop words only keeps them (otherwise nothing would match)
    assert query_terms("what is it") == ["what", "is", "it"]
    assert "what" in EN_STOP_WORDS
    assert {"what", "的", "什么"} <= STOP_WORDS


def test_cjk_bigrams_meet_where_jieba_cuts_differently() -> None:
    stored, asked = keyword_terms("Bart在圣诞节晚会上跳舞"), query_terms("圣诞晚会")
    assert "圣诞节" in stored  # the words differ
    assert "圣诞节" not in asked
    assert {"~圣诞", "~晚会"} <= set(stored) & set(asked)  # the bigrams meet
    assert "晚会" in stored  # the word 晚会 and the bigram ~晚会 are two terms
    assert cjk_bigrams("Bart likes pizza") == []
    assert cjk_bigrams("好") == []
    assert all(is_bigram(t) for t in cjk_bigrams("退款到账"))


def test_concepts_join_synonyms_and_skip_characters_and_function_words() -> None:
    assert set(concepts("高兴")) & set(concepts("开心"))  # 开心/高兴: one synonym group
    assert set(concepts("难过")) & set(concepts("伤心"))
    assert concepts("打") == []  # a character is in dozens of groups
    assert concepts("我们") == []
    assert concepts("camping") == []
    assert all(is_concept(c) and len(c) - 1 in CONCEPT_WEIGHTS for c in concepts("高兴"))
    assert not any(is_concept(t) for t in tokens("^Ga01A01 高兴"))  # no token is one


def test_query_term_weights_words_bigrams_concepts() -> None:
    weights = weighted_query_terms("很开心", 0.5)
    assert weights["开心"] == 0.5
    assert weights["~开心"] == 0.5 * BIGRAM_WEIGHT
    group = next(c for c in concepts("开心") if len(c) == 8)
    assert weights[group] == 0.5 * CONCEPT_WEIGHTS[7]


def test_build_query_uses_query_terms() -> None:
    built = build_query(
        "When did Melanie go camping?",
        embedder=HashingEmbedder(),
        config=KEYWORD_ONLY,
        limit=5,
        now=datetime.now(UTC),
    )
    assert built.query.tokens == (stem("melanie"), "go", "camp")


def test_an_inflected_query_finds_the_memory_by_keywords(mem: MemoryClient) -> None:
    user = "terms-user"
    mem.profiles.ensure(user)
    texts = [
        "Melanie: We camped at the beach with the kids last summer",
        "Caroline: I'm researching adoption agencies",
        "订单 88231 的扫地机已申请退款，退款编号 RF20260629001",
        "用户偏好微信通知，不要打电话",
    ]
    ids = mem.write_many(
        [
            MemoryInput(user_id=user, text=t, lifecycle_policy=LifecyclePolicy.EXPLICIT)
            for t in texts
        ],
        progress=False,
    )
    with mem.admin.database.transaction() as conn:
        stored = conn.execute(
            sql("SELECT index_text FROM memory_fragment WHERE user_id = :u AND id = :i"),
            {"u": user, "i": ids[0]},
        ).scalar_one()
    assert "camp" in stored.split()
    assert "camped" not in stored.split()

    def first(query: str) -> str:
        return mem.search(user, query, limit=1, preset="keyword")[0].text

    assert first("Where has Melanie gone camping?") == texts[0]
    assert first("What did Caroline research?") == texts[1]
    assert first("我的退款什么时候到账") == texts[2]
