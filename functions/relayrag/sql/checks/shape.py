"""Review rules about the shape of a result (relayrag.sql.checks): joins that fan out, top N, recency, the
measure shown, ties, averages of totals, alias clashes."""

from __future__ import annotations

import re

from relayrag.sql.checks.facts import (_ASCENDING, _I, _NUM, _TOP_N, Issue, _aggregates, _alias_case, _bare, _col,
                                       _resolve, _Schema, _sources)


def _fanout(tree, schema: _Schema) -> list[Issue]:
    from sqlglot import exp
    issues = []
    for select in tree.find_all(exp.Select):
        sources = _sources(select, schema)
        for join in select.args.get("joins") or []:
            on = join.args.get("on")
            if on is None:
                continue
            for eq in on.find_all(exp.EQ):
                left, right = eq.this, eq.expression
                if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
                    continue
                a, b = _resolve(left, sources, schema), _resolve(right, sources, schema)
                if a is None or b is None:
                    continue
                if schema.is_key(a[1], a[2]) or schema.is_key(b[1], b[2]):
                    continue
                if (a[1], a[2], b[1], b[2]) in schema.fks or (b[1], b[2], a[1], a[2]) in schema.fks:
                    continue
                ta, tb = schema.names[a[1]], schema.names[b[1]]
                issues.append(Issue("fanout_join", (
                    f"It joins {ta}.{schema.cols[a[1]][a[2]]} = {tb}.{schema.cols[b[1]][b[2]]}, and neither is a key: "
                    f"every {ta} row is repeated once per matching {tb} row, so counts and sums are inflated. "
                    "Join only along foreign keys (a key = a referencing column); to count rows per value of a "
                    "column, GROUP BY that column of one table without any join.")))
    return issues


def _fix_top_n(select, question: str) -> tuple[bool, list[Issue]]:
    from sqlglot import exp
    m = _TOP_N.search(question)
    if not m:
        return False, []
    word = next(g for g in m.groups() if g)
    n = int(word) if word.isdigit() else _NUM[word.lower()]
    if not 0 < n < 1000:
        return False, []  # a year ("in 2023 the most ..."), not a count
    limit = select.args.get("limit")
    have = None
    if limit is not None and isinstance(limit.expression, exp.Literal) and limit.expression.is_int:
        have = int(limit.expression.name)
    order = select.args.get("order")
    changed = False
    if order is None:
        aggs = _aggregates(select)
        if len(aggs) != 1:
            return False, [Issue("top_n", f"The question asks for the top {n}: ORDER BY the measure "
                                          f"(DESC for most, ASC for least) and LIMIT {n}.")]
        agg = aggs[0]
        key = exp.column(agg.alias) if isinstance(agg, exp.Alias) else _bare(agg).copy()
        select.set("order", exp.Order(expressions=[exp.Ordered(this=key, desc=not _ASCENDING.search(question))]))
        changed = True
    if have != n:
        select.set("limit", exp.Limit(expression=exp.Literal.number(n)))
        changed = True
    return changed, []


_RECENT = re.compile(r"\b(most\s+recent|latest|newest)\b", _I)
_OLDEST = re.compile(r"\b(oldest|earliest|least\s+recent)\b", _I)


def _fix_recency(select, schema: _Schema, question: str) -> bool:
    """"most recent / latest / newest" (or "oldest / earliest") rank by time: an ORDER BY on a column that
    is not a date becomes the one date column of the query's tables, DESC (ASC for oldest)."""
    from sqlglot import exp
    recent, oldest = _RECENT.search(question), _OLDEST.search(question)
    order = select.args.get("order")
    if order is None or bool(recent) == bool(oldest) or not order.expressions:
        return False
    first = order.expressions[0]
    sources = _sources(select, schema)
    key = first.this
    r = _resolve(key, sources, schema) if isinstance(key, exp.Column) else None
    if r is None or r[2] in schema.dates.get(r[1], set()):
        return False
    dates = [(a, t, d) for a, t in sources.items() for d in sorted(schema.dates.get(t, set()))]
    if len(dates) != 1:
        return False
    a, t, d = dates[0]
    first.set("this", _col(_alias_case(select).get(a, a), schema.cols[t][d]))
    first.set("desc", bool(recent))
    return True


_ONLY_NAMES = re.compile(r"\b(only|just)\s+(the\s+|their\s+|its\s+)?(names?|titles?)\b|名前だけ|名前のみ|名だけ", _I)


