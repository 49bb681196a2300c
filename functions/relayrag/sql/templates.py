"""Verified query templates: the SQL side. A template's SQL names its slots as BigQuery named parameters
(`@n`, `@genre`, `@period_start`); relayrag.sql.slots says which parameters each slot type provides.

- `parameters_of(sql)`: the `@names` the SQL uses (sqlglot's tokenizer: a name inside a string literal or a
  comment is not one). `check_slots` checks them against the declared slots: every parameter belongs to a
  slot, every slot is used.
- `fill_sql(sql, params)`: the SQL with each parameter replaced by a literal that sqlglot writes (strings quoted
  and escaped by the BigQuery generator, numbers as numbers); nothing from a question is pasted as SQL text.
  The result is parsed again and must be the template's syntax tree with literals in the parameters' places,
  else `TemplateError`. The filled SQL still goes through the guard like any other (the caller's job).
- `analyse(sql, schema)`: what the SQL can express, for matching questions to it (`SqlFacts`): its tables and
  columns (aliases and unqualified names resolved against the schema), the marker classes it can answer
  (relayrag.sql.wording: SUM → sum, ORDER BY … DESC → desc, HAVING COUNT(*) > @n → gt, <> → neg, GROUP BY
  EXTRACT(MONTH …) → month …), the ones a question must say (a top-N's direction, a comparison, a negation,
  an AVG/SUM/MAX/MIN result, a period grouping) and its GROUP BY dimensions.
- `column_values(wh, key)`: a value slot's candidates, `SELECT DISTINCT` of the column (or of the columns
  joined by a space) built with sqlglot and run through `wh.query` (so the guard and, on BigQuery, the
  dry-run budget apply), at most VALUE_SLOT_MAX values, cached per warehouse for VALUES_TTL_S.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from relayrag.errors import RelayragError
from relayrag.sql.slots import parameter_names

VALUE_SLOT_MAX = 1000     # distinct values a value slot's column may have (more: not a slot column)
VALUES_TTL_S = 600.0      # how long a column's values are reused before they are read again


class TemplateError(RelayragError):
    """A template that cannot be used: parameters and slots disagree, a slot column is unknown, a fill failed."""


# ------------------------------------------------------------------------------------------------ parameters

def _tokens(sql: str):
    from sqlglot.dialects.dialect import Dialect
    return Dialect.get_or_raise("bigquery").tokenize(sql)


def _parameter_spans(sql: str) -> list[tuple[int, int, str]]:
    """(start, end exclusive, name) of each `@name` in `sql`."""
    from sqlglot.tokens import TokenType
    toks = _tokens(sql)
    out = []
    for a, b in zip(toks, toks[1:]):
        if a.token_type == TokenType.PARAMETER and b.start == a.end + 1 and b.token_type in (
                TokenType.VAR, *([TokenType.IDENTIFIER] if hasattr(TokenType, "IDENTIFIER") else [])):
            out.append((a.start, b.end + 1, b.text))
    return out


def parameters_of(sql: str) -> set[str]:
    """The named parameters (`@name`) of `sql`; TemplateError when it does not tokenize."""
    try:
        return {name for _, _, name in _parameter_spans(sql)}
    except Exception as exc:
        raise TemplateError(f"the SQL does not tokenize: {exc}") from None


def check_slots(sql: str, slots: dict) -> list[str]:
    """Problems between the SQL's parameters and the declared `slots` ({name: Slot}), [] when they agree."""
    used = parameters_of(sql)
    provided: dict[str, str] = {}
    problems = []
    for name, slot in slots.items():
        names = parameter_names(name, slot.type)
        for p in names:
            provided[p.lower()] = name
        if not names & used and not {p.lower() for p in names} & {u.lower() for u in used}:
            shown = " or ".join(f"@{p}" for p in sorted(names))
            problems.append(f"slot {name!r} ({slot.type}) is not used in the SQL (write {shown} where its value goes)")
    for p in sorted(used):
        if p.lower() not in provided:
            problems.append(f"@{p} is not a slot's parameter (declare it under `slots:`; a year slot y gives @y, "
                            "@y_start, @y_end; a date_range slot p gives @p_start, @p_end)")
    return problems


def _literal(value: Any):
    from sqlglot import exp
    if isinstance(value, bool) or value is None:
        raise TemplateError(f"unsupported parameter value {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            return exp.Neg(this=exp.Literal.number(-value))
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))


