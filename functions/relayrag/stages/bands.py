"""Numeric bands of table rows ("6-10", "11 or more", "up to 10 kg", "5年以上", "-20 to -5 °C") and the quantities a
question names ("a 75 kg crate", "a year ago"): a row whose band holds the question's quantity is the row it asks
about. Split from answer_shape.py (issue 31), which re-exports these names."""

from __future__ import annotations

import re
from collections.abc import Callable

from relayrag.text import normalize


# --- numeric bands ----------------------------------------------------------------------------------------

_NUM = r"(\d+(?:[.,]\d+)*)"
_UNIT_BEFORE = r"(?:(?:[a-z]{2,4}\.?|[$€£¥￥])\s*)?"  # "over EUR 25,000", "up to $5,000": a currency before the number
_Band = Callable[..., tuple[float | None, float | None]]
_BANDS: list[tuple[re.Pattern[str], _Band]] = [  # (pattern, (low, high) from the match: None = open)
    (re.compile(rf"^(?:from\s+)?{_NUM}\s*(?:[^\d\s|]{{1,6}}\s*)?(?:-|–|—|to|~|〜|～)\s*{_UNIT_BEFORE}{_NUM}\b"),
     lambda a, b: (a, b)),
    (re.compile(rf"^{_NUM}\s*(?:\+|or more|and (?:over|above|more)|or over|or above|or longer|plus)"), lambda a: (a, None)),
    (re.compile(rf"^(?:over|above|more than|greater than|longer than|>)\s*{_UNIT_BEFORE}{_NUM}"),
     lambda a: (a + 1e-9, None)),
    (re.compile(rf"^(?:at least|minimum|min\.?|from|≥|>=)\s*{_UNIT_BEFORE}{_NUM}"), lambda a: (a, None)),
    (re.compile(rf"^(?:up to|at most|maximum|max\.?|≤|<=|no more than|not more than)\s*{_UNIT_BEFORE}{_NUM}"),
     lambda a: (None, a)),
    (re.compile(rf"^(?:under|below|less than|fewer than|shorter than|<)\s*{_UNIT_BEFORE}{_NUM}"),
     lambda a: (None, a - 1e-9)),
    (re.compile(rf"^{_NUM}\s*(?:or (?:less|fewer|under|below)|and (?:under|below))"), lambda a: (None, a)),
    (re.compile(rf"^{_NUM}\s*[^\d\s]{{0,3}}?(?:以上)"), lambda a: (a, None)),
    (re.compile(rf"^{_NUM}\s*[^\d\s]{{0,3}}?(?:以下|まで)"), lambda a: (None, a)),
    (re.compile(rf"^{_NUM}\s*[^\d\s]{{0,3}}?(?:未満)"), lambda a: (None, a - 1e-9)),
    (re.compile(rf"^{_NUM}\s*[^\d\s]{{0,3}}?(?:超)"), lambda a: (a + 1e-9, None)),
]


_SIGNED = r"([-+−]?\d+(?:\.\d+)?)"
_DEGREE = r"\s*(?:°\s*[cf]?|℃|degrees?(?:\s+[cf]\b)?)?\s*"
_SIGNED_BANDS: list[tuple[re.Pattern[str], _Band]] = [
    (re.compile(rf"^(?:from\s+|between\s+)?{_SIGNED}{_DEGREE}(?:to|and|–|—|~|〜|～)\s*{_SIGNED}{_DEGREE}$"),
     lambda a, b: (min(a, b), max(a, b))),
    (re.compile(rf"^(?:below|under|less than|colder than|lower than|<)\s*{_SIGNED}{_DEGREE}$"), lambda a: (None, a - 1e-9)),
    (re.compile(rf"^(?:above|over|more than|warmer than|higher than|>)\s*{_SIGNED}{_DEGREE}$"), lambda a: (a + 1e-9, None)),
    (re.compile(rf"^{_SIGNED}{_DEGREE}(?:or|and)\s+(?:below|under|colder|lower|less)$"), lambda a: (None, a)),
    (re.compile(rf"^{_SIGNED}{_DEGREE}(?:or|and)\s+(?:above|over|warmer|higher|more)$"), lambda a: (a, None)),
]


def signed_band(t: str) -> tuple[float | None, float | None] | None:
    """A band of signed values (temperatures: "-1 °C to -20 °C" → (-20, -1), "below -30 °C", "0 °C to +5 °C") when
    the cell writes a sign before a number; None otherwise (a hyphen between numbers is a range, "6-10")."""
    if not re.search(r"(?:^|[\s(])[-+−]\d", t):
        return None
    for rx, make in _SIGNED_BANDS:
        m = rx.match(t.strip())
        if m:
            return make(*[float(g.replace("−", "-")) for g in m.groups()])
    return None


