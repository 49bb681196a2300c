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
