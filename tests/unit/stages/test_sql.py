"""sql: Text-to-SQL over the collection's warehouse. Without an LLM it says how to configure one (nothing
runs); with the scripted LLM the query runs and answers; when the LLM fails the attempt is recorded and the
answer says it could not answer."""

import pytest

from tests.conftest import EXAMPLES, sql_route_reply
from tests.unit.stages.conftest import MODES, call, failing_reply

CHINOOK = EXAMPLES / "chinook" / "chinook.sqlite"
SQL = "SELECT COUNT(*) AS n FROM Customer WHERE Country = 'Brazil'"


@pytest.mark.parametrize("mode", MODES)
def test_sql_stage_per_llm_setup(mode, home, make_llm_ctx):
    from relayrag.context import default_context
    from relayrag.sql.warehouse import load_warehouse
    load_warehouse(home, "chinook", [CHINOOK])
    if mode == "no-llm":
        ctx = default_context()
    else:
        ctx, _ = make_llm_ctx(sql_route_reply(SQL) if mode == "llm" else failing_reply)
    ctx.docstore.create_run("s", {"run_id": "s", "question": "How many customers are in Brazil?",
                                  "collection": "chinook", "route": "sql"})
    out = call("sql", {"run_id": "s"}, ctx)
    rec = ctx.docstore.get_run("s")
    if mode == "no-llm":
        assert out["method"] == "no-llm" and not out["available"] and "RELAYRAG_LLM" in rec["answer"]
    elif mode == "llm":
        assert out["method"] == "llm" and out["ok"] and rec["rows"] == [[5]] and SQL in rec["sql"]
    else:
        assert out["method"] == "llm" and not out["ok"] and rec["sql_attempts"][0]["error"].startswith("LLM:")
        assert "could not answer" in rec["answer"]


def test_a_write_is_refused_and_nothing_runs(home, make_llm_ctx):
    from relayrag.sql.warehouse import load_warehouse
    load_warehouse(home, "chinook", [CHINOOK])
    ctx, _ = make_llm_ctx(sql_route_reply("DELETE FROM Customer"))
    ctx.docstore.create_run("w", {"run_id": "w", "question": "delete them", "collection": "chinook"})
    out = call("sql", {"run_id": "w"}, ctx)
    assert out["refused"] and not out["ok"]
    assert ctx.warehouse("chinook").query("SELECT COUNT(*) AS n FROM Customer").rows == [[59]]


def test_without_an_llm_a_table_question_with_no_verified_query_goes_on_to_the_documents(chinook_shop, ctx):
    """The README's `shop` collection (Chinook warehouse + refund policy), no LLM: a question naming a table
    ("customers") that matches no verified query is answered from the documents (route rag, the sql stage and
    then retrieval in the trace); when the documents do not answer either, the "not found" also says why the
    tables could not. A verified question is still answered by its SQL, and a direct sql stage call (the MCP
    sql_query tool) still answers "needs an LLM" instead of going on."""
    from relayrag.engine.local import ask
    r = ask("How are customers in Brazil refunded?", chinook_shop, ctx=ctx)
    names = [t["name"] for t in ctx.docstore.get_trace(r["run_id"])]
    assert r["route"] == "rag" and names.index("sql") < names.index("retrieve")
    assert any(c["doc"] == "refund-policy.pdf" for c in r["citations"])

    r = ask("Which employee has the most customers?", chinook_shop, ctx=ctx)
    assert r["route"] == "rag" and not r["found"] and "Text-to-SQL needs an LLM" in r["answer"]

    r = ask("Which three countries have the most customers?", chinook_shop, ctx=ctx)
    assert r["route"] == "sql" and r["rows"][:3] == [["USA", 13], ["Canada", 8], ["Brazil", 5]]

    ctx.docstore.create_run("direct", {"run_id": "direct", "question": "Which employee has the most customers?",
                                       "collection": chinook_shop, "route": "sql"})
    out = call("sql", {"run_id": "direct"}, ctx)
    assert out["route"] is None and out["method"] == "no-llm"
    assert ctx.docstore.get_run("direct")["route"] == "sql"


def test_without_an_llm_the_tables_say_so_in_the_questions_language(home):
    """A Japanese table question with no LLM and no verified query gets the "needs an LLM" answer in Japanese
    (the settings named stay as written); an English one in English."""
    from relayrag.context import default_context
    from relayrag.sql.warehouse import load_warehouse
    load_warehouse(home, "chinook", [CHINOOK])
    ctx = default_context()
    for run_id, question, said in (("ja", "従業員ごとの顧客数が最も多いのは誰ですか？", "LLMが必要です"),
                                   ("en", "Which employee has the most customers?", "Text-to-SQL needs an LLM")):
        ctx.docstore.create_run(run_id, {"run_id": run_id, "question": question, "collection": "chinook",
                                         "route": "sql"})
        call("sql", {"run_id": run_id}, ctx)
        answer = ctx.docstore.get_run(run_id)["answer"]
        assert said in answer and "RELAYRAG_LLM=llamacpp" in answer, answer
