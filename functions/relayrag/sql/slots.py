"""Typed slots of verified query templates, and the mentions in a question that fill them.

A template (an `examples:` entry of relayrag.sql.yaml with `slots:`) names its parameters in the SQL as
`@name` and declares each one's type; a question fills them from what it mentions:

| type         | filled by                                                                 | SQL parameters            |
|--------------|---------------------------------------------------------------------------|---------------------------|
| `count`      | a positive whole number: 5, five, twenty-five, 3つ, トップ5, 5件, 十, 三か国 | `@n` (INT64)              |
| `number`     | any number: 1000, 1,000, 2.5, one hundred                                 | `@n` (INT64 or FLOAT64)   |
| `year`       | a year: "in 2023", "2023年"                                                | `@y`, `@y_start`, `@y_end` |
| `date_range` | a year, half, quarter, month or span of years: "first half of 2024",       | `@p_start`, `@p_end`      |
|              | "Q3 2023", "March 2024", "between 2022 and 2023", 2024年上半期, 2023年第3四半期 |                           |
| `value`      | a value of a column (`value:Customer.Country`), or of columns joined by a  | `@v` (STRING)             |
|              | space (`value:Employee.FirstName+Employee.LastName`, a person's name)      |                           |

Dates are ISO strings, `_start` inclusive and `_end` exclusive ('2024-01-01', '2024-07-01'), compared with the
date column as the example config does (`InvoiceDate >= @p_start AND InvoiceDate < @p_end`).

`find_mentions(text, values)` lists everything in `text` that could fill a slot or constrain the answer, as
`Mention`s with spans in the NFKC-normalised text (relayrag.text.normalize), in this order, each claiming its
characters: dates (spans of years, halves, quarters, months, years; a year bounded by since / before / 以降 …
is a `bound`; "last year", 昨年 … are `relative`; months without a year, "January-June", 4〜6月, are
`months`: no slot takes those three), column values (`ValueIndex`: the
column's distinct values and the config's `value_aliases`, compared without case and accents, Latin
values as whole words; a match whose case differs from the stored value is `strong=False`), then numbers (digits,
English number words, Japanese numerals before a counter or after トップ / 上位 / ベスト). A 4-digit number
from 1900 to 2100 is a year unless a comparison ("more than", "top", 以上 …) comes just before it or a counter
just after it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from relayrag.text import has_cjk, normalize

SLOT_TYPES = ("count", "number", "year", "date_range", "value")
SLOT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,39}$")
PLACEHOLDER = {"number": "N", "count": "N", "year": "Y", "period": "Y", "bound": "Y", "relative": "Y", "months": "Y",
               "value": "X", "ordinal": "N"}


@dataclass(frozen=True)
class Mention:
    """Something a question names: kind "number" (value int | float), "ordinal" (int), "year" (int), "period"
    ((start, end) ISO dates, end exclusive), "bound" / "relative" (the text), "months" ((first, last or None):
    months without a year), "value" ({"Table.Column": stored value}); `start`/`end`: span in the normalised
    text; `strong`: a value written as stored (case included)."""

    kind: str
    start: int
    end: int
    text: str
    value: Any
    strong: bool = True

    def key(self) -> tuple:
        """What two mentions must share to be the same constraint (kind and canonical value)."""
        if self.kind == "value":
            return ("value", tuple(sorted({fold(v) for v in self.value.values()})))
        if self.kind in ("bound", "relative"):
            return (self.kind, self.text.lower())
        if self.kind == "year":
            return ("period", (f"{self.value}-01-01", f"{self.value + 1}-01-01"))
        return (self.kind, self.value)


# ------------------------------------------------------------------------------------------------ text

def lower_keep(text: str) -> str:
    """`text` lower-cased character by character where that keeps its length (offsets stay valid)."""
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def fold(text: str) -> str:
    """Compare form of a value: NFKC, case-folded, accents removed, ’ as ', whitespace collapsed."""
    t = unicodedata.normalize("NFKD", normalize(text).replace("’", "'"))
    t = "".join(c for c in t if not unicodedata.combining(c))
    return " ".join(unicodedata.normalize("NFKC", t).casefold().split())


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for a, b in spans:
        for i in range(a, b):
            chars[i] = " "
    return "".join(chars)


