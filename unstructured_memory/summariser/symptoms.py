"""Problems said about a product: the words of a lexicon and the grammar of a symptom.

:data:`PROBLEM_ZH` and :data:`PROBLEM_EN` find a problem the user describes, in the
lexicon's words (坏了, 漏水, won't charge) or in other words by shape: a trigger (一碰就断),
a negated result (拉不动, 不出水, 没反应), a defect predicate (松动, 卡住, 渗水, 吱吱响), a
mark that appeared (出现一条绿线), a fault that comes and goes (断断续续); in English a
noise, a movement, a mark or a fault (crackles, wobbles, has a dent, keeps disconnecting,
stops halfway). :data:`GENERIC` is a clause that names a problem without saying what it is
(``椅子有问题``, ``it has an issue``). Every pattern runs under RE2 in linear time.
"""

from __future__ import annotations

from typing import Final

from policies.linear_re import LinearPattern

__all__ = ["GENERIC", "PART", "PROBLEM_EN", "PROBLEM_ZH"]

PROBLEM_ZH: Final = LinearPattern(
    r"无法|不能|不了|坏了|坏掉|损坏|破损|破了|碎了|裂了|没收到|没有收到|收不到|没声音|不工作|不亮|不转|"
    r"漏水|漏电|异响|发错|少发|漏发|错发|质量问题|有问题|瑕疵|划痕|不充电|充不进|失败|过敏|不合适|"
    r"太小|太大|偏小|偏大|鼓包|生锈|异味|不一致|掉色|开胶|连不上|不想要|不要了|拍错|买错"
    # the grammar of a symptom said in other words: a trigger (一碰就断), a negated result
    # (拉不动, 不出水, 没反应), a defect predicate (松动, 卡住, 渗水, 吱吱响), a mark that
    # appeared (出现一条绿线), an on-off fault (断断续续)
    r"|一[^，,。！？!?；;\n]{1,6}就|[\u4e00-\u9fff]不(?:动|开|上|进|出|下|住|起来|下去|着|稳|准)"
    r"|不(?:[转动亮响充通灵准稳热凉冷制出吸]|出[水风丝气声]|(?:自动)?回(?:充|座|仓|电|家|去充)|自动充)"
    r"|没(?:有)?(?:反应|声音?|信号|画面|图像|电|网|水|风)"
    r"|松动|松了|松脱|晃|卡住|卡死|卡顿|卡了|堵|断了|断开|断充|断连|断流|掉线|变形|翘起|起皮|起泡|脱落|掉了|"
    r"掉漆|褪色|发霉|霉|发黄|发烫|发热|过热|烫手|渗|进水|滴水|漏|失灵|失效|死机|重启|黑屏|白屏|花屏|闪屏|"
    r"蓝屏|亮线|绿线|坏点|漏光|色差|响|叫|吱吱|咔咔|嗡嗡|嘎吱|杂音|噪音|电流声|串音|没电|掉电|充不满|"
    r"结块|异物|有虫|发臭|变质|过期|破洞|开线|脱线|起球|缩水|勾丝|磨脚|夹脚|硌|扎手|红肿|刺痛|"
    r"出现(?:了)?(?:一|几|两)?[条道个块片些点]|断断续续|时好时坏|时有时无|不灵敏|不好使|不好用|没法用"
    r"|不好(?:[^意看吃玩听]|$)|费劲|吃力"
)
"""A problem the user describes: a word of the lexicon or a symptom of the grammar."""
PROBLEM_EN: Final = LinearPattern(
    r"(?i:(?:^|[^A-Za-z'])(?:doesn'?t|does not|won'?t|will not|can'?t|cannot|isn'?t|not working|"
    r"stopped|stops|broken|broke|damaged|cracked|cracks|defective|missing|never arrived|wrong|"
    r"leaks?|leaking|dead|faulty|too (?:small|big|large|loud|heavy|tight|short)|rude|late|fake|"
    r"counterfeit|"
    # a symptom in other words: a noise, a movement, a mark, a fault that comes and goes
    r"crackl[a-z]*|squeak[a-z]*|squeal[a-z]*|rattl[a-z]*|buzz[a-z]*|hiss[a-z]*|click(?:s|ing)|"
    r"grind[a-z]*|wobbl[a-z]*|flicker[a-z]*|blink[a-z]*|flash(?:es|ing)|stuck|sticks|sticking|"
    r"jam(?:s|med|ming)?|clog[a-z]*|loose|fray[a-z]*|peel[a-z]*|chipped|scratch(?:ed|es)|"
    r"dent(?:s|ed)?|stain(?:s|ed)?|ripped|tore|torn|fad(?:ed|ing)|warp[a-z]*|bent|overheat[a-z]*|"
    r"burning smell|smells?|noisy|dead pixels?|drain[a-z]*|dies|died|cuts? out|drops? out|"
    r"disconnect[a-z]*|lags?|lagging|freez[a-z]*|froze|crash[a-z]*|keeps? (?:[a-z]+ing)|"
    r"has (?:a|an) (?:[a-z]+ )?(?:wave|crack|dent|scratch|stain|hole|line|bubble|gap|tear|kink)|"
    r"halfway|(?:no|won'?t) (?:longer )?(?:register|respond|turn on|charge|pair|connect))"
    r"(?P<post>$|[^A-Za-z]))"
)
"""A problem the user describes in English, in the same two ways."""
GENERIC: Final = LinearPattern(
    r"^(?:[^，,]{0,8})(?:有问题|质量问题|坏了|坏掉|不能用|用不了|不好用|没法用|不好使|不工作)[了啊呀的]?$"
    r"|(?i:^(?:[A-Za-z]+\s){0,4}(?:has|have|had) (?:a |some )?(?:problem|issue)s?$"
    r"|^(?:[A-Za-z]+\s){0,4}(?:is|was|are|stopped) (?:broken|not working|faulty|defective)$)"
)
"""A clause naming a problem without saying what it is (``椅子有问题``): a later clause
that says what it is goes into the record instead."""

PART: Final = LinearPattern(
    r"^(?:左耳|右耳|耳朵|轮子|屏幕|屏|拉链|把手|提手|按钮|按键|电池|充电口|接口|盖子|底座|开关|遥控器|螺丝|镜头|耳罩|线|"
    r"插头|滤网|刷头|喷头|表面|边角|外壳|壳|扣子|带子|鞋底|鞋带|袖子|领子|拉杆|支架|门|抽屉|面板|灯|电机|"
    r"马达|风扇|水箱|内胆|刀头|刀片|盖|把|脚|腿|底|边)$"
)
"""Parts of a product (the wheels of 拉杆箱轮子): where the product's name ends."""
