"""The SQL guard: the adversarial bench, stacked queries, comments, CTE-wrapped DML, every denied function,
case and quoting variants; refusals are results, never exceptions; LIMIT added or capped."""

import json
from pathlib import Path

import pytest

from relayrag.sql.guard import DENIED_FUNCTIONS, GuardResult, guard_sql

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "text2sql"
TABLES = {"Album", "Artist", "Customer", "Employee", "Genre", "Invoice", "InvoiceLine", "MediaType", "Playlist",
          "PlaylistTrack", "Track"}


def load(name):
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def g(sql, dialect="bigquery", **kw) -> GuardResult:
    return guard_sql(sql, allowed_tables=kw.pop("allowed", TABLES), dialect=dialect, **kw)


@pytest.mark.parametrize("item", [x for x in load("adversarial_dev.jsonl") if x["kind"] == "sql"], ids=lambda x: x["id"])
@pytest.mark.parametrize("dialect", ["bigquery", "duckdb", "sqlite"])
def test_adversarial_bench_is_refused(item, dialect):
    r = g(item["input"], dialect)
    assert not r.ok and r.reason and r.sql == ""


@pytest.mark.parametrize("item", load("dev.jsonl"), ids=lambda x: x["id"])
def test_dev_gold_sql_is_not_refused(item):
    for dialect in ("bigquery", "sqlite"):
        r = g(item["gold_sql"], dialect)
        assert r.ok, (dialect, r.reason)
        assert r.tables and set(r.tables) <= TABLES


ATTACKS = [
    # DDL / DML / scripting / engine commands
    "DROP TABLE Album", "drop table album", "DrOp TaBlE `Album`", "DELETE FROM Invoice", "delete from invoice where 1=1",
    "UPDATE Track SET UnitPrice = 1.99", "INSERT INTO Genre VALUES (99, 'x')", "INSERT INTO Genre SELECT * FROM Genre",
    "MERGE INTO Genre g USING Genre s ON g.GenreId = s.GenreId WHEN MATCHED THEN DELETE",
    "CREATE TABLE x AS SELECT * FROM Album", "CREATE TEMP TABLE x AS SELECT 1", "CREATE VIEW v AS SELECT * FROM Album",
    "ALTER TABLE Album ADD COLUMN x INT64", "TRUNCATE TABLE Album", "ATTACH DATABASE '/tmp/evil.db' AS evil",
    "ATTACH '/tmp/evil.duckdb' AS evil", "DETACH evil", "PRAGMA table_info(Album)", "PRAGMA writable_schema = 1",
    "VACUUM", "VACUUM INTO '/tmp/copy.db'", "COPY Album TO '/tmp/album.csv'", "EXPORT DATABASE '/tmp/x'",
    "EXPORT DATA OPTIONS(uri='gs://b/*.csv', format='CSV') AS SELECT * FROM Album", "CALL pragma_version()",
    "SET threads = 1", "SET enable_external_access = true", "INSTALL httpfs", "LOAD httpfs", "USE other",
    "BEGIN TRANSACTION", "COMMIT", "ROLLBACK", "DECLARE x INT64", "BEGIN SELECT 1; END",
    "GRANT SELECT ON Album TO bob", "SELECT * INTO newtab FROM Album", "EXECUTE IMMEDIATE 'DROP TABLE Album'",
    "LOAD DATA INTO Album FROM FILES (format='CSV', uris=['gs://b/x.csv'])", "CHECKPOINT", "SHOW TABLES",
    "DESCRIBE Album", "SUMMARIZE Album",
    # stacked statements and comments hiding a second statement
    "SELECT 1; DROP TABLE Album", "SELECT * FROM Album; DELETE FROM Album", "SELECT 1;SELECT 2",
    "SELECT 1 --\n; DELETE FROM InvoiceLine", "SELECT 1 /* comment */; DROP TABLE Album",
    "SELECT 1 # bigquery comment\n; DROP TABLE Album", "/* hi */ DROP TABLE Album", "-- x\nDELETE FROM Invoice",
    "SELECT 1 /*; DROP TABLE Album; */ ; DROP TABLE Track",
    # CTE-wrapped DML, writes nested in a query
    "WITH d AS (DELETE FROM Invoice RETURNING *) SELECT * FROM d",
    "WITH u AS (UPDATE Track SET UnitPrice = 0 RETURNING *) SELECT COUNT(*) FROM u",
    "WITH x AS (SELECT 1) DELETE FROM Invoice",
    "SELECT * FROM (DELETE FROM Invoice RETURNING *)",
    # tables not allowed: system catalogs, other databases, file paths as tables
    "SELECT * FROM sqlite_master", "SELECT * FROM information_schema.tables", "SELECT * FROM evil.Album",
    "SELECT * FROM `other-project.ds.Album`", "SELECT * FROM '/etc/passwd'", "SELECT * FROM \"/etc/passwd\"",
    "SELECT * FROM 'data.csv'", "SELECT * FROM Albums", "SELECT * FROM Album a JOIN secrets s ON a.AlbumId = s.id",
    "SELECT (SELECT MAX(x) FROM secrets) FROM Album", "SELECT * FROM Album WHERE AlbumId IN (SELECT id FROM secrets)",
    # table-valued functions in FROM
    "SELECT * FROM duckdb_settings()", "SELECT * FROM duckdb_tables()", "SELECT * FROM pragma_table_info('Album')",
    "SELECT * FROM generate_series(1, 10)", "SELECT * FROM range(10)", "SELECT * FROM my_tvf(1)",
    # not SQL / empty / garbage
    "", "   ", ";", "-- only a comment", "DROP", "SELEC * FROM Album", "SELECT * FROM Album WHERE",
    "SELECT 1\x00; DROP TABLE Album", "x" * 30_000,
]


