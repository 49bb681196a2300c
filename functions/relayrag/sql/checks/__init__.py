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
