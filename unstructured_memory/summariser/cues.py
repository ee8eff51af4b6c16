"""The cue words of dialogue acts, in Chinese and English: patterns only, no logic.

:mod:`~unstructured_memory.summariser.acts` reads a clause's act from these
cues; each is a :class:`~policies.linear_re.LinearPattern` (RE2, linear time).
They are written from customer-service practice in general (how people
instruct, correct, take back and negate), never from the evaluation sets.
"""

from __future__ import annotations

from typing import Final

from policies.linear_re import LinearPattern


def _words(zh: str, en: str) -> LinearPattern:
    """Chinese cues anywhere, or English words standing alone (not inside a word); the
    cue itself is the group ``cue``."""
    return LinearPattern(
        rf"(?P<cue>{zh})|(?:^|[^A-Za-z'])(?P<cue_en>(?i:{en}))(?:$|[^A-Za-z])"
        if zh
        else rf"(?:^|[^A-Za-z'])(?P<cue_en>(?i:{en}))(?:$|[^A-Za-z])"
    )


__all__ = [
    "CHOICE",
    "CLAUSE_EN",
    "CLAUSE_ZH",
    "COLOUR",
    "CORRECTION",
    "CORRECTION_MARK",
    "DECLINED",
    "DIRECTIVE",
    "DOUBTED",
    "DROPPED",
    "FACT",
    "FUTURE",
    "HABIT",
    "HEDGE",
    "INSTRUCTION",
    "MEMO",
    "NEGATION",
    "NUMBER",
    "OFFERED",
    "ONE_OFF",
    "PAST",
    "PREFERENCE",
    "QUESTION",
    "REQUEST_FAMILIES",
    "RETRACTION",
    "RUN",
    "SENTENCE",
    "SMALL_TALK",
    "TEMPORARY",
]

SENTENCE: Final = LinearPattern(r"[^。！？!?；;\n]+")
"""A sentence of a turn, up to a full stop, a question or exclamation mark, a semicolon."""

CLAUSE_ZH: Final = LinearPattern(r"[^，,。！？!?；;\n～~…⋯]+")
"""A clause of Chinese text: up to a comma, a full stop, a question or exclamation mark, an
ellipsis."""

CLAUSE_EN: Final = LinearPattern(r"(?:[^.,!?;\n]|[.,]\d)+")
"""A clause of English text (a decimal point or a thousands comma does not end it)."""

RUN: Final = LinearPattern(r"\S+")
"""A run of words between spaces: a phrase of its own in an unpunctuated Chinese turn."""

_NEG_ZH = (  # the last branch: 不 before a verb of contact or delivery
    r"别再|不要再|不用再|不再|再也别|再也不要|再也不|千万别|千万不要|不要|不用|不想|不需要|不必|无需|"
    r"用不着|勿|别|甭|禁止|拒绝|不许|不准|免|不(?:[发打用走寄送放给联系通知推开])"
)
_NEG_EN = (
    r"don'?t|do not|doesn'?t|does not|never|no more|not|stop|no|without|rather than|"
    r"instead of|avoid|anything but|except|other than|[A-Za-z]+n't"
)
NEGATION: Final = _words(_NEG_ZH, _NEG_EN)
"""A negation cue; :func:`~unstructured_memory.summariser.acts.negated` decides what it governs."""

REFUSED_AFTER_ZH: Final = (
    r"(?:我|就|也|都|通知|提醒|消息|推送|的)?\s*(?:就|也|都|可以)?"
    r"(?:(?:别|不要|不用|甭|不必|不需要)(?:再|给我)?"
    r"|(?:从来|从不|根本|基本|一般|平时)?(?:不|没|很少)(?:怎么|常|太)?(?:看|用|接|回|查))"
)
"""A refusal right after the word it governs, in a topicalised clause ("短信我基本不看",
"邮件就别发了", "电话就不用打了"): the tail :data:`REFUSED_AFTER` reads."""
REFUSED_AFTER: Final = LinearPattern(r"^[^，,。！？；;\n]{0,2}?" + REFUSED_AFTER_ZH)
"""A refusal of the word that ends where the text starts (see :data:`REFUSED_AFTER_ZH`)."""