def fill_sql(sql: str, params: dict[str, Any]) -> str:
    """`sql` with every `@name` replaced by the literal of params[name] (case-insensitive names), the rest of
    the text as written. Raises TemplateError for a missing parameter, or when the filled SQL does not
    parse to the template's tree with those literals (see the module docstring)."""
    import sqlglot
    from sqlglot import exp
    lower = {k.lower(): v for k, v in params.items()}
    spans = _parameter_spans(sql)
    out, pos = [], 0
    for start, end, name in spans:
        if name.lower() not in lower:
            raise TemplateError(f"no value for @{name}")
        out.append(sql[pos:start])
        out.append(_literal(lower[name.lower()]).sql(dialect="bigquery"))
        pos = end
    out.append(sql[pos:])
    filled = "".join(out)
    try:
        expected = sqlglot.parse_one(sql, read="bigquery")
        for node in list(expected.find_all(exp.Parameter)):
            key = node.name.lower()
            if key not in lower:
                raise TemplateError(f"no value for @{node.name}")
            node.replace(_literal(lower[key]))
        got = sqlglot.parse_one(filled, read="bigquery")
    except sqlglot.errors.SqlglotError as exc:
        raise TemplateError(f"the template does not parse: {str(exc).splitlines()[0][:200]}") from None
    if got != expected:
        raise TemplateError("the filled SQL does not parse as the template with its values (refused)")
    return filled


# ------------------------------------------------------------------------------------------------ analysis

_SPLIT = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|_")
GENERIC_COLUMN_WORDS = frozenset({"name", "titl", "id", "descript", "code", "type", "valu", "label", "text"})


def identifier_words(name: str) -> list[str]:
    """'BillingCountry' → ['bill', 'countri'] (relayrag's BM25 stems of its CamelCase / snake_case parts)."""
    from relayrag.retrieval.tokenize import tokenize
    return [t for t in tokenize(" ".join(p for p in _SPLIT.split(name) if p)) if t != "id"]


@dataclass
class SqlFacts:
    """What a template's SQL can express (see the module docstring). columns: {(Table, Column)} with the
    warehouse's spelling; allowed / essential: marker classes; aggregates: of the result columns; dims: GROUP
    BY dimensions, each (Table, Column) or ("", period); comparisons on a date are not comparisons."""

    tables: set[str] = field(default_factory=set)
    columns: set[tuple[str, str]] = field(default_factory=set)
    allowed: set[str] = field(default_factory=set)
    essential: set[str] = field(default_factory=set)
    aggregates: set[str] = field(default_factory=set)
    dims: list[tuple[str, str]] = field(default_factory=list)
    literals: list[str] = field(default_factory=list)


