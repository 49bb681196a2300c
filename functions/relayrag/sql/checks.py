"""No-LLM review of one Text-to-SQL candidate against the question and its plan (relayrag.sql.plan).

`review(sql, question, plan, schema)` parses the candidate with sqlglot, resolves every column to its
schema table through the query's scopes, and applies general rules about what an answer to the question
must look like. A rule that can be put right without guessing rewrites the query (a *fix*); one that
cannot becomes an *issue* whose message tells the model precisely what is wrong (the repair round's
prompt) and ranks the candidate below clean ones in the vote (relayrag.sql.generate).

Fixes (in this order, each on the outermost SELECT; `alias_clash` when it has a GROUP BY:
an output alias equal to a table name, `Artist.Name AS artist`, is renamed `artist_Name`, because sqlglot
writes `GROUP BY artist` for it and DuckDB binds that to the table and refuses the query):
- `group_entity`: "for each / per / by <entity>" and "which [N] <entities>" name the entity the result has
  one row per; a GROUP BY column of another table is replaced by the entity table's column of the same
  name when the entity is in the FROM (alias confusion: `T2.Name` of Track for "each media type"), or
  dropped when it is not selected (grouping artists by album title splits them).
- `id_for_name`: a grouped result that shows an entity by its key (`SupportRepId`, `CustomerId`) shows its name
  columns instead when the named table is in the FROM; an id next to its own table's name is dropped
  (unless the question asks for ids).
- `last_name`: a person shown by a first-name column gets the same table's last-name column next to it
  (unless the question asks for first names only).
- `unused_join`: an inner join of a table no column uses outside its own ON clause is dropped when the
  question neither names the table nor asks about a relation (bought, with, without, any, never ...): it
  only removes rows (artists without albums); and always when it joins a table to itself on the same
  non-key column (`Customer b ON a.City = b.City`), which only repeats rows.
- `row_id`: a plain listing of a table the question names and whose rows have no name column (invoices)
  shows each row's key first.
- `recency`: "most recent / latest / newest" ("oldest / earliest") orders by time: an ORDER BY on a column
  that is not a date becomes the one date column of the query's tables, DESC (ASC).
- `top_n`: "top N" / "N most ..." needs ORDER BY the measure and LIMIT N: the LIMIT is set, and a missing
  ORDER BY is added on the one aggregate in the SELECT (DESC, or ASC for least/fewest/lowest/bottom).
- `measure_shown`: the aggregate a result is ranked by (ORDER BY) or compared with a subquery (HAVING) is
  shown as a column.
- `ties`: when the question asks for ties ("include ties", "everyone tied", 同率), `ORDER BY m LIMIT 1`
  becomes a CTE and `WHERE m = (SELECT MAX|MIN(m) ...)`, so every tied row stays.
- `avg_of_totals`: `HAVING SUM(t.x) > (SELECT AVG(x) FROM t)` compares an entity's total with the average
  single row; it becomes the average of the per-entity totals (`SELECT AVG(s) FROM (SELECT SUM(x) AS s FROM
  t GROUP BY <the entity's key in t>)`).

Issues (no safe rewrite; said to the model):
- `fanout_join`: a join equality between two columns neither of which is a key of its table (nor a declared
  foreign-key pair): `Customer T1 JOIN Customer T2 ON T1.City = T2.City` repeats every row per match and
  inflates counts and sums.
- `period`: the plan asks per year/month but nothing buckets a date.
- `ties` / `top_n` / `group_entity` / `id_for_name` when the fix above does not apply.

English wording drives the entity rules; the shape rules (ties, period) also read Japanese through the
plan. Never raises: SQL that does not parse comes back unchanged with no issues.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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
_DATE_BUCKET = re.compile(r"\b(EXTRACT|FORMAT_TIMESTAMP|FORMAT_DATE|FORMAT_DATETIME|STRFTIME|DATE_TRUNC|"
                          r"TIMESTAMP_TRUNC|DATETIME_TRUNC|DATE_PART|YEAR|MONTH|QUARTER)\s*\(", _I)


@dataclass
class Issue:
    code: str
    message: str


@dataclass
class Review:
    """What `review` found: `sql` (the candidate after the fixes; the input when none applied), `fixes`
    (codes of the rewrites applied, in order) and `issues` (what is still wrong, for the repair round)."""
    sql: str
    fixes: list[str] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)

    def repair_message(self) -> str:
        """The repair round's prompt: one line per issue ('' when clean)."""
        if not self.issues:
            return ""
        return ("That query runs, but it does not answer the question as asked:\n"
                + "\n".join(f"- {i.message}" for i in self.issues)
                + "\nReturn the corrected JSON (one read-only SELECT over the schema's tables).")


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