_FUTURE_ZH = (  # 以后 as "from now on" (not 到货以后, "after delivery")
    r"(?:^|[^到货了单款完收签用装过修换买着])以后|今后|往后|之后都|日后|下次|下回|一律|统一|统统|"
    r"从今天起|从现在起|从今往后|从此|以后都|打今儿起|打今天起|从今儿起|往后都|"
    r"记住|记得|记一下|备注一下|备注|都(?:直接|用|走|发|放|搁|寄|打|联系|送|给|开|别|甭|不要|不用|只)|全部都|"
    r"别再|不要再|不用再|不再|再也别|再也不要|千万别|"
    r"有(?:事|急事|什么事|情况|消息|进展|变化|问题|需要)(?:的话)?(?:你们|您|就|请|麻烦|直接|都)*"
    r"(?:用|走|发|打|联系|找|通知|微信|短信|电话|邮件|邮箱)"
)
_HABIT_ZH = r"每次|每回|回回|总是|一直都?|永远|始终|平时都?"
"""Words of frequency: an instruction only beside a directive ("每次发货前先打电话给我",
not "每次打开盖子都吱吱响")."""
_DIRECTIVE_ZH = (
    r"请|麻烦|帮我|给我|跟我|告诉我|通知我|联系我|找我|叫我|提醒我|别|不要|不用|甭|先|记得|你们|您|"
    r"(?:发|打|送|放|寄|联系|通知|推荐|用|走|安排)(?:给)?我"
)
_FUTURE_EN = (
    r"from now on|going forward|in (?:the )?future|next time|"
    r"always (?:use|send|email|call|text|ship|deliver|leave|put|contact|notify|bring|give|pack|"
    r"include|choose|go|hand|ring)|"
    r"remember (?:that |this |my |i |to )?|please note|make sure|for future|any time you|"
    r"keep in mind|make a note|note that|"
    r"whenever you|from here on|in general|as a rule|don'?t ever|no more|stop (?:calling|"
    r"texting|emailing|sending|messaging)|if anything (?:comes up|changes)|from today|"
    r"for all (?:my |future )?orders|on all (?:my |future )?orders|by default|"
    r"please (?:always|only|never)|only ever|please note that i|stick with|stay with|"
    r"as usual|my default|my go-to|back to [a-z]+ (?:as usual|again)|"
    r"(?:^|, ?|\. ?)\s*(?:(?:and|so|also|just)\s+)?(?:please\s+)?always\s+[a-z]*[a-rt-z]\s+"
    r"(?:me|us|my|our|it|them|the|everything|orders?|parcels?|packages?|deliveries)"
)
_HABIT_EN = (
    r"every time|each time|never|always|"
    r"all (?:of )?(?:my|our) (?:orders|parcels|packages|deliveries|shipments)|"
    r"(?:anything|everything|whatever) (?:i|we) (?:order|buy|get)"
)
_DIRECTIVE_EN = (
    r"you|please|ship|send|call|ring|text|email|leave|deliver|use|contact|notify|let me know|"
    r"ask me|tell me|don'?t|do not|put|bring|hand|give|pack|recommend|suggest"
)
INSTRUCTION: Final = _words(_FUTURE_ZH, _FUTURE_EN)
"""Words that make a statement about how to treat the user last beyond this request."""
FUTURE: Final = _words(
    r"(?:^|[^到货了单款完收签用装过修换买着])以后|今后|往后|日后|下次|下回|从今天起|从现在起|从今往后|从此|"
    r"打今儿起|打今天起|从今儿起|记住|记得|备注",
    r"from now on|going forward|in (?:the )?future|next time|remember|please note|make sure|"
    r"keep in mind|by default|for all (?:my |future )?orders|from here on|from today",
)
"""The strongest words of an instruction: what follows holds from now on, whatever it says."""
HABIT: Final = _words(_HABIT_ZH, _HABIT_EN)
"""Words of frequency (每次, 总是, every time, never) or of all the user's goods (all my
parcels, anything I order): an instruction only with a directive."""
DIRECTIVE: Final = _words(_DIRECTIVE_ZH, _DIRECTIVE_EN)
"""Words addressing the agent or asking it to act (请, 给我, 别, you, please, send…)."""

MEMO: Final = LinearPattern(
    r"^\s*(?:请|麻烦)?(?:帮我|给我)?(?:记一下|记下来?|记住|记好|记着|存一下|备注一下|备注下|备个注)"
    r"(?:了|吧|哈|啊|呀|哦|就行|一下)*\s*[。.!！~～]*\s*$"
    r"|(?i:^\s*(?:please\s+)?(?:save|note|remember|record|keep)\s+(?:it|that|this|those)"
    r"(?:\s+(?:down|on file|for next time|for later))?(?:,?\s*please)?\s*[.!]*\s*$)"
)
"""A sentence that only asks to remember what the turn said ("Save it.", "帮我记一下")."""

