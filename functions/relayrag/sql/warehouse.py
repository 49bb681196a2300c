"""Warehouses behind one protocol: embedded DuckDB (default) and BigQuery (extra `gcp`).

Every query goes through `relayrag.sql.guard.guard_sql` inside `query()` (the caller may guard too):
a refusal or a database error comes back as a `QueryResult` with `error`, never as an exception.

DuckDB: the collection's database file is opened read-only with `enable_external_access=false`
(no files, no network, no extension loading), a memory limit, no spill files, the configuration
locked; BigQuery-dialect SQL is parsed and written as DuckDB SQL by sqlglot (`guard.unshadow_aliases` first);
DuckDB's own parser must also see exactly one SELECT; queries run in a child process
(`relayrag.sql.duck_worker`) that is interrupted at the timeout and killed past it or past
WORKER_MEMORY_BYTES of resident memory; results are capped by rows and by MAX_RESULT_BYTES of JSON.

BigQuery: a dry run estimates the bytes first; above the budget the query is refused; otherwise it runs
with `maximum_bytes_billed` = the budget and a job timeout. Meant for a read-only service account.
`google.cloud.bigquery` is imported lazily, so a test double of the client needs nothing installed.
"""

from __future__ import annotations

import json
import csv
import re
import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from relayrag.errors import ConfigError, RelayragError
from relayrag.sql.duck_worker import DuckWorker, WorkerKilled
from relayrag.sql.registry import (  # noqa: F401  (re-exported)
    _bigquery_record,
    warehouse_collections,
    warehouse_dir,
    warehouse_record,
)
from relayrag.sql.values import json_value  # noqa: F401  (re-exported: callers import it from here)

# relayrag.sql.guard imports sqlglot (~0.5 s): imported where a query is guarded, so that reading a warehouse
# record (every `relayrag ask` asks whether the collection has one) does not pay it


def guard_sql(*args, **kwargs):
    from relayrag.sql.guard import guard_sql as guard
    return guard(*args, **kwargs)


def unshadow_aliases(*args, **kwargs):
    from relayrag.sql.guard import unshadow_aliases as unshadow
    return unshadow(*args, **kwargs)


SAMPLE_MAX_DISTINCT = 25  # text columns with at most this many distinct values get sample values
SAMPLE_VALUES = 8
MEMORY_LIMIT = "2GB"  # per warehouse connection (DuckDB's buffer manager)
WORKER_MEMORY_BYTES = 3 * 2**30  # resident memory of the query process at which the query is stopped
VALUE_INDEX_MAX = 5000         # text columns with at most this many distinct values are indexed for linking
FK_COMMENT = "relayrag foreign keys (not enforced): "  # table comment the SQLite loader writes
MAX_RESULT_BYTES = 1_000_000     # JSON bytes of a result's rows (the row cap alone let one 400 MB cell through)


class WarehouseError(RelayragError):
    """The warehouse could not be opened or loaded."""


@dataclass
class QueryResult:
    ok: bool
    sql: str = ""                 # the SQL as generated (guarded, BigQuery dialect)
    executed_sql: str = ""        # what the engine ran (DuckDB dialect for DuckDB)
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    row_count: int = 0
    truncated: bool = False
    tables: list[str] = field(default_factory=list)
    error: str | None = None
    refused: bool = False         # the guard (or the cost budget) refused; nothing ran
    refusal_code: str | None = None  # GuardResult.code, or "budget"
    limit: str | None = None      # a resource limit stopped the query: "timeout" | "memory" | "result_bytes"
    bytes_estimated: int | None = None
    ms: float = 0.0

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@runtime_checkable
class Warehouse(Protocol):
    dialect: str  # the dialect `query` accepts (generation targets it)

    def tables(self) -> set[str]: ...

    def schema(self) -> dict: ...

    def query(self, sql: str) -> QueryResult: ...


# ----------------------------------------------------------------------------------------------- DuckDB

def _filled(res, columns: list[str], rows: list, max_rows: int, t0: float, truncated: bool = False):
    """A successful result: rows capped at max_rows (truncated says whether more came), JSON-safe values."""
    res.ok = True
    res.columns = columns
    res.truncated = truncated or len(rows) > max_rows
    res.rows = [[json_value(v) for v in r] for r in rows[:max_rows]]
    res.row_count = len(res.rows)
    res.ms = round((time.perf_counter() - t0) * 1000, 2)
    return res