def _schema_columns(schema: dict) -> dict[str, dict[str, tuple[str, str]]]:
    """{table lower: {column lower: (Table, Column)}} as the warehouse spells them."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for t in schema.get("tables", []):
        cols = t.get("columns") or {}
        names = list(cols) if isinstance(cols, dict) else [c["name"] for c in cols]
        out[t["name"].lower()] = {c.lower(): (t["name"], c) for c in names}
    return out


def _column_types(schema: dict) -> dict[tuple[str, str], str]:
    out = {}
    for t in schema.get("tables", []):
        cols = t.get("columns") or {}
        items = cols.items() if isinstance(cols, dict) else [(c["name"], c.get("type", "")) for c in cols]
        for c, typ in items:
            out[(t["name"].lower(), c.lower())] = str(typ).upper()
    return out


_PERIOD_UNITS = {"MONTH": "month", "QUARTER": "quarter", "YEAR": "year", "WEEK": "week", "DAY": "day",
                 "ISOWEEK": "week", "DAYOFYEAR": "day", "DATE": "day"}
_FORMAT_PERIOD = [("%d", "day"), ("%m", "month"), ("%Q", "quarter"), ("%W", "week"), ("%V", "week"),
                  ("%U", "week"), ("%Y", "year")]
_DATE_LITERAL = re.compile(r"^\d{4}-\d{2}(-\d{2})?")


def _period_of(node) -> str | None:
    """The period a grouping expression truncates a date to (EXTRACT(MONTH …), DATE_TRUNC(…, QUARTER),
    FORMAT_DATE('%Y-%m', …)), else None."""
    from sqlglot import exp
    for n in node.walk():
        if isinstance(n, exp.Extract):
            unit = str(n.this.name if hasattr(n.this, "name") else n.this).upper()
            if unit in _PERIOD_UNITS:
                return _PERIOD_UNITS[unit]
        if type(n).__name__ in ("DateTrunc", "TimestampTrunc", "DatetimeTrunc", "TimeTrunc"):
            unit = n.args.get("unit")
            u = str(getattr(unit, "name", unit) or "").upper()
            if u in _PERIOD_UNITS:
                return _PERIOD_UNITS[u]
        if isinstance(n, exp.Literal) and n.is_string and "%" in n.this:
            for code, period in _FORMAT_PERIOD:
                if code in n.this:
                    return period
        if type(n).__name__ in ("Month", "Year", "Day", "Quarter", "Week"):
            return type(n).__name__.lower()
    return None


def analyse(sql: str, schema: dict, *, date_params: set[str] | frozenset[str] = frozenset()) -> SqlFacts:
    """SqlFacts of a template's SQL (parameters allowed) over `schema` (Warehouse.schema()). `date_params`:
    parameter names that stand for dates (a comparison with one is a date range, not a "more than").
    Raises TemplateError when the SQL does not parse."""
    import sqlglot
    from sqlglot import exp
    try:
        root = sqlglot.parse_one(sql, read="bigquery")
    except sqlglot.errors.SqlglotError as exc:
        raise TemplateError(f"the SQL does not parse: {str(exc).splitlines()[0][:200]}") from None
    cols_by_table = _schema_columns(schema)
    table_names = {t["name"].lower(): t["name"] for t in schema.get("tables", [])}
    types = _column_types(schema)
    facts = SqlFacts()
    ctes = {c.alias_or_name.lower() for c in root.find_all(exp.CTE)}
    aliases: dict[str, str] = {}
    for t in root.find_all(exp.Table):
        low = t.name.lower()
        if low in ctes or low not in cols_by_table:
            continue
        facts.tables.add(table_names[low])
        aliases[low] = low
        if t.alias:
            aliases[t.alias.lower()] = low

    def resolve(col) -> tuple[str, str] | None:
        name = col.name.lower()
        if col.table:
            table = aliases.get(col.table.lower())
            return cols_by_table.get(table or "", {}).get(name)
        owners = [cols_by_table[t][name] for t in {aliases[a] for a in aliases} if name in cols_by_table.get(t, {})]
        return owners[0] if len(owners) == 1 else None

    for col in root.find_all(exp.Column):
        r = resolve(col)
        if r:
            facts.columns.add(r)
    facts.literals = [lit.this for lit in root.find_all(exp.Literal) if lit.is_string and lit.this
                      and not _DATE_LITERAL.match(lit.this)]

    def is_date(node) -> bool:
        if isinstance(node, exp.Parameter) and node.name.lower() in date_params:
            return True
        if isinstance(node, exp.Literal) and node.is_string and _DATE_LITERAL.match(node.this):
            return True
        if isinstance(node, exp.Column):
            r = resolve(node)
            return r is not None and any(k in types.get((r[0].lower(), r[1].lower()), "") for k in ("DATE", "TIME"))
        return isinstance(node, (exp.Cast, exp.TsOrDsToDate)) and "DATE" in node.sql().upper()

    agg_classes = {exp.Sum: "sum", exp.Avg: "avg", exp.Count: "count", exp.Max: "max", exp.Min: "min"}
    for node in root.walk():
        for kind, cls in agg_classes.items():
            if isinstance(node, kind):
                facts.allowed.add(cls)
        if isinstance(node, (exp.GT, exp.GTE, exp.LT, exp.LTE)):
            if is_date(node.left) or is_date(node.right):
                continue
            cls = {exp.GT: "gt", exp.GTE: "ge", exp.LT: "lt", exp.LTE: "le"}[type(node)]
            facts.allowed.add(cls)
            facts.essential.add(cls)
        if isinstance(node, exp.Div):
            facts.allowed.add("ratio")
        if isinstance(node, exp.Window):
            facts.allowed.add("cumulative")
        if isinstance(node, exp.Sub) or type(node).__name__ in ("Lag", "Lead"):
            facts.allowed.add("change")
        if type(node).__name__ in ("Median", "PercentileCont", "PercentileDisc", "ApproxQuantile", "Quantile"):
            facts.allowed.add("median")
        if isinstance(node, exp.NEQ) or (isinstance(node, exp.Not) and not isinstance(node.this, exp.Is)):
            facts.allowed.add("neg")
            facts.essential.add("neg")
    select = root if isinstance(root, exp.Select) else next(root.find_all(exp.Select), None)
    if select is not None:
        for proj in select.expressions:
            for kind, cls in agg_classes.items():
                if proj.find(kind) is not None:
                    facts.aggregates.add(cls)
        projections = {p.alias.lower(): p.this for p in select.expressions if isinstance(p, exp.Alias) and p.alias}
        order = select.args.get("order")
        limited = select.args.get("limit") is not None
        if order is not None:
            first = True
            for o in order.expressions:
                desc = bool(o.args.get("desc"))
                target = o.this
                if isinstance(target, exp.Column) and not target.table and target.name.lower() in projections:
                    target = projections[target.name.lower()]
                direction = "desc" if desc else "asc"
                if first:  # later keys break ties: they are not what the question ranks by
                    facts.allowed.add(f"order_{direction}")
                    if limited:  # a top N / bottom N: the question must say which end
                        facts.allowed.add(direction)
                        facts.essential.add(direction)
                first = False
        group = select.args.get("group")
        for g in (group.expressions if group is not None else []):
            target = g
            if isinstance(g, exp.Column) and not g.table and g.name.lower() in projections:
                target = projections[g.name.lower()]
            period = _period_of(target)
            if period:
                facts.allowed.add(period)
                facts.essential.add(period)
                facts.dims.append(("", period))
                continue
            for col in target.find_all(exp.Column) if not isinstance(target, exp.Column) else [target]:
                r = resolve(col)
                if r and r not in facts.dims:
                    facts.dims.append(r)
    return facts


# ------------------------------------------------------------------------------------------------ values

_values_cache: "weakref.WeakKeyDictionary[Any, dict[str, tuple[float, list[str]]]]" = weakref.WeakKeyDictionary()
_values_lock = threading.Lock()


def column_key(columns: list[str]) -> str:
    """The key of a value slot's column(s): "Genre.Name", "Employee.FirstName+Employee.LastName"."""
    return "+".join(columns)


