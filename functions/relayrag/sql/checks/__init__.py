"""No-LLM review of one Text-to-SQL candidate against the question and its plan (relayrag.sql.plan).

`review(sql, question, plan, schema)` parses the candidate with sqlglot, resolves every column to its
schema table through the query's scopes, and applies general rules about what an answer to the question
must look like. A rule that can be put right without guessing rewrites the query (a *fix*); one that
cannot becomes an *issue* whose message tells the model precisely what is wrong (the repair round's
prompt) and ranks the candidate below clean ones in the vote (relayrag.sql.generate). Each rule is stated
below by the SQL shape it looks at and the class of wording that triggers it (English / Japanese); the
tests (tests/unit/sql/test_sql_checks.py) give each at least three wordings in both languages and the
wordings where it must not fire. Layout: `facts` (schema facts, sqlglot helpers), `entity` (which rows and
names a result shows), `shape` (ranking, measures, joins), `period` (date buckets).

Fixes (in this order, each on the outermost SELECT; `alias_clash` when it has a GROUP BY:
an output alias equal to a table name, `Artist.Name AS artist`, is renamed `artist_Name`, because sqlglot
writes `GROUP BY artist` for it and DuckDB binds that to the table and refuses the query):
- `group_entity` (English): "for each / per / by <entity>" and "which [N] <entities>" name the entity the
  result has one row per; a GROUP BY column of another table is replaced by the entity table's column of the
  same name when the entity is in the FROM (alias confusion: `T2.Name` of Track for "each media type"), or
  dropped when it is not selected (grouping artists by album title splits them). A column of a table the
  entity references through foreign keys (an album's artist) is one value per entity and stays.
- `group_shown`: a GROUP BY whose SELECT shows nothing but aggregates (`SELECT COUNT(*) ... GROUP BY
  c.CustomerId`) shows its GROUP BY columns first, when the question names the groups ("each / every / per /
  by / which / who"; ごと・別・各・どの・誰). Not for a value over all groups ("the largest number of tracks
  on any album").
- `id_for_name`: a result that shows an entity by its key (`SupportRepId`, `CustomerId`, `TrackId`) shows
  its name columns instead when the named table is in the FROM; otherwise an issue naming the table to join.
  Grouped results: an id next to its own table's name is dropped. Plain listings ("show the songs of the
  album …", "list the customers from …"; アルバムの曲を見せて): an id next to its own row's name stays ("list
  all tracks"), and the join issue is raised only when the listing shows nothing but ids. Never when the
  question asks for ids ("id", "key", ID, 番号).
- `last_name` (English): a person shown by a first-name column gets the same table's last-name column next
  to it (unless the question asks for first names only).
- `unused_join` (English): an inner join of a table no column uses outside its own ON clause is dropped
  when the question neither names the table nor asks about a relation (bought, with, without, any, never
  ...): it only removes rows (artists without albums); and always when it joins a table to itself on the
  same non-key column (`Customer b ON a.City = b.City`), which only repeats rows. A join that `COUNT(*)` or
  `*` counts (in the SELECT, HAVING or ORDER BY) is used.
- `row_id` (English): a plain listing of a table the question names and whose rows have no name column
  (invoices) shows each row's key first.
- `recency` (English): "most recent / latest / newest" ("oldest / earliest") orders by time: an ORDER BY on
  a column that is not a date becomes the one date column of the query's tables, DESC (ASC).
- `top_n` (English): "top N" / "N most ..." needs ORDER BY the measure and LIMIT N: the LIMIT is set, and a
  missing ORDER BY is added on the one aggregate in the SELECT (DESC, or ASC for least/fewest/lowest/bottom).
- `measure_shown`: the aggregate a result is ranked by (ORDER BY), compared with a subquery in HAVING, or
  compared with a literal in HAVING is shown as a column. The literal case covers a threshold on a COUNT,
  SUM or AVG ("which genres have more than 100 tracks", "artists with at least 3 albums"; 100曲を超える,
  5枚以上); not a MIN/MAX threshold, which quantifies over rows ("albums whose tracks are all longer than
  …"; 一つもない), nor a question that asks for the names only ("only the names"; 名前だけ). A measure
  already inside a column (`ROUND(SUM(x), 2)`, `COUNT(*)` for `COUNT(col)`) counts as shown.
- `ties`: when the question asks for ties ("include ties", "everyone tied", 同率), `ORDER BY m LIMIT 1`
  becomes a CTE and `WHERE m = (SELECT MAX|MIN(m) ...)`, so every tied row stays.
- `avg_of_totals`: `HAVING SUM(t.x) > (SELECT AVG(x) FROM t)` compares an entity's total with the average
  single row; it becomes the average of the per-entity totals (`SELECT AVG(s) FROM (SELECT SUM(x) AS s FROM
  t GROUP BY <the entity's key in t>)`).

Issues (no safe rewrite; said to the model):
- `fanout_join`: a join equality between two columns neither of which is a key of its table (nor a declared
  foreign-key pair): `Customer T1 JOIN Customer T2 ON T1.City = T2.City` repeats every row per match and
  inflates counts and sums.
- `period`: a question that asks for one row per year / quarter / month / week / day — an adjective
  ("quarterly revenue", "weekly invoice counts", "month-over-month") or a phrase ("by month", "per
  calendar year", "for each week"; 年ごと, 月別, 毎月, 四半期ごと, 週次, 日別) — needs a date bucket of that
  granularity in a SELECT list or GROUP BY (EXTRACT, YEAR()/MONTH(), DATE_TRUNC, a format string, DATE(d),
  a text prefix, a month divided by 3; see checks.period). One row per year for "quarterly" is named in the
  message with the bucket to use. Not for a filter ("in March 2024"; 2023年の), a weekday ("by day of
  the week"; 曜日別), or "annual revenue in 2023" (one year named: a total).
- `top_per_group`: the best row within each group ("the best-selling rep in each city", "for every
  country, which genre sold the most"; 国ごとに最も…, 各年で一番…) answered by one flat GROUP BY (no window,
  no subquery) of two things (one row per combination) or cut by LIMIT (the best overall): use RANK() OVER
  (PARTITION BY the group ...) = 1. Not for a value per group ("the highest invoice total in each
  country": one thing grouped) or an ordering ("most first", 多い順).
- `measure_kind`: the question names one kind of measure and the query aggregates only the other: a count
  ("by quantity", "units sold", "number of", "how many"; 数量, 件数, 何曲) answered with prices or totals
  (`SUM(UnitPrice * Quantity)`, `AVG(UnitPrice)` for "the average number of lines per invoice"), or money
  ("revenue", "how much", "spent"; 売上, 金額, いくら) answered with a count. Not when the question names
  both ("how many dollars"; 売上件数) or a price is only a condition ("tracks that cost $0.99"; 0.99ドルの曲).
- `ties` / `top_n` / `group_entity` / `id_for_name` when the fix above does not apply.

Rules marked (English) read English nouns and run on English questions only; the others read both
languages. Never raises: SQL that does not parse comes back unchanged with no issues.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from relayrag.sql.checks.entity import (_drop_unused_joins, _fix_group_entity, _fix_group_shown, _fix_id_for_name,
                                        _fix_last_name, _fix_row_id, _group_entities)
from relayrag.sql.checks.facts import _TIES, Issue, _Schema
from relayrag.sql.checks.period import period_issues
from relayrag.sql.checks.shape import (_fanout, _fix_alias_clash, _fix_avg_of_totals, _fix_measure_shown, _fix_recency,
                                       _fix_ties, _fix_top_n, measure_kind_issues, top_per_group_issues)

__all__ = ["Issue", "Review", "review"]


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
        fixed("group_shown", _fix_group_shown(tree, question))
        did, found = _fix_id_for_name(tree, facts, question)
        fixed("id_for_name", did)
        issues += found
        if english:
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
        fixed("measure_shown", _fix_measure_shown(tree, question))
        per_group = top_per_group_issues(tree, question, facts)  # before ties makes LIMIT 1 a CTE
        if _TIES.search(question) and tree.args.get("limit") is not None:
            tree, did, found = _fix_ties(tree, tree, dialect)
            fixed("ties", did)
            issues += found
        if isinstance(tree, exp.Select):
            fixed("avg_of_totals", _fix_avg_of_totals(tree, facts))
        issues += _fanout(tree, facts)
        issues += period_issues(tree, question, shapes, facts)
        issues += per_group
        issues += measure_kind_issues(tree, question, facts)
        out.fixes = fixes
        out.issues = issues
        if fixes:
            out.sql = tree.sql(dialect=dialect)
        return out
    except Exception:  # noqa: BLE001 - sqlglot raises many kinds; a review must never break generation
        return Review(sql)
