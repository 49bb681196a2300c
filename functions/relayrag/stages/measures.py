"""Measure questions and the values that answer them (issue 31): a question for a dimension or a physical quantity
("How tall is the lighthouse?", "How cold must the freezer be?", "How powerful are the engines?", 重さは, 保管温度は何度)
is not answered by a sentence that shares its words but states another kind of value (the year the lighthouse was
built, a maintenance date): the answering sentence states a quantity with a unit of the dimension asked.

Dimensions (measure_kind → states_measure): length, mass, speed, capacity, age, size, duration (how far), and
temperature (°C, ℃, °F, degrees Celsius, minus 25 degrees, −18 °C, -25C, マイナス18度), power (W, kW, MW, hp, bhp,
PS, 馬力, キロワット), pressure (bar, mbar, psi, Pa, kPa, MPa, atm, 気圧) and voltage (V, kV, ボルト). A table row
answers with a bare number cell when its column names give a unit of the dimension ("Set point (°C) | -18").
Split from relayrag.stages.answerability, whose expected_answer_type / states_answer_type read these."""

from __future__ import annotations

import re

from relayrag.stages.local_context import _TABLE_SEP
from relayrag.text import has_cjk, typed_clause

_NUMBER_WORD = (r"(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
                r"seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|"
                r"thousand|million|billion|dozen)")
_LENGTH_UNIT = (r"(?:mm|cm|km|m|in|ft|yd|mi|nm|inch(?:es)?|feet|foot|yards?|miles?|nautical miles?|"
                r"(?:milli|centi|kilo)?met(?:er|re)s?)")

_NOT_A_DIMENSION = (r"(?:rate|percentage|percent|share|ratio|risk|score|limit|level|threshold|priority|demand|"
                    r"discount|bonus|increase|decrease|difference|temperature|pressure|salary|pay|budget|grade|"
                    r"impact|chance|probability|number|amount|deductible|excess|penalty|fine|voltage|power)")
_WHAT_THE = (r"^\s*(?:what|which)(?:'s|\s+is|\s+are|\s+was|\s+were|\s+will\s+be)?\s+(?:the\s+|its\s+|their\s+|his\s+|"
             r"her\s+|our\s+|a\s+|an\s+)?(?:[\w'’-]+\s+){0,3}?")  # "what is the maximum permitted <noun>"
_WHAT_THE_STRICT = (r"^\s*(?:what|which)(?:'s|\s+is|\s+are|\s+was|\s+were|\s+(?:will|should|must)\s+be)?\s+"
                    r"(?:the\s+|its\s+|their\s+|our\s+|a\s+|an\s+)?"
                    r"(?:(?!(?:of|for|in|on|at|to|from|with|by|and)\b)[\w'’-]+\s+){0,3}?")  # no "the weight of the <noun>"