# ------------------------------------------------------------------------------------------------ numbers

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen".split())}
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_NUMBER_WORD = re.compile(r"\b(?:" + "|".join(sorted([*_UNITS, *_TENS, *_SCALES, "a", "and"], key=len,
                                                      reverse=True)) + r")\b")
_KANJI_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_KANJI_UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
# counters after a Japanese number (the number counts something); 番 (一番 "the most") and 分 (十分 "enough") are not
JA_COUNTERS = r"(?:つ|件|人|名|個|位|曲|本|枚|組|社|か国|カ国|ヶ国|ヵ国|箇国|国|アルバム|ジャンル|回|点|種類|種|以上|以下|未満)"
_JA_BEFORE = r"(?:トップ|上位|ベスト|下位|ワースト)"
# words just before a 4-digit number that make it a quantity, not a year
_QUANTITY_BEFORE = re.compile(r"(?:\b(?:than|over|above|under|below|least|most|top|exceeding|exceeds|"
                              r"exceed|beyond)\s*$|[><=≥≤]\s*$|" + _JA_BEFORE + r"\s*$)")
_QUANTITY_AFTER = re.compile(r"^\s*(?:" + JA_COUNTERS + r"|(?:tracks?|songs?|customers?|invoices?|orders?|"
                             r"albums?|artists?|items?|units?|copies|dollars?|minutes?|seconds?|rows?|times?)\b)")


def kanji_number(s: str) -> int | None:
    """'十' → 10, '二十五' → 25, '三百' → 300, '五' → 5, '一二' → None (not a numeral)."""
    if not s or any(c not in _KANJI_DIGITS and c not in _KANJI_UNITS for c in s):
        return None
    total, section, digit = 0, 0, None
    for c in s:
        if c in _KANJI_DIGITS:
            if digit is not None:
                return None
            digit = _KANJI_DIGITS[c]
        else:
            unit = _KANJI_UNITS[c]
            if unit == 10000:
                total += (section + (digit or 0)) * unit
                section, digit = 0, None
            else:
                section += (digit if digit is not None else 1) * unit
                digit = None
    return total + section + (digit or 0)


def _word_numbers(low: str) -> list[tuple[int, int, int]]:
    """(start, end, value) of each run of English number words in lower-cased `low`: "five", "twenty-five",
    "one hundred and two", "a thousand". Words are separated by spaces or hyphens."""
    words = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"[a-z]+", low)]
    out = []
    i = 0
    while i < len(words):
        total = current = 0
        last: str | None = None
        j, end = i, None
        while j < len(words):
            s, _e, w = words[j]
            if j > i and low[words[j - 1][1]:s].strip(" -"):
                break
            nxt = words[j + 1][2] if j + 1 < len(words) else ""
            if w in _UNITS and last in (None, "ten", "scale", "and") and not (last == "ten" and current % 10):
                current += _UNITS[w]
                last = "unit" if _UNITS[w] < 10 else "teen"
            elif w in _TENS and last in (None, "scale", "and"):
                current += _TENS[w]
                last = "ten"
            elif w in _SCALES and last in ("unit", "teen", "ten", "a"):
                current = max(current, 1) * _SCALES[w]
                if _SCALES[w] >= 1000:
                    total, current = total + current, 0
                last = "scale"
            elif w == "a" and last is None and nxt in _SCALES:
                last = "a"
            elif w == "and" and last == "scale" and (nxt in _UNITS or nxt in _TENS):
                last = "and"
            else:
                break
            if last not in ("a", "and"):
                end = words[j][1]
            j += 1
        if end is not None:
            out.append((words[i][0], end, total + current))
            i = j
        else:
            i += 1
    return out


_PER_ONE = re.compile(r"\s*[^\s\d、。,.?？]{0,4}?(?:あたり|当たり|当り)")