ONE_OFF: Final = _words(
    r"这次|这回|这一次|本次|这单|这一单|这(?:个|台|件|款)?[^，,。！？；]{0,6}订单|这笔|这件|单独这|这个快递|"
    r"就今天|只今天|今天先|只这一次|就这一次|"
    r"这个包裹|这批|这趟|今天的|明天的|"
    r"帮(?:我)?(?:朋友|同事|邻居|亲戚|室友|闺蜜|姐妹|哥们|兄弟|同学)|替(?:朋友|同事|邻居|闺蜜|同学)"
    r"|(?:我)?(?:朋友|同事|室友|闺蜜|同学)(?:的|说|要|想)",
    r"this time|this order|this one|just this once|for now|for this (?:order|parcel|one)|"
    r"this (?:parcel|package|delivery|shipment)|today'?s delivery|for a friend|my friend'?s?|"
    r"a friend of mine|my colleague|my neighbou?r'?s|on behalf of|(?:for )?today only|"
    r"just (?:for )?today|only today|for my (?:brother|sister|friend|colleague|boss|neighbou?r)",
)
"""Words that limit what is said to the present request, or to somebody else."""

TEMPORARY: Final = LinearPattern(
    r"暂时|先不|先别|这段时间|这阵子|最近在|近期|这几天|这周|本周|下周|下个?星期|下礼拜|下个月|过几天|"
    r"过段时间|出差期间|临时|(?i:for now|temporarily|this week|next week|for a while)"
)
"""Words of a time-bound intent ("下周出差，暂时不报销"); "these days" says what holds now."""

PAST: Final = _words(
    r"上周|上次|上回|昨天|前天|那次|之前|刚才|被|又[^，,。！？；]{0,8}了",
    r"last (?:week|time|month)|yesterday|was|were|got stolen|went missing|earlier today",
)
"""A narrative of what happened ("上周你们放门口那件被人顺走了"): no instruction for later."""

PRESENT: Final = _words(r"现在|如今|目前", r"now|these days|nowadays|currently")
"""What holds now, said after a narrative ("I left the hospital last month and I'm teaching
at the community college now"): the fact after the narrative stands."""

QUESTION: Final = LinearPattern(
    r"吗|呢|[?？]|什么时候|多久|怎么|怎样|如何|能不能|可不可以|是不是|有没有|几天|哪|多少|咋(?:$|[^办])|为啥"
    r"|(?i:^\s*(?:(?:oh|and|also|so|ok|okay|btw|but|plus|hey|um|well)[\s,]+)*"
    r"(?:(?:how|what|when|where|which|why|who)\s"
    r"|(?:can|could|would|will|is|are|does|did|have|has|should)\s+(?:you|i|it|we|"
    r"they|he|she|this|that|these|those|my|your|the|there|a|an)\s"
    r"|do\s+(?:you|i|we|they|these|those|my|your|the|there)\s))"
    r"|(?i:any (?:news|update))"
)
"""A question (a clause asking, not telling; "do it after 6pm" tells)."""

SMALL_TALK: Final = LinearPattern(
    r"^\s*(?:您好|你好|在吗|在不在|亲|哈+|嗯+|哦+|噢|好的|好吧|好滴|好嘞|行|可以|ok|OK|谢谢|多谢|感谢|辛苦了?|"
    r"麻烦了|拜拜|再见|没事了|没有了|就这样|明白|知道了|收到|了解|等下|等一下|等等|稍等|慢着|"
    r"呃+|诶|哎呀?|唉|额|(?:哦|噢|啊|呃|额|诶)\s?不(?:是|对)?|"
    r"(?i:wait,?\s+no|no,?\s+wait|hi|hello|hey|thanks|thank you|thx|ok|okay|great|cool|bye|got it|"
    r"sure|perfect|no worries|that'?s all|nothing else|alright|wait|hold on|hang on|hmm+|"
    r"um+|uh+|er+m?|oh|ah|oops|no|nope|nah))"
    r"[\s啦呀啊哈吧的了呢!！.。~～]*$"
)
"""A clause that is only a greeting, thanks, an acknowledgement, an interjection (呃, hmm, no)
or a pause ("等下")."""