def _shown_key(node) -> str:
    """`node`'s SQL for comparing a measure with the shown ones: COUNT(col) reads as COUNT(*) (no DISTINCT)."""
    from sqlglot import exp
    node = exp.Paren(this=node.copy())
    for c in list(node.find_all(exp.Count)):
        if not isinstance(c.this, exp.Distinct):
            c.replace(exp.Count(this=exp.Star()))
    return node.this.sql().lower()


def _fix_measure_shown(select, question: str = "") -> bool:
    """The aggregate a result is ranked by (ORDER BY), compared with a subquery in HAVING, or compared with a
    literal in HAVING (a COUNT, SUM or AVG: "more than 100 tracks", 「5枚以上」; not a MIN/MAX, which says
    "every / none of its rows", and not when the question asks for only the names) is a column of the result.
    A measure counts as shown when a column contains it (`ROUND(SUM(x), 2)`)."""
    from sqlglot import exp
    shown = {_shown_key(n) for p in select.expressions for n in _bare(p).walk() if isinstance(n, exp.Expression)}
    aliases = {p.alias.lower() for p in select.expressions if isinstance(p, exp.Alias)}
    wanted = []
    order = select.args.get("order")
    if order is not None and order.expressions:
        key = order.expressions[0].this
        if key.find(exp.AggFunc) is not None and not (isinstance(key, exp.Column) and key.name.lower() in aliases):
            wanted.append(key)
    having = select.args.get("having")
    if having is not None:
        for cmp in having.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ):
            for side, other in ((cmp.this, cmp.expression), (cmp.expression, cmp.this)):
                agg = side.find(exp.AggFunc)
                if agg is None or side.find(exp.Select) is not None:
                    continue
                if other.find(exp.Select) is not None:
                    wanted.append(side)
                elif isinstance(other, exp.Literal) and not other.is_string and agg.key in ("count", "sum", "avg") \
                        and side.find(exp.Max, exp.Min) is None and not _ONLY_NAMES.search(question):
                    wanted.append(side)
    changed = False
    for w in wanted:
        if _shown_key(w) in shown:
            continue
        name = {"count": "cnt", "sum": "total", "avg": "average", "max": "maximum", "min": "minimum"}.get(
            w.find(exp.AggFunc).key, "measure")
        if name in aliases:
            name += "_value"
        new = exp.alias_(w.copy(), name)
        select.append("expressions", new)
        shown.add(_shown_key(w))
        aliases.add(name)
        changed = True
    return changed


def _fix_ties(tree, select, dialect: str) -> tuple:
    """`... ORDER BY m LIMIT 1` → every row at the extreme; returns (new tree, changed, issues)."""
    import sqlglot
    from sqlglot import exp
    limit, order = select.args.get("limit"), select.args.get("order")
    if limit is None:
        return tree, False, []
    lit = limit.expression
    if order is None or not (isinstance(lit, exp.Literal) and lit.is_int and int(lit.name) == 1):
        return tree, False, [Issue("ties", "The question keeps every tied row: do not cut the result with LIMIT; "
                                           "compare with the MAX/MIN computed in a subquery or CTE, or keep "
                                           "RANK() OVER (...) = 1.")]
    first = order.expressions[0]
    key = first.this
    desc = bool(first.args.get("desc"))
    measure = None
    for p in select.expressions:
        if isinstance(p, exp.Alias) and ((isinstance(key, exp.Column) and not key.table
                                          and key.name.lower() == p.alias.lower())
                                         or p.this.sql().lower() == key.sql().lower()):
            measure = p.alias
    inner = select.copy()
    inner.set("order", None)
    inner.set("limit", None)
    with_ = inner.args.get("with")
    inner.set("with", None)
    if measure is None:
        measure = "measure"
        inner.append("expressions", exp.alias_(key.copy(), measure))
    ctes = (with_.sql(dialect=dialect) + ", ") if with_ is not None else "WITH "
    fn = "MAX" if desc else "MIN"
    m = exp.to_identifier(measure).sql(dialect=dialect)
    new_sql = (f"{ctes}ranked AS ({inner.sql(dialect=dialect)}) SELECT * FROM ranked "
               f"WHERE {m} = (SELECT {fn}({m}) FROM ranked)")
    try:
        return sqlglot.parse_one(new_sql, read=dialect), True, []
    except Exception:  # noqa: BLE001 - a rewrite that does not parse is not applied
        return tree, False, []


