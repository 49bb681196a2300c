"""The SQL guard: one read-only SELECT over allowed tables, a row LIMIT, or a refusal with the reason.

Independent of the LLM and applied to every statement before execution. It parses with sqlglot and
checks the syntax tree, never the text: exactly one statement; the root is a SELECT (WITH … SELECT and
UNION/INTERSECT/EXCEPT of SELECTs allowed); no node anywhere is DML, DDL, scripting, PRAGMA, ATTACH,
EXPORT, CALL, VACUUM, COPY, SET, INSTALL/LOAD or SELECT INTO; no function on the deny list (files,
extensions, other databases, settings); no table-valued function in FROM (UNNEST of a value excepted);
every table is an allowed table or a CTE of the query. The SQL that runs is the one sqlglot regenerates
(comments dropped) with the LIMIT added or capped, so text the parser ignored can never reach the
database. A refusal is a `GuardResult(ok=False, reason=...)`, never an exception; unparsable SQL is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

MAX_SQL_CHARS = 20_000

# Statement/node types that write, change the schema or session, run scripts or reach outside.
_FORBIDDEN_NODES: tuple[type, ...] = tuple(getattr(exp, n) for n in (
    "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "TruncateTable", "Command", "Pragma",
    "Set", "Copy", "Use", "Transaction", "Commit", "Rollback", "Into", "Declare", "LoadData", "Export",
    "Attach", "Detach", "Grant", "Revoke", "Analyze", "Cache", "Uncache", "Refresh", "Kill", "Execute",
    "Install", "Put", "Get", "IfBlock", "WhileBlock", "Describe", "Show", "Summarize",
) if hasattr(exp, n))

# Functions that read files, load extensions, reach other databases or the environment (lower case).
DENIED_FUNCTIONS = frozenset({
    "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "parquet_metadata", "parquet_schema",
    "read_json", "read_json_auto", "read_json_objects", "read_json_objects_auto", "read_ndjson",
    "read_ndjson_auto", "read_ndjson_objects", "read_text", "read_blob", "read_xlsx", "read_file",
    "readfile", "writefile", "glob", "load_extension", "external_query", "sqlite_scan", "sqlite_attach",
    "postgres_scan", "postgres_attach", "postgres_query", "mysql_scan", "mysql_query", "iceberg_scan",
    "delta_scan", "st_read", "query", "query_table", "getenv", "current_setting", "set_config",
    "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "lo_import", "lo_export", "load_file",
    "sys_exec", "sys_eval", "xp_cmdshell", "openrowset", "opendatasource", "openquery", "dblink",
    "ml.predict", "ml.generate_text", "vector_search", "appends", "changes",
})
# Name prefixes denied as a family (catalog and settings table functions).
DENIED_PREFIXES = ("duckdb_", "pragma_", "sqlite_", "pg_", "read_", "icu_", "information_schema")


_LOOKS_LIKE_QUERY = re.compile(r"^(\s|--[^\n]*\n|#[^\n]*\n|/\*.*?\*/)*(\(\s*)*(select|with)\b", re.I | re.S)


@dataclass
class GuardResult:
    ok: bool
    sql: str = ""
    reason: str | None = None
    tables: list[str] = field(default_factory=list)
    # why it was refused, for callers that decide what to do next: empty, parse, statements, not_select,
    # forbidden, function, table_function, table, rewrite
    code: str | None = None

    def to_dict(self) -> dict:
        return {"ok": self.ok, "sql": self.sql, "reason": self.reason, "tables": list(self.tables),
                "code": self.code}


def _refuse(reason: str, code: str) -> GuardResult:
    return GuardResult(ok=False, sql="", reason=reason, tables=[], code=code)


def _func_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name or "").lower()
    try:
        return node.sql_name().lower()
    except Exception:
        return type(node).__name__.lower()


def _func_names(node: exp.Func) -> set[str]:
    """Every name this function node could be known by (sqlglot's canonical one, the class, as written)."""
    names = {_func_name(node), type(node).__name__.lower()}
    if isinstance(node, exp.Anonymous):
        # dotted anonymous calls (ml.predict) keep their qualifier in the parent Dot
        parent = node.parent
        if isinstance(parent, exp.Dot):
            names.add(parent.sql().split("(")[0].lower())
    # sqlglot's class names drop underscores (ReadCSV -> readcsv): compare without them too
    return names | {n.replace("_", "") for n in names}


_DENIED_NORMALISED = DENIED_FUNCTIONS | {f.replace("_", "") for f in DENIED_FUNCTIONS}


def _denied(names: set[str]) -> str | None:
    for n in names:
        if n in _DENIED_NORMALISED or n.startswith(DENIED_PREFIXES):
            return n
    return None


def _qualified(table: exp.Table) -> str:
    parts = [p.name for p in (table.args.get("catalog"), table.args.get("db")) if p is not None and p.name]
    return ".".join(parts + [table.name])


def _cap_limit(root: Any, max_rows: int) -> exp.Expression:
    """`root`: the parsed SELECT (or set operation) the guard accepted."""
    limit = root.args.get("limit")
    if limit is None:
        return root.limit(max_rows, copy=False)
    value = limit.expression if isinstance(limit, exp.Limit) else None
    if isinstance(value, exp.Literal) and not value.is_string:
        try:
            n = int(value.this)
        except ValueError:
            n = None
        if n is not None and 0 <= n <= max_rows:
            return root
        if n is not None and n > max_rows:
            limit.set("expression", exp.Literal.number(max_rows))
            return root
    # a non-literal or odd LIMIT: keep it and cap from outside
    return exp.select("*").from_(root.subquery("_guarded")).limit(max_rows)


def unshadow_aliases(root: Any) -> None:
    """In every SELECT, a bare GROUP BY / ORDER BY name that is both an output alias and the name or alias of
    a table in its FROM ("Artist.Name AS artist … GROUP BY artist") is replaced by the aliased expression
    in GROUP BY: DuckDB resolves such a name to the table (a row value) before the alias and refuses the
    query. Meaning is unchanged. Applied to the DuckDB SQL the warehouse runs (BigQuery-dialect output writes the
    alias back, and BigQuery itself resolves it to the alias)."""
    for select in list(root.find_all(exp.Select)):
        aliases = {p.alias.lower(): p.this for p in select.expressions if isinstance(p, exp.Alias) and p.alias}
        if not aliases:
            continue
        sources = set()
        for t in select.find_all(exp.Table):
            if t.find_ancestor(exp.Select) is select:
                sources |= {t.name.lower(), t.alias_or_name.lower()}
        clash = {a for a in aliases if a in sources}
        group = select.args.get("group")
        if not clash or group is None:
            continue
        for i, g in enumerate(list(group.expressions)):
            if isinstance(g, exp.Column) and not g.table and g.name.lower() in clash:
                group.expressions[i] = aliases[g.name.lower()].copy()


def guard_sql(sql: str, *, allowed_tables: set[str] | frozenset[str], dialect: str = "bigquery",
              max_rows: int = 1000) -> GuardResult:
    """Check `sql` and return it rewritten (LIMIT added or capped) or a refusal with the reason."""
    if not isinstance(sql, str) or not sql.strip():
        return _refuse("empty SQL", "empty")
    if len(sql) > MAX_SQL_CHARS:
        return _refuse(f"SQL longer than {MAX_SQL_CHARS} characters", "parse")
    if "\x00" in sql:
        return _refuse("SQL contains a NUL byte", "parse")
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        # unparsable and not even starting like a query (ATTACH, EXPORT ...): not a typo to repair
        code = "parse" if _LOOKS_LIKE_QUERY.match(sql) else "not_select"
        return _refuse(f"could not parse the SQL ({dialect}): {first[:200]}", code)
    except Exception as exc:  # the parser must never take the run down
        return _refuse(f"could not parse the SQL ({dialect}): {type(exc).__name__}", "parse")
    if len(statements) != 1:
        return _refuse(f"exactly one statement is allowed, got {len(statements)}", "statements")
    root = statements[0]
    while isinstance(root, exp.Subquery) and isinstance(root.this, exp.Query):  # (SELECT ...)
        root = root.this
    if not isinstance(root, (exp.Select, exp.SetOperation)):
        return _refuse(f"only SELECT queries are allowed, got {type(root).__name__.upper()}", "not_select")

    cte_names: set[str] = set()
    for node in root.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            kind = "SELECT INTO" if isinstance(node, exp.Into) else type(node).__name__.upper()
            return _refuse(f"{kind} is not allowed: only read-only SELECT queries run", "forbidden")
        if isinstance(node, exp.CTE):
            if not isinstance(node.this, (exp.Select, exp.SetOperation, exp.Subquery)):
                return _refuse(f"a WITH clause may only hold SELECT queries, got {type(node.this).__name__.upper()}", "forbidden")
            cte_names.add(node.alias_or_name.lower())
        if isinstance(node, exp.Func):
            bad = _denied(_func_names(node))
            if bad:
                return _refuse(f"function {bad!r} is not allowed (it can read files, load extensions or "
                               "reach other databases)", "function")
    allowed = {t.lower() for t in allowed_tables}
    tables: list[str] = []
    for table in root.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            what = _func_name(table.this) if isinstance(table.this, exp.Func) else type(table.this).__name__
            return _refuse(f"table-valued function {what!r} in FROM is not allowed; query the tables directly", "table_function")
        name = _qualified(table)
        low = name.lower()
        if not table.args.get("db") and not table.args.get("catalog") and low in cte_names:
            continue
        if low not in allowed:
            shown = ", ".join(sorted(allowed_tables)) or "none"
            return _refuse(f"table {name!r} is not allowed (allowed: {shown})", "table")
        if name not in tables:
            tables.append(name)
    try:
        capped = _cap_limit(root, max_rows)
        out = capped.sql(dialect=dialect, comments=False)
    except Exception as exc:
        return _refuse(f"could not rewrite the SQL: {type(exc).__name__}: {exc}"[:300], "rewrite")
    return GuardResult(ok=True, sql=out, reason=None, tables=tables)