def _numbers(text: str, taken: list[tuple[int, int]]) -> list[Mention]:
    # 「1件あたり」「1請求あたり」: "per one", an average (relayrag.sql.wording), not a count
    taken = taken + [(m.start(), m.end()) for m in re.finditer(r"(?:1|一)(?=" + _PER_ONE.pattern + ")", text)]
    low = lower_keep(_blank(text, taken))
    out: list[Mention] = []
    for m in re.finditer(r"(?<![A-Za-z0-9_.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(st|nd|rd|th)?"
                         r"(?![A-Za-z0-9_]|[.,]\d)", low):
        if m.group(3):
            out.append(Mention("ordinal", m.start(), m.end(), text[m.start():m.end()], int(m.group(1))))
            continue
        raw = m.group(1).replace(",", "") + (m.group(2) or "")
        value: int | float = float(raw) if m.group(2) else int(raw)
        out.append(Mention("number", m.start(1), m.end(), text[m.start(1):m.end()], value))
    for m in re.finditer(r"(?<=top)(\d+)\b|(?<=top-)(\d+)\b", low):  # "top5", "top-5"
        g = m.group(1) or m.group(2)
        out.append(Mention("number", m.start(), m.end(), text[m.start():m.end()], int(g)))
    for s, e, v in _word_numbers(low):
        if low[s:e] == "one" and _pronoun_one(low, s, e):
            continue
        out.append(Mention("number", s, e, text[s:e], v))
    kanji = "".join([*_KANJI_DIGITS, *_KANJI_UNITS])
    for m in re.finditer(rf"{_JA_BEFORE}\s*([{kanji}]+)|([{kanji}]+)(?={JA_COUNTERS})", text):
        g = m.group(1) or m.group(2)
        start = m.start(1) if m.group(1) else m.start(2)
        k = kanji_number(g)
        if k is not None and not _overlaps(start, start + len(g), taken):
            out.append(Mention("number", start, start + len(g), g, k))
    return [x for x in out if not _overlaps(x.start, x.end, taken)]


_ONE_COUNTS_AFTER = re.compile(r"(?:\b(?:top|bottom|than|least|most|exactly|just|only)|[><=≥≤])\s*$")
_ONE_PRONOUN = re.compile(r"\s*(?:[:;,.!?)]|$)|\s+(?:of|has|had|is|was|with|that|who|which|does|did)\b|"
                          r"\s+[a-z]+(?:\s+[a-z]+)?\s*:")


def _pronoun_one(low: str, s: int, e: int) -> bool:
    """Is the word "one" at low[s:e] a pronoun or a filler, not a count: "Quick one:", "One question: …", "which
    one has …", "the one with …", "one of them"? A count has its noun after it ("one country", "more than one
    customer") or a comparison before it ("top one", "more than one")."""
    if _ONE_COUNTS_AFTER.search(low[max(0, s - 20):s]):
        return False
    return bool(_ONE_PRONOUN.match(low, e))


def _overlaps(a: int, b: int, spans: list[tuple[int, int]]) -> bool:
    return any(a < e and s < b for s, e in spans)


# ------------------------------------------------------------------------------------------------ dates

_Y = r"(19\d\d|20\d\d)"
_MONTHS = {m: i + 1 for i, m in enumerate("january february march april may june july august september october "
                                            "november december".split())}
