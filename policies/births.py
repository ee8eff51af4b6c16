"""A baby born ends the pregnancy the profile knew of: pure rules.

An earlier session said the user is expecting (我怀孕五个月了, 孕28周 预产期下个月, we're
expecting our first in May); a later one tells of the birth, often in passing (闺女十号生的
六斤二两, 宝宝上周出生了, our son Eli was born last week). The birth is family news like any
other, but it lands in another slot (the daughter's) than the pregnancy (the household's):
left alone, the pregnancy would stand beside the baby. So an observation of a birth carries
:data:`ENDS_PREGNANCY`: the merge gives it the slot that holds a pregnancy, which keeps the
pregnancy as its former value; the words of the pregnancy (:data:`PREGNANCY`: 怀孕, 孕28周,
预产期, expecting) then read as replaced in earlier records, and an agent's fact stating one
goes.
"""

from __future__ import annotations

from typing import Final

from policies.linear_re import LinearPattern

__all__ = ["BIRTH", "BIRTH_ZH", "ENDS_PREGNANCY", "PREGNANCY"]

ENDS_PREGNANCY: Final = "~pregnancy"
"""``replaces`` of a fact observation telling of a birth: the pregnancy slot is its slot."""

PREGNANCY: Final = LinearPattern(
    r"怀孕|怀了|孕\s?\d{1,2}\s?周|孕[早中晚]期|孕期|孕妇|预产期|待产"
    r"|(?i:pregnan(?:t|cy)|expecting|due date|(?:^|[^a-z])due (?:in|on|next|this|mid|early|late)"
    r"|weeks along|trimester)"
)
"""Words stating a pregnancy."""

BIRTH_ZH: Final = (
    r"(?:闺女|女儿|儿子|宝宝|孩子|娃|老二|二宝|小宝|千金|公主|小子)[^，,。！？；;\s]{0,6}?"
    r"(?:出生(?:了|啦|的|后|那天)|(?:号|日|周|礼拜|月|天)生的|降生|落地了|呱呱坠地)"
    r"|(?:我|老婆|媳妇|爱人|太太)(?:刚|已经|上个?月|上周|上礼拜|前几天|前天|昨天)?(?:生了|生完|生下)"
    r"(?:个|一个|一对)?(?:闺女|女儿|儿子|宝宝|孩子|男孩|女孩|小子|千金|双胞胎|龙凤胎|二胎|老二)"
    r"|(?:我|老婆|媳妇|爱人|太太)(?:刚|已经|上个?月|上周|上礼拜|前几天|前天|昨天)?(?:顺产|剖腹产|剖了)"
    r"|坐月子|月子中心|出月子"
)
"""A birth told in Chinese (the family topic reads it too)."""

BIRTH: Final = LinearPattern(
    BIRTH_ZH + r"|(?i:(?:was|were) born (?:last|this|yesterday|today|on|early|a few|just|"
    r"(?:\d|one|two|three|four|five|six) (?:days?|weeks?) ago)"
    r"|gave birth|had (?:the|our|a|my) (?:baby|little one)"
    r"|(?:baby|little one) (?:arrived|came|is here)|(?:is|are) a (?:newborn|new mum|new mom))"
)
"""Words telling of a birth."""