# ------------------------------------------------------------------------------------------ the rules

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


_RELATION_WORDS = re.compile(r"\b(bought|buy|buys|purchas\w*|sold|sell\w*|order\w*|made|placed|played|"
                             r"listened|with|without|any|at\s+least|never|no|ha(?:ve|s|d)\s+(?:a|an|some|one|their\s+own))\b", _I)


def _drop_unused_joins(select, schema: _Schema, question: str) -> bool:
    """Drop an inner join whose table no column uses outside its own ON clause, when the question neither
    names that table nor asks about a relation (bought, with, without, any, never ...): such a join only
    removes rows (artists without albums) or repeats them."""
    from sqlglot import exp
    if any(isinstance(p, exp.Star) or p.find(exp.Star) is not None for p in select.expressions):
        return False
    sources = _sources(select, schema)
    changed = False
    for join in list(select.args.get("joins") or []):
        t = join.this
        if not isinstance(t, exp.Table) or join.side or (join.kind or "").upper() not in ("", "INNER"):
            continue
        alias = t.alias_or_name.lower()
        if alias not in sources:
            continue
        on = join.args.get("on")
        if on is not None and any(_resolve(c, sources, schema) is None for c in on.find_all(exp.Column)):
            continue  # a join on a column that does not exist: the database's error and the repair round say so
        # a self-join on the same non-key column only repeats rows, whatever the question says; any other
        # join is kept when the relation is asked for, or when it is a self-join on a key (an employee's manager)
        if not _self_join_on_same_column(join, alias, sources, schema) and (
                _RELATION_WORDS.search(question) or schema.mentioned(sources[alias], question)
                or sum(t == sources[alias] for t in sources.values()) > 1):
            continue
        used = False
        for col in select.find_all(exp.Column):
            if col.find_ancestor(exp.Join) is join and col.find_ancestor(exp.Select) is select:
                continue
            r = _resolve(col, sources, schema) if col.find_ancestor(exp.Select) is select else None
            if col.table.lower() == alias or (r is not None and r[0] == alias):
                used = True
                break
        if not used:
            join.pop()
            changed = True
    return changed


def _self_join_on_same_column(join, alias: str, sources: dict[str, str], schema: _Schema) -> bool:
    """Whether `join` joins a table to another alias of itself on the same non-key column(s) (`Customer b ON
    a.City = b.City`): every row matches itself, so the join only repeats rows."""
    from sqlglot import exp
    on = join.args.get("on")
    if on is None:
        return False
    eqs = list(on.find_all(exp.EQ))
    if not eqs or any(not isinstance(n, (exp.EQ, exp.And, exp.Column, exp.Identifier, exp.Paren))
                      for n in on.walk()):
        return False
    for eq in eqs:
        a, b = eq.this, eq.expression
        if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
            return False
        ra, rb = _resolve(a, sources, schema), _resolve(b, sources, schema)
        if ra is None or rb is None or ra[1] != rb[1] or ra[2] != rb[2] or ra[0] == rb[0] \
                or alias not in (ra[0], rb[0]) or schema.is_key(ra[1], ra[2]):
            return False
    return True


def _fix_row_id(select, schema: _Schema, question: str) -> bool:
    """A listing of a table the question names whose rows have no name (an invoice) shows each row's key
    first: the key is how such a row is told apart ("the 5 most recent invoices with date and total")."""
    from sqlglot import exp
    froms = select.args.get("from_")
    if froms is None or not isinstance(froms.this, exp.Table) or select.args.get("group") is not None \
            or select.args.get("distinct") is not None or _aggregates(select) \
            or any(p.find(exp.Star) is not None for p in select.expressions):
        return False
    sources = _sources(select, schema)
    alias = froms.this.alias_or_name.lower()
    table = sources.get(alias)
    if table is None or schema.name_columns(table) or len(schema.pk.get(table, ())) != 1 \
            or not schema.mentioned(table, question):
        return False
    key = next(iter(schema.pk[table]))
    for p in select.expressions:
        for c in p.find_all(exp.Column):
            r = _resolve(c, sources, schema)
            if r is not None and r[1] == table and r[2] == key:
                return False
    select.set("expressions", [_col(froms.this.alias_or_name, schema.cols[table][key])] + list(select.expressions))
    return True


def _group_entities(question: str, schema: _Schema) -> set[str]:
    out = set()
    for m in _GROUP_NOUN.finditer(question):
        for g in (m.group(1), m.group(2)):
            t = schema.table_for(g) if g else None
            if t:
                out.add(t)
    for m in _WHICH_NOUN.finditer(question):
        t = schema.table_for(m.group(2))
        if t:
            out.add(t)
    return out