PREFERENCE: Final = _words(
    r"喜欢|偏好|习惯|比较想要|更想要|倾向|就行|就好|就可以|比较好|更好|最好",
    r"prefer|i like|i'?d like|i love|rather|works? better|is fine|is best",
)
"""A liking, said in passing unless an instruction word makes it lasting."""

FACT: Final = _words(
    r"我(?:是|们是|家|们家|住|在|吃|不吃|对|有|养|平时|经常|每周|周末|一般|喜欢|爱|儿子|女儿|老婆|老公|"
    r"媳妇|爸|妈|孩子|宝宝|父母)|(?:家里|家中)(?:有|是)",
    r"i'?m|i am|i have|i've got|i live|i own|i use|i eat|i don'?t eat|"
    r"my (?:son|daughter|wife|husband|kids?|mom|dad|mother|father|parents|"
    r"partner|family|dog|cat|baby)|we have|we live",
)
"""A statement about the user (who they are, what they have, do or eat)."""

CHOICE: Final = LinearPattern(
    r"(?:还是|那就|那还是|最后|最终|决定|我选|就选|就要|就拿|就买|还是要|就这)"
    r"(?:这个|那个|这款|那款|这台|那台)?(?P<what>[^，,。！？!?；;\n]{1,20})"
    r"|(?i:i'?ll (?:take|go with|get|have|choose)|let'?s (?:go with|do)|"
    r"make it|i (?:choose|pick)|go with)\s+(?P<what_en>[^.,!?;\n]{1,40})"
)
"""A final choice ("那还是要 B 吧", "I'll take the blue one"); ``what``/``what_en``: the option."""

NUMBER: Final = LinearPattern(r"\d+(?:\.\d+)?")
"""A number as said, with its decimals."""

CORRECTION_MARK: Final = _words(
    r"[说写打输填记搞弄看抄念报拼发]错了?|[说搞弄记看写]反了?|弄混|搞混|记混|看串|串行|不对|有误|更正|"
    r"纠正|口误|笔误|打错字|反了|(?:^|[，,\s])(?:哦|噢|啊|呃|额|诶)\s?不(?:是|对)?(?:$|[，,\s])|"
    r"手滑(?:打|按|输|写)|[多少漏][打输写]了?(?:一|个|一个)?(?:\d|[一两]?位|数字|字母)",
    r"sorry|typo|(?:typed|added|put in) an extra|extra digit|(?:missed|dropped|left out) a digit|"
    r"i meant|i mean|correction|my bad|my mistake|mistyped|misspoke|actually|"
    r"(?:i|we)(?:'ve|\s+have)?(?:\s+been)?\s+(?:said|typed|gave|put|wrote|entered|quoted|told you|"
    r"sent you|buying|ordering|ordered|bought|picked|chose|getting|got|using|used)\s+(?:you\s+)?"
    r"(?:the\s+|a\s+)?wrong|wrong\s+(?:number|digits?|id|order number|code)|"
    r"swapped|mixed up|misread|got (?:it|that|the [a-z]+) wrong|that'?s not right|scratch that|"
    r"misspel+(?:ed|t)?|spel+(?:ed|t) (?:it|that|the [a-z]+|[a-z]+ name) wrong|"
    r"make (?:it|that) [a-z]*\d|(?:change|switch) (?:it|that) to|"
    r"oops|whoops|fat[- ]?finger(?:s|ed)?|wait,?\s+no|no,?\s+wait|sorry,?\s+no",
)
"""A word saying that something said before was wrong (not a wrong item: "you sent the wrong
size")."""

DOUBTED: Final = _words(
    r"(?:单号|订单号?|编号|号码|工单|单子)[^，,。！？!?]{0,8}(?:查不到|没查到|没有查到|找不到|不存在|有误)|"
    r"(?:查不到|没查到|没有查到|找不到)[^，,。！？!?]{0,8}(?:单号|订单|编号|号码|工单|单子)|"
    r"不[是在]您?(?:的)?名下|是不是记错|是否记错|核对",
    r"can(?:'?t|not) (?:find|locate)|couldn'?t (?:find|locate)|"
    r"(?:no|nothing) (?:order|record|ticket|case|claim)?s? ?(?:under|with|matching)|"
    r"(?:doesn'?t|does not) (?:match|exist)|double[- ]check|not (?:on|under) your account",
)
"""The agent doubting a number the user gave: not found, not theirs, to be checked
("这个单号查不到", "不是您名下的", "I can't find that order", "could you double-check?")."""