class DuckDBWarehouse:
    dialect = "bigquery"
    engine = "duckdb"  # the embedded warehouse: checking a config may run its examples (free)

    def __init__(self, path: str | Path, *, timeout_s: float = 10.0, max_rows: int = 1000):
        import duckdb
        self.path = Path(path)
        if not self.path.is_file():
            raise WarehouseError(f"no warehouse database at {self.path}")
        self.timeout_s = timeout_s
        self.max_rows = max_rows
        self.max_result_bytes = MAX_RESULT_BYTES
        self.worker_memory_bytes = WORKER_MEMORY_BYTES
        self._duckdb = duckdb
        self._lock = threading.Lock()
        self._config: dict[str, str | bool | int | float | list[str]] = {
            "enable_external_access": False, "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
            # bounded memory and no spill files next to the database (the folder stays as loaded)
            "memory_limit": MEMORY_LIMIT, "temp_directory": "", "lock_configuration": True}
        self._worker: DuckWorker | None = None  # runs the queries (relayrag.sql.duck_worker); schema reads stay here
        try:
            self._con = duckdb.connect(str(self.path), read_only=True, config=self._config)
        except Exception as exc:
            raise WarehouseError(f"could not open {self.path} read-only: {exc}") from exc
        self._tables: set[str] | None = None
        self._schema: dict | None = None
        self._values: dict[str, list[str]] | None = None

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
        self._con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _fetch(self, sql: str, params: list | None = None) -> list[tuple]:
        with self._lock:
            return self._con.execute(sql, params or []).fetchall()

    def tables(self) -> set[str]:
        if self._tables is None:
            self._tables = {r[0] for r in self._fetch(
                "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND NOT temporary")}
        return set(self._tables)

    def schema(self) -> dict:
        """Tables, columns, types, primary/foreign keys, row counts, sample values of low-cardinality text."""
        if self._schema is not None:
            return self._schema
        cols: dict[str, list[dict]] = {}
        own = self.tables()  # duckdb_columns() also lists the system catalog's views (duckdb_*, sqlite_*)
        for table, column, dtype in self._fetch(
                "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE schema_name = 'main' "
                "ORDER BY table_name, column_index"):
            if table in own:
                cols.setdefault(table, []).append({"name": column, "type": dtype})
        pks: dict[str, list[str]] = {}
        fks: dict[str, list[dict]] = {}
        for table, ctype, names, ref_table, ref_cols in self._fetch(
                "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
                "referenced_column_names FROM duckdb_constraints() WHERE schema_name = 'main' "
                "AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')"):
            if ctype == "PRIMARY KEY":
                pks[table] = list(names)
            else:
                fks.setdefault(table, []).append({"columns": list(names), "ref_table": ref_table,
                                                  "ref_columns": list(ref_cols or [])})
        for table, comment in self._fetch(
                "SELECT table_name, comment FROM duckdb_tables() WHERE schema_name = 'main'"):
            # keys DuckDB does not enforce (self references), recorded by the SQLite loader as a comment
            if table in cols and comment and str(comment).startswith(FK_COMMENT):
                for text in str(comment)[len(FK_COMMENT):].split("; "):
                    m = re.match(r"\s*(.+?)\s*->\s*([^()]+)\((.*)\)\s*$", text)
                    if m:
                        fks.setdefault(table, []).append({
                            "columns": [c.strip() for c in m.group(1).split(",")], "ref_table": m.group(2).strip(),
                            "ref_columns": [c.strip() for c in m.group(3).split(",")]})
        out = []
        for table in sorted(cols):
            q = _quote(table)
            n_rows = self._fetch(f"SELECT COUNT(*) FROM {q}")[0][0]
            samples: dict[str, list] = {}
            for c in cols[table]:
                if c["type"].upper().startswith("VARCHAR") and n_rows:
                    qc = _quote(c["name"])
                    distinct = self._fetch(f"SELECT COUNT(DISTINCT {qc}) FROM {q}")[0][0]
                    if 0 < distinct <= SAMPLE_MAX_DISTINCT:
                        samples[c["name"]] = [str(r[0])[:40] for r in self._fetch(
                            f"SELECT {qc} FROM {q} WHERE {qc} IS NOT NULL GROUP BY {qc} "
                            f"ORDER BY COUNT(*) DESC, {qc} LIMIT {SAMPLE_VALUES}")]
            entry: dict = {"name": table, "rows": n_rows, "columns": {c["name"]: c["type"] for c in cols[table]}}
            if table in pks:
                entry["primary_key"] = pks[table]
            if table in fks:
                entry["foreign_keys"] = [f"{', '.join(f['columns'])} -> {f['ref_table']}({', '.join(f['ref_columns'])})"
                                         for f in fks[table]]
            if samples:
                entry["samples"] = samples
            out.append(entry)
        self._schema = {"dialect": self.dialect, "tables": out}
        return self._schema

    def distinct_values(self, max_per_column: int = VALUE_INDEX_MAX) -> dict[str, list[str]]:
        """{"Table.Column": distinct values} of every text column with at most `max_per_column` distinct
        non-null values (values cut to 60 characters), for schema linking by value ("AC/DC" → Artist.Name).
        Read once and cached; only this database's own tables."""
        if self._values is not None:
            return self._values
        out: dict[str, list[str]] = {}
        for t in self.schema()["tables"]:
            q = _quote(t["name"])
            for col, typ in t["columns"].items():
                if not str(typ).upper().startswith("VARCHAR"):
                    continue
                qc = _quote(col)
                if self._fetch(f"SELECT COUNT(DISTINCT {qc}) FROM {q}")[0][0] <= max_per_column:
                    out[f"{t['name']}.{col}"] = [str(r[0])[:60] for r in self._fetch(
                        f"SELECT DISTINCT {qc} FROM {q} WHERE {qc} IS NOT NULL")]
        self._values = out
        return out

    def query(self, sql: str) -> QueryResult:
        t0 = time.perf_counter()
        g = guard_sql(sql, allowed_tables=self.tables(), dialect=self.dialect, max_rows=self.max_rows)
        if not g.ok:
            return QueryResult(ok=False, sql=sql, error=f"refused: {g.reason}", refused=True, refusal_code=g.code)
        try:
            executed = self._duckdb_sql(g.sql)
        except Exception as exc:
            return QueryResult(ok=False, sql=g.sql, tables=g.tables, refused=True, refusal_code="dialect",
                               error=f"refused: could not transpile to DuckDB: {exc}"[:500])
        res = QueryResult(ok=False, sql=g.sql, executed_sql=executed, tables=g.tables)
        with self._lock:
            if self._worker is None:
                self._worker = DuckWorker(self.path, self.worker_memory_bytes, self._config)
            try:
                answer = self._worker.query(executed, max_rows=self.max_rows, timeout_s=self.timeout_s,
                                            max_bytes=self.max_result_bytes)
            except WorkerKilled as exc:
                answer = {"ok": False, "kind": exc.kind, "error": str(exc)}
            except (OSError, EOFError, RuntimeError) as exc:
                answer = {"ok": False, "kind": "error", "error": f"query worker failed: {exc}"}
        if not answer["ok"]:
            res.error, res.limit = answer["error"][:1000], answer["kind"] if answer["kind"] != "error" else None
            res.ms = round((time.perf_counter() - t0) * 1000, 2)
            return res
        res.truncated = bool(answer["truncated"])
        return _filled(res, answer["columns"], answer["rows"], self.max_rows, t0, truncated=res.truncated)

    def _duckdb_sql(self, guarded_sql: str) -> str:
        import sqlglot
        trees = [t for t in sqlglot.parse(guarded_sql, read=self.dialect) if t is not None]
        if len(trees) != 1:
            raise ValueError(f"expected one statement, got {len(trees)}")
        unshadow_aliases(trees[0])  # "… AS artist … GROUP BY artist": DuckDB would bind the table Artist
        out = [trees[0].sql(dialect="duckdb")]
        # DuckDB's own parser must agree: one statement, a SELECT (defence in depth beyond sqlglot)
        stmts = self._duckdb.extract_statements(out[0])
        if len(stmts) != 1 or stmts[0].type != self._duckdb.StatementType.SELECT:
            kinds = ", ".join(str(s.type).rsplit(".", 1)[-1] for s in stmts)
            raise ValueError(f"DuckDB sees {len(stmts)} statement(s): {kinds}")
        return out[0]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# ----------------------------------------------------------------------------------------------- loading