def _fix_group_entity(select, schema: _Schema, entities: set[str]) -> tuple[bool, list[Issue]]:
    from sqlglot import exp
    group = select.args.get("group")
    if not entities or group is None:
        return False, []
    sources = _sources(select, schema)
    in_from = {t: a for a, t in sources.items() if t in entities}
    if not in_from:
        return False, []
    changed, issues = False, []
    projected = {p.sql().lower() for p in select.expressions} | {_bare(p).sql().lower() for p in select.expressions}
    named = {p.alias.lower(): p.this for p in select.expressions
             if isinstance(p, exp.Alias) and isinstance(p.this, exp.Column)}
    for g in list(group.expressions):
        if not isinstance(g, exp.Column):
            continue
        # GROUP BY an output alias (`GROUP BY media_type`) groups by the column it names
        r = _resolve(g, sources, schema) or (_resolve(named[g.name.lower()], sources, schema)
                                             if not g.table and g.name.lower() in named else None)
        if r is None or r[1] in entities:
            continue
        target = schema.fk_target(r[1], r[2])
        if target and target[0] in entities:
            continue  # grouping by the entity's key held in the other table is the same grouping
        ent, ent_alias = next(iter(in_from.items()))
        ent_alias = _alias_case(select).get(ent_alias, ent_alias)
        if r[2] in schema.cols[ent] and not schema.is_key(ent, r[2]):
            # the same column name on the entity's table: alias confusion (T2.Name of Track for MediaType)
            for col in list(select.find_all(exp.Column)):
                if col.find_ancestor(exp.Select) is select and col.find_ancestor(exp.AggFunc) is None \
                        and _resolve(col, sources, schema) == r:
                    col.set("table", exp.to_identifier(ent_alias))
            changed = True
        elif g.sql().lower() not in projected:
            g.pop()
            changed = True
        else:
            issues.append(Issue("group_entity", (
                f"The question asks for one row per {schema.names[ent]}, but it groups by "
                f"{schema.names[r[1]]}.{schema.cols[r[1]][r[2]]}: GROUP BY only {schema.names[ent]}'s key and "
                "name columns.")))
    if changed and not group.expressions:
        select.set("group", None)
    return changed, issues


def _fix_id_for_name(select, schema: _Schema, question: str) -> tuple[bool, list[Issue]]:
    from sqlglot import exp
    if _ASKS_IDS.search(question):
        return False, []
    sources = _sources(select, schema)
    if not sources or select.args.get("group") is None:
        return False, []  # a plain listing ("list all tracks") may show its rows' ids
    projs = list(select.expressions)
    resolved = []
    for p in projs:
        b = _bare(p)
        resolved.append(_resolve(b, sources, schema) if isinstance(b, exp.Column) else None)
    shown = {r[:1] + r[2:] for r in (_resolve(c, sources, schema) for p in projs for c in p.find_all(exp.Column)) if r}
    changed, issues, out, added = False, [], [], []
    for p, r in zip(projs, resolved):
        if r is None:
            out.append(p)
            continue
        alias, table, col = r
        if schema.is_key(table, col):
            ent, ent_aliases = table, [alias]
        else:
            target = schema.fk_target(table, col)
            if target is None or not schema.is_key(*target):
                out.append(p)
                continue
            ent = target[0]
            # the referenced row's alias (for a self reference such as ReportsTo: the other alias)
            ent_aliases = [a for a, t in sources.items() if t == ent and a != alias]
        names = schema.name_columns(ent)
        if not names or len(ent_aliases) != 1:
            out.append(p)
            if names and not ent_aliases:
                issues.append(Issue("id_for_name", (
                    f"It shows {schema.names[table]}.{schema.cols[table][col]}, an id: show the "
                    f"{schema.names[ent]}'s {' and '.join(schema.cols[ent][n] for n in names)} instead (join "
                    f"{schema.names[ent]} on its key).")))
            continue  # an entity without a name (an invoice): the id is how it is shown
        ea = ent_aliases[0]
        written = _alias_case(select).get(ea, ea)
        changed = True
        for n in names:
            if (ea, n) not in shown:
                c = _col(written, schema.cols[ent][n])
                out.append(c)
                added.append(c)
                shown.add((ea, n))
    if changed:
        select.set("expressions", out)
        group = select.args.get("group")
        if group is not None:
            for c in added:
                group.append("expressions", c.copy())
    return changed, issues