_HOW_HIGH = r"(?:^\s*how (?:high|low)\b.*\b|^\s*how much\s+)"
_MEASURE_Q_EN_RX = [  # (kind, pattern) read in the asking clause; the first that matches names the kind. The noun is
    # lower case: "What does the Speed Trim Fail procedure say …" names a procedure, it asks no speed
    ("mass", rf"^\s*how heavy\b|^\s*(?:how much|what) (?:does|do|did|will|would|can|could|should|must) .*\bweigh\b"
             rf"|{_WHAT_THE}(?-i:weight|mass)\b"),
    ("speed", rf"^\s*how fast\b|{_WHAT_THE}(?-i:speed|velocity)\b"),
    ("capacity", rf"{_WHAT_THE}(?-i:capacity|capacities|volume)\b|^\s*how much\b.*\b(?-i:capacity|volume)\b"),
    ("age", r"^\s*how old\b|^\s*(?:what|which)\b.*\bage of (?:the|this|that|its|our)\b"),
    ("length", rf"^\s*how (?:tall|high|wide|deep|thick)\b(?!.*\b{_NOT_A_DIMENSION}\b)"
               rf"|{_WHAT_THE}(?-i:height|width|depth|diameter|altitude|elevation|thickness|radius)\b"),
    ("duration", rf"^\s*how far\b|{_WHAT_THE}(?-i:length|distance)\s+(?:of|from|between)\b"
                 r"(?!.*\b(?:password|passphrase|pin|code|name|text|message|string|list|queue|report|essay|answer)s?\b)"),
    ("size", rf"^\s*how (?:big|large)\b(?!.*\b{_NOT_A_DIMENSION}\b)|{_WHAT_THE}(?-i:size|area|floor space) of\b"),
    # temperature, power, pressure, voltage: read after the dimensions above ("the weight of the pressure vessel")
    ("temperature", rf"^\s*how (?:cold|hot|warm|cool)\b|^\s*(?:at|to|from|below|above|under|over|within)\s+"
                    rf"(?:what|which)\s+temperatures?\b|{_HOW_HIGH}temperatures?\b"
                    rf"|{_WHAT_THE_STRICT}(?-i:temperatures?|set\s?points?)\b"
                    r"(?!\s+(?:sensors?|probes?|gauges?|logs?|records?|alarms?|checks?|sheets?|forms?|logger)\b)"),
    ("power", rf"^\s*how powerful\b|{_HOW_HIGH}(?-i:power|output|wattage|horsepower)\b"
              rf"|{_WHAT_THE_STRICT}(?-i:power|horsepower|wattage|power output|output power|power rating|rated power|"
              r"rated output|engine output|motor output|electrical output)\b"
              r"(?!\s+(?:supply|supplies|plants?|stations?|cables?|cords?|outages?|cuts?|sockets?|outlets?|banks?|of attorney|"
              r"points?|buttons?|switch(?:es)?|sources?|company|companies|grid|lines?|tools?|failures?)\b)"),
    ("pressure", rf"{_HOW_HIGH}pressures?\b|^\s*(?:at|to|below|above)\s+what\s+pressures?\b"
                 rf"|{_WHAT_THE_STRICT}(?-i:pressures?)\b"
                 r"(?!\s+(?:vessels?|gauges?|valves?|relief|washers?|cookers?|switch(?:es)?|sensors?|tests?|groups?|"
                 r"sores?|points?|drops?|ulcers?)\b)"),
    ("voltage", rf"{_HOW_HIGH}voltages?\b|{_WHAT_THE_STRICT}(?-i:voltages?|rated voltage|supply voltage)\b"),
]
_MEASURE_Q_EN = [(k, re.compile(rx, re.I)) for k, rx in _MEASURE_Q_EN_RX]
# Japanese: the dimension's noun asked for (高さは, どのくらいの重さ, 速度を教えて), an adjective after どのくらい
# (どのくらい高い), or a unit after 何 (何メートル, 何トン, 何歳)
_JA_ASKED = r"(?:は|を(?:教え|知り)|って|が(?:どのくらい|どれくらい|何|いくつ))"
_JA_HOW = r"(?:どのくらい|どれくらい|どれぐらい|どのぐらい|どの程度)(?:の)?"
_MEASURE_Q_CJK_RX = [
    ("mass", rf"(?:重さ|重量|質量|体重){_JA_ASKED}|{_JA_HOW}(?:重さ|重量|重い|重く)|何(?:トン|グラム|キログラム|kg)|"
             r"何キロ(?!メートル|メーター|m)(?=.*(?:重|kg))"),
    ("speed", rf"(?:速さ|速度|スピード|時速|最高速度?){_JA_ASKED}|{_JA_HOW}(?:速さ|速度|速い|速く)|時速何"),
    ("capacity", rf"(?:容量|定員|収容人数|収容能力|積載量|容積|処理能力){_JA_ASKED}|{_JA_HOW}(?:容量|定員)|"
                 r"何(?:リットル|立方メートル|人乗り)"),
    ("age", rf"(?:築年数|樹齢|年齢){_JA_ASKED}|{_JA_HOW}古い|築何年|何歳"),
    ("length", rf"(?:高さ|幅|深さ|直径|全長|全高|身長|標高|厚さ|奥行き?){_JA_ASKED}|"
               rf"{_JA_HOW}(?:高さ|幅|深さ|高い|高く|深い|深く|厚い)|何(?:メートル|センチ|ミリ|cm|mm|m\b)"),
    ("length", rf"(?:長さ|距離){_JA_ASKED}|{_JA_HOW}(?:長さ|距離|遠い|遠く)|何キロ(?:メートル|メーター|m)|"
               r"何キロ(?=.*(?:距離|遠|離れ|走))"),
    ("size", rf"(?:大きさ|面積|広さ|サイズ|床面積){_JA_ASKED}|{_JA_HOW}(?:大きさ|面積|広さ|大きい|広い)|何平方"),
    ("temperature", rf"(?:温度|気温|室温|水温|体温|油温){_JA_ASKED}|{_JA_HOW}(?:熱い|熱く|冷たい|冷たく|暖かい|暖かく|"
                    r"温かい|寒い|暑い|温度)|何(?:℃|°C)|何度(?:C|℃|Ｃ)"
                    r"|(?:温度|気温|室温|水温|保管|保存|設定|冷凍|冷蔵|加熱|暖房|冷房|沸点|融点).*何度(?!も|目)"),
    ("power", rf"(?:出力|馬力|消費電力|電力|ワット数){_JA_ASKED}|{_JA_HOW}(?:出力|馬力|パワー|電力)"
              r"|何(?:馬力|ワット|キロワット|kW|W(?![A-Za-z]))"),
    ("pressure", rf"(?:圧力|気圧|水圧|油圧|空気圧|タイヤ圧){_JA_ASKED}|{_JA_HOW}(?:圧力|気圧|水圧)"
                 r"|何(?:気圧|バール|パスカル|ヘクトパスカル|キロパスカル|メガパスカル|MPa|kPa|bar)"),
    ("voltage", rf"(?:電圧){_JA_ASKED}|何ボルト"),
]
_MEASURE_Q_CJK = [(k, re.compile(rx)) for k, rx in _MEASURE_Q_CJK_RX]


