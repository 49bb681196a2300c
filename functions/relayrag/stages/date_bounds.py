"""A question that bounds its dates ("the next shutdown after August 2026", "changes since 2024", 「2025年4月以降」)
is not answered by a sentence whose dates all fall outside the bound (issue 31): "on 16 August 2026" does not
say when the shutdown after August 2026 is."""
from __future__ import annotations

import re

from relayrag.text import normalize

_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_MONTH = (r"(January|February|March|April|May|June|July|August|September|October|November|December|"
          r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.?")
_BOUND_EN = re.compile(rf"\b(after|later than|since|from|before|earlier than|prior to|until|by)\s+(?:the\s+)?"
                       rf"(?:(?:start|end|beginning) of\s+)?(?:{_MONTH}\s+)?((?:19|20)\d\d)\b", re.I)
_BOUND_JA = re.compile(r"((?:19|20)\d\d)\s*年\s*(?:(\d{1,2})\s*月\s*)?(以降|より後|の後|以後|以前|より前|まで)")
_DATE_EN = re.compile(rf"(?:\b{_MONTH}\s+(?:\d{{1,2}}(?:st|nd|rd|th)?,?\s+)?((?:19|20)\d\d)\b)|\b((?:19|20)\d\d)\b", re.I)
_DATE_JA = re.compile(r"((?:19|20)\d\d)\s*年\s*(?:(\d{1,2})\s*月)?")
# Japanese era years (令和7年 = 2025年, 平成21年 = 2009年, 元年 = the first year): documents and questions write
# them, and a bound or period compares them as calendar years
_ERA_BASE = {"令和": 2018, "平成": 1988, "昭和": 1925}
_ERA_YEAR = re.compile(r"(令和|平成|昭和)\s*(元|\d{1,2})\s*年")
_LATER = {"after", "later than", "since", "from", "以降", "より後", "の後", "以後"}
_INCLUSIVE = {"since", "from", "以降", "以後", "until", "by", "以前", "まで"}


def western_dates(text: str) -> str:
    """`text` normalised, with its Japanese era years written as calendar years: 「令和7年5月」 → 「2025年5月」,
    「平成元年」 → 「1989年」, 「令和6年度」 → 「2024年度」."""
    return _ERA_YEAR.sub(lambda m: f"{_ERA_BASE[m.group(1)] + (1 if m.group(2) == '元' else int(m.group(2)))}年",
                         normalize(text))


def _month(name: str | None) -> int | None:
    return _MONTHS.index(name[:3].lower()) + 1 if name else None


def date_bound(question: str) -> tuple[bool, bool, int, int | None] | None:
    """(later?, inclusive?, year, month or None) of the question's date bound, or None."""
    q = western_dates(question)
    m = _BOUND_EN.search(q)
    if m:
        word = m.group(1).lower()
        return word in _LATER, word in _INCLUSIVE, int(m.group(3)), _month(m.group(2))
    m = _BOUND_JA.search(q)
    if m:
        return m.group(3) in _LATER, m.group(3) in _INCLUSIVE, int(m.group(1)), int(m.group(2)) if m.group(2) else None
    return None


def _dates(text: str) -> list[tuple[int, int | None]]:
    t = western_dates(text)
    out = [(int(m.group(2) or m.group(3)), _month(m.group(1)) if m.group(2) else None) for m in _DATE_EN.finditer(t)]
    return out + [(int(m.group(1)), int(m.group(2)) if m.group(2) else None) for m in _DATE_JA.finditer(t)]


def _holds(date: tuple[int, int | None], bound: tuple[bool, bool, int, int | None]) -> bool:
    later, inclusive, by, bm = bound
    y, m = date
    if bm is None or m is None:  # compared by year
        a, b = y, by
        if bm is not None and m is None and y == by:
            return True  # "in 2026" may fall after August 2026
    else:
        a, b = (y, m), (by, bm)  # type: ignore[assignment]
    if a == b:
        return inclusive
    return a > b if later else a < b  # type: ignore[operator]


def misses_date_bound(question: str, text: str) -> bool:
    """Does the question bound its dates (date_bound) while every date `text` states falls outside the bound? False
    when the question has no bound or the text states no date (its other checks decide then)."""
    bound = date_bound(question)
    if bound is None:
        return False
    own = {d for d in _dates(question)}
    dates = [d for d in _dates(text) if d not in own or d[1] is not None]
    return bool(dates) and not any(_holds(d, bound) for d in dates)
