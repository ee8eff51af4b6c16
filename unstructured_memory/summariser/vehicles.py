"""The user's car: what a clause says they drive, own or gave up, and the car's name.

A car is a fact about the user that goods are bought for (脚垫, 遮阳挡, floor mats, a phone
mount): a later agent needs the one they drive now. A clause states it when a word of the
user's own points at a car name: 我的车是…, 我开的…, 提了台…, 给我家那台…买, my/our …, I drive
a …, driving a … now, we're a … household, traded/sold the …; or when a car name is sold or
given up (卡罗拉卖了). A car name is a maker the lexicon knows (丰田, 比亚迪, Toyota, Subaru)
with the model after it by its shape (Latin, a number) or by name (朗逸, 海豹, Outback,
Model Y), or a model known by name alone; a year may stand before it (2017 Subaru Outback)
and a model year after it (朗逸 2019款). A car the lexicon does not know is read by its shape
after the user's own word for it (我车是 AION Y, I drive a Fisker Ocean). Another's car
(我朋友开宝马, my brother drives a Jeep) and a wish (要是我有车就好了) state none.

English makers and models are matched as capitalised (a ``Ram``, not the ``ram`` of a
computer; a ``Leaf``, not a leaf).
"""

from __future__ import annotations

from typing import Final

from policies.linear_re import LinearPattern

__all__ = ["VEHICLE", "VEHICLE_NAME", "driven", "vehicle_names"]

_MAKER_ZH: Final = (
    r"(?:大众|丰田|本田|日产|比亚迪|特斯拉|宝马|奔驰|奥迪|吉利|长安|哈弗|理想|蔚来|小鹏|问界|五菱|别克|"
    r"雪佛兰|福特|马自达|现代|起亚|极氪|零跑|领克|红旗|传祺|荣威|名爵|长城|坦克|沃尔沃|雷克萨斯|凯迪拉克|"
    r"保时捷|路虎|斯柯达|标致|雪铁龙|三菱|斯巴鲁|奇瑞|埃安|深蓝|阿维塔|岚图|哪吒|宝骏|东风|广汽|一汽|"
    r"上汽|北汽|Jeep|MINI|smart)"
)
_MODEL_ZH: Final = (
    r"(?:朗逸|速腾|迈腾|帕萨特|宝来|高尔夫|途观|途岳|探岳|卡罗拉|凯美瑞|雷凌|汉兰达|荣放|亚洲龙|雅阁|思域|"
    r"飞度|缤智|冠道|皓影|轩逸|天籁|奇骏|逍客|海豹|海豚|海鸥|驱逐舰|护卫舰|宏光|星越|帝豪|博越|星瑞|"
    r"元PLUS|宋PLUS|宋Pro|秦PLUS|汉EV|唐DM|小米\s?SU7)"
)
_MODEL_AFTER_ZH: Final = (
    r"(?:朗逸|速腾|迈腾|帕萨特|宝来|高尔夫|途观|卡罗拉|凯美瑞|雷凌|汉兰达|荣放|雅阁|思域|飞度|轩逸|天籁|"
    r"奇骏|海豹|海豚|海鸥|汉|唐|宋|秦|元|Model\s?[3SXY]|"
    r"[A-Za-z][A-Za-z0-9-]{0,5}(?:\s?(?:PLUS|Plus|Pro|Max|EV|DM-i|DMi))?|\d{2,3})"
)
_YEAR_ZH: Final = r"(?:\s?(?:19|20)?\d\d\s?款)?"
_CAR_ZH: Final = rf"(?:(?:{_MAKER_ZH})\s?(?:{_MODEL_AFTER_ZH})?{_YEAR_ZH}|{_MODEL_ZH}{_YEAR_ZH})"

_MAKER_EN: Final = (
    r"(?:Toyota|Honda|Ford|Tesla|Mazda|Subaru|Chevy|Chevrolet|Jeep|Kia|Hyundai|Nissan|BMW|Audi|VW|"
    r"Volkswagen|Volvo|Lexus|Acura|Dodge|Ram|GMC|Buick|Cadillac|Porsche|Mercedes(?:-Benz)?|Mini|"
    r"MINI|Rivian|Lucid|Polestar|Genesis|Mitsubishi|Chrysler|Lincoln|Infiniti|Land Rover|"
    r"Range Rover|Jaguar|Fiat|Skoda|Peugeot|Renault|Vauxhall|Citroen|BYD)"
)
_MODEL_EN: Final = (
    r"(?:Civic|Accord|CR-V|HR-V|Pilot|Odyssey|Corolla|Camry|RAV4|Prius|Highlander|Tacoma|Tundra|"
    r"Sienna|4Runner|F-150|F150|Mustang|Explorer|Bronco|Model [3SXY]|Cybertruck|Outback|Forester|"
    r"Crosstrek|Impreza|Wrangler|Grand Cherokee|Cherokee|Silverado|Equinox|Tahoe|Altima|Sentra|"
    r"Rogue|Jetta|Passat|Tiguan|ID\.4|Ioniq ?[56]|Kona|Tucson|Santa Fe|Elantra|Sorento|Sportage|"
    r"Telluride|EV6|EV9|Niro|CX-5|CX-30|CX-50|Miata|Mach-E)"
)
_CAR_EN: Final = (
    rf"(?:(?:19|20)\d\d\s)?(?:{_MAKER_EN}(?:\s(?:{_MODEL_EN}|[A-Z0-9][A-Za-z0-9.-]*))?"
    rf"|{_MODEL_EN})"
)