def band(cell: str) -> tuple[float | None, float | None] | None:
    """The numeric band a table cell or label states, as (low, high) with None for an open end: "6-10" →
    (6, 10); "11 or more" → (11, None); "up to 10" → (None, 10); "over 50 kg" → (50+, None); "under 18";
    "5年以上" → (5, None). None when the cell is no band (a lone number is no band)."""
    t = normalize(cell).strip().lower()
    signed = signed_band(t)
    if signed is not None:
        return signed
    t = re.sub(r"^[^\d\w<>≤≥]*", "", t)
    t = re.sub(r"^(?:[^\W\d_]+\s+){0,2}?(?=(?:from|over|above|more|greater|longer|at|up|under|below|less|fewer|"
               r"shorter|minimum|maximum|min|max|no|not)\b|\d)", "", t, count=1)  # "service of 6-10 years" → "6-10 years"
    for rx, make in _BANDS:
        m = rx.match(t)
        if m:
            nums = [float(g.replace(",", "")) for g in m.groups()]
            return make(*nums)
    return None


_WORD_NUMBERS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
_WORD_QUANTITY = re.compile(r"(?<!\bonce )(?<!\btwice )(?<!\bper )(?<!\bevery )(?<!\beach )\b(an?|"
                            + "|".join(_WORD_NUMBERS) + r")\s+(?:full\s+|whole\s+|working\s+|calendar\s+)?"
                            r"(years?|months?|weeks?|days?|hours?|kilos?|kg|kilograms?|tonnes?|units?|people|persons?|"
                            r"nights?)\b", re.I)


def quantities(question: str) -> tuple[str, ...]:
    """The numbers a question states, in digits ("7 years", "EUR 12,000") and in words before a unit ("a year
    ago" → "1", "three nights" → "3"; not "once a year", "per day"): the values a band row must hold."""
    from relayrag.stages.answerability import question_numbers
    q = normalize(question)
    words = [str(_WORD_NUMBERS.get(m.group(1).lower(), 1)) for m in _WORD_QUANTITY.finditer(q)]
    # "a -10 °C chamber", "minus 5 degrees": a signed value, which a band of signed values must hold as such; a
    # temperature is marked "°" ("-10°"): only a band of temperatures holds it, and only it holds such a band
    signed = [("-" if re.search(rf"(?:(?<![\w.,-])[-−]\s?|\bminus\s+){re.escape(n)}(?![\d.,])", q, re.I) else "")
              + n + ("°" if re.search(rf"(?<![\d.,]){re.escape(n)}\s*(?:°|℃|degrees?\b)", q, re.I) else "")
              for n in question_numbers(question)]
    return tuple(dict.fromkeys([*signed, *words]))


_MEASURED = re.compile(r"(?:[0-9][0-9,.]*|\b(?:" + "|".join(_WORD_NUMBERS) + r"))(?:-[a-z]+)*"
                       r"(?:\s+(?:[a-z]{1,3}|years?|months?|weeks?|days?|hours?|units?|pieces?|people|persons?|"
                       r"nights?|kilos?|kilograms?|tonnes?|litres?|liters?|euros?|dollars?))?(?:-[a-z]+)*"
                       r"\s+([a-z][a-z-]+)", re.I)
_UNIT_WORD = re.compile(r"(?:years?|months?|weeks?|days?|hours?|units?|pieces?|people|persons?|nights?|kilos?|"
                        r"kilograms?|tonnes?|litres?|liters?|euros?|dollars?|kg|eur|usd|gbp)", re.I)
_NOT_MEASURED = frozenset("""of in on at for to from by with and or is are was were be do does did will would can could
should must may have has had that which who than per a an the""".split())


def measured_things(question: str) -> list[str]:
    """The noun right after each quantity of the question: the thing measured ("a 75 kg crate" → crate, "a
    12-year-old record" → record, "EUR 40,000 test bench" → test). A band row holding the quantity is about
    that thing, whatever the table calls it ("Parcel weight")."""
    out = []
    for m in _MEASURED.finditer(normalize(question)):
        w = m.group(1).lower()
        if w not in _NOT_MEASURED and not _UNIT_WORD.fullmatch(w):
            out.append(w)
    return out


_DEGREE_CELL = re.compile(r"°|℃|\bdegrees?\b", re.I)


def band_holds(cell: str, numbers: tuple[str, ...] | list[str]) -> bool:
    """Does the band `cell` states hold one of the question's `numbers` ("7" in "6-10", "12" in "11 or
    more")?"""
    b = band(cell)
    if b is None:
        return False
    lo, hi = b
    degrees = bool(_DEGREE_CELL.search(cell))
    for n in numbers:
        if n.endswith("°") != degrees:
            continue  # "2 m" is not in a band of "+2 to +5 °C"; "-10 °C" not in "6-10 years"
        try:
            x = float(normalize(n).rstrip("°").replace(",", ""))
        except ValueError:
            continue
        if (lo is None or x >= lo) and (hi is None or x <= hi):
            return True
    return False