_SQLITE_TYPES = [  # (regex on the declared type, DuckDB type); first match wins; see SQLite type affinity
    (r"^(big)?int(eger)?$|^(small|tiny|medium)int$|^int\d$", "BIGINT"),
    (r"^(numeric|decimal)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$", None),  # DECIMAL(p,s), filled below
    (r"^datetime$|^timestamp$", "TIMESTAMP"),
    (r"^date$", "DATE"),
    (r"^bool(ean)?$", "BOOLEAN"),
    (r"int", "BIGINT"),
    (r"char|clob|text", "VARCHAR"),
    (r"blob|^$", "BLOB"),
    (r"real|floa|doub", "DOUBLE"),
]


def _duck_type(declared: str) -> str:
    d = (declared or "").strip().lower()
    for pattern, target in _SQLITE_TYPES:
        m = re.search(pattern, d)
        if m:
            if target is None:
                p, s = int(m.group(2)), int(m.group(3))
                return f"DECIMAL({min(max(p, 1), 38)},{min(s, 38)})"
            return target
    return "DOUBLE"  # NUMERIC affinity


def _sqlite_to_duckdb(src: Path, con) -> list[str]:
    """Copy every user table of a SQLite file (opened read-only) into DuckDB with types, keys and rows.
    (DuckDB's sqlite extension would be simpler but is a download, unavailable offline.)"""
    sq = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    try:
        names = [r[0] for r in sq.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        unusable = [t for t in names if not _usable_table_name(t)]
        if unusable:
            raise WarehouseError(
                f"{src}: table name{'s' if len(unusable) > 1 else ''} "
                f"{', '.join(repr(t) for t in unusable)} cannot be queried here (a '.', a '\"', a control "
                "character or an empty name: the SQL guard would read it as schema.table or a broken "
                "identifier); rename the table in the SQLite file and load it again")
        info = {t: sq.execute(f"PRAGMA table_info({_quote(t)})").fetchall() for t in names}
        fk_rows = {t: sq.execute(f"PRAGMA foreign_key_list({_quote(t)})").fetchall() for t in names}
        existing = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        clash = sorted(existing & set(names))
        if clash:
            raise WarehouseError(f"tables already in the warehouse: {', '.join(clash)} (use --replace)")
        # referenced tables first (self references are fine in one CREATE)
        order: list[str] = []

        def visit(t: str, seen: tuple = ()) -> None:
            if t in order or t in seen or t not in info:
                return
            for fk in fk_rows[t]:
                visit(fk[2], seen + (t,))
            order.append(t)
        for t in names:
            visit(t)
        for t in order:
            cols = info[t]
            pk = [c[1] for c in sorted(cols, key=lambda c: c[5]) if c[5]]
            parts = [f"{_quote(c[1])} {_duck_type(c[2])}" + (" NOT NULL" if c[3] else "") for c in cols]
            if pk:
                parts.append(f"PRIMARY KEY ({', '.join(_quote(c) for c in pk)})")
            groups: dict[int, list] = {}
            for fk in fk_rows[t]:  # (id, seq, table, from, to, ...)
                groups.setdefault(fk[0], []).append(fk)
            fk_parts: list[str] = []
            fk_texts: list[str] = []
            unenforced: list[str] = []  # "A, B -> Ref(C, D)" kept as the table's comment (schema() reads it)
            for fk in groups.values():
                fk = sorted(fk, key=lambda r: r[1])
                ref = fk[0][2]
                to = [r[4] for r in fk]
                if ref not in info:
                    continue
                if not all(to):  # REFERENCES Ref without columns: Ref's primary key
                    to = [c[1] for c in sorted(info[ref], key=lambda c: c[5]) if c[5]]
                    if len(to) != len(fk):
                        continue
                text = f"{', '.join(r[3] for r in fk)} -> {ref}({', '.join(to)})"
                # self references (Employee.ReportsTo) are not enforced: DuckDB checks them per statement,
                # so a columnar batch holding both rows would fail; the key is still recorded
                if ref == t:
                    unenforced.append(text)
                    continue
                fk_parts.append(f"FOREIGN KEY ({', '.join(_quote(r[3]) for r in fk)}) REFERENCES "
                                f"{_quote(ref)} ({', '.join(_quote(c) for c in to)})")
                fk_texts.append(text)
            try:
                con.execute(f"CREATE TABLE {_quote(t)} ({', '.join(parts + fk_parts)})")
            except Exception:  # a key DuckDB cannot enforce: keep the table and the keys as its comment
                con.execute(f"CREATE TABLE {_quote(t)} ({', '.join(parts)})")
                unenforced = fk_texts + unenforced
            if unenforced:
                literal = (FK_COMMENT + "; ".join(unenforced)).replace("'", "''")  # COMMENT takes no parameters
                con.execute(f"COMMENT ON TABLE {_quote(t)} IS '{literal}'")
            # columnar batches: one INSERT … SELECT UNNEST(?) per batch (executemany is ~100x slower)
            types = [_duck_type(c[2]) for c in cols]
            select = ", ".join(f"CAST(UNNEST(?) AS {ty})" for ty in types)
            cur = sq.execute(f"SELECT * FROM {_quote(t)}")
            while True:
                batch = cur.fetchmany(20000)
                if not batch:
                    break
                columns = [[_loadable(v) for v in col] for col in zip(*batch)]
                con.execute(f"INSERT INTO {_quote(t)} SELECT {select}", columns)
        return order
    finally:
        sq.close()


def _loadable(v: Any) -> Any:
    """SQLite values as one type per column list: numbers and text go in as text and DuckDB casts them
    to the column type (a list mixing int, float and str would not bind)."""
    if v is None or isinstance(v, (bytes, str)):
        return v
    return repr(v) if isinstance(v, float) else str(v)


def _usable_table_name(name: str) -> bool:
    """A table name the SQL guard and the generated SQL read as one identifier: not empty, no '.', no '"', no
    control character."""
    return bool(name.strip()) and not any(c in name for c in '."') and not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F
                                                                            for c in name)


