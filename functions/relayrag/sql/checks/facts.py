"""Schema facts and sqlglot helpers shared by the review rules (relayrag.sql.checks): which table a
column of a SELECT belongs to, a table's key and name columns, the tables a noun phrase names."""

from __future__ import annotations

import re
from dataclasses import dataclass

_I = re.IGNORECASE
_NUM = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
        "ten": 10, "twenty": 20}
_N = r"(\d+|" + "|".join(_NUM) + r")"
_TOP_N = re.compile(r"\b(?:top|first|bottom)\s+" + _N + r"\b|\b" + _N + r"\s+(?:\w+\s+){0,3}(?:most|least|fewest|"
                    r"biggest|largest|highest|lowest|best|worst|top|longest|shortest)\b", _I)
_ASCENDING = re.compile(r"\b(least|fewest|lowest|smallest|bottom|worst|shortest|cheapest|minimum)\b", _I)
_TIES = re.compile(r"\b(ties?|tied|tying)\b|同率|同点|同順位|同数", _I)
_ASKS_IDS = re.compile(r"\b(ids?|identifiers?|keys?)\b|番号|ID", _I)
_FIRST_ONLY = re.compile(r"\bfirst[- ]names?\b", _I)
_FULL_NAME = re.compile(r"\b(last[- ]names?|surnames?|full[- ]names?)\b", _I)
_GROUP_NOUN = re.compile(r"\b(?:for\s+each|for\s+every|each|every|per|by)\s+([a-z]+(?:\s+(?!and\b)[a-z]+)?)"
                         r"(?:\s+and\s+([a-z]+(?:\s+[a-z]+)?))?", _I)
_WHICH_NOUN = re.compile(r"\bwhich\s+(?:" + _N + r"\s+)?([a-z]+(?:\s+[a-z]+)?)", _I)


@dataclass
class Issue:
    """One thing a candidate gets wrong: `code` (the rule) and `message` (said to the model in the repair round)."""
    code: str
    message: str


# ------------------------------------------------------------------------------------------ schema facts

class _Schema:
    def __init__(self, schema: dict):
        from relayrag.sql.linking import foreign_keys
        self.names: dict[str, str] = {}
        self.cols: dict[str, dict[str, str]] = {}
        self.pk: dict[str, set[str]] = {}
        self.dates: dict[str, set[str]] = {}
        for t in schema.get("tables", []):
            name = str(t.get("name", ""))
            low = name.lower()
            c = t.get("columns") or {}
            names = [x["name"] for x in c] if isinstance(c, list) else list(c)
            self.names[low] = name
            self.cols[low] = {n.lower(): n for n in names}
            types = {x["name"]: x.get("type", "") for x in c} if isinstance(c, list) else dict(c)
            self.dates[low] = {n.lower() for n, ty in types.items()
                               if re.match(r"(DATE|TIMESTAMP|DATETIME)", str(ty or ""), _I)}
            pk = [p.lower() for p in (t.get("primary_key") or [])]
            self.pk[low] = set(pk) or {n for n in self.cols[low] if n in ("id", low + "id", low + "_id")}
        self.fks = {(a.lower(), b.lower(), c.lower(), d.lower()) for a, b, c, d in foreign_keys(schema)}

    def is_key(self, table: str, col: str) -> bool:
        return len(self.pk.get(table, ())) == 1 and col in self.pk.get(table, ())

    def fk_target(self, table: str, col: str) -> tuple[str, str] | None:
        for a, b, c, d in self.fks:
            if a == table and b == col:
                return c, d
        return None

    def referenced(self, table: str) -> set[str]:
        """The tables `table` references through foreign keys, directly or through others (Track → Album →
        Artist): each row of `table` has at most one row of each of them."""
        out: set[str] = set()
        todo = [table]
        while todo:
            t = todo.pop()
            for a, _b, c, _d in self.fks:
                if a == t and c not in out and c != table:
                    out.add(c)
                    todo.append(c)
        return out

    def name_columns(self, table: str) -> list[str]:
        """The columns that name a row: first and last name for a person, else Name / Title / *Name."""
        cols = self.cols.get(table, {})
        first = [c for c in cols if re.fullmatch(r"first_?name", c)]
        last = [c for c in cols if re.fullmatch(r"(last|sur)_?name", c)]
        if first and last:
            return [first[0], last[0]]
        for want in ("name", "title"):
            if want in cols:
                return [want]
        named = [c for c in cols if c.endswith("name") and not c.endswith("id")]
        return named[:1]

    def table_for(self, phrase: str) -> str | None:
        """The schema table a noun phrase names ('media types' → mediatype, 'artists' → artist), or None."""
        words = [w.lower() for w in phrase.split()]

        def sing(w: str) -> str:
            if w.endswith("ies") and len(w) > 4:
                return w[:-3] + "y"
            if w.endswith("s") and not w.endswith("ss") and len(w) > 3:
                return w[:-1]
            return w
        tries = []
        if len(words) == 2:
            tries += [words[0] + sing(words[1]), words[0] + words[1]]
        if words:
            tries += [sing(words[0]), words[0]]
        for t in tries:
            if t in self.cols:
                return t
        return None

    def mentioned(self, table: str, question: str) -> bool:
        """Whether the question names `table` (its name split at capitals, singular or plural)."""
        words = re.sub(r"([a-z])([A-Z])", r"\1 \2", self.names.get(table, table)).lower().split()
        stem = r"\s*".join(re.escape(w) for w in words)
        return re.search(r"\b" + stem + r"(s|es)?\b", question, _I) is not None


