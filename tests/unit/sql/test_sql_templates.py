"""Template SQL (relayrag.sql.templates), config checks of templates, the guard on filled templates, and
`relayrag warehouse verify` (relayrag.sql.verify). Real Chinook DuckDB warehouse, real MiniLM embedder."""

from __future__ import annotations

import json
import textwrap

import pytest
from typer.testing import CliRunner

from relayrag import cli
from relayrag.errors import ConfigError
from relayrag.sql.config import Example, SqlConfig, check_config, parse_config, parse_config_bytes
from relayrag.sql.templates import TemplateError, analyse, check_slots, fill_sql, parameters_of
from relayrag.sql.verify import append_example, parse_slot_options
from relayrag.sql.warehouse import load_warehouse
from tests.unit.sql.conftest import CHINOOK, CONFIG


def invoke(*args: str):
    return CliRunner().invoke(cli.app, [str(a) for a in args])


def test_parameters_are_tokens_not_text_in_strings_or_comments():
    sql = "SELECT a FROM t WHERE x = @g AND y = '@not' AND z >= @p_start -- @nor\nLIMIT @n"
    assert parameters_of(sql) == {"g", "p_start", "n"}


@pytest.mark.parametrize("value", ["O'Brien", "x'; DROP TABLE Customer; --", "\\' OR 1=1 --", "a\nb", "🎵"])
def test_values_become_quoted_literals_never_sql(value):
    import sqlglot
    from sqlglot import exp
    filled = fill_sql("SELECT COUNT(*) AS n FROM Customer WHERE Country = @c LIMIT @n", {"c": value, "n": 5})
    tree = sqlglot.parse_one(filled, read="bigquery")
    literals = [lit.this for lit in tree.find_all(exp.Literal) if lit.is_string]
    assert literals == [value] and not list(tree.find_all(exp.Drop)) and "LIMIT 5" in filled


def test_fill_refuses_a_missing_value_and_keeps_the_written_sql():
    with pytest.raises(TemplateError, match="no value for @n"):
        fill_sql("SELECT 1 FROM t LIMIT @n", {})
    sql = "SELECT Country,  COUNT(*) AS customers FROM Customer\n  GROUP BY Country LIMIT @n"
    assert fill_sql(sql, {"n": 3}) == sql.replace("@n", "3")  # layout kept: few-shot examples read as written


def test_slots_and_parameters_must_agree():
    slots = SqlConfig.model_validate({"examples": [{"question": "q", "sql": "s", "slots": {
        "n": "count", "p": "date_range", "g": "value:Genre.Name"}}]}).examples[0].slots
    assert check_slots("SELECT 1 FROM t WHERE d >= @p_start AND d < @p_end AND g = @g LIMIT @n", slots) == []
    problems = check_slots("SELECT 1 FROM t WHERE g = @genre LIMIT @n", slots)
    assert any("slot 'p'" in p for p in problems) and any("@genre is not a slot" in p for p in problems)


def test_slot_declarations_are_validated(tmp_path):
    def load(slots: str) -> str:
        p = tmp_path / "c.yaml"
        p.write_text(textwrap.dedent(f"""\
            examples:
              - question: Which 3 countries?
                sql: SELECT Country FROM Customer LIMIT @n
                slots: {slots}
            """), encoding="utf-8")
        with pytest.raises(ConfigError) as ei:
            parse_config(p)
        return str(ei.value)
    assert "unknown slot type 'cnt'" in load("{n: cnt}")
    assert "needs `column: Table.Column`" in load("{n: value}")
    assert "takes no column" in load("{n: 'count:Customer.Country'}")
    assert "letters, digits and _" in load("{'1n': count}")
    cfg = SqlConfig.model_validate({"examples": [{"question": "q", "sql": "s", "slots": {
        "n": {"type": "count"}, "rep": "value:Employee.FirstName + Employee.LastName"}}]})
    assert cfg.examples[0].slots["rep"].columns == ["Employee.FirstName", "Employee.LastName"]


