"""A google-cloud-bigquery client double whose queries really run: the Chinook tables in a read-only DuckDB file,
BigQuery SQL transpiled by sqlglot (as the embedded warehouse does), a dry run that reports a fixed byte count,
and rows / schema shaped like the client library's (`Row.values()`, `RowIterator.schema`). For tests that must
see the same rows from BigQuery as from the embedded warehouse (templates on BigQuery, issue 25)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import duckdb
import sqlglot

from relayrag.sql.guard import unshadow_aliases

_TYPES = {"VARCHAR": "STRING", "BIGINT": "INT64", "INTEGER": "INT64", "DOUBLE": "FLOAT64", "TIMESTAMP": "TIMESTAMP",
          "DATE": "DATE", "BOOLEAN": "BOOL", "BLOB": "BYTES"}


class Row(tuple):
    def values(self):
        return tuple(self)


class RowIterator(list):
    def __init__(self, rows, names):
        super().__init__(Row(r) for r in rows)
        self.schema = [SimpleNamespace(name=n) for n in names]


class QueryJobConfig:
    def __init__(self, **kw):
        self.__dict__.update(kw)


MODULE = SimpleNamespace(QueryJobConfig=QueryJobConfig)


class ChinookClient:
    """`calls`: ("dry_run" | "query", sql) in order."""

    def __init__(self, db: Path, bytes_processed: int = 10_000):
        self.con = duckdb.connect(str(db), read_only=True)
        self.bytes_processed = bytes_processed
        self.calls: list[tuple[str, str]] = []

    def list_tables(self, dataset):
        names = [r[0] for r in self.con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        return [SimpleNamespace(table_id=n) for n in names]

    def get_table(self, table_id):
        name = table_id.rsplit(".", 1)[-1]
        cols = self.con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                                "ORDER BY column_index", [name]).fetchall()
        rows = self.con.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
        return SimpleNamespace(num_rows=rows, schema=[
            SimpleNamespace(name=c, field_type="NUMERIC" if t.startswith("DECIMAL") else _TYPES.get(t, "STRING"))
            for c, t in cols])

    def query(self, sql, job_config=None, timeout=None):
        if getattr(job_config, "dry_run", False):
            self.calls.append(("dry_run", sql))
            return SimpleNamespace(total_bytes_processed=self.bytes_processed)
        self.calls.append(("query", sql))
        tree = sqlglot.parse_one(sql, read="bigquery")
        unshadow_aliases(tree)
        cur = self.con.execute(tree.sql(dialect="duckdb"))
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()

        class Job:
            def result(self, timeout=None, max_results=None):
                return RowIterator(rows[:max_results] if max_results else rows, names)
        return Job()