HEDGE: Final = _words(
    r"好像|可能|也许|大概|估计|应该是|说不定|似乎|不确定",
    r"i think|i guess|i believe|maybe|probably|perhaps|might|not sure|apparently|seems",
)
"""A belief rather than a fact ("我老婆好像已经买了", "I think my wife already bought one")."""

SUPPOSED: Final = LinearPattern(
    r"(?P<pre>[^主还就需只总也A-Za-z'])(?:"
    r"(?:如果|假如|假设|假使|倘若|万一|要是|若是|哪天|等)(?:说|哪天)?"
    r"(?:以后|将来|明年|下个?月|年底|到时候?)?(?:我|咱)"
    r"|(?i:(?:what |even )?if (?:i|we)(?:'[a-z]+)?|suppos(?:e|ing) (?:i|we)|hypothetically"
    r"|in case (?:i|we)|say (?:i|we))(?P<post>$|[^A-Za-z']))"
)
"""A supposition of the user ("如果我搬到杭州", "等我搬家以后", "if I moved to Denver",
"hypothetically…"): what the clause says of them is not so (yet). 主要是我… is no
supposition."""

COLOUR_EN: Final = (
    r"black|white|gr[ae]y|silver|gold|rose gold|champagne|red|blue|navy|sky blue|green|olive|"
    r"sage|mint|teal|yellow|mustard|orange|pink|purple|lavender|lilac|beige|cream|ivory|khaki|"
    r"brown|tan|burgundy|maroon|charcoal|coral|taupe"
)
"""English colour words: a value a correction may name alone ("I meant olive")."""
COLOUR: Final = LinearPattern(rf"(?i:(?:{COLOUR_EN})(?:\s+(?:{COLOUR_EN}))?)")

_WHEN_ZH: Final = (
    r"(?:下|这|本)?(?:周|星期|礼拜)[一二三四五六日天]|大后天|明天|后天|今天|\d{1,2}[号日]"
)
"""A day said in Chinese, as an appointment names it (下周二, 周六, 明天, 28号)."""