_MONTHS.update({k[:3]: v for k, v in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORD = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "former": 1,
        "latter": 2, "一": 1, "二": 2, "三": 3, "四": 4, "1": 1, "2": 2, "3": 3, "4": 4}
_HALF_JA = {"上半期": 1, "前半": 1, "上期": 1, "前期": 1, "下半期": 2, "後半": 2, "下期": 2, "後期": 2}


def _iso(y: int, m: int) -> str:
    return f"{y + (m - 1) // 12:04d}-{(m - 1) % 12 + 1:02d}-01"


def _period(y: int, m0: int, months: int) -> tuple[str, str]:
    return _iso(y, m0), _iso(y, m0 + months)


# (regex on the lower-cased text, kind, how the groups make the value); first match claims its span
_DATE_RULES: list[tuple[re.Pattern, str, Any]] = [
    (re.compile(rf"\bbetween\s+(?:the\s+years?\s+)?{_Y}\s+and\s+{_Y}\b"), "span", lambda g: (g[0], g[1])),
    (re.compile(rf"\bfrom\s+(?:the\s+year\s+)?{_Y}\s*(?:to|through|thru|until|till|-|–|—)\s*{_Y}\b"), "span",
     lambda g: (g[0], g[1])),
    (re.compile(rf"(?<![\d-]){_Y}\s*(?:-|–|—|to|through)\s*{_Y}(?![\d-])"), "span", lambda g: (g[0], g[1])),
    (re.compile(rf"{_Y}\s*年?\s*(?:から|〜|~|～)\s*{_Y}\s*年?\s*(?:まで)?(?:の間)?"), "span", lambda g: (g[0], g[1])),
    (re.compile(rf"\b(first|1st|second|2nd|former|latter)\s+half\s+(?:of\s+|in\s+)?(?:the\s+year\s+)?{_Y}\b"),
     "half", lambda g: (g[1], _ORD[g[0]])),
    (re.compile(rf"\bh([12])\s*(?:of\s+)?{_Y}\b"), "half", lambda g: (g[1], int(g[0]))),
    (re.compile(rf"\b{_Y}\s*h([12])\b"), "half", lambda g: (g[0], int(g[1]))),
    (re.compile(rf"{_Y}\s*年?\s*(?:度)?\s*(?:の)?\s*(上半期|前半|上期|前期|下半期|後半|下期|後期)"), "half",
     lambda g: (g[0], _HALF_JA[g[1]])),
    (re.compile(rf"\b(first|1st|second|2nd|third|3rd|fourth|4th)\s+quarter\s+(?:of\s+|in\s+)?(?:the\s+year\s+)?{_Y}\b"),
     "quarter", lambda g: (g[1], _ORD[g[0]])),
    (re.compile(rf"\bq([1-4])\s*(?:of\s+|in\s+)?{_Y}\b"), "quarter", lambda g: (g[1], int(g[0]))),
    (re.compile(rf"\b{_Y}\s*-?\s*q([1-4])\b"), "quarter", lambda g: (g[0], int(g[1]))),
    (re.compile(rf"{_Y}\s*年?\s*(?:度)?\s*(?:の)?\s*第?\s*([1-4一二三四])\s*四半期"), "quarter",
     lambda g: (g[0], _ORD[g[1]])),
    (re.compile(rf"{_Y}\s*年?\s*(?:の)?\s*q([1-4])"), "quarter", lambda g: (g[0], int(g[1]))),
    (re.compile(rf"\b(?:from\s+|between\s+)?({_MONTH_RE})\.?\s*(?:-|–|—|to|through|thru|until|till|and)\s*"
                rf"({_MONTH_RE})\.?,?\s+(?:of\s+|in\s+)?{_Y}\b"), "mspan",
     lambda g: (g[2], _MONTHS[g[0]], _MONTHS[g[1]])),
    (re.compile(rf"{_Y}\s*年\s*(1[0-2]|0?[1-9])\s*月\s*(?:から|〜|~|～|-|–)\s*(1[0-2]|0?[1-9])\s*月(?:まで)?"), "mspan",
     lambda g: (g[0], int(g[1]), int(g[2]))),
    (re.compile(rf"\b({_MONTH_RE})\.?\s+(?:of\s+|in\s+)?{_Y}\b"), "month", lambda g: (g[1], _MONTHS[g[0]])),
    (re.compile(rf"(?<![\d-]){_Y}\s*[-/]\s*(1[0-2]|0?[1-9])(?![\d/-])"), "month", lambda g: (g[0], int(g[1]))),
    (re.compile(rf"{_Y}\s*年\s*(1[0-2]|0?[1-9])\s*月"), "month", lambda g: (g[0], int(g[1]))),
    (re.compile(rf"\b(since|before|after|until|till|from|prior\s+to|up\s+to)\s+(?:the\s+(?:year\s+)?)?{_Y}\b"),
     "bound", None),
    (re.compile(rf"{_Y}\s*年?\s*(以降|以前|より前|より後|から|まで)"), "bound", None),
    (re.compile(rf"{_Y}\s*年(?:度)?"), "year", lambda g: g[0]),
    (re.compile(rf"(?<![\d.,]){_Y}(?![\d]|[.,]\d)"), "year", lambda g: g[0]),
]
_RELATIVE = [
    re.compile(r"\b(?:last|this|next|previous|past|current|prior)\s+(?:\d+\s+|two\s+|three\s+|few\s+)?"
               r"(?:years?|months?|quarters?|weeks?|days?)\b"),
    re.compile(r"\b(?:yesterday|today|recently|recent|ytd|year-to-date|lately)\b"),
    re.compile(r"昨年|去年|今年|来年|前年|先月|今月|来月|先週|今週|最近|直近|昨日|今日|本日|前月|当月"),
]


def _dates(text: str) -> list[Mention]:
    low = lower_keep(text)
    out: list[Mention] = []
    taken: list[tuple[int, int]] = []
    for rule, kind, make in _DATE_RULES:
        for m in rule.finditer(low):
            if _overlaps(m.start(), m.end(), taken):
                continue
            g = [x for x in m.groups()]
            if kind == "year":
                y = int(make(g))
                before, after = low[max(0, m.start() - 14):m.start()], low[m.end():m.end() + 12]
                if _QUANTITY_BEFORE.search(before) or (not low[m.start():m.end()].endswith("年")
                                                        and _QUANTITY_AFTER.match(after)):
                    continue  # "more than 2000 tracks", "top 2000", "2000曲": a number, not a year
                out.append(Mention("year", m.start(), m.end(), text[m.start():m.end()], y))
            elif kind == "bound":
                out.append(Mention("bound", m.start(), m.end(), text[m.start():m.end()], None))
            elif kind == "mspan":
                y, a, b = make(g)
                a, b = sorted((a, b))
                out.append(Mention("period", m.start(), m.end(), text[m.start():m.end()],
                                   (_iso(int(y), a), _iso(int(y), b + 1))))
            elif kind == "span":
                a, b = sorted((int(g[0]), int(g[1])))
                out.append(Mention("period", m.start(), m.end(), text[m.start():m.end()],
                                   (f"{a}-01-01", f"{b + 1}-01-01")))
            else:
                y, n = make(g)
                y, n = int(y), int(n)
                months = {"half": 6, "quarter": 3, "month": 1}[kind]
                out.append(Mention("period", m.start(), m.end(), text[m.start():m.end()],
                                   _period(y, (n - 1) * months + 1, months)))
            taken.append((m.start(), m.end()))
    for rule in _RELATIVE:
        for m in rule.finditer(low):
            if not _overlaps(m.start(), m.end(), taken):
                out.append(Mention("relative", m.start(), m.end(), text[m.start():m.end()], None))
                taken.append((m.start(), m.end()))
    for rule, cased in _MONTH_SPANS:
        for m in rule.finditer(text if cased else low):
            if CALENDAR_ORDER.match(low, m.start()):
                continue  # "Jan first": the order of a per-month result (a marker), not a date
            if not _overlaps(m.start(), m.end(), taken):
                a = _month_number(m.group(1))
                b = _month_number(m.group(2)) if m.lastindex and m.lastindex >= 2 and m.group(2) else None
                value = (a, b if b is not None else (None if m.group(0).rstrip().endswith(("から", "from")) or
                                                     m.group(0).lower().startswith("from") else a))
                out.append(Mention("months", m.start(), m.end(), text[m.start():m.end()], value))
                taken.append((m.start(), m.end()))
    return out


def _month_number(s: str) -> int:
    s = s.strip().lower().rstrip(".")
    return _MONTHS[s] if s in _MONTHS else int(s)


# "Jan first", "January first", "December last": a per-month result in calendar order, not a month named
CALENDAR_ORDER = re.compile(r"(?:jan(?:uary)?\.?\s+first|dec(?:ember)?\.?\s+last)\b")
_FULL = "January|February|March|April|June|July|August|September|October|November|December"
_ABBR = "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
_JM = r"(1[0-2]|0?[1-9])"
# months without a year ("January-June", "4〜6月", "1月から", "March"): kind "months", value (first, last) or
# (first, None) for "from January" / 1月から. No slot takes them; the matcher drops one that restates the
# period the question already names ("the first half of 2023 (January-June)").
_MONTH_SPANS: list[tuple[re.Pattern, bool]] = [
    (re.compile(rf"\b({_MONTH_RE})\.?\s*(?:-|–|—|to|through|thru|until|till)\s*({_MONTH_RE})\b"), False),
    (re.compile(rf"{_JM}\s*月?\s*(?:から|〜|~|～|-|–)\s*{_JM}\s*月(?:まで)?"), False),
    (re.compile(rf"\bfrom\s+({_MONTH_RE})\b"), False),
    (re.compile(rf"{_JM}\s*月\s*から"), False),
    (re.compile(rf"\b({_FULL}|{_ABBR})\b"), True),
    (re.compile(rf"(?<![\d年]){_JM}\s*月(?!ごと|別|毎|次)"), False),
]


# ------------------------------------------------------------------------------------------------ values

_TOKEN = re.compile(r"[^\s\"“”?!,;:()\[\]{}<>「」『』。、？！・…\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]+")


def _is_acronym(v: str) -> bool:
    """Short all-capital values ("USA", "US", "UK") match only as written: "us" is a pronoun."""
    letters = [c for c in v if c.isalpha()]
    return bool(letters) and len(v) <= 4 and all(c.isupper() for c in letters)


@dataclass
class ValueIndex:
    """Values a question may name, by column key ("Customer.Country", "Employee.FirstName+Employee.LastName"):
    the columns' distinct values and their aliases (config `value_aliases`: stored value → other names)."""

    latin: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)  # fold → [(key, value, as written)]
    cjk: list[tuple[str, str, str]] = field(default_factory=list)   # (normalised alias, key, value)
    max_words: int = 1

    @classmethod
    def build(cls, columns: dict[str, list[str]], aliases: dict[str, list[str]] | None = None) -> "ValueIndex":
        idx = cls()
        by_fold: dict[str, list[str]] = {}
        for key, values in columns.items():
            for v in values:
                v = str(v).strip()
                if len(v) < 2 and not has_cjk(v):
                    continue
                idx._add(v, key, v)
                by_fold.setdefault(fold(v), []).append(key)
        for stored, names in (aliases or {}).items():
            keys = by_fold.get(fold(stored), [])
            for key in keys:
                value = next(v for v in columns[key] if fold(str(v)) == fold(stored))
                for a in names:
                    idx._add(a, key, str(value))
        return idx

    def _add(self, written: str, key: str, value: str) -> None:
        if has_cjk(written, min_share=0.3):
            self.cjk.append((normalize(written).strip(), key, value))
            return
        f = fold(written)
        if not f:
            return
        entry = (key, value, normalize(written).strip())
        if entry not in self.latin.setdefault(f, []):
            self.latin[f].append(entry)
        self.max_words = max(self.max_words, len(f.split()))

    def find(self, text: str, taken: list[tuple[int, int]]) -> list[Mention]:
        """Value mentions in `text` (normalised) outside `taken`, longest first, overlaps dropped."""
        hits: list[tuple[int, int, dict[str, str], bool]] = []
        toks: list[tuple[int, list[int]]] = []  # (start, possible ends: as written, without a possessive 's)
        for m in _TOKEN.finditer(_blank(text, taken)):
            s, e = m.start(), m.end()
            while e > s and text[e - 1] in ".'’":
                e -= 1
            if e > s:
                ends = [e] + ([e - 2] if e - s > 2 and text[e - 2:e].lower() in ("'s", "’s") else [])
                toks.append((s, ends))
        for i in range(len(toks)):
            for n in range(1, min(self.max_words, len(toks) - i) + 1):
                s = toks[i][0]
                for e in toks[i + n - 1][1]:
                    written = text[s:e]
                    for key, value, as_written in self.latin.get(fold(written), []):
                        exact = normalize(written) == as_written
                        if _is_acronym(as_written) and not exact:
                            continue
                        hits.append((s, e, {key: value}, exact))
        for alias, key, value in self.cjk:
            i = text.find(alias)
            while alias and i >= 0:
                if not _overlaps(i, i + len(alias), taken):
                    hits.append((i, i + len(alias), {key: value}, True))
                i = text.find(alias, i + 1)
        # longest spans first; the same span in several columns is one mention
        hits.sort(key=lambda h: (-(h[1] - h[0]), h[0], not h[3]))
        kept: list[tuple[int, int, dict[str, str], bool]] = []
        for s, e, cols, strong in hits:
            same = next((k for k in kept if k[0] == s and k[1] == e), None)
            if same is not None:
                same[2].update(cols)
                continue
            if not _overlaps(s, e, [(k[0], k[1]) for k in kept]):
                kept.append((s, e, dict(cols), strong))
        return [Mention("value", s, e, text[s:e], cols, strong) for s, e, cols, strong in sorted(kept)]