@pytest.mark.parametrize("sql", ATTACKS)
def test_attacks_are_refused(sql):
    for dialect in ("bigquery", "duckdb"):
        r = g(sql, dialect)
        assert isinstance(r, GuardResult)
        assert not r.ok and r.reason and r.code, (dialect, sql, r)


DENIED_CALLS = {
    "read_csv": "read_csv('/etc/passwd')", "read_csv_auto": "read_csv_auto('/etc/passwd')",
    "read_parquet": "read_parquet('x.parquet')", "parquet_scan": "parquet_scan('x.parquet')",
    "read_json": "read_json('x.json')", "read_json_auto": "read_json_auto('x.json')",
    "read_ndjson": "read_ndjson('x')", "read_text": "read_text('/etc/passwd')", "read_blob": "read_blob('/etc/passwd')",
    "glob": "glob('/*')", "load_extension": "load_extension('evil.so')",
    "external_query": "EXTERNAL_QUERY('conn', 'SELECT 1')", "sqlite_scan": "sqlite_scan('x.db', 't')",
    "sqlite_attach": "sqlite_attach('x.db')", "postgres_scan": "postgres_scan('dsn', 'public', 't')",
    "getenv": "getenv('HOME')", "current_setting": "current_setting('threads')",
    "duckdb_settings": "duckdb_settings()", "pragma_version": "pragma_version()", "query": "query('SELECT 1')",
    "readfile": "readfile('/etc/passwd')", "writefile": "writefile('/tmp/x', 'y')",
    "pg_read_file": "pg_read_file('/etc/passwd')", "iceberg_scan": "iceberg_scan('s3://b/t')",
    "delta_scan": "delta_scan('s3://b/t')", "st_read": "st_read('x.shp')",
}


@pytest.mark.parametrize("name", sorted(DENIED_CALLS))
@pytest.mark.parametrize("where", ["from", "select", "where", "cte", "subquery"])
def test_each_denied_function_is_refused_anywhere(name, where):
    call = DENIED_CALLS[name]
    sql = {"from": f"SELECT * FROM {call}",
           "select": f"SELECT {call} AS x FROM Album",
           "where": f"SELECT * FROM Album WHERE Title = {call}",
           "cte": f"WITH c AS (SELECT * FROM {call}) SELECT * FROM c",
           "subquery": f"SELECT * FROM Album WHERE AlbumId IN (SELECT 1 FROM {call})"}[where]
    for variant in (sql, sql.upper().replace("'/ETC/PASSWD'", "'/etc/passwd'")):
        r = g(variant, "duckdb")
        assert not r.ok, (variant, r)
        r = g(variant, "bigquery")
        assert not r.ok, (variant, r)