def _table_name(path: Path) -> str:
    name = re.sub(r"[^0-9A-Za-z_]", "_", path.name.split(".")[0]) or "t"
    return name if not name[0].isdigit() else f"t_{name}"


CSV_DELIMITERS = (",", ";", "\t", "|")


def _csv_delimiter(path: Path, header_line: str) -> str:
    """`\t` for .tsv; else the candidate (`,` `;` tab `|`) that occurs most often in the header line outside
    double quotes (`,` when none does: a one-column file)."""
    if path.suffix.lower() == ".tsv":
        return "\t"
    unquoted = re.sub(r'"[^"]*"', "", header_line)
    counts = {d: unquoted.count(d) for d in CSV_DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] else ","


def check_csv(path: Path) -> tuple[str, int]:
    """Check that a CSV/TSV file is a table before DuckDB reads it: not empty, UTF-8, quotes closed, and
    every row has as many fields as the header. Returns (delimiter, number of header fields). Raises
    WarehouseError naming the file and the line. DuckDB's sniffer does not: a row with an extra field made it
    fall back to one column named after the whole header line, or drop the rows before the bad one."""
    if path.stat().st_size == 0:
        raise WarehouseError(f"{path}: empty file (a CSV needs at least a header row)")
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            header_line = ""
            for header_line in fh:
                if header_line.strip():
                    break
            if not header_line.strip():
                raise WarehouseError(f"{path}: no header row (the file holds only blank lines)")
            delim = _csv_delimiter(path, header_line)
            fh.seek(0)
            reader = csv.reader(fh, delimiter=delim, quotechar='"', doublequote=True, strict=True)
            n_header = None
            try:
                for row in reader:
                    if not row or (len(row) == 1 and not row[0].strip()):
                        continue  # blank line
                    if n_header is None:
                        n_header = len(row)
                    elif len(row) != n_header:
                        shown = "tab" if delim == "\t" else repr(delim)
                        raise WarehouseError(f"{path}: line {reader.line_num}: {len(row)} fields, but the header "
                                             f"has {n_header} (fields separated by {shown}); fix the row or quote "
                                             "the field that contains the separator")
            except csv.Error as exc:
                raise WarehouseError(f"{path}: line {reader.line_num}: malformed CSV ({exc}); a quoted field "
                                     "must end with a closing double quote, and a quote inside it is written "
                                     "twice (\"\")") from None
    except UnicodeDecodeError as exc:
        raise WarehouseError(f"{path}: not UTF-8 text (byte {exc.start}): save the file as UTF-8") from None
    return delim, n_header or 0