VEHICLE_NAME: Final = LinearPattern(rf"{_CAR_ZH}|{_CAR_EN}")
"""A car's name: maker and model, or a model known by name (丰田卡罗拉, 朗逸 2019款, 2017
Subaru Outback, Model Y)."""

_SHAPED: Final = (
    r"(?:我(?:的|家的?)?(?:车|爱车|座驾|新车)(?:是|子是)|(?:开的是|新?提了|入手了)\s?一?[台辆])"
    r"\s?(?P<shaped>[A-Za-z][A-Za-z0-9-]{1,9}(?:\s[A-Z0-9][A-Za-z0-9-]{0,5})?)"
    r"|(?i:(?:^|[^a-z'])(?:my car is|our car is|(?:i|we) (?:now )?drive|(?:i'?m|we'?re) (?:now )?"
    r"driving) (?:a|an) )(?P<shaped_en>[A-Z][A-Za-z0-9-]+(?: [A-Z0-9][A-Za-z0-9-]*){0,2})"
)
"""A car named by its shape after the user's own word for it, known to the lexicon or not
(我车是 AION Y, I drive a Fisker Ocean): a Latin name, capitalised in English."""

VEHICLE: Final = LinearPattern(
    _SHAPED + "|"
    r"(?:我(?:的|家的?)?(?:车|爱车|座驾|新车)(?:是|子是)?\s?(?:一?[台辆])?"
    r"|我家?(?:那|这)?[台辆]"
    r"|(?:给|为)(?:我的?|我家的?)?(?:车|爱车)[^，,。！？；]{0,12}?"
    r"|(?:^|[\s，,。；;]|我|我们|我家|自己)(?:刚|也|又|新|最近|上个?月|上周|上礼拜|去年)?"
    r"(?:开的是|开的|开着|开|提了|买了|换了|入手了|提车)\s?(?:一?[台辆])?)"
    rf"\s?{_CAR_ZH}"
    rf"|{_CAR_ZH}(?:也|已经)?(?:卖了|出手了|卖掉了|换掉了|报废了)"
    r"|(?i:(?:^|[^a-z'])(?:my|our)\s"
    r"|(?:^|[^a-z'])(?:i|we)\s(?:now\s)?(?:drive|own|have|got|bought|leased|lease)\s(?:a|an)\s"
    r"|(?:(?:^|[^a-z'])(?:i'?m|we'?re|i am|we are)\s(?:now\s)?|(?:^|[,;.]\s?)(?:now\s)?)"
    r"driving\s(?:a|an)\s"
    r"|(?:^|[^a-z'])(?:i'?m|we'?re|i am|we are)\s(?:now\s)?(?:a|an)\s"
    r"|(?:traded|sold|gave up)\s(?:in\s)?(?:the|our|my)\s(?:old\s)?)"
    rf"{_CAR_EN}(?i:\s(?:household|family|driver|owner))?"
)
"""A clause stating the user's car (see the module docstring)."""

_GIVEN_UP_AFTER: Final = LinearPattern(
    r"^\s?(?:也|已经)?(?:卖了|出手了|卖掉了|换掉了|报废了|送人了)"
)
_GIVEN_UP_BEFORE: Final = LinearPattern(
    r"(?:卖了|卖掉了|出手了|换掉了|(?i:traded|sold|gave up|got rid of))\s?(?:in\s)?"
    r"(?:(?:the|our|my|那台|那辆|旧的|老的)\s?)?(?:old\s)?$"
)
_YEAR: Final = LinearPattern(r"\s?(?:19|20)?\d\d\s?款$")
_MAKER: Final = LinearPattern(rf"^(?:(?:19|20)\d\d\s)?(?:{_MAKER_ZH}|{_MAKER_EN})\s?")


def driven(clause: str) -> str:
    """The names of the cars ``clause`` says the user has (each in a :data:`VEHICLE` match),
    those given up left out (卡罗拉卖了 上个月提了台理想L6: 理想L6; we traded the Outback in,
    I'm driving a Kia EV6: Kia EV6; 我选的是凯美瑞的 我车是雅阁: 雅阁); empty when it names none."""
    kept = []
    for m in VEHICLE.finditer(clause):
        x = m.start()
        spans = [(i + x, j + x) for i, j in VEHICLE_NAME.spans(clause[x : m.end()])]
        for group in ("shaped", "shaped_en"):
            if not spans and m.group(group):
                spans = [m.span(VEHICLE.groupindex[group])]
        for a, b in spans:
            before = clause[max(0, a - 16) : a]
            if _GIVEN_UP_AFTER.search(clause[b:]) or _GIVEN_UP_BEFORE.search(before):
                continue
            kept.append(clause[a:b])
    return "，".join(dict.fromkeys(kept))


def vehicle_names(value: str) -> list[str]:
    """The names a vehicle value holds, each also without its maker and year (丰田卡罗拉:
    丰田卡罗拉, 卡罗拉; 2016 Honda Civic: 2016 Honda Civic, Civic): what a record names the
    car by."""
    out: list[str] = []
    for a, b in VEHICLE_NAME.spans(value):
        name = value[a:b]
        maker = _MAKER.search(name)
        model = name[maker.end() :] if maker is not None else ""
        for word in (name, model, _YEAR.sub("", name), _YEAR.sub("", model)):
            if len(word.strip()) >= 2 and word.strip() not in out:
                out.append(word.strip())
    return out