def _fix_avg_of_totals(select, schema: _Schema) -> bool:
    from sqlglot import exp
    having, group = select.args.get("having"), select.args.get("group")
    if having is None or group is None:
        return False
    sources = _sources(select, schema)
    found = [_resolve(g, sources, schema) for g in group.expressions if isinstance(g, exp.Column)]
    keys = [k for k in found if k is not None and schema.is_key(k[1], k[2])]
    if len(keys) != 1:
        return False
    _, ktable, kcol = keys[0]
    changed = False
    for cmp in list(having.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE)):
        left, right = cmp.this, cmp.expression
        sub = right.this if isinstance(right, exp.Subquery) else None
        if not isinstance(left, exp.Sum) or not isinstance(sub, exp.Select) or sub.args.get("group"):
            continue
        proj = sub.expressions[0] if len(sub.expressions) == 1 else None
        avg = _bare(proj) if proj is not None else None
        if not isinstance(avg, exp.Avg) or not isinstance(avg.this, exp.Column):
            continue
        subsources = _sources(sub, schema)
        if len(subsources) != 1 or sub.args.get("joins"):
            continue
        (salias, stable), = subsources.items()
        salias = _alias_case(sub).get(salias, salias)
        if avg.this.name.lower() not in schema.cols[stable]:
            continue
        gcol: str | None = None
        if stable == ktable:
            gcol = kcol
        else:
            gcol = next((b for a, b, c, d in schema.fks if a == stable and c == ktable and d == kcol), None)
        if gcol is None:
            continue
        inner = exp.select(exp.alias_(exp.Sum(this=_col(salias, schema.cols[stable][avg.this.name.lower()])), "s"))
        inner = inner.from_(sub.args["from_"].this.copy()).group_by(_col(salias, schema.cols[stable][gcol]))
        where = sub.args.get("where")
        if where is not None:
            inner.set("where", where.copy())
        new = exp.select(exp.Avg(this=exp.column("s"))).from_(exp.alias_(exp.Subquery(this=inner), "per_entity"))
        right.replace(exp.Subquery(this=new))
        changed = True
    return changed


def _fix_alias_clash(tree) -> bool:
    """Rename an output alias that equals a table's name or alias in the same SELECT (`Artist.Name AS
    artist`): sqlglot writes `GROUP BY artist` for it, which DuckDB binds to the table and refuses."""
    from sqlglot import exp
    changed = False
    # the outermost SELECT only: a CTE's or subquery's aliases are referenced by the query around it
    for select in [tree] if isinstance(tree, exp.Select) and tree.args.get("group") is not None else []:
        froms = [select.args.get("from_")] + list(select.args.get("joins") or [])
        names = set()
        for f in froms:
            if f is not None and isinstance(f.this, exp.Table):
                names |= {f.this.name.lower(), f.this.alias_or_name.lower()}
        for p in select.expressions:
            if not isinstance(p, exp.Alias) or p.alias.lower() not in names:
                continue
            old = p.alias.lower()
            new = f"{p.alias}_{p.this.name}" if isinstance(p.this, exp.Column) else f"{p.alias}_value"
            p.set("alias", exp.to_identifier(new))
            for key in ("group", "order", "having"):
                part = select.args.get(key)
                for col in (part.find_all(exp.Column) if part is not None else []):
                    if not col.table and col.name.lower() == old:
                        col.set("this", exp.to_identifier(new))
            changed = True
    return changed



_ORDER_ONLY = re.compile(r"\b(most|highest|largest|biggest|least|lowest|smallest|fewest|best|longest|shortest)"
                         r"[- ]first\b|\bin\s+(descending|ascending)\s+order\b|多い順|高い順|大きい順|少ない順|長い順|短い順",
                         _I)
_GROUP_PHRASE = re.compile(r"\b(?:in|for|within|of)?\s*(?:each|every|per)\s+([a-z]+(?:\s+[a-z]+)?)|(\S{1,8}?)ごと|各(\S{1,6}?)で",
                           _I)


