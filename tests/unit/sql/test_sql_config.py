"""relayrag.sql.config: the per-collection relayrag.sql.yaml — structure errors name the file, key and why;
SQL in it is checked against the real Chinook warehouse and the real guard; storage, the table allow-list,
and the `warehouse config` CLI."""

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from relayrag.errors import ConfigError
from relayrag.sql.config import (
    CONFIG_FILE_NAME, check_config, example_sqls, load_config, parse_config, remove_config, stored_config_path,
)
from relayrag.sql.warehouse import AllowListWarehouse, list_warehouses, load_warehouse, open_warehouse, store_config

REPO = Path(__file__).resolve().parents[3]
CHINOOK = REPO / "examples" / "chinook" / "chinook.sqlite"
BUNDLED = REPO / "examples" / "chinook" / CONFIG_FILE_NAME
DEV = REPO / "tests" / "fixtures" / "text2sql" / "dev.jsonl"


@pytest.fixture
def chinook(home):
    load_warehouse(home, "chinook", [CHINOOK])
    return open_warehouse(home, "chinook")


def write(tmp_path, text: str, name: str = "relayrag.sql.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text), encoding="utf-8")
    return p


def error_of(fn, *args, **kw) -> str:
    with pytest.raises(ConfigError) as ei:
        fn(*args, **kw)
    return str(ei.value)


def test_bundled_chinook_config_is_valid_and_its_examples_are_not_dev_questions(chinook):
    cfg = check_config(parse_config(BUNDLED), chinook, str(BUNDLED))
    assert {"revenue", "customers", "tracks", "genres", "employees", "support rep"} <= set(cfg.glossary)
    assert cfg.glossary["revenue"].sql == "SUM(Invoice.Total)" and "売上" in cfg.glossary["revenue"].synonyms
    assert len(cfg.filters) >= 3 and cfg.filters["business_customers"].sql == "Customer.Company IS NOT NULL"
    assert 8 <= len(cfg.examples) <= 12
    dev = {json.loads(line)["question"].strip().lower() for line in DEV.read_text(encoding="utf-8").splitlines()}
    assert not dev & {q.strip().lower() for e in cfg.examples for q in e.wordings()}
    problems: list[str] = []
    sqls = example_sqls(cfg, chinook, problems)
    assert not problems and sum(1 for e in cfg.examples if e.slots) >= 6  # most examples are templates
    for e, sql in zip(cfg.examples, sqls):  # every example, filled from its own question, runs and returns rows
        res = chinook.query(sql)
        assert res.ok and res.row_count > 0, (e.question, res.error)


def test_structure_errors_name_the_file_the_key_and_why(tmp_path):
    p = write(tmp_path, """\
        glossary:
          revenue:
            sqll: SUM(Invoice.Total)
          margin: {}
        filters:
          active:
            sql: Customer.Email IS NOT NULL
        examples:
          - question: How many?
        tables: []
        colour: blue
        """)
    msg = error_of(parse_config, p)
    assert msg.startswith(f"{p}: invalid SQL config")
    assert "glossary.revenue.sqll: unknown key" in msg
    assert "glossary.margin: give a `meaning`, an `sql` expression, or both" in msg
    assert "filters.active.description: required key is missing" in msg
    assert "examples[0].sql: required key is missing" in msg
    assert "tables: List should have at least 1 item" in msg
    assert "colour: unknown key" in msg


@pytest.mark.parametrize("text, needle", [
    ("", "the file is empty"),
    ("- just\n- a list\n", "expected a mapping at the top level, got list"),
    ("glossary: [unclosed\n", "not valid YAML at line 2"),
    ("glossary:\n  revenue: {sql: SUM(Invoice.Total), synonyms: [sales]}\n  turnover: {meaning: m, synonyms: [Sales]}\n",
     "'Sales' belongs to both 'revenue' and 'turnover'"),
    ("glossary:\n  the: {meaning: nothing}\n", "has no words to match"),
    ("version: 2\n", "version: Input should be less than or equal to 1"),
])
def test_malformed_files(tmp_path, text, needle):
    assert needle in error_of(parse_config, write(tmp_path, text))


def test_missing_and_binary_files(tmp_path):
    assert "cannot read the SQL config" in error_of(parse_config, tmp_path / "nope.yaml")
    bad = tmp_path / "bin.yaml"
    bad.write_bytes(b"\xff\xfe\x00glossary")
    assert "not UTF-8 text" in error_of(parse_config, bad)


def test_sql_in_the_config_is_checked_against_the_warehouse_and_the_guard(tmp_path, chinook):
    p = write(tmp_path, """\
        tables: [customer, Invoice, Invoices]
        glossary:
          revenue: {sql: SUM(Invoice.Total)}
          margin: {sql: SUM(Invoice.Margin)}
          genre count: {sql: COUNT(DISTINCT Genre.GenreId)}
          secret: {sql: "(SELECT COUNT(*) FROM read_csv('/etc/passwd'))"}
          env: {sql: "getenv('HOME')"}
        filters:
          evil: {description: stacked, sql: "1=1; DROP TABLE Album"}
          nation: {description: typo, sql: "Nation = 'Brazil'"}
        examples:
          - {question: delete, sql: DELETE FROM Invoice}
          - {question: files, sql: "SELECT * FROM read_csv('/etc/passwd')"}
          - {question: outside the allow-list, sql: SELECT COUNT(*) FROM Track}
          - {question: runs badly, sql: SELECT Nation FROM Customer}
          - {question: fine, sql: "SELECT COUNT(*) AS n FROM Customer WHERE Country = 'Brazil'"}
        """)
    msg = error_of(check_config, parse_config(p), chinook, str(p))
    assert msg.startswith(f"{p}: invalid SQL config")
    expected = [
        "tables[2]: no table 'Invoices' in the warehouse",
        "glossary.margin.sql: table 'Invoice' has no column 'Margin'",
        "glossary.genre count.sql: column 'Genre.GenreId' names table 'Genre', which is not in the warehouse's "
        "allowed tables (Customer, Invoice)",
        "glossary.secret.sql: refused by the SQL guard: function",
        "glossary.env.sql: refused by the SQL guard: function 'getenv' is not allowed",
        "filters.evil.sql: refused by the SQL guard: exactly one statement is allowed, got 2",
        "filters.nation.sql: no allowed table has a column 'Nation'",
        "examples[0].sql: refused by the SQL guard: only SELECT queries are allowed, got DELETE",
        "examples[1].sql: refused by the SQL guard: function",
        "examples[2].sql: refused by the SQL guard: table 'Track' is not allowed (allowed: Customer, Invoice)",
        "examples[3].sql: the warehouse could not run it:",
    ]
    for needle in expected:
        assert needle in msg, needle
    assert "examples[4]" not in msg and "glossary.revenue" not in msg
    # the allow-list is normalised to the warehouse's spelling
    ok = write(tmp_path, "tables: [customer, INVOICE]\nglossary:\n  revenue: {sql: SUM(Invoice.Total)}\n", "ok.yaml")
    assert check_config(parse_config(ok), chinook, str(ok)).tables == ["Customer", "Invoice"]


def test_store_load_remove_and_the_allow_list_is_enforced(home, tmp_path, chinook):
    assert load_config(home, "chinook") is None
    p = write(tmp_path, """\
        # comments survive: the file is stored verbatim
        tables: [Customer, Invoice]
        glossary:
          revenue: {sql: SUM(Invoice.Total), synonyms: [sales]}
        """)
    summary = store_config(home, "chinook", p)
    assert summary["glossary"] == 1 and summary["tables"] == ["Customer", "Invoice"]
    stored = stored_config_path(home, "chinook")
    assert stored.read_text(encoding="utf-8") == p.read_text(encoding="utf-8")
    assert load_config(home, "chinook").glossary["revenue"].synonyms == ["sales"]

    wh = open_warehouse(home, "chinook")
    assert isinstance(wh, AllowListWarehouse) and wh.tables() == {"Customer", "Invoice"}
    assert [t["name"] for t in wh.schema()["tables"]] == ["Customer", "Invoice"]
    refused = wh.query("SELECT COUNT(*) FROM Track")
    assert refused.refused and refused.refusal_code == "table" and "Track" in refused.error
    assert wh.query("SELECT COUNT(*) FROM Customer").rows == [[59]]
    assert open_warehouse(home, "chinook", apply_config=False).tables() >= {"Track", "Album"}
    assert list_warehouses(home)[0]["config"] == str(stored)

    # a bad replacement is not stored: the old config stays
    bad = write(tmp_path, "examples:\n  - {question: q, sql: DROP TABLE Album}\n", "bad.yaml")
    assert "examples[0].sql: refused by the SQL guard" in error_of(store_config, home, "chinook", bad)
    assert load_config(home, "chinook").tables == ["Customer", "Invoice"]
    assert remove_config(home, "chinook") and not remove_config(home, "chinook")
    assert load_config(home, "chinook") is None and open_warehouse(home, "chinook").tables() >= {"Track"}


def test_load_with_config_and_reload_rechecks_the_stored_one(home, tmp_path):
    bad = write(tmp_path, "glossary:\n  revenue: {sql: SUM(Invoice.Totals)}\n", "bad.yaml")
    msg = error_of(load_warehouse, home, "chinook", [CHINOOK], config=bad)
    assert "glossary.revenue.sql: table 'Invoice' has no column 'Totals'" in msg
    assert "the tables were loaded; the SQL config was not stored" in msg
    assert open_warehouse(home, "chinook") is not None and load_config(home, "chinook") is None
    # a structure error stops before anything is loaded
    broken = write(tmp_path, "glossary: {revenue: {}}\n", "broken.yaml")
    assert "glossary.revenue" in error_of(load_warehouse, home, "other", [CHINOOK], config=broken)
    assert open_warehouse(home, "other") is None

    rec = load_warehouse(home, "chinook", [CHINOOK], replace=True, config=BUNDLED)
    assert rec["config"]["examples"] >= 8 and load_config(home, "chinook") is not None
    # replacing the tables with a CSV that lacks Invoice: the stored config is re-checked and reported
    csv = tmp_path / "people.csv"
    csv.write_text("name,city\nAda,London\n", encoding="utf-8")
    rec = load_warehouse(home, "chinook", [csv], replace=True)
    assert "config" not in rec and "glossary.revenue.sql" in rec["config_error"]


def test_cli_warehouse_config_and_collections(home, tmp_path):
    from relayrag.cli import app
    runner = CliRunner()
    r = runner.invoke(app, ["warehouse", "load", str(CHINOOK), "-c", "chinook", "--config", str(BUNDLED)])
    assert r.exit_code == 0, r.output
    assert "glossary terms" in r.stdout and "9 examples" in r.stdout
    r = runner.invoke(app, ["warehouse", "config", "-c", "chinook"])
    assert r.exit_code == 0 and r.stdout == BUNDLED.read_text(encoding="utf-8")
    r = runner.invoke(app, ["warehouse", "config", "-c", "chinook", "--json"])
    assert json.loads(r.stdout)["glossary"]["revenue"]["sql"] == "SUM(Invoice.Total)"
    bad = write(tmp_path, "glossary:\n  revenue: {sqll: x}\n", "bad.yaml")
    r = runner.invoke(app, ["warehouse", "config", str(bad), "-c", "chinook"])
    assert r.exit_code == 2 and "glossary.revenue.sqll: unknown key" in r.output
    small = write(tmp_path, "tables: [Customer]\nnotes: only customers\n", "small.yaml")
    r = runner.invoke(app, ["warehouse", "config", str(small), "-c", "chinook", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["tables"] == ["Customer"]
    r = runner.invoke(app, ["warehouse", "schema", "-c", "chinook"])
    assert [t["name"] for t in json.loads(r.stdout)["tables"]] == ["Customer"]

    r = runner.invoke(app, ["collections", "--json"])
    (col,) = json.loads(r.stdout)
    assert col["name"] == "chinook" and col["current_version"] is None
    assert len(col["warehouse"]["tables"]) == 11 and col["warehouse"]["config"].endswith("chinook.sql.yaml")
    r = runner.invoke(app, ["collections"])
    assert "chinook: no documents; warehouse of 11 tables, SQL config" in r.stdout

    r = runner.invoke(app, ["warehouse", "config", "-c", "chinook", "--remove"])
    assert r.exit_code == 0 and "removed" in r.stdout
    r = runner.invoke(app, ["warehouse", "config", "-c", "chinook"])
    assert r.exit_code == 2 and "has no SQL config" in r.output
    r = runner.invoke(app, ["warehouse", "config", str(small), "-c", "nowarehouse"])
    assert r.exit_code == 2 and "has no warehouse" in r.output


def test_collections_lists_documents_and_warehouses_together(ctx, small_corpus):
    from relayrag.cli import app
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "docs")
    ingest(ctx, small_corpus, "both")
    load_warehouse(ctx.settings.home, "both", [CHINOOK])
    load_warehouse(ctx.settings.home, "tables", [CHINOOK])
    cols = json.loads(CliRunner().invoke(app, ["collections", "--json"]).stdout)
    assert [c["name"] for c in cols] == ["both", "docs", "tables"]
    assert cols[0]["current_version"] and cols[0]["warehouse"]["config"] is None
    assert cols[1]["warehouse"] is None and cols[1]["stats"]["n_files"] == 4
    assert cols[2]["current_version"] is None and "Track" in cols[2]["warehouse"]["tables"]