CORRECTION: Final = tuple(
    LinearPattern(rx)
    for rx in (
        # 不是 X，(而)是 Y / 不是 X 是 Y
        r"不是\s*(?P<wrong>[^，,。！？!?；;\s][^，,。！？!?；;]{0,29}?)\s*[，,、]?\s*(?:而|应该|应当)?是\s*"
        r"(?P<right>[^，,。！？!?；;\s]{1,30})",
        # 是 Y(，)不是 X
        r"是\s*(?P<right>[^，,。！？!?；;\s][^，,。！？!?；;]{0,29}?)\s*[，,]?\s*(?:而)?不是\s*"
        r"(?P<wrong>[^，,。！？!?；;\s]{1,30})",
        # Y 不是 X ("周三不是周二")
        r"(?P<right>[^，,。！？!?；;\s]{1,12}?)\s*[，,]?\s*(?:而)?不是\s*(?P<wrong>[^，,。！？!?；;\s]{1,12})",
        # X 说错了/写错了，(应该)是 Y
        r"(?P<wrong>[^，,。！？!?；;\s]{1,30}?)\s*(?:说|写|打|输|填|记|搞|弄)错了?\s*[，,]?\s*"
        r"(?:应该|其实|正确的)?(?:是|为)\s*(?P<right>[^，,。！？!?；;\s]{1,30})",
        # 说错了，(应该)是 Y / 更正一下：Y / 改成 Y
        r"(?:说|写|打|输|填|记|搞|弄)错了?[^，,。！？!?；;]{0,6}[，,:：\s]*(?:应该|其实|正确的)?"
        r"(?:是|为)\s*(?P<right>[^，,。！？!?；;\s]{1,30})",
        r"(?:更正|纠正)(?:一下)?[，,:：\s]*(?:应该|正确的)?(?:是|为)?\s*"
        r"(?P<right>[^，,。！？!?；;\s]{1,30})",
        r"(?:应该|其实)是\s*(?P<right>[^，,。！？!?；;\s]{1,30})\s*才对",
        r"(?P<right>[^，,。！？!?；;\s]{1,30}?)\s*才对",
        # English
        r"(?i:not\s+(?:the\s+|a\s+|an\s+)?(?P<wrong>[^\s,.;!?]{1,30})\s*[,;]?\s*"
        r"(?:but|it'?s|it is|i meant)\s+(?:actually\s+)?(?:the\s+|a\s+|an\s+)?"
        r"(?P<right>[^\s,.;!?]{1,30}))",
        r"(?i:(?:i\s+meant|i\s+mean|sorry,?|typo[^,.;!?]{0,12}[,:]?|correction:?|my bad,?|"
        r"my mistake,?|should\s+(?:be|have\s+been)|actually,?|make\s+(?:that|it)|"
        r"(?:change|switch)\s+(?:that|it)\s+to|scratch\s+that,?)\s+"
        r"(?:it'?s\s+|it\s+is\s+|that'?s\s+|the\s+(?:order|number|id)\s+is\s+|actually\s+)*"
        r"(?:order\s+|number\s+|#\s*)?(?P<right>[A-Za-z]*\d(?:\.\d|[^\s,.;!?]){0,29}))",
        rf"(?i:(?:i\s+meant|i\s+mean|make\s+(?:it|that)|i\s+want(?:ed)?)\s+(?:the\s+)?"
        rf"(?P<right>(?:{COLOUR_EN})(?:\s+(?:{COLOUR_EN}))?)(?:\s+(?:one|colou?r|version))?"
        r"\s*(?:$|[,.;!?]))",
        r"(?i:(?:it'?s|it is|that'?s|the name is)\s+(?P<right>[^\s,.;!?]{2,30})"
        r"(?:\s+with\s+an?\s+[^\s,.;!?]{1,3})?\s*[,;]?\s*not\s+(?:the\s+|a\s+|an\s+)?"
        r"(?P<wrong>[^\s,.;!?]{2,30}))",
        r"(?i:(?P<right>(?:[a-z]+\s)?[a-z0-9-]*\d(?:\.\d|[a-z0-9-])*)\s*[,;]?\s+not\s+"
        r"(?:the\s+|a\s+|an\s+)?(?P<wrong>(?:[a-z]+\s)?[a-z0-9-]*\d(?:\.\d|[a-z0-9-])*))",
        r"(?i:(?:^|[,;.!?]\s*)not\s+(?:the\s+|a\s+|an\s+)?(?P<wrong>[a-z][^\s,.;!?]{1,29})"
        r"\s*[,;]\s*(?P<right>[a-z][^\s,.;!?]{1,29})\s*(?:$|[.;!?]))",
        r"(?i:(?P<right>[^\s,.;!?]{2,30})\s*[,;]\s*not\s+(?:the\s+|a\s+|an\s+)?"
        r"(?P<wrong>[^\s,.;!?]{2,30}))",
        # a time that no longer works, another one asked for
        r"(?i:(?P<wrong>[a-z0-9][a-z0-9:-]{1,19})\s+(?:won'?t|doesn'?t|does not|will not|no longer)"
        r"\s+works?[^?!]{0,80}?\s(?:do|make it|try|how about|switch to|move it to|go with|"
        r"change it to|push it to)\s+(?:on\s+|to\s+)?(?P<right>[a-z0-9][a-z0-9:-]{1,19}))",
        rf"(?P<wrong>{_WHEN_ZH})(?:我|我们|家里|家)?[^。！？]{{0,12}}?"
        r"(?:不行了?|不方便|没空|没时间|不在家|没人|去不了|来不了|赶不上|有事|不太行)"
        r"[^。！？]{0,20}?(?:改|换|推|挪|延|调)(?:成|到|在)?\s*"
        rf"(?P<right>{_WHEN_ZH})",
    )
)
"""Correction shapes; ``wrong`` (when given) names the value replaced, ``right`` the new one."""

DROPPED: Final = LinearPattern(
    r"不(?:弄|搞|办|整|折腾)了|停掉|关掉|退订|(?i:unsubscribe|(?:cancel|stop|end) (?:my |the |"
    r"that |this )?(?:[a-z-]+ ){0,2}(?:subscription|auto-?ship|auto-?renewal))"
)
"""A request dropped in plain words (价保不弄了, 退款不搞了, 每个月那个猫粮停掉, cancel my
litter subscription): a retraction only where its part of the clause names the request
(破壁机那单不折腾了, 空调自己停掉了 name none; they stay the user's words)."""

