"""The period rule of the review (relayrag.sql.checks): a question that asks for one row per year, quarter,
month, week or day needs a date bucket of that granularity in the query's SELECT or GROUP BY.

`asked_grains(question)` reads the granularities a question asks for, in English (an adjective: "yearly",
"annual", "quarterly", "monthly", "weekly", "daily", "month-over-month"; a phrase: "per / each / every / by /
for each / in each <year|quarter|month|week|day>", "over the years") and Japanese (年ごと・年別・毎年・各年・年次,
四半期ごと・各四半期, 月ごと・月別・毎月・月次, 週ごと・毎週・週次, 日ごと・日別・毎日・日次). "By day of the week"
and 曜日別 ask for a weekday, not a day; "annual revenue in 2023" (one year named, no range) asks for one total,
so a year bucket is not required there.

`sql_grains(tree, schema)` reads the granularities the query buckets dates at, in the SELECT lists and GROUP BYs
of all its SELECTs (a filter in WHERE is not a bucket): EXTRACT(<unit> FROM d), YEAR/QUARTER/MONTH/WEEK/DAY(d),
DATE_TRUNC/TIMESTAMP_TRUNC/DATETIME_TRUNC(d, <unit>), a format string (FORMAT_TIMESTAMP / FORMAT_DATE /
STRFTIME: '%Y' year, '%m' month, '%W' / '%U' / '%V' week, '%d' / '%j' day, '%w' / '%a' weekday), DATE(d) and
CAST(d AS DATE) (day), SQLite date modifiers ('weekday N' week, 'start of month' month), a prefix of a date
written as text (SUBSTR / LEFT to 4, 7 or 10 characters), and a month divided by 3 (a quarter).
"""

from __future__ import annotations

import re

from relayrag.sql.checks.facts import _I, Issue, _Schema

GRAINS = ("year", "quarter", "month", "week", "day")
_EACH = r"\b(?:per|each|every|by|for\s+each|for\s+every|in\s+each|across(?:\s+the)?)\s+(?:calendar\s+|fiscal\s+)?"
_ASK_EN = {
    "year": re.compile(r"\b(yearly|annual(ly)?|year[- ](?:over|by|on)[- ]year)\b|" + _EACH + r"years?\b|"
                       r"\bover\s+the\s+years\b", _I),
    "quarter": re.compile(r"\b(quarterly|quarter[- ](?:over|by|on)[- ]quarter)\b|" + _EACH + r"quarters?\b", _I),
    "month": re.compile(r"\b(monthly|month[- ](?:over|by|on)[- ]month)\b|" + _EACH + r"months?\b", _I),
    "week": re.compile(r"\b(weekly|week[- ](?:over|by|on)[- ]week)\b|" + _EACH + r"weeks?\b", _I),
    "day": re.compile(r"\b(daily|day[- ](?:over|by)[- ]day)\b|" + _EACH + r"days?\b(?!\s+of\s+(?:the\s+)?week)", _I),
}
_ASK_JA = {
    "year": re.compile(r"(?<!四半)(年|年度)(ごと|毎|別|単位|次)|毎年|各年"),
    "quarter": re.compile(r"四半期(ごと|毎|別|単位)|各四半期"),
    "month": re.compile(r"月(ごと|毎|別|単位|次)|毎月|各月"),
    "week": re.compile(r"週(ごと|毎|別|単位|次)|毎週|各週"),
    "day": re.compile(r"(?<!曜)日(ごと|毎|別|単位|次)|毎日|各日"),
}
_YEAR_NUMBER = re.compile(r"(?<![0-9])(19|20)[0-9]{2}(?![0-9])")
_RANGE = re.compile(r"\b(since|from|between|through|until|after|before|to)\b|から|以降|まで|以前", _I)
_UNITS = {"YEAR": "year", "ISOYEAR": "year", "QUARTER": "quarter", "MONTH": "month", "WEEK": "week",
          "ISOWEEK": "week", "DAY": "day", "DAYOFYEAR": "day", "DATE": "day", "DAYOFWEEK": "weekday",
          "DOW": "weekday", "WEEKDAY": "weekday", "ISODOW": "weekday"}
_FUNCS = {"Year": "year", "Quarter": "quarter", "Month": "month", "Week": "week", "WeekOfYear": "week",
          "Day": "day", "DayOfMonth": "day", "DayOfYear": "day", "DayOfWeek": "weekday", "DayOfWeekIso": "weekday"}
_EXAMPLE = {"year": "FORMAT_TIMESTAMP('%Y', <date column>) AS year",
            "quarter": "EXTRACT(YEAR FROM <date column>) AS year, EXTRACT(QUARTER FROM <date column>) AS quarter",
            "month": "FORMAT_TIMESTAMP('%Y-%m', <date column>) AS month",
            "week": "DATE_TRUNC(DATE(<date column>), WEEK(MONDAY)) AS week",
            "day": "DATE(<date column>) AS day"}


def _grain_words(question: str) -> set[str]:
    from relayrag.sql.plan import question_language
    pats = _ASK_JA if question_language(question) == "Japanese" else _ASK_EN
    return {g for g, pat in pats.items() if pat.search(question)}


def asked_grains(question: str) -> set[str]:
    """The date granularities `question` asks one row per (subset of GRAINS; see the module docstring)."""
    found = _grain_words(question)
    if "year" in found and len(_YEAR_NUMBER.findall(question)) == 1 and not _RANGE.search(question):
        found.discard("year")  # "annual revenue in 2023": one year named, one total
    return found