# a question for how much of a quantity changes (is lost, gained, reduced …) asks a change, not the quantity itself:
# a percentage answers it as well as a unit ("loses about 0.5 % of its output per year")
_CHANGE_Q = re.compile(r"\b(?:lose|loses|lost|losing|drop|drops|dropped|decline|declines|degrade|degrades|fall|falls|"
                       r"gain|gains|gained|increase|increases|reduce|reduces|reduced|decrease|decreases|rise|rises)\b"
                       r"|低下|減少|増加|上昇|下が|上が|失わ", re.I)


def measure_kind(question: str) -> str | None:
    """The dimension a measure question asks for: "length" (how tall / high / wide / deep, the height / width /
    depth / diameter of; 高さ, 幅, 深さ, 何メートル), "mass" (how heavy, how much does it weigh, the weight of; 重さ,
    重量, 何トン), "speed" (how fast, the speed of; 速度, 時速), "capacity" (the capacity / volume of; 容量, 定員),
    "age" (how old; 築何年, 何歳), "size" (how big / large, the size / area of; 大きさ, 面積), "duration" (how far,
    the length / distance of: a length or a time span, "a 10-minute walk"; in Japanese 長さ, 距離 ask a length),
    "temperature" (how cold / hot / warm, the temperature / set point of, at what temperature; 温度, 室温, 保管温度は何度),
    "power" (how powerful, the power / power rating / rated output of; 出力, 馬力, 消費電力, 何ワット), "pressure" (the
    pressure of, at what pressure; 圧力, 気圧, 何気圧), "voltage" (the voltage of; 電圧, 何ボルト), or None."""
    q = typed_clause(question)
    if _CHANGE_Q.search(q):
        return None  # "how much output do they lose per year?": a change, which a share (0.5 %) states as well
    for kind, rx in (_MEASURE_Q_CJK if has_cjk(q) else _MEASURE_Q_EN):
        if rx.search(q):
            return kind
    return None



_MASS_UNIT = (r"(?:kg|g|mg|t|lbs?|oz|tonnes?|tons?|grams?|grammes?|kilos?|kilograms?|kilogrammes?|milligrams?|pounds?|"
              r"ounces?)")
_SPEED_UNIT = (r"(?:km/h|kmh|kph|mph|m/s|knots?|kn|kts|(?:kilomet(?:er|re)s?|miles?|met(?:er|re)s?)\s+(?:per|an|a)\s+"
               r"(?:hour|second|minute))")
_VOLUME_UNIT = (r"(?:l|ml|hl|litres?|liters?|millilitres?|milliliters?|gallons?|gal|barrels?|m³|m3|cubic\s+\w+|"
                r"TEU|tonnes?|t|kW|MW|GW|kWh|MWh|GB|TB|passengers?|seats?|people|persons?|guests?|visitors?|beds?|"
                r"spaces?|vehicles?|cars?|pallets?|containers?|students?|pupils?|delegates?|attendees?|places?)")
_AREA_UNIT = r"(?:m²|m2|km²|km2|sq\.?\s*(?:m|ft|km|metres?|meters?|feet|miles?)|square\s+\w+|hectares?|ha|acres?)"
_SIGN = r"(?:[-−–]\s?|\bminus\s+|\bplus\s+|\+)?"  # −18 °C, -25C, minus 25 degrees
_TEMPERATURE_UNIT = (r"(?:[°º˚]\s*[CF]?|℃|℉|(?:degrees?|deg\.?)(?:\s+(?:Celsius|centigrade|Fahrenheit|(?-i:C|F)\b))?"
                     r"|kelvins?)")