def find_mentions(text: str, values: ValueIndex | None = None) -> list[Mention]:
    """Every mention in `text` (which must already be normalised: relayrag.text.normalize), by position:
    dates first, then values, then numbers (see the module docstring)."""
    out = _dates(text)
    taken = [(m.start, m.end) for m in out]
    if values is not None:
        vals = values.find(text, taken)
        out += vals
        taken += [(m.start, m.end) for m in vals]
    out += _numbers(text, taken)
    return sorted(out, key=lambda m: m.start)


# ------------------------------------------------------------------------------------------------ filling

def accepts(slot_type: str, m: Mention, column: str | None = None) -> bool:
    """Can a slot of `slot_type` (for `value`: of column key `column`) take mention `m`?"""
    if slot_type == "count":
        return m.kind == "number" and isinstance(m.value, int) and m.value >= 1
    if slot_type == "number":
        return m.kind == "number"
    if slot_type == "year":
        return m.kind == "year"
    if slot_type == "date_range":
        return m.kind in ("year", "period")
    if slot_type == "value":
        return m.kind == "value" and column is not None and column in m.value
    return False


def parameters(name: str, slot_type: str, m: Mention) -> dict[str, Any]:
    """The SQL parameters a filled slot provides: {"n": 5}, {"y": 2023, "y_start": "2023-01-01", "y_end":
    "2024-01-01"}, {"p_start": ..., "p_end": ...}, {"v": "Canada"}."""
    if slot_type in ("count", "number"):
        return {name: m.value}
    if slot_type == "year":
        return {name: m.value, f"{name}_start": f"{m.value}-01-01", f"{name}_end": f"{m.value + 1}-01-01"}
    if slot_type == "date_range":
        start, end = (f"{m.value}-01-01", f"{m.value + 1}-01-01") if m.kind == "year" else m.value
        return {f"{name}_start": start, f"{name}_end": end}
    raise ValueError(f"a {slot_type} slot takes its value from a column")


def parameter_names(name: str, slot_type: str) -> set[str]:
    """The `@names` a slot of this type may use in the SQL."""
    if slot_type == "year":
        return {name, f"{name}_start", f"{name}_end"}
    if slot_type == "date_range":
        return {f"{name}_start", f"{name}_end"}
    return {name}


def describe(slot_type: str, column: str | None = None) -> str:
    """A slot in words, for messages: "a number (top N, a count)", "a value of Genre.Name"."""
    return {"count": "a whole number (top N, a count)", "number": "a number", "year": "a year",
            "date_range": "a period (a year, half, quarter, month or span of years)"}.get(
        slot_type, f"a value of {column}")