def test_analyse_says_what_the_sql_computes(wh):
    schema = wh.schema()
    top = analyse("SELECT Country, COUNT(*) AS n FROM Customer GROUP BY Country ORDER BY n DESC, Country LIMIT @n",
                  schema)
    assert top.essential == {"desc"} and "asc" not in top.allowed and top.dims == [("Customer", "Country")]
    monthly = analyse("SELECT EXTRACT(MONTH FROM InvoiceDate) AS month, SUM(Total) AS r FROM Invoice WHERE "
                      "InvoiceDate >= @y_start AND InvoiceDate < @y_end GROUP BY month ORDER BY month", schema,
                      date_params={"y_start", "y_end"})
    assert monthly.essential == {"month"} and "gt" not in monthly.allowed and monthly.aggregates == {"sum"}
    having = analyse("SELECT p.Name, COUNT(*) FROM Playlist AS p JOIN PlaylistTrack AS pt ON pt.PlaylistId = "
                     "p.PlaylistId GROUP BY p.Name HAVING COUNT(*) > @n", schema)
    assert "gt" in having.essential and ("Playlist", "Name") in having.columns
    neg = analyse("SELECT COUNT(*) FROM Customer AS c WHERE c.Company IS NOT NULL AND c.Country <> 'USA'", schema)
    assert neg.essential == {"neg"} and neg.literals == ["USA"]


def _chinook_config(tmp_path, extra_examples: str) -> object:
    base = CONFIG.read_text(encoding="utf-8")
    text = base.replace("\nvalue_aliases:", "\n" + textwrap.indent(textwrap.dedent(extra_examples), "  ")
                        + "\nvalue_aliases:", 1)
    p = tmp_path / "relayrag.sql.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def test_a_config_template_must_name_every_slot_value_in_each_wording(home, tmp_path, wh):
    p = _chinook_config(tmp_path, """\
        - question: Which countries have the most customers?
          variants: ["Which 4 countries have the most customers?"]
          sql: SELECT Country, COUNT(*) AS n FROM Customer GROUP BY Country ORDER BY n DESC LIMIT @n
          slots: {n: count}
        - question: How many tracks does Queen have?
          sql: SELECT COUNT(*) FROM Track WHERE Name = @t
          slots: {t: value:Track.Name}
        - question: How many tracks are by AC/DC?
          sql: SELECT COUNT(*) FROM Track WHERE Composer = @a
          slots: {a: value:Artist.Nickname}
        """)
    with pytest.raises(ConfigError) as ei:
        check_config(parse_config(p), wh, str(p))
    msg = str(ei.value)
    assert "examples[9].question: names no value for slot 'n'" in msg
    assert "examples[10]: Track.Name has more than 999 distinct values" in msg
    assert "examples[11]: no column 'Artist.Nickname'" in msg


def test_a_number_slot_takes_decimals(home, tmp_path, wh, embedder):
    from relayrag.sql.verified import match_verified
    p = _chinook_config(tmp_path, """\
        - question: Which tracks cost more than 0.99?
          variants: ["単価が0.99より高い曲は？"]
          sql: SELECT Name FROM Track WHERE UnitPrice > @price ORDER BY Name
          slots: {price: number}
        """)
    cfg = check_config(parse_config(p), wh, str(p))
    for q, price in [("Which tracks cost more than 1.5?", 1.5), ("Which tracks cost more than one dollar?", 1),
                     ("Which tracks cost more than 0.5?", 0.5), ("単価が1.5より高い曲は？", 1.5)]:
        m, miss = match_verified(q, cfg, embedder, wh)
        assert m is not None and m.params == {"price": price}, (q, miss.reason)
    assert match_verified("Which tracks cost less than 1.5?", cfg, embedder, wh)[0] is None


def test_a_filled_template_the_guard_refuses_is_never_run(home, ctx, monkeypatch):
    """A stored template the guard refuses once filled (the config was edited by hand after it was checked:
    a table outside the allow-list, a file-reading function) answers a refusal; the warehouse runs nothing."""
    from relayrag.engine.local import ask
    from relayrag.sql import warehouse as wmod
    load_warehouse(home, "chinook", [CHINOOK], config=CONFIG)
    text = CONFIG.read_text(encoding="utf-8").replace(
        "SELECT Country, COUNT(*) AS customers FROM Customer GROUP BY Country",
        "SELECT Country, COUNT(*) AS customers FROM Customer WHERE read_csv('/etc/passwd') IS NULL GROUP BY Country")
    text = text.replace("\nglossary:", "\ntables: [Customer, Invoice, InvoiceLine, Employee]\nglossary:", 1)
    parse_config_bytes(text.encode(), "edited")  # structurally valid: only the guard can tell
    ctx.sql_configs.put("chinook", text.encode("utf-8"))
    ran: list[str] = []
    monkeypatch.setattr(wmod.DuckWorker, "query", lambda self, sql, **kw: ran.append(sql) or {})
    # a file-reading function, then tables outside the allow-list (Track, Genre)
    for q in ("Which 5 countries have the most customers?", "ジャンル別の曲数を教えて"):
        res = ask(q, "chinook", ctx=ctx)
        stage = res["stages"][-1]
        assert stage["method"] == "verified" and res["refused"] is True and not res["rows"], res["answer"]
        assert "refused by the SQL guard and not run" in res["answer"]
    assert ran == []