_POWER_UNIT = (r"(?:(?-i:W|kW|MW|GW|mW|kVA|MVA|PS|HP|hp|bhp|BHP|Wh|kWh|MWh|GWh)|watts?|kilowatts?|megawatts?|"
               r"gigawatts?|(?:brake\s+)?horse-?power)")
_PRESSURE_UNIT = (r"(?:(?-i:bar|mbar|barg|bara|psi|psig|psia|Pa|hPa|kPa|MPa|GPa|atm|mmHg|inHg)|millibars?|bars?|"
                  r"atmospheres?|(?:kilo|mega|hecto)?pascals?|pounds?\s+per\s+square\s+inch|kgf/cm²|N/mm²)")
_VOLTAGE_UNIT = r"(?:(?-i:V|kV|mV|VAC|VDC|Vac|Vdc)|volts?|kilovolts?)"
_QTY = r"(?:\d[\d,.]*|\b" + _NUMBER_WORD + r")"
_MEASURE_TEXT = {
    "length": re.compile(rf"{_QTY}\s*-?\s*{_LENGTH_UNIT}(?![\w²³])", re.I),
    "mass": re.compile(rf"{_QTY}\s*-?\s*{_MASS_UNIT}(?![\w/²³])", re.I),
    "speed": re.compile(rf"{_QTY}\s*-?\s*{_SPEED_UNIT}(?![\w²³])", re.I),
    "capacity": re.compile(rf"{_QTY}\s*-?\s*{_VOLUME_UNIT}(?![\w²³])", re.I),
    "age": re.compile(rf"{_QTY}\s*-?\s*(?:years?|months?|decades?|centur(?:y|ies))(?:\s*-?\s*old)?\b|\baged?\s+\d"
                      r"|\b(?:1[0-9]\d\d|20\d\d)\b", re.I),  # an age, or the year it began (built in 1872)
    "size": re.compile(rf"{_QTY}\s*-?\s*(?:{_AREA_UNIT}|{_LENGTH_UNIT}|{_VOLUME_UNIT})(?![\w²³])", re.I),
    "temperature": re.compile(rf"{_SIGN}{_QTY}\s*{_TEMPERATURE_UNIT}(?![\w²³])|[-−–]\d[\d.]*\s?(?-i:C|F)\b"
                              r"|\d\s+(?-i:K)\b", re.I),
    "power": re.compile(rf"{_QTY}\s*-?\s*{_POWER_UNIT}(?![\w²³/])", re.I),
    "pressure": re.compile(rf"{_QTY}\s*-?\s*{_PRESSURE_UNIT}(?![\w²³])", re.I),
    "voltage": re.compile(rf"{_QTY}\s*-?\s*{_VOLTAGE_UNIT}(?![\w²³/])", re.I),
}
_N_JA = r"[0-9０-９][0-9０-９,，.．]*\s*|[一二三四五六七八九十百千万]+"
_MEASURE_TEXT_CJK = {
    "length": re.compile(rf"(?:{_N_JA})(?:メートル|センチ|ミリ|キロメートル|km|cm|mm|m(?![A-Za-z0-9²³/])|ｍ)"),
    "mass": re.compile(rf"(?:{_N_JA})(?:キログラム|キロ(?!メートル)|グラム|トン|kg|g(?![A-Za-z0-9])|t(?![A-Za-z0-9])|ｋｇ)"),
    "speed": re.compile(rf"(?:時速|秒速|分速)\s*(?:{_N_JA})|(?:{_N_JA})(?:km/h|キロ毎時|ノット|m/s)"),
    "capacity": re.compile(rf"(?:{_N_JA})(?:リットル|ℓ|L(?![A-Za-z0-9])|l(?![A-Za-z0-9])|立方メートル|m³|m3|"
                           r"人|名|席|台|トン|TEU|kW|MW|t(?![A-Za-z0-9]))"),
    "age": re.compile(rf"(?:{_N_JA})(?:歳|才|年)|築"),
    "size": re.compile(rf"(?:{_N_JA})(?:平方メートル|㎡|m²|m2|坪|ヘクタール|ha|メートル|m(?![A-Za-z0-9])|リットル|人)"),
    "temperature": re.compile(rf"(?:マイナス|零下|氷点下|摂氏|華氏|[-−－+＋])?\s*(?:{_N_JA})\s*(?:℃|°C|°F|℉|度|°|ケルビン)"
                              rf"|(?:マイナス|零下|氷点下|摂氏|華氏)\s*(?:{_N_JA})"),
    "power": re.compile(rf"(?:{_N_JA})(?:キロワット|メガワット|ワット|馬力|kWh|kW|MW|GW|W(?![A-Za-z])|PS|hp|HP)"),
    "pressure": re.compile(rf"(?:{_N_JA})(?:ヘクトパスカル|キロパスカル|メガパスカル|パスカル|気圧|バール|MPa|kPa|hPa|Pa|bar|"
                           r"psi|atm)"),
    "voltage": re.compile(rf"(?:{_N_JA})(?:キロボルト|ボルト|kV|V(?![A-Za-z]))"),
}
_MEASURE_UNIT = {  # a table's column names or section line that give the unit of its bare numbers
    "length": re.compile(rf"\b{_LENGTH_UNIT}\b|メートル|センチ|ミリ", re.I),
    "mass": re.compile(rf"\b{_MASS_UNIT}\b|キロ|グラム|トン", re.I),
    "speed": re.compile(rf"{_SPEED_UNIT}|時速|km/h", re.I),
    "capacity": re.compile(rf"(?<![\w/]){_VOLUME_UNIT}(?![\w²³])|\bcapacity\b|リットル|定員|容量|人", re.I),
    "age": re.compile(r"\b(?:years?|age|built|founded|established)\b|歳|年", re.I),
    "size": re.compile(rf"{_AREA_UNIT}|\b{_LENGTH_UNIT}\b|平方|㎡", re.I),
    "temperature": re.compile(r"[°º˚℃℉]|\b(?:temp(?:erature)?s?|celsius|fahrenheit|set\s?points?)\b|\((?-i:C|F|K)\)"
                              r"|温度|気温|室温", re.I),
    "power": re.compile(r"\b(?-i:W|kW|MW|hp|bhp|PS|kWh|kVA)\b|\b(?:power|output|watts?|kilowatts?|horsepower)\b|出力|馬力|"
                        r"ワット|電力", re.I),
    "pressure": re.compile(r"\b(?-i:bar|mbar|psi|Pa|kPa|MPa|hPa|atm)\b|\bpressure\b|圧力|気圧", re.I),
    "voltage": re.compile(r"\b(?-i:V|kV|mV)\b|\bvoltage\b|電圧|ボルト", re.I),
}


