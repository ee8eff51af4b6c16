"""A dialogue as the search query: its turns recognised and weighed, bad input still typed."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import pytest

from policies.errors import InvalidText
from policies.lifecycle import LifecyclePolicy
from sdk.client import MemoryClient
from unstructured_memory.embedders.hashing import HashingEmbedder
from unstructured_memory.search.dialogue import Turn, parse_turns, turn_weights, user_label
from unstructured_memory.search.presets import HYBRID_DEFAULT
from unstructured_memory.search.query import build_query

EMBEDDER = HashingEmbedder()


def test_labelled_lines_are_turns() -> None:
    text = '<BOD>\n<Bart>:"我要表演魔术！"\n<Assistant>:"真棒！"\n<Bart>:"穿什么好呢？"'
    assert parse_turns(text) == [
        Turn("", "<BOD>"),
        Turn("Bart", "我要表演魔术！"),
        Turn("Assistant", "真棒！"),
        Turn("Bart", "穿什么好呢？"),
    ]
    assert parse_turns("小雨：我好饿\n助手：想吃什么？\n小雨：红烧肉\n还要米饭") == [
        Turn("小雨", "我好饿"),
        Turn("助手", "想吃什么？"),
        Turn("小雨", "红烧肉\n还要米饭"),  # an unlabelled line continues the turn
    ]
    assert [t.speaker for t in parse_turns("Uncle Chen: hi\n[AI]: hello") or []] == [
        "Uncle Chen",
        "AI",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "退款到账了吗",
        "注意：明天发货\n10:30 到货",  # one label, a time
        "备注：不要香菜\n备注：少辣",  # one speaker
        "see https://example.com/a\nhttp://example.com/b",
        "我的订单: 88231",
    ],
)
def test_other_texts_are_not_dialogues(text: str) -> None:
    assert parse_turns(text) is None


def test_the_users_latest_turn_weighs_most() -> None:
    turns = [Turn("Bart", "a"), Turn("Assistant", "b"), Turn("Bart", "c"), Turn("Assistant", "d")]
    weights = turn_weights(turns)
    assert user_label(turns) == "Bart"  # the last speaker is an assistant role
    assert weights[2] == 1.0
    assert weights[0] < weights[2]
    assert weights[1] < weights[0]
    assert weights[3] < weights[2]
    assert min(weights) > 0
    # no assistant role named: whoever spoke last is the user
    assert user_label([Turn("甲", "x"), Turn("乙", "y")]) == "乙"


def _vector(texts: Sequence[str], weights: Sequence[float]) -> list[float]:
    summed = np.asarray(weights) @ np.asarray(EMBEDDER.embed_documents(list(texts)))
    out: list[float] = (summed / np.linalg.norm(summed)).tolist()
    return out


def test_build_query_weighs_each_turns_terms_and_vectors() -> None:
    text = "小雨: 团子又在咬东西\n助手: 小猫咪喜欢咬\n小雨: 我想去海边冲浪"
    q = build_query(
        text, embedder=EMBEDDER, config=HYBRID_DEFAULT, limit=10, now=datetime.now(UTC)
    ).query
    weights = dict(zip(q.tokens, q.weights, strict=True))
    assert weights["冲浪"] == 1.0
    assert weights["团子"] < 1.0
    assert weights["小猫咪"] < weights["团子"]
    assert "小雨" not in weights  # labels are not searched
    assert "助手" not in weights
    assert q.text == "团子又在咬东西\n小猫咪喜欢咬\n我想去海边冲浪"
    turn_w = turn_weights(parse_turns(text) or [])
    expected = _vector(["团子又在咬东西", "小猫咪喜欢咬", "我想去海边冲浪"], turn_w)
    assert np.allclose(q.vector, expected)


def test_a_bad_dialogue_is_invalid_before_any_embedder(
    mem: MemoryClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.profiles.ensure("dialogue-cap")

    def refuse(*_: object) -> list[float]:
        raise AssertionError("a bad query reached the embedder")

    monkeypatch.setattr(HashingEmbedder, "embed_documents", refuse)
    monkeypatch.setattr(HashingEmbedder, "embed_query", refuse)
    long = "\n".join(f"{'小雨' if i % 2 else '助手'}: 我想再去海边冲浪一次" for i in range(200))
    assert len(long.encode()) > 4096
    for bad in (long, " \n ", "小雨: \ud800\n助手: 好的", "小雨: a\x00\n助手: b"):
        with pytest.raises(InvalidText):
            mem.search("dialogue-cap", bad)


def test_a_dialogue_of_pii_finds_its_memory_through_the_blind_index(mem: MemoryClient) -> None:
    user = "dialogue-pii"
    mem.profiles.ensure(user)
    mid = mem.write(
        user, "请记住我的邮箱是 yu.x@example.com", lifecycle_policy=LifecyclePolicy.EXPLICIT
    )
    mem.write(user, "小雨喜欢吃外婆做的红烧肉", lifecycle_policy=LifecyclePolicy.EXPLICIT)
    hits = mem.search(user, "小雨: yu.x@example.com\n助手: yu.x@example.com", limit=3)
    assert hits[0].memory_id == mid
