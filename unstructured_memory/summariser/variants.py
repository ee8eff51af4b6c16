"""The variant a session settled on: the colour, capacity and screen size the agent's
confirmation after the user's last word names ("好的，星空灰。", "已为您提交换货，换成墨绿色
L 码", "Azure, $45, order 6440021", "Done: exchange … for the sage green cover").

A confirmation is what an agent's turn states (its questions left out); of each kind it
must name one value only (a turn listing "Azure and Charcoal ship today" settles
nothing). Colours are found by
their shape: a colour character, optionally after a shade word and before 色, standing
alone (明白 and 蓝牙 are none); English colour words are a prior
(:data:`~unstructured_memory.summariser.cues.COLOUR_EN`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from policies.linear_re import LinearPattern
from unstructured_memory.summariser.cues import COLOUR_EN, QUESTION
from unstructured_memory.summariser.entities import Lang

__all__ = ["confirmed_variant"]

_SHADE_ZH: Final = (
    r"深空|深|浅|淡|亮|暗|墨|雾霾|天|宝石|藏|湖|樱花|星空|太空|午夜|象牙|燕麦|奶油|玫瑰|珍珠|香槟|薄荷|酒|"
    r"石墨|远峰|冰川|雅川|松柏|曜石|月光|星光|晨曦|玫|橄榄"
)
_KINDS: Final = {
    "zh": (
        LinearPattern(
            r"(?:^|[\s，,。：:、（(]|换成|换|选|是|要)"
            rf"(?P<v>(?:{_SHADE_ZH})?[红黑白蓝灰绿粉紫黄金银棕橙青褐米咖]色?)"
            r"(?:$|[\s，,。！？!?、）)的款码])"
        ),
        LinearPattern(r"(?:^|[^0-9A-Za-z.])(?P<v>\d{2,4}\s?(?:GB|G|TB|T))(?:$|[^0-9A-Za-z])"),
        LinearPattern(r"(?:^|[^0-9.])(?P<v>\d{2,3}\s?(?:英寸|寸))"),
    ),
    "en": (
        LinearPattern(
            r"(?:^|[^A-Za-z])(?P<v>(?i:(?:(?:light|dark|deep|pale) )?"
            rf"(?:{COLOUR_EN}|azure|indigo|turquoise)(?: (?:{COLOUR_EN}))?))(?:$|[^A-Za-z])"
        ),
        LinearPattern(r"(?:^|[^0-9A-Za-z.])(?P<v>\d{2,4}\s?(?:GB|TB))(?:$|[^0-9A-Za-z])"),
        LinearPattern(r"(?:^|[^0-9.])(?P<v>\d{2,3}(?:-inch| inch|\"))"),
    ),
}
"""Colour, capacity and screen size, each with its value in ``v``."""
_SENTENCE: Final = {
    "zh": LinearPattern(r"[^。！!？?\n]+[。！!？?]?"),
    "en": LinearPattern(r"(?:[^.!?\n]|\.\d)+[.!?]?"),
}


def _stated(turn: str, lang: Lang) -> str:
    """``turn`` without its questions ("The 75-inch at 7,899 it is. Shall I place the
    order?" states the first sentence)."""
    spans = _SENTENCE[lang].spans(turn)
    kept = [turn[a:b] for a, b in spans if QUESTION.search(turn[a:b]) is None]
    return " ".join(kept)


def confirmed_variant(agent_turns: Sequence[str], lang: Lang) -> tuple[str, ...]:
    """The values the agent's last confirmation naming a variant names, one per kind
    (colour, capacity, screen size); none when that turn names two of a kind."""
    for said in reversed(agent_turns):
        turn = _stated(said, lang)
        found: list[str] = []
        named = False
        for pattern in _KINDS[lang]:
            values = {" ".join((m.group("v") or "").split()) for m in pattern.finditer(turn)}
            named = named or bool(values)
            if len(values) > 1:
                return ()
            found += values
        if named:
            return tuple(found)
    return ()
