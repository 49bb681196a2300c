"""relayrag.sql.context with the real Chinook warehouse, the bundled relayrag.sql.yaml and the real MiniLM
embedder: term matching (stemmed English, Japanese substrings), query enhancement, example selection
(cosine + BM25), the prompt the sql stage sends (scripted LLM), the run record, Japanese routing and the
answer language, and `eval sql` using the same context."""

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from relayrag.engine.local import ask
from relayrag.sql.config import Example, SqlConfig, load_config, parse_config
from relayrag.sql.context import (
    build_context, enhance_question, match_terms, pick_examples, question_language,
)
from relayrag.sql.warehouse import load_warehouse, open_warehouse
from tests.conftest import sql_route_reply

REPO = Path(__file__).resolve().parents[3]
CHINOOK = REPO / "examples" / "chinook" / "chinook.sqlite"
BUNDLED = REPO / "examples" / "chinook" / "relayrag.sql.yaml"
FIXTURES = REPO / "tests" / "fixtures" / "text2sql"


@pytest.fixture(scope="module")
def cfg() -> SqlConfig:
    return parse_config(BUNDLED)


@pytest.fixture
def chinook(home):
    load_warehouse(home, "chinook", [CHINOOK], config=BUNDLED)
    return open_warehouse(home, "chinook")


def names(matches) -> list[tuple[str, str, str]]:
    return [(m.kind, m.name, m.matched) for m in matches]


def test_matching_is_stemmed_for_english_and_by_substring_for_japanese(cfg):
    assert names(match_terms("What were total sales last year?", cfg)) == [("glossary", "revenue", "sales")]
    assert names(match_terms("Revenues by country", cfg)) == [("glossary", "revenue", "Revenues"),
                                                               ("glossary", "country", "country")]
    assert names(match_terms("2023年に最も売上が多かった国はどこ？", cfg)) == [
        ("glossary", "revenue", "売上"), ("glossary", "country", "国")]
    assert names(match_terms("How many business customers are in North America?", cfg)) == [
        ("filter", "business_customers", "business customers"),
        ("filter", "north_american_customers", "North America")]
    # an occurrence inside a longer term of another entry does not count
    assert names(match_terms("Which sales support agent has the most sales?", cfg)) == [
        ("glossary", "support rep", "sales support agent"), ("glossary", "revenue", "sales")]
    assert names(match_terms("Which sales support agent is busiest?", cfg)) == [
        ("glossary", "support rep", "sales support agent")]
    assert match_terms("What is the weather like?", cfg) == [] and match_terms("revenue", None) == []


def test_enhancement_rewrites_the_question_with_the_mappings(cfg):
    q = "What was our revenue in 2023?"
    assert enhance_question(q, match_terms(q, cfg)) == "What was our revenue (= SUM(Invoice.Total)) in 2023?"
    q = "法人顧客の売上は？"
    assert enhance_question(q, match_terms(q, cfg)) == (
        "法人顧客 (filter business_customers: Customer.Company IS NOT NULL)の売上 (= SUM(Invoice.Total))は?")
    q = "List the songs"
    assert enhance_question(q, match_terms(q, cfg)).startswith("List the songs (= songs and videos for sale")
    assert enhance_question("Ｈｏｗ　many?", []) == "Ｈｏｗ　many?"  # untouched (not even normalised) without matches


def test_examples_are_picked_by_cosine_and_bm25(cfg, embedder):
    top = pick_examples("How many tracks are there in the Blues genre?", cfg.examples, embedder, k=3)
    assert top[0]["question"] == "How many tracks belong to the Jazz genre?"
    assert top[0]["cosine"] > 0.5 and top[0]["bm25"] > 0 and len(top) == 3
    assert [t["score"] for t in top] == sorted((t["score"] for t in top), reverse=True)
    # Japanese: BM25 over character bigrams adds the lexical match to MiniLM's weak Japanese cosines
    ja = pick_examples("ジャンルごとの売上を教えて", cfg.examples, embedder, k=2)
    assert ja[0]["question"] == "ジャンルごとの曲数を多い順に表示して。" and ja[0]["bm25"] > 0
    # without an embedder: lexical hits first, then file order
    lex = pick_examples("customers per country", cfg.examples, None, k=9)
    hits = [e for e in lex if e["bm25"] > 0]
    assert len(hits) >= 2 and lex[:len(hits)] == hits and all(e["cosine"] is None for e in lex)
    assert {e["question"] for e in hits} >= {cfg.examples[1].question, cfg.examples[2].question}
    rest = [e["question"] for e in lex[len(hits):]]
    assert rest == [e.question for e in cfg.examples if e.question in rest] and len(lex) == 9
    assert pick_examples("anything", [], embedder) == []
    one = [Example(question="How many albums?", sql="SELECT COUNT(*) FROM Album")]
    assert pick_examples("albums", one, embedder, k=3)[0]["sql"] == "SELECT COUNT(*) FROM Album"