_CJK_CHARS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f\u3000-\u303f\uff01-\uff0f]")
_BARE_NUMBER = re.compile(r"^\(?(?:[-−–]|minus\s+)?\s*(?:up to\s+)?\d[\d,]*(?:\.\d+)?"
                          r"(?:\s*(?:[-–]|to)\s*[-−–]?\s*\d[\d,]*(?:\.\d+)?)?\)?\.?$", re.I)


def states_measure(kind: str, text: str, cjk: bool = False, unit_context: str = "") -> bool:
    """Does `text` state a quantity with a unit of the dimension `kind` (measure_kind) asks for: a length for
    "length" (45 m, 120 feet, 3.2-metre), a mass for "mass" (12 kg, 3 tonnes), a speed for "speed" (80 km/h, 12
    knots), a volume, a number of seats or places, tonnes or power for "capacity" (5,000 litres, 880 m³/h, 120
    passengers, 4 MW), an age or a founding year for "age" (140 years old, built in 1872), an area, a length or a
    volume for "size", a temperature (−18 °C, minus 25 degrees, 2–8 ℃, マイナス18度), a power (150 kW, 450 hp, 300
    馬力), a pressure (6 bar, 2.5 MPa, 1気圧) or a voltage (230 V) for those? A table row also with a bare number
    cell (−18, 450) under column names (`unit_context`) that give such a unit."""
    rx = (_MEASURE_TEXT_CJK if cjk else _MEASURE_TEXT)[kind]
    # a unit in Latin letters inside Japanese text (面積は30km2に及ぶ, 45mで): read with the kana and kanji around it
    # blanked, since the English patterns end a unit at a non-word character and a kana is a word character
    if rx.search(text) or (cjk and _MEASURE_TEXT[kind].search(_CJK_CHARS.sub(" ", text))):
        return True
    if _TABLE_SEP not in text or not any(_BARE_NUMBER.match(c.strip()) for c in text.split("|")[1:]):
        return False
    return bool(_MEASURE_UNIT[kind].search(unit_context))


MEASURE_KINDS = frozenset(_MEASURE_TEXT)