# ------------------------------------------------------------------------------------------ sql helpers

def _sources(select, schema: _Schema) -> dict[str, str]:
    """alias (lower) → schema table (lower) for the base tables in `select`'s own FROM and JOINs."""
    from sqlglot import exp
    out: dict[str, str] = {}
    froms = [select.args.get("from_")] + list(select.args.get("joins") or [])
    for f in froms:
        if f is None:
            continue
        t = f.this
        if isinstance(t, exp.Table) and t.name.lower() in schema.cols:
            out[(t.alias_or_name).lower()] = t.name.lower()
    return out


def _alias_case(select) -> dict[str, str]:
    """alias (lower) → the alias as the query writes it, for the FROM and JOIN tables of `select`."""
    from sqlglot import exp
    out = {}
    for f in [select.args.get("from_")] + list(select.args.get("joins") or []):
        if f is not None and isinstance(f.this, exp.Table):
            out[f.this.alias_or_name.lower()] = f.this.alias_or_name
    return out


def _resolve(col, sources: dict[str, str], schema: _Schema) -> tuple[str, str, str] | None:
    """(alias, table, column) for a Column of a SELECT with base-table `sources`, or None."""
    name = col.name.lower()
    qual = col.table.lower()
    if qual:
        table = sources.get(qual)
        return (qual, table, name) if table and name in schema.cols[table] else None
    owners = [(a, t) for a, t in sources.items() if name in schema.cols[t]]
    return (owners[0][0], owners[0][1], name) if len(owners) == 1 else None


def _own_columns(select):
    """Columns of `select` itself (not of its subqueries)."""
    from sqlglot import exp
    for col in select.find_all(exp.Column):
        if col.find_ancestor(exp.Select) is select:
            yield col


def _col(alias: str, name: str):
    from sqlglot import exp
    return exp.column(name, table=alias)


def _alias_name(proj) -> str:
    from sqlglot import exp
    return proj.alias if isinstance(proj, exp.Alias) else (proj.name if isinstance(proj, exp.Column) else "")


def _bare(proj):
    from sqlglot import exp
    return proj.this if isinstance(proj, exp.Alias) else proj


def _aggregates(select) -> list:
    from sqlglot import exp
    return [p for p in select.expressions if _bare(p).find(exp.AggFunc) is not None]


