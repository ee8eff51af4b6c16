"""A clause that supposes something of the user ("如果我搬到杭州", "if I moved to Denver")
states no fact about them: no city, no size, no note of it; what is asked under the
supposition (放门卫, leave it with the concierge) still counts, and so does a household
member it presupposes (我家猫). Pure: no database."""

from __future__ import annotations

import pytest

from policies.profile_merge import Observation
from unstructured_memory.profile.rules import NOTE_PREFIX, RuleExtractor
from unstructured_memory.summariser.summary import summarise
from values.sessions import Turn


def _extract(said: str) -> tuple[list[Observation], dict[str, str]]:
    turns = [Turn("user", said), Turn("assistant", "好的 / OK")]
    extraction = RuleExtractor().extract(turns, summarise("buyer-sp-01", "s-1", turns))
    return list(extraction.observations), {i.key: i.text for i in extraction.instructions}


@pytest.mark.parametrize(
    ("said", "supposed"),
    [
        ("如果我搬到杭州了，地址要怎么改", "杭州"),
        ("假如我明年去成都工作，会员还能用吗", "成都"),
        ("等我搬到苏州以后，订阅能跟着转过去吗", "苏州"),
        ("我住南京，要是我下个月搬去上海的话会员还能用吗", "上海"),
        ("hypothetically if I moved to Denver next year would the box just follow me", "Denver"),
        ("If I moved to Seattle, would my subscription follow me?", "Seattle"),
        ("What if we relocate to Boston in the spring, can the plan move with us?", "Boston"),
    ],
)
def test_a_supposed_fact_is_no_fact(said: str, supposed: str) -> None:
    observations, instructions = _extract(said)
    assert not any(supposed in o.value for o in observations), observations
    assert not any(supposed in text for text in instructions.values()), instructions


@pytest.mark.parametrize(
    ("said", "key", "value"),
    [
        ("我住南京，要是我下个月搬去上海的话会员还能用吗", "city", "南京"),
        ("I'm in Austin, if I moved would the subscription follow me?", "city", "Austin"),
        ("要是我家猫不爱吃能退吗", "pet", "猫"),
        ("主要是我家孩子对花生过敏，这款零食有花生吗", "family", "花生过敏"),
    ],
)
def test_what_is_said_beside_or_presupposed_still_counts(said: str, key: str, value: str) -> None:
    observations, _ = _extract(said)
    assert any(o.key == key and value in o.value for o in observations), observations


@pytest.mark.parametrize(
    ("said", "asked"),
    [
        ("如果我不在家，就放门卫", "放门卫"),
        ("If I'm not home, leave it with the concierge", "concierge"),
    ],
)
def test_what_is_asked_under_a_supposition_is_kept_without_a_note_of_it(
    said: str, asked: str
) -> None:
    _, instructions = _extract(said)
    assert any(asked in text for text in instructions.values()), instructions
    notes = [t for k, t in instructions.items() if k.startswith(NOTE_PREFIX)]
    assert not any(("不在家" in t or "not home" in t) and asked not in t for t in notes), notes