def resolve_columns(columns: list[str], schema: dict) -> list[tuple[str, str]]:
    """[(Table, Column)] spelled as in the warehouse; TemplateError for an unknown one or two tables."""
    known = _schema_columns(schema)
    out = []
    for ref in columns:
        table, _, col = ref.partition(".")
        hit = known.get(table.lower(), {}).get(col.lower()) if col else None
        if hit is None:
            raise TemplateError(f"no column {ref!r} in the warehouse (write Table.Column)")
        out.append(hit)
    if len({t for t, _ in out}) != 1:
        raise TemplateError(f"the columns of one value slot must be in one table: {' + '.join(columns)}")
    return out


def values_query(cols: list[tuple[str, str]], limit: int) -> str:
    """SELECT DISTINCT of the column, or of CONCAT(c1, ' ', c2 …), non-null, LIMIT limit (BigQuery SQL built
    by sqlglot with quoted identifiers)."""
    from sqlglot import exp
    table = cols[0][0]
    refs = [exp.column(c, table=table, quoted=True) for _, c in cols]
    if len(refs) == 1:
        value: exp.Expression = exp.cast(refs[0], "STRING")
    else:
        parts: list[exp.Expression] = []
        for i, r in enumerate(refs):
            parts += ([exp.Literal.string(" ")] if i else []) + [exp.cast(r, "STRING")]
        value = exp.Concat(expressions=parts)
    cond = exp.and_(*[exp.Not(this=exp.Is(this=r.copy(), expression=exp.Null())) for r in refs])
    q = (exp.select(exp.alias_(value, "v")).distinct().from_(exp.to_table(table, quoted=True))
         .where(cond).limit(limit))
    return q.sql(dialect="bigquery")