def _fix_last_name(select, schema: _Schema, question: str) -> bool:
    from sqlglot import exp
    if _FIRST_ONLY.search(question) and not _FULL_NAME.search(question):
        return False
    sources = _sources(select, schema)
    projs = list(select.expressions)
    shown = set()
    for p in projs:
        b = _bare(p)
        r = _resolve(b, sources, schema) if isinstance(b, exp.Column) else None
        if r:
            shown.add((r[0], r[2]))
    changed, out = False, []
    group = select.args.get("group")
    for p in projs:
        out.append(p)
        b = _bare(p)
        r = _resolve(b, sources, schema) if isinstance(b, exp.Column) else None
        if r is None or not re.fullmatch(r"first_?name", r[2]):
            continue
        names = schema.name_columns(r[1])
        if len(names) != 2 or (r[0], names[1]) in shown:
            continue
        last = _col(_alias_case(select).get(r[0], r[0]), schema.cols[r[1]][names[1]])
        out.append(exp.alias_(last, p.alias + "_last") if isinstance(p, exp.Alias) else last)
        if group is not None and any(g.sql().lower() == b.sql().lower() for g in group.expressions):
            group.append("expressions", last.copy())
        shown.add((r[0], names[1]))
        changed = True
    if changed:
        select.set("expressions", out)
    return changed


def _aggregates(select) -> list:
    from sqlglot import exp
    return [p for p in select.expressions if _bare(p).find(exp.AggFunc) is not None]


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


def _fix_measure_shown(select) -> bool:
    from sqlglot import exp
    shown = {_bare(p).sql().lower() for p in select.expressions}
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
            side = cmp.this
            if side.find(exp.AggFunc) is not None and cmp.expression.find(exp.Select) is not None:
                wanted.append(side)
    changed = False
    for w in wanted:
        if w.sql().lower() in shown:
            continue
        name = {"count": "cnt", "sum": "total", "avg": "average", "max": "maximum", "min": "minimum"}.get(
            w.find(exp.AggFunc).key, "measure")
        if name in aliases:
            name += "_value"
        new = exp.alias_(w.copy(), name)
        select.append("expressions", new)
        shown.add(w.sql().lower())
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


# ------------------------------------------------------------------------------------------ entry point

def review(sql: str, question: str, plan=None, schema: dict | None = None, dialect: str = "bigquery") -> Review:
    """Check (and where safe, fix) candidate `sql` for `question` (see the module docstring). `plan` is the
    question's relayrag.sql.plan.Plan (None: computed here); `schema` is Warehouse.schema(). Never raises."""
    import sqlglot
    from sqlglot import exp
    from relayrag.sql.plan import plan_question
    out = Review(sql)
    if not (sql or "").strip() or not schema:
        return out
    try:
        plan = plan or plan_question(question)
        tree = sqlglot.parse_one(sql, read=dialect)
        if not isinstance(tree, exp.Select):
            return out
        facts = _Schema(schema)
        english = getattr(plan, "language", "English") == "English"
        issues: list[Issue] = []
        fixes: list[str] = []

        def fixed(code: str, did: bool) -> None:
            if did:
                fixes.append(code)
        if english:
            did, found = _fix_group_entity(tree, facts, _group_entities(question, facts))
            fixed("group_entity", did)
            issues += found
            did, found = _fix_id_for_name(tree, facts, question)
            fixed("id_for_name", did)
            issues += found
            fixed("last_name", _fix_last_name(tree, facts, question))
            fixed("unused_join", _drop_unused_joins(tree, facts, question))
            fixed("row_id", _fix_row_id(tree, facts, question))
            fixed("recency", _fix_recency(tree, facts, question))
            if not _TIES.search(question):
                did, found = _fix_top_n(tree, question)
                fixed("top_n", did)
                issues += found
        shapes = set(getattr(plan, "shapes", []) or [])
        fixed("alias_clash", _fix_alias_clash(tree))
        fixed("measure_shown", _fix_measure_shown(tree))
        if _TIES.search(question) and tree.args.get("limit") is not None:
            tree, did, found = _fix_ties(tree, tree, dialect)
            fixed("ties", did)
            issues += found
        if isinstance(tree, exp.Select):
            fixed("avg_of_totals", _fix_avg_of_totals(tree, facts))
        issues += _fanout(tree, facts)
        if "period" in shapes and not _DATE_BUCKET.search(tree.sql(dialect=dialect)):
            issues.append(Issue("period", "The question asks for each year (or month), but nothing buckets a "
                                          "date: SELECT FORMAT_TIMESTAMP('%Y', <date column>) AS year, GROUP BY it "
                                          "(and PARTITION BY it when ranking within each year)."))
        out.fixes = fixes
        out.issues = issues
        if fixes:
            out.sql = tree.sql(dialect=dialect)
        return out
    except Exception:  # noqa: BLE001 - sqlglot raises many kinds; a review must never break generation
        return Review(sql)