def top_per_group_issues(tree, question: str, schema: _Schema) -> list[Issue]:
    """`top_per_group`: the question asks for the best row within each group ("the best-selling employee in
    each city", "for every country, which genre sold most", 国ごとに最も…, 各年で一番…: the plan's
    top_per_group shape, read again with ordering phrases such as "most first" / 多い順 taken out), but the
    query is one flat GROUP BY (no window, no subquery) that either groups by two things (the group and the
    entity: one row per combination, not the best per group) or cuts the result with LIMIT (the best
    overall). An issue, not a fix: which column is the group is the model's to say."""
    from sqlglot import exp
    from relayrag.sql.plan import plan_question
    group = tree.args.get("group")
    if group is None or tree.find(exp.Window) is not None or len(list(tree.find_all(exp.Select))) != 1:
        return []
    if "top_per_group" not in plan_question(_ORDER_ONLY.sub(" ", question)).shapes:
        return []
    sources = _sources(tree, schema)
    units = set()
    for g in group.expressions:
        r = _resolve(g, sources, schema) if isinstance(g, exp.Column) else None
        if r is None:
            units.add(g.sql().lower())
            continue
        _, table, col = r
        target = schema.fk_target(table, col)
        if schema.is_key(table, col) or col in schema.name_columns(table):
            units.add(table)
        elif target is not None and schema.is_key(*target):
            units.add(target[0])
        else:
            units.add(f"{table}.{col}")
    if len(units) < 2 and tree.args.get("limit") is None:
        return []
    m = _GROUP_PHRASE.search(question)
    within = next((x for x in m.groups() if x), "group") if m else "group"
    return [Issue("top_per_group", (
        f"The question asks for the best row within each {within}, but the query "
        + ("cuts the whole result with LIMIT" if tree.args.get("limit") is not None
           else "returns one row per combination of its GROUP BY columns")
        + ": compute the measure per row in a CTE, add RANK() OVER (PARTITION BY the group ORDER BY the measure "
          "DESC) AS rnk, and keep rnk = 1 (ties stay; no LIMIT)."))]


_ASKS_COUNT = re.compile(r"\bby\s+(quantity|units|volume|count)\b|\b(number|count)\s+of\b|\bhow\s+many\b|"
                         r"\bunits\s+sold\b|\bquantit(y|ies)\b|数量|個数|件数|枚数|曲数|本数|回数|販売数|行数|明細数|人数|"
                         r"何(曲|件|人|枚|本|回|個|つ)|いくつ", _I)
_ASKS_MONEY = re.compile(r"\b(revenue|spend|spent|spending|amount|earn\w*|income|dollars?|money|turnover|how\s+much)\b|"
                         r"\$|売上|売り上げ|金額|支出|収益|ドル|円|いくら", _I)
_MONEY_VALUE = re.compile(r"\$\s?\d[\d.,]*|\d[\d.,]*\s*(dollars?\b|ドル|円)", _I)  # a price in a condition
_MONEY_COL = re.compile(r"(price|total|amount|revenue|cost|spent|paid|sales)", _I)
_QUANTITY_COL = re.compile(r"(quantity|qty|units?)$", _I)


def _measure_kinds(tree, schema: _Schema) -> set[str]:
    """What the aggregates of `tree` measure: 'count' (COUNT, or a sum of a quantity column), 'money' (an
    aggregate over a price / total / amount column, `SUM(UnitPrice * Quantity)` included) or 'other' (an
    aggregate over anything else, such as a CTE's column: what it holds is not read here)."""
    from sqlglot import exp
    cols = {c for t in schema.cols.values() for c in t}
    kinds = set()
    for agg in tree.find_all(exp.AggFunc):
        if isinstance(agg, exp.Count):
            kinds.add("count")
            continue
        names = [c.name.lower() for c in agg.find_all(exp.Column)]
        if not names or any(n not in cols for n in names):
            kinds.add("other")
        elif any(_MONEY_COL.search(n) for n in names):
            kinds.add("money")
        elif all(_QUANTITY_COL.search(n) for n in names):
            kinds.add("count")
        else:
            kinds.add("other")
    return kinds


def measure_kind_issues(tree, question: str, schema: _Schema) -> list[Issue]:
    """`measure_kind`: the question names one kind of measure and the query aggregates only the other. A
    count: "by quantity / units", "number of", "how many", 数量・件数・枚数・曲数; money: "revenue", "spent",
    "how much", "$", 売上・金額・いくら (a price in a condition, "$1.99" / 1.99ドル, is a value, not the
    measure). When the question names both kinds ("how many dollars", 売上件数), or the query
    aggregates something else too (a CTE's column), nothing is said."""
    count_m, money_m = _ASKS_COUNT.search(question), _ASKS_MONEY.search(_MONEY_VALUE.sub(" ", question))
    count, money = bool(count_m), bool(money_m)
    if count == money:
        return []
    kinds = _measure_kinds(tree, schema)
    if not kinds or "other" in kinds:
        return []
    if count and kinds == {"money"}:
        return [Issue("measure_kind", (
            f"The question asks for a count ('{count_m.group(0) if count_m else ''}'), but the query aggregates "
            "prices or totals: count the rows (COUNT(*), or COUNT(*) per group inside a CTE and then AVG over it "
            "for 'the average number of ... per ...') or SUM the quantity column."))]
    if money and kinds == {"count"}:
        return [Issue("measure_kind", (
            f"The question asks for an amount of money ('{money_m.group(0) if money_m else ''}'), "
            "but the "
            "query only counts: SUM the money column (a line's price times its quantity, or the invoice total) "
            "instead."))]
    return []