def load_into_duckdb(sources: list[Path], db_path: Path, *, replace: bool = False) -> list[str]:
    """Load CSV / Parquet files (one table each, named after the file) or SQLite databases (all their
    tables) into the DuckDB file `db_path` (created if missing). Returns the tables written.

    All or nothing: the load works on a copy that replaces `db_path` only when every file loaded, so a bad
    file (WarehouseError naming it; a CSV is checked by `check_csv`) leaves the previous database as it was."""
    import duckdb
    db_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = db_path.with_name(db_path.name + ".loading")
    tmp.unlink(missing_ok=True)
    if db_path.exists() and not replace:
        shutil.copyfile(db_path, tmp)
    written: list[str] = []
    con = duckdb.connect(str(tmp))
    try:
        for src in sources:
            suffix = src.suffix.lower()
            if suffix in (".sqlite", ".sqlite3", ".db") or _is_sqlite(src):
                written += _sqlite_to_duckdb(src, con)
            elif suffix in (".parquet", ".pq"):
                if src.stat().st_size == 0:
                    raise WarehouseError(f"{src}: empty file")
                t = _table_name(src)
                con.execute(f"CREATE OR REPLACE TABLE {_quote(t)} AS SELECT * FROM read_parquet(?)", [str(src)])
                written.append(t)
            elif suffix in (".csv", ".tsv"):
                delim, n_fields = check_csv(src)
                t = _table_name(src)
                con.execute(f"CREATE OR REPLACE TABLE {_quote(t)} AS SELECT * FROM read_csv(?, delim = ?, "
                            "quote = '\"', escape = '\"', strict_mode = true)", [str(src), delim])
                n_cols = len(con.execute(f"SELECT * FROM {_quote(t)} LIMIT 0").description)
                if n_cols != n_fields:
                    raise WarehouseError(f"{src}: DuckDB read {n_cols} columns, but the header has {n_fields} "
                                         "fields")
                written.append(t)
            else:
                raise WarehouseError(f"{src}: not a CSV, Parquet or SQLite file")
        con.execute("CHECKPOINT")
    except WarehouseError:
        con.close()
        tmp.unlink(missing_ok=True)
        raise
    except Exception as exc:
        con.close()
        tmp.unlink(missing_ok=True)
        raise WarehouseError(f"loading failed: {type(exc).__name__}: {exc}") from exc
    con.close()
    tmp.replace(db_path)  # readers see the old file or the new one, never a half-loaded one
    return written


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


