"""The MCP `sql_query` tool and warehouse collections in `list_collections` / `ask`, through fastmcp's
in-memory Client, with a scripted LLM in front of the real sql stage, guard, context and Chinook warehouse."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from pathlib import Path

import pytest

import fastmcp  # noqa: F401  (dev extra: a missing install fails, it does not skip)
from fastmcp import Client

from relayrag.mcp.server import build_server
from relayrag.mcp.views import CELL_CHARS, MAX_SQL_ROWS
from relayrag.sql.warehouse import load_warehouse
from tests.conftest import sql_route_reply

REPO = Path(__file__).resolve().parents[3]
CHINOOK = REPO / "examples" / "chinook" / "chinook.sqlite"
BUNDLED = REPO / "examples" / "chinook" / "relayrag.sql.yaml"
BRAZIL_SQL = "SELECT COUNT(*) AS customers FROM Customer WHERE Country = 'Brazil'"


@pytest.fixture
def server(home, tmp_path, monkeypatch):
    folder = tmp_path / "workflows"
    folder.mkdir()
    for f in (REPO / "workflows").glob("*.yaml"):
        shutil.copy(f, folder / f.name)
    monkeypatch.setenv("RELAYRAG_WORKFLOWS_DIR", str(folder))
    return build_server()


@pytest.fixture
def chinook(home):
    load_warehouse(home, "chinook", [CHINOOK], config=BUNDLED)
    return home / "warehouses" / "chinook.duckdb"


def scripted(sqls, answer="There are 5 customers in Brazil."):
    return sql_route_reply(sqls, answer)


def call(server, name, args, raise_on_error=True):
    async def go():
        async with Client(server) as c:
            return await c.call_tool(name, args, raise_on_error=raise_on_error)
    return asyncio.run(go())


def test_sql_query_answers_with_sql_rows_and_tables(server, make_llm_ctx, chinook):
    ctx, llm = make_llm_ctx(scripted([BRAZIL_SQL]))
    out = call(server, "sql_query", {"question": "How many customers are in Brazil?", "collection": "chinook"}).data
    assert out["status"] == "ok" and out["rows"] == [[5]] and out["row_count"] == 1
    assert out["sql"] == BRAZIL_SQL + " LIMIT 1000" and out["tables"] == ["Customer"]
    assert out["columns"] == ["customers"] and out["attempts"] == 1
    assert out["answer"].startswith("There are 5 customers in Brazil.") and out["sql"] in out["answer"]
    # the glossary mapped "customers": the enhanced question is returned and was what the LLM saw
    assert out["enhanced_question"].startswith("How many customers (= people who buy from the store")
    gen = next(c for c in llm.calls if c["json_schema"] and "sql" in c["json_schema"]["properties"])
    assert gen["messages"][-1]["content"] == out["enhanced_question"]
    assert not any(c["json_schema"] and "route" in c["json_schema"]["properties"] for c in llm.calls)  # no classify
    run = call(server, "get_run", {"run_id": out["run_id"]}).data
    assert run["route"] == "sql" and run["sql"] == out["sql"] and [s["name"] for s in run["stages"]] == ["sql"]
    assert run["sql_context"]["glossary"] == [{"term": "customers", "matched": "customers"}]


def test_rows_and_cells_are_capped(server, make_llm_ctx, chinook):
    make_llm_ctx(scripted(["SELECT TrackId, Name || REPEAT('x', 400) AS long_name FROM Track ORDER BY TrackId"]))
    out = call(server, "sql_query", {"question": "List all tracks", "collection": "chinook"}).data
    assert out["status"] == "ok" and len(out["rows"]) == MAX_SQL_ROWS
    assert out["row_count"] == 1000 and out["rows_omitted"] == 1000 - MAX_SQL_ROWS  # the guard's LIMIT 1000
    assert out["rows"][0][0] == 1 and len(out["rows"][0][1]) == CELL_CHARS and out["rows"][0][1].endswith("…")


@pytest.mark.parametrize("hostile, reason", [
    ("DROP TABLE Album", "only SELECT queries are allowed, got DROP"),
    ("SELECT 1; DELETE FROM Invoice", "exactly one statement is allowed"),
    ("SELECT * FROM read_csv('/etc/passwd')", "is not allowed"),
])
def test_refusal_is_structured_and_nothing_changes(server, make_llm_ctx, chinook, hostile, reason):
    before = hashlib.sha256(chinook.read_bytes()).hexdigest()
    make_llm_ctx(scripted([hostile, hostile]))
    res = call(server, "sql_query", {"question": "Delete the albums", "collection": "chinook"})
    assert not res.is_error
    out = res.data
    assert out["status"] == "refused" and reason in out["refused"]["reason"]
    assert out["refused"]["attempts"] == 1 and "rows" not in out and "did not run the query" in out["answer"]
    assert hashlib.sha256(chinook.read_bytes()).hexdigest() == before


def test_database_error_after_the_repair_round(server, make_llm_ctx, chinook):
    make_llm_ctx(scripted(["SELECT Nation FROM Customer", "SELECT Nation FROM Customer"]))
    out = call(server, "sql_query", {"question": "Which nations?", "collection": "chinook"}).data
    assert out["status"] == "error" and "Nation" in out["error"]["reason"] and out["error"]["attempts"] == 2


def test_without_an_llm_it_says_what_was_not_matched(server, ctx, chinook):
    """No LLM, a question no template answers: two lines, why not (naming RELAYRAG_LLM) and the closest
    templates; a template question is answered from its SQL."""
    out = call(server, "sql_query", {"question": "How many customers?", "collection": "chinook"}).data
    assert out["status"] == "unavailable" and out["reason"] == "no-llm"
    lines = out["message"].splitlines()
    assert len(lines) == 2 and "RELAYRAG_LLM" in lines[0] and lines[1].startswith("Closest templates: “")
    out = call(server, "sql_query", {"question": "Which 2 countries have the most customers?",
                                     "collection": "chinook"}).data
    assert out["status"] == "ok" and out["rows"] == [["USA", 13], ["Canada", 8]] and "LIMIT 2" in out["sql"]


def test_errors_for_collections_without_a_warehouse(server, ctx, chinook):
    res = call(server, "sql_query", {"question": "How many?", "collection": "docs"}, raise_on_error=False)
    assert res.is_error and "has no warehouse (collections with one: chinook)" in res.content[0].text
    res = call(server, "sql_query", {"question": "How many?", "collection": "../etc"}, raise_on_error=False)
    assert res.is_error and "collection" in res.content[0].text
    res = call(server, "sql_query", {"question": "", "collection": "chinook"}, raise_on_error=False)
    assert res.is_error


def test_list_collections_shows_warehouses_and_ask_accepts_warehouse_only(server, make_llm_ctx, chinook, small_corpus):
    from relayrag.ingest.pipeline import ingest
    ctx, _ = make_llm_ctx(scripted([BRAZIL_SQL]))
    ingest(ctx, small_corpus, "docs")
    cols = call(server, "list_collections", {}).data
    by_name = {c["name"]: c for c in cols["collections"]}
    assert cols["count"] == 2 and set(by_name) == {"chinook", "docs"}
    assert by_name["chinook"]["version"] is None and by_name["chinook"]["warehouse"] == {"tables": 11, "sql_config": True}
    assert by_name["docs"]["warehouse"] is None and by_name["docs"]["files"] == 4
    out = call(server, "ask", {"question": "How many customers are in Brazil?", "collection": "chinook"}).data
    assert out["route"] == "sql" and out["rows"] == [[5]]
    res = call(server, "ask", {"question": "How many?", "collection": "nothing"}, raise_on_error=False)
    assert res.is_error and "collections: chinook, docs" in res.content[0].text


def test_sql_query_is_listed_with_described_parameters(server):
    async def go():
        async with Client(server) as c:
            return {t.name: t for t in await c.list_tools()}
    t = asyncio.run(go())["sql_query"]
    assert t.annotations.readOnlyHint is True
    schema = t.inputSchema
    assert schema["required"] == ["question", "collection"] and schema["properties"]["collection"]["pattern"]
    assert all(p.get("description") for p in schema["properties"].values())
    assert "refused" in t.description and "unavailable" in t.description and "at most 50" in t.description
    assert MAX_SQL_ROWS == 50  # the description states it