def _format_grain(fmt: str) -> str | None:
    """The granularity a strftime-style format string buckets at ('%Y-%m' → month), or None."""
    if "%" not in fmt:
        return None
    codes = set(re.findall(r"%-?([A-Za-z])", fmt))
    if codes & {"d", "j", "F", "e"}:
        return "day"
    if codes & {"W", "U", "V", "G"}:
        return "week"
    if "Q" in codes:
        return "quarter"
    if codes & {"m", "b", "B", "h"}:
        return "month"
    if codes & {"Y", "y", "C"}:
        return "year"
    if codes & {"w", "a", "A", "u"}:
        return "weekday"
    return None


def _is_date_column(node, schema: _Schema) -> bool:
    from sqlglot import exp
    dates = set().union(*schema.dates.values()) if schema.dates else set()
    return any(c.name.lower() in dates for c in node.find_all(exp.Column)) if node is not None else False


def _grain(node, schema: _Schema) -> str | None:
    """The granularity `node` itself buckets a date at, or None when it is not a bucket."""
    from sqlglot import exp
    name = type(node).__name__
    if isinstance(node, exp.Extract):
        return _UNITS.get(node.this.name.upper())
    if name in _FUNCS:
        return _FUNCS[name]
    if isinstance(node, (exp.DateTrunc, exp.TimestampTrunc, exp.DatetimeTrunc)):
        this, unit = node.this, node.args.get("unit")
        if isinstance(this, exp.Literal) and this.is_string and this.name.upper() in _UNITS:
            return _UNITS[this.name.upper()]  # DATE_TRUNC('month', d) read as BigQuery
        if isinstance(unit, exp.WeekStart):
            return "week"
        return _UNITS.get(unit.name.upper()) if unit is not None else None
    if isinstance(node, exp.WeekStart):
        return "week"
    if isinstance(node, (exp.Func, exp.Anonymous)):
        lits = [a for a in node.args.values() if isinstance(a, exp.Literal) and a.is_string]
        lits += [a for a in node.expressions if isinstance(a, exp.Literal) and a.is_string]
        text = " ".join(str(x.name) for x in lits).lower()
        if "weekday" in text:
            return "week"  # SQLite date(d, 'weekday 0', '-6 days')
        if "start of month" in text:
            return "month"
        if "start of year" in text:
            return "year"
        for lit in lits:
            g = _format_grain(str(lit.name))
            if g:
                return g
    if isinstance(node, (exp.Substring, exp.Left)) and _is_date_column(node.this, schema):
        n = node.args.get("length") if isinstance(node, exp.Substring) else node.expression
        start = node.args.get("start") if isinstance(node, exp.Substring) else None
        if isinstance(n, exp.Literal) and (start is None or start.name == "1"):
            return {"4": "year", "7": "month", "10": "day"}.get(n.name)
    if isinstance(node, exp.Date) and not node.expressions and _is_date_column(node.this, schema):
        return "day"
    if isinstance(node, (exp.Cast, exp.TsOrDsToDate)) and _is_date_column(node.this, schema):
        to = node.args.get("to")
        if isinstance(node, exp.TsOrDsToDate) or (to is not None and to.is_type("date")):
            return "day"
    return None


def _by_three(node) -> bool:
    """Whether `node` (a month) is divided by 3 on its way up to its projection: a quarter number."""
    from sqlglot import exp
    while node is not None and not isinstance(node, exp.Select):
        parent = node.parent
        if isinstance(parent, (exp.Div, exp.IntDiv)) and parent.expression is not node \
                and isinstance(parent.expression, exp.Literal) and parent.expression.name in ("3", "3.0"):
            return True
        node = parent
    return False


def sql_grains(tree, schema: _Schema) -> set[str]:
    """The granularities `tree` buckets dates at in the SELECT lists and GROUP BYs of its SELECTs."""
    from sqlglot import exp
    found: set[str] = set()

    def walk(node) -> None:
        g = _grain(node, schema)
        if g:
            found.add("quarter" if g == "month" and _by_three(node) else g)
            return  # DATE(d) inside DATE_TRUNC(DATE(d), WEEK) is not a day bucket of its own
        for child in node.iter_expressions():
            walk(child)
    for select in tree.find_all(exp.Select):
        group = select.args.get("group")
        for root in list(select.expressions) + (list(group.expressions) if group is not None else []):
            walk(root)
    return found


def period_issues(tree, question: str, shapes: set[str], schema: _Schema) -> list[Issue]:
    """`period` issues: each granularity the question asks for (asked_grains) that the query does not bucket
    dates at (sql_grains); with no granularity read but the plan's "period" shape, a query without any bucket."""
    asked, have = asked_grains(question), sql_grains(tree, schema)
    have_periods = sorted(have & set(GRAINS), key=GRAINS.index)
    issues = []
    for g in sorted(asked - have, key=GRAINS.index):
        now = (f"buckets dates by {' and '.join(have_periods)}" if have_periods else "does not bucket a date")
        issues.append(Issue("period", (
            f"The question asks for one row per {g}, but the query {now}: SELECT {_EXAMPLE[g]}, GROUP BY and "
            f"ORDER BY it (and PARTITION BY it when ranking within each {g}).")))
    if not _grain_words(question) and "period" in shapes and not have:
        issues.append(Issue("period", "The question asks for each year (or month), but nothing buckets a date: "
                                      "SELECT FORMAT_TIMESTAMP('%Y', <date column>) AS year, GROUP BY it (and "
                                      "PARTITION BY it when ranking within each year)."))
    return issues