# ----------------------------------------------------------------------------------------------- registry

def store_config(home: Path, collection: str, source: str | Path, wh=None, store=None) -> dict:
    """Validate `source` (structure, then against the collection's warehouse) and store it verbatim in
    `store` (relayrag.sql.config.SqlConfigStore; default the embedded one under `home`). Returns {"config",
    "source", "glossary", "filters", "examples", "tables"}. Raises ConfigError, WarehouseError."""
    from relayrag.naming import validate_collection
    from relayrag.sql import config as sqlconfig
    validate_collection(collection)
    source = Path(source)
    cfg = sqlconfig.parse_config(source)
    store = store or sqlconfig.local_config_store(home)
    if wh is None:
        wh = open_warehouse(home, collection, apply_config=False, configs=store)
    if wh is None:
        raise WarehouseError(f"collection {collection!r} has no warehouse; run `relayrag warehouse load PATH "
                             f"--collection {collection}` first")
    cfg = sqlconfig.check_config(cfg, wh, str(source))
    stored = store.put(collection, source.read_bytes())
    return sqlconfig.summarize(cfg, stored, source)


def load_warehouse(home: Path, collection: str, paths: list[Path], *, replace: bool = False,
                   config: Path | None = None, configs=None) -> dict:
    """Load files into RELAYRAG_HOME/warehouses/<collection>.duckdb and record it (JSON next to it).

    config: a `relayrag.sql.yaml` (relayrag.sql.config) to store with the warehouse. Its structure is
    checked before anything is loaded; its SQL against the loaded tables, after. If that fails, the tables
    stay loaded, the config is not stored, and the ConfigError says so. Without `config`, a config stored
    earlier is re-checked against the new tables: the result has `config` (a summary) or `config_error`."""
    from relayrag.naming import validate_collection
    from relayrag.sql import config as sqlconfig
    validate_collection(collection)
    configs = configs or sqlconfig.local_config_store(home)
    if config is not None:
        sqlconfig.parse_config(config)  # fail on a malformed file before touching the warehouse
    sources: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            sources += sorted(x for x in p.iterdir() if x.is_file() and (
                x.suffix.lower() in (".csv", ".tsv", ".parquet", ".pq", ".sqlite", ".sqlite3", ".db")))
        elif p.is_file():
            sources.append(p)
        else:
            raise WarehouseError(f"{p}: no such file or folder")
    if not sources:
        raise WarehouseError("nothing to load: give CSV, Parquet or SQLite files")
    d = warehouse_dir(home)
    db = d / f"{collection}.duckdb"
    t0 = time.time()
    written = load_into_duckdb(sources, db, replace=replace)
    _forget(db)  # DuckDB caches one instance per path: close ours so the new file is what opens next
    with DuckDBWarehouse(db) as wh:
        tables = sorted(wh.tables())
    old = warehouse_record(home, collection) or {}
    rec = {"collection": collection, "engine": "duckdb", "path": str(db), "tables": tables,
           "sources": sorted(set(([] if replace else old.get("sources", [])) + [str(s.resolve()) for s in sources])),
           "loaded_at": time.time()}
    tmp = d / f"{collection}.json.tmp"
    tmp.write_text(json.dumps(rec, indent=2), encoding="utf-8")
    tmp.replace(d / f"{collection}.json")
    out = {**rec, "written": written, "seconds": round(time.time() - t0, 2)}
    wh = open_warehouse(home, collection, apply_config=False, configs=configs)
    if config is not None:
        try:
            out["config"] = store_config(home, collection, config, wh=wh, store=configs)
        except ConfigError as exc:
            raise ConfigError(f"{exc}\n(the tables were loaded; the SQL config was not stored: fix it and run "
                              f"`relayrag warehouse config FILE --collection {collection}`)") from None
    elif configs.exists(collection):
        stored = configs.location(collection)
        try:
            cfg = configs.get(collection)
            assert cfg is not None
            out["config"] = sqlconfig.summarize(sqlconfig.check_config(cfg, wh, stored), stored)
        except ConfigError as exc:
            out["config_error"] = str(exc)
    return out


_open: dict[tuple[str, float], DuckDBWarehouse] = {}
_open_lock = threading.Lock()


def _forget(path: Path) -> None:
    with _open_lock:
        for k in [k for k in _open if k[0] == str(path)]:
            _open.pop(k).close()


