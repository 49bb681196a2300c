"""Ties at a top-N query's cut-off: "Which three countries have the most customers?" ends with LIMIT 3, and a fourth
country with as many customers as the third is silently left out. `cutoff_ties` runs the same query with a few
more rows — through the same guard and warehouse path as any query — and returns the rows left out whose ordering
measure equals the last row shown; `tie_note` says so in the question's language."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

EXTRA_ROWS = 10  # rows fetched past the cut-off: ties beyond them are reported as "possibly more"
NAMES_SHOWN = 5


@dataclass
class CutoffTies:
    """The rows a top-N query's LIMIT cut off although their ordering measure equals the last row shown: the
    measure's column and value, the last row shown, the tied rows left out (at most EXTRA_ROWS) and whether
    there may be more of them (every extra row fetched was tied)."""

    limit: int
    measure: str
    value: Any
    last: list[Any]
    tied: list[list[Any]] = field(default_factory=list)
    more: bool = False
    label_columns: list[int] = field(default_factory=list)


def _top_n(sql: str, dialect: str) -> tuple[exp.Select, int, exp.Expression] | None:
    """(the parsed SELECT, its literal LIMIT n, its first ORDER BY expression) of a top-N query, else None (no
    ORDER BY, no literal LIMIT, an OFFSET, a set operation, unparsable)."""
    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except SqlglotError:
        return None
    except Exception:  # the parser must never take the answer down
        return None
    if len(trees) != 1 or not isinstance(trees[0], exp.Select):
        return None
    root = trees[0]
    order, limit = root.args.get("order"), root.args.get("limit")
    if order is None or not order.expressions or not isinstance(limit, exp.Limit) or root.args.get("offset"):
        return None
    n = limit.expression
    if not isinstance(n, exp.Literal) or n.is_string:
        return None
    try:
        count = int(n.this)
    except ValueError:
        return None
    key = order.expressions[0]
    return root, count, key.this if isinstance(key, exp.Ordered) else key


def _measure_index(root: exp.Select, key: exp.Expression, columns: list[str]) -> int | None:
    """Which result column the ordering key is: a name or alias among the result's columns, or a select
    expression written the same way (its alias is then the column); None when it is not shown."""
    lowered = [c.lower() for c in columns]
    if isinstance(key, exp.Column) and not key.table and key.name.lower() in lowered:
        return lowered.index(key.name.lower())
    if isinstance(key, exp.Literal) and not key.is_string:  # ORDER BY 2
        i = int(key.this) - 1
        return i if 0 <= i < len(columns) else None
    wanted = key.sql()
    for i, e in enumerate(root.expressions):
        inner = e.this if isinstance(e, exp.Alias) else e
        if i < len(columns) and (inner.sql() == wanted or e.alias_or_name.lower() == key.sql().lower()):
            return i
    return None


def cutoff_ties(sql: str, columns: list[str], rows: list[list[Any]], wh, *, extra: int = EXTRA_ROWS) -> CutoffTies | None:
    """The ties at the cut-off of a top-N query that returned `columns` and `rows` (ORDER BY measure … LIMIT n
    with a literal n and no OFFSET, the measure a result column, exactly n rows returned): the same query with
    LIMIT n + `extra`, run by `wh.query` (the guard and the warehouse path of every query; a refusal or an
    error means no tie is reported), and the rows after the n-th whose measure equals the n-th row's. None
    when the query is not a top-N, nothing was cut off, or nothing is tied."""
    top = _top_n(sql, getattr(wh, "dialect", "bigquery"))
    if top is None:
        return None
    root, n, key = top
    if n < 1 or len(rows) != n:
        return None
    at = _measure_index(root, key, columns)
    if at is None:
        return None
    wider = root.copy()
    wider.set("limit", exp.Limit(expression=exp.Literal.number(n + extra)))
    result = wh.query(wider.sql(dialect=getattr(wh, "dialect", "bigquery")))
    if not result.ok or len(result.rows) <= n:
        return None
    value = rows[-1][at]
    shown = {tuple(map(str, r)) for r in rows}  # without a tie-breaker the wider query may order ties otherwise
    tied = [r for r in result.rows if r[at] == value and tuple(map(str, r)) not in shown]
    if not tied:
        return None
    labels = [i for i in range(len(columns)) if i != at]
    more = len(result.rows) == n + extra and result.rows[-1][at] == value
    return CutoffTies(limit=n, measure=columns[at], value=value, last=rows[-1], tied=tied, more=more,
                      label_columns=labels)


def _label(row: list[Any], ties: CutoffTies) -> str:
    parts = [str(row[i]) for i in ties.label_columns] or [str(row)]
    return " / ".join(parts)


def tie_note(ties: CutoffTies, japanese: bool = False) -> str:
    """One sentence naming the rows the LIMIT cut off though tied with the last row shown, e.g. "France is tied
    with Brazil at customers = 5 and is not shown (LIMIT 3 cut it off)."; Japanese when `japanese`."""
    names = [_label(r, ties) for r in ties.tied[:NAMES_SHOWN]]
    left = len(ties.tied) - len(names)
    last, at = _label(ties.last, ties), f"{ties.measure} = {ties.value}"
    if japanese:
        listed = "、".join(names) + (f" ほか{left}件" if left else "") + (" など" if ties.more else "")
        return f"{listed} も {last} と同じ {at} ですが、LIMIT {ties.limit} のため表示されていません。"
    if len(names) == 1 and not left and not ties.more:
        return f"{names[0]} is tied with {last} at {at} and is not shown (LIMIT {ties.limit} cut it off)."
    listed = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
    if left or ties.more:
        listed = ", ".join(names) + (f" and {left} more" if left else "") + (", possibly more," if ties.more else "")
    return f"{listed} are tied with {last} at {at} and are not shown (LIMIT {ties.limit} cut them off)."
