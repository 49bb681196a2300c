"""A test double of google.cloud.bigquery for relayrag.retrieval.bigquery_index: the module's request types
(QueryJobConfig, LoadJobConfig, ScalarQueryParameter, ArrayQueryParameter, StructQueryParameter, with the
client library's constructor signatures) and a Client whose `query` / `load_table_from_json` answer like the
service's jobs (`.result(timeout=...)` → rows indexable by column name). Queries really run: the BigQuery SQL
is transpiled with sqlglot to DuckDB and executed over in-memory tables, with the named parameters bound.
VECTOR_SEARCH (no DuckDB counterpart) is rewritten into the exact cosine top-k it computes without an index
(BigQuery's brute force; with an IVF index real results may differ in recall — see docs/DESIGN.md)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import duckdb
import sqlglot


class QueryJobConfig:
    def __init__(self, query_parameters=None, use_query_cache=None, **kw):
        self.query_parameters = list(query_parameters or [])
        self.use_query_cache = use_query_cache
        self.__dict__.update(kw)


class LoadJobConfig:
    def __init__(self, write_disposition=None, **kw):
        self.write_disposition = write_disposition
        self.__dict__.update(kw)


class ScalarQueryParameter:
    def __init__(self, name, type_, value):
        self.name, self.type_, self.value = name, type_, value


class ArrayQueryParameter:
    def __init__(self, name, array_type, values):
        self.name, self.array_type, self.values = name, array_type, values


class StructQueryParameter:
    def __init__(self, name, *sub_params):
        self.name, self.struct_types, self.struct_values = name, {}, {}
        for p in sub_params:
            self.struct_types[p.name] = p.type_
            self.struct_values[p.name] = p.value


TABLES = {
    "chunks": "collection VARCHAR, segment VARCHAR, row BIGINT, chunk_id VARCHAR, source VARCHAR, doc VARCHAR, "
              "title VARCHAR, page BIGINT, start BIGINT, \"end\" BIGINT, text VARCHAR, context VARCHAR, "
              "content_hash VARCHAR, doc_len BIGINT, embedding DOUBLE[]",
    "postings": "collection VARCHAR, segment VARCHAR, row BIGINT, token VARCHAR, tf DOUBLE",
    "tombstones": "collection VARCHAR, segment VARCHAR, version VARCHAR, row BIGINT",
}

VECTOR_SEARCH = re.compile(r"VECTOR_SEARCH\(\((?P<base>.*)\), 'embedding', \(SELECT @q AS embedding\), "
                           r"top_k => @k, distance_type => 'COSINE'\)", re.S)


def _value(p):
    if isinstance(p, ScalarQueryParameter):
        return p.value
    if isinstance(p, ArrayQueryParameter):
        if p.array_type == "STRUCT":
            return [dict(s.struct_values) for s in p.values]
        return list(p.values)
    raise TypeError(f"unsupported parameter {p!r}")


class Client:
    """calls: [(kind, sql or table, config)] in order, for tests that check what was requested."""

    def __init__(self, dataset: str):
        self.dataset = dataset
        self.db = duckdb.connect()
        for name, cols in TABLES.items():
            self.db.execute(f"CREATE TABLE {name} ({cols})")
        self.calls: list[tuple] = []

    def _local(self, sql: str) -> str:
        return sql.replace(f"`{self.dataset}.", "`")

    def load_table_from_json(self, rows, destination, job_config=None):
        self.calls.append(("load", destination, job_config))
        table = destination.rsplit(".", 1)[-1]
        assert job_config is not None and job_config.write_disposition == "WRITE_APPEND"
        cols = [c.split()[0].strip('"') for c in TABLES[table].split(", ")]
        self.db.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' for _ in cols)})",
                            [[r.get(c) for c in cols] for r in rows])
        return SimpleNamespace(result=lambda timeout=None: None)

    def query(self, sql, job_config=None, timeout=None):
        self.calls.append(("query", sql, job_config))
        m = VECTOR_SEARCH.search(sql)
        if m:
            sql = (sql[:m.start()] + f"(SELECT STRUCT(l.chunk_id AS chunk_id) AS base, "
                   f"1 - COSINE_PLACEHOLDER(l.embedding, @q) AS distance FROM ({m['base']}) AS l "
                   f"ORDER BY distance LIMIT @k)" + sql[m.end():])
        duck = sqlglot.transpile(self._local(sql), read="bigquery", write="duckdb")[0]
        duck = duck.replace("COSINE_PLACEHOLDER", "list_cosine_similarity")
        params = {p.name: _value(p) for p in (job_config.query_parameters if job_config else [])}
        used = {n for n in params if f"${n}" in duck}
        cur = self.db.execute(duck, {n: params[n] for n in used})
        if cur.description is None:
            rows = []
        else:
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r)) for r in cur.fetchall()]
        return SimpleNamespace(result=lambda timeout=None: rows)


module = SimpleNamespace(QueryJobConfig=QueryJobConfig, LoadJobConfig=LoadJobConfig,
                         ScalarQueryParameter=ScalarQueryParameter, ArrayQueryParameter=ArrayQueryParameter,
                         StructQueryParameter=StructQueryParameter, Client=Client)