def open_warehouse(home: Path, collection: str, *, timeout_s: float = 10.0, max_rows: int = 1000,
                   apply_config: bool = True, configs=None) -> Warehouse | AllowListWarehouse | None:
    """The collection's warehouse (cached per file version), or None when it has none. With
    `apply_config` (default) and a stored SQL config that has a `tables` allow-list, the warehouse is
    wrapped so that only those tables are visible and queryable. Raises ConfigError if the stored
    config no longer validates. `configs`: where SQL configs are stored (relayrag.sql.config.SqlConfigStore;
    default the embedded one under `home`)."""
    bq = _bigquery_record(collection)
    wh: Warehouse | None
    if bq is not None:
        wh = _open_bigquery(bq, timeout_s=timeout_s, max_rows=max_rows)
    else:
        wh = _open_duckdb(home, collection, timeout_s=timeout_s, max_rows=max_rows)
    if wh is None or not apply_config:
        return wh
    from relayrag.sql.config import load_config
    cfg = load_config(home, collection, configs)
    if cfg is not None and cfg.tables is not None:
        return AllowListWarehouse(wh, cfg.allowed_tables(wh.tables()))
    return wh


def list_warehouses(home: Path, configs=None) -> list[dict]:
    """Every collection that has a warehouse: [{collection, engine, path, tables, loaded_at, config}],
    `config` being where its SQL config is stored (in `configs`, default the embedded store) or None.
    Sorted by collection name."""
    from relayrag.sql.config import local_config_store
    configs = configs or local_config_store(home)
    out = []
    for name in warehouse_collections(home):
        rec = warehouse_record(home, name) or {}
        out.append({"collection": name, "engine": rec.get("engine", "duckdb"), "path": rec.get("path"),
                    "tables": list(rec.get("tables") or []), "loaded_at": rec.get("loaded_at"),
                    "config": configs.location(name) if configs.exists(name) else None})
    return out


class AllowListWarehouse:
    """A warehouse restricted to some of its tables (the SQL config's `tables`): `tables()` and `schema()`
    show only those, and `query` refuses any other table before the inner warehouse sees the SQL."""

    def __init__(self, inner: Warehouse, allowed: set[str]):
        self.inner = inner
        self.allowed = frozenset(allowed)

    @property
    def dialect(self) -> str:
        return self.inner.dialect

    def __getattr__(self, name: str):  # path, max_rows, timeout_s ... of the inner warehouse
        return getattr(self.inner, name)

    def tables(self) -> set[str]:
        return set(self.inner.tables()) & set(self.allowed)

    def schema(self) -> dict:
        full = self.inner.schema()
        keep = {t.lower() for t in self.tables()}
        return {**full, "tables": [t for t in full.get("tables", []) if t["name"].lower() in keep]}

    def distinct_values(self, max_per_column: int = VALUE_INDEX_MAX) -> dict[str, list[str]]:
        """The inner warehouse's value index (DuckDB only; {} otherwise), allowed tables only."""
        inner = getattr(self.inner, "distinct_values", None)
        keep = {t.lower() for t in self.tables()}
        return {k: v for k, v in (inner(max_per_column) if inner else {}).items()
                if k.split(".", 1)[0].lower() in keep}

    def query(self, sql: str) -> QueryResult:
        g = guard_sql(sql, allowed_tables=self.tables(), dialect=self.dialect,
                      max_rows=getattr(self.inner, "max_rows", 1000))
        if not g.ok:
            return QueryResult(ok=False, sql=sql, error=f"refused: {g.reason}", refused=True, refusal_code=g.code)
        return self.inner.query(g.sql)


_open_bq: dict[tuple, "BigQueryWarehouse"] = {}


def _open_bigquery(rec: dict, *, timeout_s: float, max_rows: int) -> "BigQueryWarehouse":
    """One BigQueryWarehouse per (project, dataset, budget) per process (its table list is cached)."""
    key = (rec["project"], rec["dataset"], int(rec["max_bytes_billed"]))
    with _open_lock:
        wh = _open_bq.get(key)
        if wh is None:
            wh = _open_bq[key] = BigQueryWarehouse(rec["project"], rec["dataset"],
                                                   max_bytes_billed=rec["max_bytes_billed"])
        wh.timeout_s, wh.max_rows = timeout_s, max_rows
    return wh


def _open_duckdb(home: Path, collection: str, *, timeout_s: float, max_rows: int) -> DuckDBWarehouse | None:
    rec = warehouse_record(home, collection)
    if rec is None:
        return None
    if rec.get("engine", "duckdb") != "duckdb":
        raise ConfigError(f"warehouse engine {rec.get('engine')!r} is not supported by the embedded engine")
    path = Path(rec["path"])
    if not path.is_file():
        return None
    key = (str(path), path.stat().st_mtime)
    with _open_lock:
        wh = _open.get(key)
        if wh is None:
            for k in [k for k in _open if k[0] == key[0]]:
                _open.pop(k).close()
            wh = _open[key] = DuckDBWarehouse(path, timeout_s=timeout_s, max_rows=max_rows)
        wh.timeout_s, wh.max_rows = timeout_s, max_rows
    return wh