def test_question_language():
    assert question_language("ドイツの顧客は？") == "Japanese"
    assert question_language("顧客数") == "Chinese"  # han only: no kana to tell Japanese apart
    assert question_language("고객은 몇 명입니까") == "Korean"
    assert question_language("How many customers?") is None


def test_context_without_config_is_schema_and_question_only(chinook, home):
    wh = open_warehouse(home, "chinook")
    c = build_context("How much revenue?", wh, None, None)
    assert c.enhanced_question == "How much revenue?" and c.sections() == ""
    assert c.messages("SYS:")[0]["content"].startswith('SYS:{"dialect":"bigquery","tables":[')
    assert c.summary() == {"config": False, "enhanced_question": "How much revenue?", "rewritten": False,
                           "glossary": [], "filters": [], "examples": []}


def sql_reply(sql: str, answer: str = "ok"):
    return sql_route_reply(sql, answer, tables=["Invoice"])


def test_the_sql_stage_sends_the_context_and_records_it(make_llm_ctx, chinook):
    sql = ("SELECT ROUND(SUM(i.Total), 2) AS revenue FROM Invoice AS i JOIN Customer AS c ON c.CustomerId = "
           "i.CustomerId WHERE c.Company IS NOT NULL AND i.InvoiceDate >= '2023-01-01' AND i.InvoiceDate < '2024-01-01'")
    with sqlite3.connect(f"file:{CHINOOK}?mode=ro", uri=True) as con:  # the answer, independently of DuckDB
        expected = con.execute(sql).fetchone()[0]
    ctx, llm = make_llm_ctx(sql_reply(sql, f"Revenue from business customers in 2023 was {expected}."))
    res = ask("What was our revenue from business customers in 2023?", "chinook", ctx=ctx)
    assert res["route"] == "sql" and res["rows"] == [[expected]] and expected > 0
    gen = next(c for c in llm.calls if c["json_schema"] and "sql" in c["json_schema"]["properties"])
    system, user = gen["messages"][0]["content"], gen["messages"][1]["content"]
    assert user == ("What was our revenue (= SUM(Invoice.Total)) from business customers (filter "
                    "business_customers: Customer.Company IS NOT NULL) in 2023?")
    assert '"name":"Customer"' in system  # the schema JSON is still there
    assert "Business glossary" in system and "- revenue: money received from sales" in system
    assert "Named filters" in system and "business_customers: customers with a company on file" in system
    assert "Notes about the data:\nA digital music store." in system
    # 3 examples by wording, then up to 2 more by SQL shape (RELAYRAG_SQL_EXAMPLES=both, the default)
    assert 3 <= system.count("\nQ: ") <= 5 and "Q: What is the average invoice total of business customers?" in system
    # schema linking: the linked tables with their join path, the rest named only
    assert "- Invoice.CustomerId = Customer.CustomerId" in system and '"name":"Track"' not in system
    assert "genres" not in system.split("Business glossary")[1].split("Named filters")[0]  # untouched terms left out
    run = ctx.docstore.get_run(res["run_id"])
    sc = run["sql_context"]
    assert sc["config"] and sc["rewritten"] and sc["enhanced_question"] == user
    assert sc["glossary"] == [{"term": "revenue", "matched": "revenue"}]
    assert sc["filters"] == [{"name": "business_customers", "matched": "business customers"}]
    by_wording = [e for e in sc["examples"] if e.get("by") != "shape"]
    assert len(by_wording) == 3 and all(e["cosine"] is not None for e in by_wording)
    assert all(e["by"] == "shape" for e in sc["examples"][3:]) and len(sc["examples"]) <= 5
    assert {"Customer", "Invoice"} <= set(sc["linking"]["tables"]) and not sc["linking"]["whole"]


def test_japanese_question_routes_to_sql_and_the_answer_prompt_asks_for_japanese(make_llm_ctx, chinook, small_corpus):
    from relayrag.ingest.pipeline import ingest
    from relayrag.stage_registry import STAGES
    from relayrag.stages.base import execute
    sql = "SELECT COUNT(*) AS customers FROM Customer WHERE Country = 'Germany'"
    ctx, llm = make_llm_ctx(sql_reply(sql, "ドイツの顧客は4人です。"))
    res = ask("ドイツの顧客は何人いますか？", "chinook", ctx=ctx)
    assert res["route"] == "sql" and res["rows"] == [[4]] and res["answer"].startswith("ドイツの顧客は4人です。")
    answer_call = next(c for c in llm.calls if c["json_schema"] and "answer" in c["json_schema"]["properties"])
    assert "The question is in Japanese: write the answer in Japanese." in answer_call["messages"][0]["content"]
    assert "ドイツの顧客は何人いますか" in answer_call["messages"][1]["content"]
    gen = next(c for c in llm.calls if c["json_schema"] and "sql" in c["json_schema"]["properties"])
    assert gen["messages"][1]["content"].startswith("ドイツの顧客 (= people who buy from the store")
    # the LLM classifier is told the config's terms (Japanese synonyms included)
    route_call = next(c for c in llm.calls if c["json_schema"] and "route" in c["json_schema"]["properties"])
    assert "売上" in route_call["messages"][0]["content"]

    # with documents in the collection too and no LLM, a glossary term in Japanese routes to sql
    ingest(ctx, small_corpus, "chinook")
    ctx._llm, ctx._llm_built = None, True
    for run_id, q, route in [("j1", "2023年の売上はいくら？", "sql"), ("j2", "法人顧客は何社ですか", "sql"),
                             ("j3", "東京タワーの高さは？", "rag")]:
        status, out = execute(STAGES["classify"], {"run_id": run_id, "question": q, "collection": "chinook"}, ctx)
        assert status == 200 and out["route"] == route, (q, out)