RETRACTION: Final = _words(
    r"本来想|原本想|本想|原来想|还是留着|留着吧|决定留着|先留着|"
    r"(?:就|也|还是|那就|那)?算了|作罢|作废|撤回|撤销|收回|撤(?:了|掉|下|一下|吧)|"
    r"还是(?:用|按|要|送到?|寄到?|发到?)?(?:原来|之前|以前|本来|老)的|保持原样|"
    r"不(?:退|换|投诉|催|修|改|寄|要求|申请|合并|拦截|加急|保价|包装|开票|改地址|转寄)了|"
    r"别(?:再)?(?:退|换|投诉|催|修|寄|拦截|加急)了|"
    r"不用(?:再)?(?:退|换|催|修|改|投诉|申请|处理|帮我|麻烦|安排|上门|寄)|不(?:需要|用)了|"
    r"取消(?:刚才|之前|上次|那个|这个|掉)?(?:的)?(?:[^，,。！？!?；;\n]{0,8})?(?:申请|请求|预约|取件)|"
    r"(?:申请|请求|预约|取件|上门|退款|退货|换货|投诉|维修|安排)(?:也|就|都|一起|一并)?(?:给我)?取消|"
    r"(?:退款|退货|换货|维修|投诉)(?:单|申请)[^，,。！？!?；;\n]{0,20}?(?:帮我|给我|麻烦)?(?:取消|撤销|撤回)|"
    r"(?:不|别|不用|不要)(?:再)?取消了",
    r"never\s*mind|nvm|forget (?:about )?(?:it|that|the|my)|scratch that|"
    r"cancel (?:the|my|that) (?:[a-z]+ )?(?:request|return|refund|exchange|complaint|claim|"
    r"repair|appointment|change)|cancel (?:return|refund|exchange|claim|complaint|repair)s?|"
    r"withdraw|take (?:it|that) back|"
    r"pull (?:the|my|that|it)(?: [a-z]+)?(?: claim| request| complaint| ticket| case)?|"
    r"i'?ll keep it|i will keep it|"
    r"i'?d rather keep|keep it after all|no need (?:for|to)|don'?t bother|no longer need|"
    r"not needed any ?more|drop the|i was going to|i was planning to|i almost|originally wanted|"
    r"i'?ll keep (?:it|them|the)|keeping (?:it|them)|scrap|scratch|ignore what i said|"
    r"forget what i said|undo|call off|disregard|cancel that|don'?t worry about|skip the|"
    r"hold off on|(?:i'?ve )?changed my mind|let'?s not|not any ?more|i'?ll pass|drop it|"
    r"leave it(?:\s+(?:be|there|at that))?\s*$|no longer want|(?:don'?t|do not) cancel(?:$|[^a-z])|"
    r"(?:keep|stick with|go back to|leave) the (?:original|old|previous|current|same)|"
    r"leave (?:it|everything) as (?:it was|it is|is)|"
    r"(?:don'?t|do not|won'?t) need (?:the|my|a|that|this|any) (?:[a-z]+ )?(?:replacement|refund|"
    r"return|exchange|repair|technician|visit|pickup|reship|claim)",
)
"""Taking back a request said before ("退货就算了", "never mind the refund", "don't need the
replacement")."""

OFFERED: Final = _words(
    r"要不要|需不需要|需要[^，,。！？!?]{0,12}吗|要[^，,。！？!?]{1,12}吗|可以(?:帮您|给您|为您)",
    r"would you like|do you want|(?:want|like) me to|shall i|should i|can i (?:add|offer|get you)|"
    r"how about|interested in|care for|fancy|i can (?:add|offer|include|throw in)",
)
"""The agent offering something the user may take or turn down ("需要加购延保吗", "would
you like gift wrap for $5?")."""

DECLINED: Final = LinearPattern(
    r"^\s*(?:不用|不要|不需要|不必|不加|不买|不了|算了)(?:了|吧|啦|的)?"
    r"(?P<what_zh>[^，,。！？!?；;\s]{0,12}?)(?:了|吧|啦)?\s*(?:[，,]?\s*谢谢)?\s*$"
    r"|(?i:^\s*(?:no|nope|nah|not (?:interested|necessary|needed|for me)|"
    r"(?:i'?ll|i will|i'?d|i think i'?ll|i'?m going to|gonna) (?:pass|skip|leave)|"
    r"i'?m (?:good|fine|ok(?:ay)?)(?: without)?|(?:no|not any) need (?:for|of))"
    r"(?:\s+(?:on|it|that))?(?:\s+(?:the|any|a|an))?(?:,?\s+(?P<what>[a-z][a-z -]{0,30}?))?"
    r"\s*(?:,?\s*(?:thanks|thank you|please))?\s*$)"
)
"""A clause turning something down: bare ("no thanks", "不用了") or naming it ("I'll pass on
the insurance", "no gift wrap", "不用延保"); ``what``/``what_zh``: the thing declined."""