# ----------------------------------------------------------------------------------------------- BigQuery

class BigQueryWarehouse:
    """BigQuery through google-cloud-bigquery (extra `gcp`); `client` may be a test double."""

    dialect = "bigquery"

    def __init__(self, project: str, dataset: str, *, max_bytes_billed: int = 1_000_000_000,
                 timeout_s: float = 30.0, max_rows: int = 1000, client: Any = None, bigquery_module: Any = None):
        self.project, self.dataset = project, dataset
        self.max_bytes_billed = int(max_bytes_billed)
        self.timeout_s = timeout_s
        self.max_rows = max_rows
        self.max_result_bytes = MAX_RESULT_BYTES
        self._bq = bigquery_module
        self._client = client
        self._tables: set[str] | None = None

    @property
    def bq(self):
        if self._bq is None:
            try:
                from google.cloud import bigquery  # type: ignore
            except ImportError as exc:
                raise ConfigError("the BigQuery warehouse needs google-cloud-bigquery: "
                                  "pip install 'relayrag[gcp]'") from exc
            self._bq = bigquery
        return self._bq

    @property
    def client(self):
        if self._client is None:
            self._client = self.bq.Client(project=self.project or None)
        return self._client

    def _dataset_id(self) -> str:
        return f"{self.project}.{self.dataset}" if self.project else self.dataset

    def tables(self) -> set[str]:
        if self._tables is None:
            names = {t.table_id for t in self.client.list_tables(self._dataset_id())}
            self._tables = names | {f"{self.dataset}.{n}" for n in names} | (
                {f"{self.project}.{self.dataset}.{n}" for n in names} if self.project else set())
        return set(self._tables)

    def schema(self) -> dict:
        out = []
        for name in sorted(t for t in self.tables() if "." not in t):
            table = self.client.get_table(f"{self._dataset_id()}.{name}")
            out.append({"name": name, "rows": getattr(table, "num_rows", None),
                        "columns": [{"name": f.name, "type": f.field_type} for f in table.schema]})
        return {"dialect": self.dialect, "dataset": self.dataset, "tables": out}

    def _config(self, **kw):
        return self.bq.QueryJobConfig(default_dataset=self._dataset_id(), **kw)

    def query(self, sql: str) -> QueryResult:
        t0 = time.perf_counter()
        g = guard_sql(sql, allowed_tables=self.tables(), dialect=self.dialect, max_rows=self.max_rows)
        if not g.ok:
            return QueryResult(ok=False, sql=sql, error=f"refused: {g.reason}", refused=True, refusal_code=g.code)
        res = QueryResult(ok=False, sql=g.sql, executed_sql=g.sql, tables=g.tables)
        try:
            dry = self.client.query(g.sql, job_config=self._config(dry_run=True, use_query_cache=False))
            est = int(dry.total_bytes_processed or 0)
        except Exception as exc:
            res.error = f"dry run failed: {type(exc).__name__}: {exc}"[:1000]
            return res
        res.bytes_estimated = est
        if est > self.max_bytes_billed:
            res.refused, res.refusal_code = True, "budget"
            res.error = (f"refused: the query would process {est:,} bytes, over the budget of "
                         f"{self.max_bytes_billed:,} bytes")
            return res
        try:
            job = self.client.query(g.sql, job_config=self._config(
                maximum_bytes_billed=self.max_bytes_billed, job_timeout_ms=int(self.timeout_s * 1000)),
                timeout=self.timeout_s)
            rows_iter = job.result(timeout=self.timeout_s, max_results=self.max_rows + 1)
            rows = [list(r.values()) if hasattr(r, "values") else list(r) for r in rows_iter]
            columns = [f.name for f in (getattr(rows_iter, "schema", None) or [])]
        except Exception as exc:
            res.error = f"{type(exc).__name__}: {exc}"[:1000]
            if isinstance(exc, TimeoutError) or "timeout" in type(exc).__name__.lower() or "timed out" in str(exc):
                res.limit = "timeout"
            res.ms = round((time.perf_counter() - t0) * 1000, 2)
            return res
        size = len(json.dumps([[json_value(v) for v in r] for r in rows[: self.max_rows]], default=str))
        if size > self.max_result_bytes:
            res.error, res.limit = (f"result too large: over {self.max_result_bytes:,} bytes of JSON; select fewer "
                                    f"or shorter columns, or aggregate"), "result_bytes"
            res.ms = round((time.perf_counter() - t0) * 1000, 2)
            return res
        return _filled(res, columns, rows, self.max_rows, t0)