def test_eval_sql_uses_the_collection_context(make_llm_ctx, chinook, tmp_path):
    from relayrag.cli import app
    rows = [json.loads(line) for line in (FIXTURES / "dev.jsonl").read_text(encoding="utf-8").splitlines()]
    pick = [r for r in rows if r["id"] in ("dev-04", "dev-22")]  # "total revenue", "売上" (Japanese)
    data = tmp_path / "two.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in pick), encoding="utf-8")
    gold = {r["question"]: r["gold_sql"].replace("strftime('%Y', InvoiceDate)", "CAST(EXTRACT(YEAR FROM InvoiceDate) AS STRING)")
            for r in pick}
    seen = []

    def reply(messages, schema):
        user = messages[-1]["content"]
        seen.append(user)
        original = next(q for q in gold if user.startswith(q.split("売上")[0].split("revenue")[0]))
        return {"sql": gold[original], "tables": [], "assumptions": []}
    make_llm_ctx(reply)
    r = CliRunner().invoke(app, ["eval", "sql", str(data), "--collection", "chinook", "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["accuracy"] == 1.0 and rep["by_lang"] == {
        "en": {"n": 1, "accuracy": 1.0, "lenient_accuracy": 1.0}, "ja": {"n": 1, "accuracy": 1.0, "lenient_accuracy": 1.0}}
    assert all("(= SUM(Invoice.Total))" in u for u in seen)
    assert all(i["enhanced_question"] and "SUM(Invoice.Total)" in i["enhanced_question"] for i in rep["items"])


def test_load_config_cache_follows_the_file(chinook, home, tmp_path):
    first = load_config(home, "chinook")
    assert load_config(home, "chinook") is first  # cached
    p = tmp_path / "c.yaml"
    p.write_text("notes: changed\n", encoding="utf-8")
    from relayrag.sql.warehouse import store_config
    store_config(home, "chinook", p)
    assert load_config(home, "chinook").notes == "changed"


def test_schema_as_ddl_carries_the_same_facts_as_the_json(chinook, home):
    """RELAYRAG_SQL_SCHEMA_FORMAT=ddl: every table and column with its type, the keys as PRIMARY KEY /
    REFERENCES, row counts and sample values as comments; and it parses as one CREATE TABLE per table."""
    import sqlglot

    from relayrag.sql.context import schema_ddl
    schema = open_warehouse(home, "chinook").schema()
    ddl = schema_ddl(schema)
    for t in schema["tables"]:
        assert f"CREATE TABLE {t['name']} ( -- {t['rows']} rows" in ddl
        for col, typ in t["columns"].items():
            assert f"  {col} {typ}" in ddl
    assert "  ArtistId BIGINT REFERENCES Artist(ArtistId)" in ddl and "  AlbumId BIGINT PRIMARY KEY," in ddl
    assert '-- e.g. "USA", "Canada", "Brazil", "France"' in ddl
    assert len(ddl) < len(json.dumps(schema, separators=(",", ":")))
    parsed = sqlglot.parse(ddl, read="duckdb")
    assert [p.this.this.name for p in parsed] == [t["name"] for t in schema["tables"]]
    assert all(isinstance(p, sqlglot.exp.Create) for p in parsed)


def test_the_sql_stage_shows_ddl_when_configured(make_llm_ctx, chinook, monkeypatch):
    from relayrag.settings import load_settings
    monkeypatch.setenv("RELAYRAG_SQL_SCHEMA_FORMAT", "ddl")
    load_settings.cache_clear()
    ctx, llm = make_llm_ctx(sql_reply("SELECT COUNT(*) AS n FROM Customer WHERE Customer.Country = 'Brazil'"))
    res = ask("How many customers are in Brazil?", "chinook", ctx=ctx)
    assert res["route"] == "sql" and res["rows"] == [[5]]
    gen = next(c for c in llm.calls if c["json_schema"] and "sql" in c["json_schema"]["properties"])
    system = gen["messages"][0]["content"]
    # the linked tables only (Customer, for a question about customers), as DDL
    assert "Schema (SQL DDL; comments give row counts and sample values):\nCREATE TABLE Customer (" in system
    assert "CREATE TABLE Album (" not in system
    assert '"name":"Customer"' not in system