REQUEST_FAMILIES: Final[tuple[tuple[str, LinearPattern], ...]] = tuple(
    (name, LinearPattern(rx))
    for name, rx in (
        ("refund", r"退款|退(?:点|些|一点|一些|部分|一部分)?钱|仅退款|(?i:refund|money back)"),
        ("return", r"退货|退掉|退回|寄回|退了|上门取件|(?i:return|send (?:it|them|this) back)"),
        (
            "exchange",
            r"换货|调换|换(?:一|个|成|大|小|新|码|尺码|颜色|号|台|件|双)|(?:不用|不|别)(?:再)?换(?:了|啦)"
            r"|(?i:exchange|replacement|swap)",
        ),
        ("complaint", r"投诉|客诉|举报|(?i:complain|complaint)"),
        (
            "cancel",
            r"取消订单|订单取消|不买了|取消(?:掉|一下|吧|这单|这个单|$|[，,。！？!?\s])"
            r"|(?:帮我|给我|麻烦)取消|把[^，,。！？]{1,20}取消"
            r"|(?i:cancel (?:the |my |this )?order|cancel (?:it|this|that)(?:$|[^a-z])|"
            r"please cancel|want to cancel)",
        ),
        (
            "address",
            r"改(?:个|一下)?地址|修改地址|地址(?:改|修改|变更)|改寄|转寄|改送|"
            r"(?i:(?:change|update|edit) (?:the |my )?(?:delivery |shipping |postal )?address|"
            r"address change|reroute|redirect)",
        ),
        ("urge", r"催|加急|(?i:hurry|expedite|chase|(?:^|[^a-z])rush)"),
        ("claim", r"理赔|索赔|(?i:(?:^|[^a-z])claims?(?:$|[^a-z]))"),
        ("invoice", r"发票|开票|(?i:invoice|receipt)"),
        (
            "repair",
            r"维修|修理|修(?:一下|一修|下|好|吧)|(?:不用|不|别)(?:再)?修(?:了|啦)|上门(?:$|[^取])|保修"
            r"|(?i:repair|technician|fix)",
        ),
        (
            "schedule",
            r"预约|改(?:时间|日期|期)|改天|(?:推迟|延后|延期|提前)(?:送|发|到|配送|安装|上门|一)"
            r"|(?:改|挪|换)(?:到|在|成)?(?:下)?(?:周|星期|礼拜)[一二三四五六日天]"
            r"|(?:改|挪|换)(?:到|在|成)(?:明天|后天|大后天|\d{1,2}[号日])"
            r"|换(?:个|一个)?(?:时间|日子|时段)"
            r"|(?i:reschedul|appointment|instead of (?:mon|tues|wednes|thurs|fri|satur|sun)day|"
            r"(?:move|push|shift|bump|change)\s+(?:it|that|the\s+(?:[a-z]+\s+)?"
            r"(?:delivery|date|day|slot|visit|installation|pickup|appointment))\s+"
            r"(?:back|forward|to\s+(?:another|a different|next|"
            r"(?:mon|tues|wednes|thurs|fri|satur|sun)day))|"
            r"(?:another|a different|a later|an earlier) (?:day|date|slot|time))",
        ),
        ("price", r"保价|价保|补差价|(?i:price (?:protection|match|adjustment))"),
        (
            "subscription",
            r"周期购|订阅|自动续费|每个?月那个|(?i:subscri(?:be|ption)|auto-?ship|auto-?renew)",
        ),
        ("delivery", r"送货|配送|派送|周末送|(?i:deliver)"),
        ("merge", r"合并|一起发|一块发|(?i:combine|ship together|merge)"),
        ("packaging", r"礼品包装|礼盒|贺卡|包装|(?i:gift[- ]?wrap|gift note|gift box|packaging)"),
        (
            "purchase",
            r"买(?:$|[^的了过回来到重错多贵亏])|下单|购买|补(?:个|一个|买|一块|一台|一件|一双|一套)"
            r"|来(?:一|个|两|几)(?:个|台|件|支|块|份|套|盒)"
            r"|(?i:buy|purchase|add (?:it|one|a|an|the)[^,.;!?]{0,30} to (?:my )?(?:order|cart))",
        ),
    )
)
"""What a request is about, by family: a retraction naming one takes back that family."""