def test_append_example_keeps_the_file_and_extends_its_examples():
    raw = CONFIG.read_bytes()
    entry = {"question": "Which 3 genres have the most tracks?", "sql": "SELECT 1 LIMIT @n", "slots": {"n": "count"}}
    out = append_example(raw, entry)
    old, new = parse_config_bytes(raw, "a"), parse_config_bytes(out, "b")
    assert [e.model_dump() for e in new.examples] == [e.model_dump() for e in old.examples] + [
        Example.model_validate(entry).model_dump()]
    assert new.value_aliases == old.value_aliases and new.glossary == old.glossary
    assert out.decode().startswith(raw.decode().split("examples:")[0])  # comments and layout before it kept
    assert "# Other names of stored values" in out.decode()
    fresh = parse_config_bytes(append_example(None, entry), "c")
    assert [e.question for e in fresh.examples] == [entry["question"]]
    with pytest.raises(ConfigError, match="by hand"):
        append_example(b"examples: []\n", entry)
    assert parse_slot_options(["n=count", "g=value:Genre.Name, y=year"]) == {
        "n": "count", "g": "value:Genre.Name", "y": "year"}


def test_cli_verify_adds_a_template_that_then_answers_other_wordings(home, ctx):
    from relayrag.engine.local import ask
    assert invoke("warehouse", "load", CHINOOK, "-c", "chinook", "--config", CONFIG).exit_code == 0
    sql = ("SELECT COUNT(*) AS albums FROM Album JOIN Artist ON Artist.ArtistId = Album.ArtistId "
           "WHERE Artist.Name = @artist")
    r = invoke("warehouse", "verify", "How many albums does AC/DC have?", "--sql", sql, "--slot",
               "artist=value:Artist.Name", "-c", "chinook", "--json")
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)
    assert rec["slots"] == {"artist": "AC/DC"} and rec["rows"] == [[2]] and rec["templates"] == 8
    shown = json.loads(invoke("warehouse", "config", "-c", "chinook", "--json").stdout)
    assert shown["examples"][-1]["slots"] == {"artist": {"type": "value", "column": "Artist.Name"}}
    res = ask("How many albums does Iron Maiden have?", "chinook", ctx=ctx)
    assert res["stages"][-1]["method"] == "verified" and res["rows"] == [[21]]
    again = invoke("warehouse", "verify", "How many albums does AC/DC have?", "--sql", sql, "--slot",
                   "artist=value:Artist.Name", "-c", "chinook")
    assert again.exit_code == 2 and "already a verified question" in again.stderr


@pytest.mark.parametrize("args, said", [
    (["Delete them", "--sql", "DELETE FROM Customer"], "refused by the SQL guard"),
    (["Which 3 countries?", "--sql", "SELECT Country FROM Customer LIMIT @n"], "@n is not a slot's parameter"),
    (["Which countries?", "--sql", "SELECT Country FROM Customer LIMIT @n", "--slot", "n=count"],
     "names no value for slot 'n'"),
    (["Which 3 nations?", "--sql", "SELECT Nation FROM Customer LIMIT @n", "--slot", "n=count"],
     "could not run it"),
    (["Which 3 countries?", "--sql", "SELECT Country FROM Customer LIMIT @n", "--slot", "n"], "NAME=TYPE"),
])
def test_cli_verify_stores_nothing_it_cannot_check(home, args, said):
    assert invoke("warehouse", "load", CHINOOK, "-c", "chinook", "--config", CONFIG).exit_code == 0
    before = (home / "warehouses" / "chinook.sql.yaml").read_bytes()
    r = invoke("warehouse", "verify", *args, "-c", "chinook")
    assert r.exit_code == 2 and said in r.stderr, r.stderr
    assert (home / "warehouses" / "chinook.sql.yaml").read_bytes() == before
