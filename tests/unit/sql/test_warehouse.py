"""DuckDB warehouse: loading SQLite / CSV / Parquet, schema JSON, guarded read-only queries, timeout, and the
database file unchanged after every attack."""

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from relayrag.sql.warehouse import (DuckDBWarehouse, WarehouseError, load_warehouse, open_warehouse,
                                    warehouse_record)

REPO = Path(__file__).resolve().parents[3]
CHINOOK = REPO / "examples" / "chinook" / "chinook.sqlite"
FIXTURES = REPO / "tests" / "fixtures" / "text2sql"


def sha256(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def chinook_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("wh")
    load_warehouse(home, "chinook", [CHINOOK])
    return home


@pytest.fixture
def wh(chinook_home):
    return open_warehouse(chinook_home, "chinook")


def test_bundled_chinook_is_the_documented_file():
    assert sha256(CHINOOK) == "7651ba378ac2fcd0dfc3c66fb101f7a7eed3ba39a612ec642b96e20702061f15"
    assert (CHINOOK.parent / "LICENSE-chinook.md").read_text().count("MIT") + 1  # licence text next to it
    assert "Permission is hereby granted" in (CHINOOK.parent / "LICENSE-chinook.md").read_text()


def test_sqlite_load_copies_every_table_with_types_and_keys(chinook_home, wh):
    rec = warehouse_record(chinook_home, "chinook")
    assert rec["engine"] == "duckdb" and len(rec["tables"]) == 11
    src = sqlite3.connect(f"file:{CHINOOK}?mode=ro", uri=True)
    for t in rec["tables"]:
        assert wh.query(f"SELECT COUNT(*) AS n FROM {t}").rows[0][0] == src.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
    schema = wh.schema()
    by = {t["name"]: t for t in schema["tables"]}
    assert by["Invoice"]["columns"]["InvoiceDate"] == "TIMESTAMP"
    assert by["Invoice"]["columns"]["Total"] == "DECIMAL(10,2)"
    assert by["Customer"]["primary_key"] == ["CustomerId"]
    assert "SupportRepId -> Employee(EmployeeId)" in by["Customer"]["foreign_keys"]
    assert "Brazil" in by["Customer"]["samples"]["Country"]
    assert "Blues" in by["Genre"]["samples"]["Name"] and len(by["Genre"]["samples"]["Name"]) == 8
    assert "samples" not in by["Track"] or "Name" not in by["Track"]["samples"]  # high cardinality: no samples
    assert len(json.dumps(schema, separators=(",", ":"))) < 20_000  # compact enough for a prompt


def test_a_self_reference_duckdb_cannot_enforce_is_still_a_foreign_key(chinook_home, wh, tmp_path):
    # Employee.ReportsTo -> Employee(EmployeeId): not a DuckDB constraint (checked per statement, the
    # columnar load would fail), kept as the table's comment and listed with the enforced keys
    by = {t["name"]: t for t in wh.schema()["tables"]}
    assert by["Employee"]["foreign_keys"] == ["ReportsTo -> Employee(EmployeeId)"]
    assert wh.query("SELECT COUNT(*) FROM Employee e JOIN Employee m ON e.ReportsTo = m.EmployeeId").rows == [[7]]
    # a bare REFERENCES (the parent's primary key) and a quote in a name survive the comment
    src = tmp_path / "tree.sqlite"
    con = sqlite3.connect(src)
    con.executescript(
        "CREATE TABLE \"Node's\" (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES \"Node's\", label TEXT);"
        "INSERT INTO \"Node's\" VALUES (1, NULL, 'root'), (2, 1, 'child'), (3, 2, 'leaf');")
    con.commit()
    con.close()
    home = tmp_path / "home"
    load_warehouse(home, "tree", [src])
    with open_warehouse(home, "tree") as tree:
        (node,) = tree.schema()["tables"]
        assert node["foreign_keys"] == ["parent -> Node's(id)"] and node["rows"] == 3


def test_query_transpiles_bigquery_and_returns_json_values(wh):
    r = wh.query("SELECT COUNT(*) AS n FROM Customer WHERE Country = 'Brazil'")
    assert r.ok and r.rows == [[5]] and r.columns == ["n"] and r.tables == ["Customer"]
    r = wh.query("SELECT EXTRACT(YEAR FROM InvoiceDate) AS y, ROUND(SUM(Total), 2) AS revenue FROM Invoice "
                 "GROUP BY y ORDER BY y")
    assert r.ok and r.rows[0][0] == 2021 and isinstance(r.rows[0][1], (int, float))
    r = wh.query("SELECT InvoiceDate FROM Invoice ORDER BY InvoiceId LIMIT 1")
    assert r.rows == [["2021-01-01 00:00:00"]]
    r = wh.query("SELECT SAFE_DIVIDE(COUNT(*), 2) AS half FROM Customer")  # BigQuery-only function
    assert r.ok, r.error


def test_an_output_alias_named_like_a_table_groups_by_the_column_not_the_table(wh):
    # DuckDB binds a bare GROUP BY name to a table of the FROM before an output alias: "Binder Error: column
    # Name must appear in the GROUP BY clause" for a query BigQuery runs; the warehouse groups by the column
    sql = ("SELECT Artist.Name AS artist, COUNT(*) AS albums FROM Artist JOIN Album ON Artist.ArtistId = "
           "Album.ArtistId GROUP BY artist ORDER BY albums DESC, artist LIMIT 2")
    r = wh.query(sql)
    assert r.ok, r.error
    assert r.columns == ["artist", "albums"] and r.rows == [["Iron Maiden", 21], ["Led Zeppelin", 14]]
    assert "GROUP BY Artist.Name" in r.executed_sql and r.sql.endswith("LIMIT 2")


def test_rows_are_capped(chinook_home):
    small = open_warehouse(chinook_home, "chinook", max_rows=7)
    r = small.query("SELECT * FROM Track")
    assert r.ok and r.row_count == 7 and len(r.rows) == 7 and "LIMIT 7" in r.sql


def test_errors_and_refusals_are_results(wh):
    r = wh.query("SELECT NoSuchColumn FROM Album")
    assert not r.ok and not r.refused and "NoSuchColumn" in r.error
    r = wh.query("DROP TABLE Album")
    assert not r.ok and r.refused and r.refusal_code == "not_select"


def test_timeout_interrupts_a_long_query(chinook_home):
    slow = open_warehouse(chinook_home, "chinook", timeout_s=0.3)
    r = slow.query("SELECT COUNT(*) AS n FROM Track a, Track b, Track c WHERE a.Name < b.Name")
    assert not r.ok and "timed out" in r.error
    assert slow.query("SELECT COUNT(*) AS n FROM Album").rows == [[347]]  # the connection still works
    slow.timeout_s = 10


def test_connection_is_read_only_without_external_access(chinook_home, wh):
    import duckdb
    con = wh._con  # below the guard: the engine itself must refuse
    with pytest.raises(duckdb.Error):
        con.execute("CREATE TABLE x (a INT)")
    with pytest.raises(duckdb.Error):
        con.execute("SELECT * FROM read_csv('/etc/passwd')")
    with pytest.raises(duckdb.Error):
        con.execute("SET enable_external_access = true")


def test_attacks_leave_the_database_unchanged(chinook_home, wh):
    db = chinook_home / "warehouses" / "chinook.duckdb"
    before, files = sha256(db), sorted(p.name for p in db.parent.iterdir())
    attacks = [json.loads(line)["input"] for line in (FIXTURES / "adversarial_dev.jsonl").read_text().splitlines()
               if json.loads(line)["kind"] == "sql"]
    attacks += ["VACUUM INTO '/tmp/relayrag_evil.db'", "COPY Album TO '/tmp/relayrag_evil.csv'",
                "ATTACH '/tmp/relayrag_evil.duckdb' AS e", "SELECT * FROM read_csv('/etc/passwd')",
                "WITH d AS (DELETE FROM Invoice RETURNING *) SELECT * FROM d", "CHECKPOINT", "INSTALL httpfs"]
    for sql in attacks:
        r = wh.query(sql)
        assert not r.ok and r.refused, sql
    assert sha256(db) == before and sorted(p.name for p in db.parent.iterdir()) == files
    assert not Path("/tmp/relayrag_evil.db").exists() and not Path("/tmp/relayrag_evil.csv").exists()


def test_csv_and_parquet_load_and_replace(tmp_path):
    import duckdb
    csv = tmp_path / "sales-2024.csv"
    csv.write_text("region,amount\nnorth,10\nsouth,32\nnorth,5\n")
    pq = tmp_path / "targets.parquet"
    duckdb.sql(f"COPY (SELECT 'north' AS region, 12 AS target) TO '{pq}' (FORMAT parquet)")
    rec = load_warehouse(tmp_path / "home", "shop", [csv, pq])
    assert rec["tables"] == ["sales_2024", "targets"]
    wh = open_warehouse(tmp_path / "home", "shop")
    r = wh.query("SELECT region, SUM(amount) AS total FROM sales_2024 GROUP BY region ORDER BY total DESC")
    assert r.rows == [["south", 32], ["north", 15]]
    # loading again adds to the warehouse; --replace rebuilds it; the open warehouse is refreshed
    csv2 = tmp_path / "extra.csv"
    csv2.write_text("a\n1\n")
    assert load_warehouse(tmp_path / "home", "shop", [csv2])["tables"] == ["extra", "sales_2024", "targets"]
    assert load_warehouse(tmp_path / "home", "shop", [csv2], replace=True)["tables"] == ["extra"]
    assert open_warehouse(tmp_path / "home", "shop").tables() == {"extra"}


def test_load_errors_are_clear(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(WarehouseError, match="not a CSV, Parquet or SQLite"):
        load_warehouse(tmp_path / "home", "x", [tmp_path / "notes.txt"])
    with pytest.raises(WarehouseError, match="no such file"):
        load_warehouse(tmp_path / "home", "x", [tmp_path / "missing.csv"])
    load_warehouse(tmp_path / "home", "x", [CHINOOK])
    with pytest.raises(WarehouseError, match="already in the warehouse"):
        load_warehouse(tmp_path / "home", "x", [CHINOOK])
    assert open_warehouse(tmp_path / "home", "x").query("SELECT COUNT(*) AS n FROM Genre").rows == [[25]]
    assert open_warehouse(tmp_path / "home", "nothing") is None
    with pytest.raises(WarehouseError):
        DuckDBWarehouse(tmp_path / "missing.duckdb")


# -- resource limits (issue 10 item 12) ------------------------------------------------------------------------
def test_a_query_duckdb_cannot_interrupt_is_stopped_at_the_deadline(chinook_home):
    """repeat() is one function call: DuckDB's interrupt only lands after it returns (measured: 3.4 s for 400 MB
    with a 0.3 s timer). The worker process is killed at timeout + GRACE_S instead, and the next query works."""
    import time

    from relayrag.sql.duck_worker import GRACE_S
    wh = DuckDBWarehouse(chinook_home / "warehouses" / "chinook.duckdb", timeout_s=0.2)
    try:
        assert wh.query("SELECT COUNT(*) AS n FROM Album").rows == [[347]]  # worker warm
        t0 = time.monotonic()
        r = wh.query("SELECT length(repeat('x', 900000000)) AS n")
        took = time.monotonic() - t0
        assert not r.ok and not r.refused and r.limit == "timeout" and "timed out" in r.error
        assert took < 0.2 + GRACE_S + 1.5, took
        assert wh.query("SELECT COUNT(*) AS n FROM Album").rows == [[347]]  # a fresh worker answers
    finally:
        wh.close()


def test_memory_past_the_limit_stops_the_query(chinook_home):
    wh = DuckDBWarehouse(chinook_home / "warehouses" / "chinook.duckdb", timeout_s=30)
    wh.worker_memory_bytes = 400 * 2**20
    try:
        r = wh.query("SELECT length(repeat('x', 700000000)) AS n")
        assert not r.ok and r.limit == "memory" and "memory" in r.error, r
        assert wh.query("SELECT COUNT(*) AS n FROM Artist").rows == [[275]]
    finally:
        wh.close()


def test_result_bytes_are_capped_not_only_rows(wh):
    r = wh.query("SELECT repeat('x', 2000000) AS big")
    assert not r.ok and r.limit == "result_bytes" and "result too large" in r.error
    ok = wh.query("SELECT Name FROM Artist ORDER BY ArtistId LIMIT 3")
    assert ok.ok and ok.limit is None and len(ok.rows) == 3


def test_huge_cross_join_count_times_out(chinook_home):
    slow = open_warehouse(chinook_home, "chinook", timeout_s=0.3)
    try:
        r = slow.query("SELECT COUNT(*) AS n FROM InvoiceLine a, InvoiceLine b, InvoiceLine c")
        assert not r.ok and r.limit == "timeout"
    finally:
        slow.timeout_s = 10


@pytest.mark.parametrize("bad", ["sales.2024", 'odd"name'])
def test_a_table_name_the_guard_cannot_read_is_refused_at_load(tmp_path, bad):
    """Issue 24 row 12: such tables loaded but could never be queried (the guard read `a.b` as schema.table)."""
    src = tmp_path / "shop.sqlite"
    con = sqlite3.connect(src)
    con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute(f'CREATE TABLE "{bad.replace(chr(34), chr(34) * 2)}" (id INTEGER, total REAL)')
    con.commit()
    con.close()
    home = tmp_path / "home"
    with pytest.raises(WarehouseError, match=r"shop\.sqlite: table name .* cannot be queried here .*rename the table"):
        load_warehouse(home, "shop", [src])
    assert open_warehouse(home, "shop") is None  # nothing was loaded: all or nothing