def test_deny_list_is_covered_by_the_tests():
    assert {"read_csv", "read_parquet", "read_json", "glob", "load_extension", "external_query",
            "sqlite_scan"} <= DENIED_FUNCTIONS


@pytest.mark.parametrize("sql,tables", [
    ("SELECT COUNT(*) FROM Customer WHERE Country = 'Brazil'", ["Customer"]),
    ("select count(*) from customer where country = 'Brazil'", ["customer"]),
    ("SELECT COUNT(*) FROM `Customer`", ["Customer"]),
    ('SELECT "FirstName" FROM "Customer"', ["Customer"]),
    ("SELECT c.FirstName, i.Total FROM Customer AS c JOIN Invoice AS i ON c.CustomerId = i.CustomerId", ["Customer", "Invoice"]),
    ("WITH top AS (SELECT CustomerId, SUM(Total) AS s FROM Invoice GROUP BY CustomerId) "
     "SELECT c.FirstName, t.s FROM top t JOIN Customer c USING (CustomerId)", ["Invoice", "Customer"]),
    ("SELECT Name FROM Artist UNION ALL SELECT Name FROM Genre", ["Artist", "Genre"]),
    ("SELECT Name FROM Artist INTERSECT DISTINCT SELECT Name FROM Genre", ["Artist", "Genre"]),
    ("SELECT Name FROM Artist EXCEPT DISTINCT SELECT Name FROM Genre", ["Artist", "Genre"]),
    ("(SELECT Name FROM Artist)", ["Artist"]),
    ("SELECT 1", []),
    ("SELECT x FROM UNNEST([1, 2, 3]) AS x", []),
    ("SELECT Name, RANK() OVER (ORDER BY Milliseconds DESC) AS r FROM Track", ["Track"]),
    ("SELECT 'DROP TABLE Album; --' AS s FROM Album", ["Album"]),  # keywords inside a string are data
    ("SELECT COUNT(*) FROM Album; ", ["Album"]),  # one trailing semicolon is one statement
])
def test_plain_selects_pass_with_their_tables(sql, tables):
    r = g(sql)
    assert r.ok, r.reason
    assert sorted(r.tables) == sorted(tables) and r.reason is None
    assert "LIMIT 1000" in r.sql


def test_limit_is_added_kept_or_capped():
    assert g("SELECT * FROM Album").sql.endswith("LIMIT 1000")
    assert g("SELECT * FROM Album LIMIT 5").sql.endswith("LIMIT 5")
    assert g("SELECT * FROM Album LIMIT 5000").sql.endswith("LIMIT 1000")
    assert g("SELECT * FROM Album LIMIT 50", max_rows=10).sql.endswith("LIMIT 10")
    assert g("SELECT Name FROM Artist UNION ALL SELECT Name FROM Genre").sql.endswith("LIMIT 1000")
    assert "ORDER BY" in g("SELECT * FROM Album ORDER BY Title LIMIT 3").sql


def test_comments_are_dropped_from_the_sql_that_runs():
    r = g("SELECT AlbumId /* ; DROP TABLE Album */ FROM Album -- trailing\n")
    assert r.ok and "DROP" not in r.sql and "--" not in r.sql and "/*" not in r.sql


def test_cte_name_cannot_shadow_a_qualified_table():
    assert g("WITH Album AS (SELECT 1 AS a) SELECT * FROM Album").ok
    assert not g("WITH x AS (SELECT 1 AS a) SELECT * FROM evil.x").ok


def test_qualified_names_need_to_be_allowed_as_written():
    allowed = {"Album", "ds.Album"}
    assert g("SELECT * FROM ds.Album", allowed=allowed).ok
    assert not g("SELECT * FROM other.Album", allowed=allowed).ok


@pytest.mark.parametrize("junk", ["'", "\"", "`", "((((", "SELECT (", "SELECT * FROM (SELECT", "🙂", "\\", "$$"])
def test_garbage_never_raises(junk):
    r = g(junk)
    assert not r.ok and r.reason