def column_values(wh, columns: list[str]) -> list[str]:
    """The distinct values of a value slot's column(s) in `wh` (see the module docstring). Raises
    TemplateError for an unknown column, a failed or refused query, or more than VALUE_SLOT_MAX values."""
    key = column_key(columns)
    base = getattr(wh, "inner", wh)
    now = time.monotonic()
    with _values_lock:
        try:
            hit = _values_cache.get(base, {}).get(key)
        except TypeError:
            hit = None
    if hit and now - hit[0] < VALUES_TTL_S:
        return hit[1]
    cols = resolve_columns(columns, wh.schema())
    cap = max(1, min(VALUE_SLOT_MAX, int(getattr(wh, "max_rows", VALUE_SLOT_MAX + 1)) - 1))
    res = wh.query(values_query(cols, cap + 1))
    if not res.ok:
        raise TemplateError(f"could not read the values of {key}: {res.error}")
    if res.truncated or res.row_count > cap:
        raise TemplateError(f"{key} has more than {cap} distinct values: a value slot needs a column with fewer "
                            "(a name, a country, a genre …)")
    values = sorted({str(r[0]) for r in res.rows if r and r[0] is not None and str(r[0]).strip()})
    with _values_lock:
        try:
            _values_cache.setdefault(base, {})[key] = (now, values)
        except TypeError:
            pass
    return values


# ------------------------------------------------------------------------------------------------ filling

@dataclass(frozen=True)
class SlotRef:
    """A declared slot resolved against the warehouse: `key` is a value slot's column key as the warehouse
    spells it ("Genre.Name"), None for the other types."""

    name: str
    type: str
    key: str | None = None


def slot_refs(slots: dict, schema: dict) -> dict[str, SlotRef]:
    """{name: SlotRef} of a template's `slots` ({name: relayrag.sql.config.Slot}); TemplateError for a value
    slot whose column is not in `schema`."""
    out = {}
    for name, slot in slots.items():
        key = None
        if slot.type == "value":
            key = column_key([f"{t}.{c}" for t, c in resolve_columns(slot.columns, schema)])
        out[name] = SlotRef(name, slot.type, key)
    return out


@dataclass
class Fill:
    """How a text fills a template's slots: `params` (SQL parameters), `used` ({slot: Mention}), `missing`
    (slots nothing fills), `leftover` (mentions no slot took), `mentions` (all of them)."""

    params: dict[str, Any] = field(default_factory=dict)
    used: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    leftover: list = field(default_factory=list)
    mentions: list = field(default_factory=list)


_FILL_ORDER = {"value": 0, "year": 1, "date_range": 2, "count": 3, "number": 4}


def assign(refs: dict[str, SlotRef], mentions: list) -> Fill:
    """Fill `refs` from `mentions` (relayrag.sql.slots.Mention, by position): value slots first (a mention
    of their column), then years, periods, counts, numbers; slots of one type take their mentions in the
    order the slots are declared."""
    from relayrag.sql.slots import accepts, parameters
    fill = Fill(mentions=list(mentions))
    remaining = list(mentions)
    declared = list(refs)
    for name in sorted(refs, key=lambda n: (_FILL_ORDER.get(refs[n].type, 9), declared.index(n))):
        ref = refs[name]
        m = next((x for x in remaining if accepts(ref.type, x, ref.key)), None)
        if m is None:
            fill.missing.append(name)
            continue
        remaining.remove(m)
        fill.used[name] = m
        fill.params.update({name: m.value[ref.key]} if ref.type == "value" else parameters(name, ref.type, m))
    fill.leftover = remaining
    return fill


def fill_from_text(text: str, refs: dict[str, SlotRef], index) -> Fill:
    """`assign` over the mentions of `text` (normalised here; `index`: relayrag.sql.slots.ValueIndex)."""
    from relayrag.sql.slots import find_mentions
    from relayrag.text import normalize
    return assign(refs, find_mentions(normalize(text), index))


def config_value_index(cfg, wh, problems: list[str] | None = None):
    """The ValueIndex of every value slot column of `cfg`'s templates (their values read from `wh`) with the
    config's value_aliases. A column whose values cannot be read (unknown, too many values, outside the
    allow-list) raises TemplateError, or, given `problems`, is left out and said there."""
    from relayrag.sql.slots import ValueIndex
    schema = wh.schema()
    values: dict[str, list[str]] = {}
    for ex in cfg.examples:
        for slot in ex.slots.values():
            if slot.type != "value" or slot.column in values:
                continue
            try:
                cols = [f"{t}.{c}" for t, c in resolve_columns(slot.columns, schema)]
                values[column_key(cols)] = column_values(wh, cols)
            except TemplateError as exc:
                if problems is None:
                    raise
                problems.append(str(exc))
    return ValueIndex.build(values, cfg.value_aliases)
