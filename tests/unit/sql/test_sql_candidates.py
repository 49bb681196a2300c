"""Execution-guided Text-to-SQL: several candidates, each guarded and run on the read-only Chinook
warehouse, the answer chosen by agreement of result sets; the no-LLM fix-up of wrong-table columns; the
repair round; and nothing any candidate runs can write. The LLM is a scripted test double; the warehouse,
the guard and DuckDB are real."""

import hashlib
import json
from pathlib import Path

import pytest

from relayrag.sql.context import build_context
from relayrag.sql.generate import (
    candidates_for,
    generate_and_run,
    requalify,
    result_signature,
    user_message,
)
from relayrag.sql.warehouse import load_warehouse
from tests.conftest import ScriptedLLM
from tests.unit.sql.conftest import CHINOOK, CONFIG, REPO



def queue_llm(sqls, name="llamacpp:test"):
    queue = list(sqls)
    llm = ScriptedLLM(lambda messages, schema: {"sql": queue.pop(0), "tables": [], "assumptions": []})
    llm.name = name
    return llm


def fingerprint(path: Path) -> tuple:
    return hashlib.sha256(path.read_bytes()).hexdigest(), sorted(p.name for p in path.parent.iterdir())


def test_the_result_most_candidates_agree_on_wins_over_the_first(wh):
    # candidate 1 (greedy, with the plan) is wrong; 2 and 3 are written differently but return the same rows
    llm = queue_llm(["SELECT COUNT(*) AS n FROM Customer WHERE Country = 'Canada'",
                     "SELECT COUNT(*) AS customers FROM Customer WHERE Country = 'Brazil'",
                     "SELECT COUNT(CustomerId) FROM Customer AS c WHERE c.Country IN ('Brazil')"])
    ctx = build_context("How many customers are in Brazil, per country?", wh, plan=True)
    result, attempts = generate_and_run(llm, wh, ctx.question, ctx, candidates=3)
    assert result.ok and result.rows == [[5]]
    assert [a["variant"] for a in attempts] == ["plan", "plain", "plan-cte"]
    chosen = [a for a in attempts if a.get("chosen")]
    assert len(chosen) == 1 and chosen[0]["variant"] == "plain" and chosen[0]["votes"] == 2
    assert [c["messages"][1]["content"] for c in llm.calls][0].startswith("How many customers")
    assert "SQL shape (plan):" in llm.calls[0]["messages"][1]["content"]
    assert "SQL shape (plan):" not in llm.calls[1]["messages"][1]["content"]
    assert "CTE" in llm.calls[2]["messages"][1]["content"]


def test_generation_stops_once_the_leader_cannot_be_overtaken(wh):
    llm = queue_llm(["SELECT COUNT(*) FROM Genre", "SELECT COUNT(GenreId) AS genres FROM Genre"] + ["SELECT 1"] * 3)
    result, attempts = generate_and_run(llm, wh, "How many genres are there?", candidates=3)
    assert result.rows == [[25]] and len(llm.calls) == 2  # 2 of 3 agree: the third cannot change the choice
    llm = queue_llm(["SELECT COUNT(*) FROM Genre"] * 3 + ["SELECT 2"] * 2)
    result, _ = generate_and_run(llm, wh, "How many genres are there?", candidates=5)
    assert result.rows == [[25]] and len(llm.calls) == 3  # 3 of 5


def test_ties_go_to_a_non_empty_result_then_the_earliest_candidate(wh):
    llm = queue_llm(["SELECT Name FROM Genre WHERE Name = 'Polka'", "SELECT Name FROM Genre WHERE Name = 'Jazz'",
                     "SELECT Name FROM Genre WHERE Name = 'Rock'"])
    result, attempts = generate_and_run(llm, wh, "Which genre is it?", candidates=3)
    assert result.rows == [["Jazz"]] and attempts[1].get("chosen") and len(llm.calls) == 3


def test_result_signature_ignores_row_order_column_order_and_float_noise():
    a = [["Brazil", 37.620000000000005, 5], ["USA", 12.0, 13]]
    b = [[13, "USA", 12], [5, "Brazil", 37.62]]
    assert result_signature(a) == result_signature(b)
    assert result_signature(a) != result_signature(a[:1])
    assert result_signature([[1], [1]]) != result_signature([[1]])  # multisets, not sets


def test_a_failed_candidate_is_repaired_with_the_error_and_the_columns(wh):
    llm = queue_llm(["SELECT Track.Quantity FROM Track", "SELECT SUM(Quantity) AS units FROM InvoiceLine"])
    result, attempts = generate_and_run(llm, wh, "How many units were sold?", candidates=1)
    assert result.ok and result.rows == [[2240]] and len(attempts) == 2 and attempts[1]["repair"]
    repair = llm.calls[1]["messages"][-1]["content"]
    assert "That query failed" in repair and "Quantity" in repair and "- Track: TrackId, Name, AlbumId" in repair


def test_requalify_moves_a_column_to_the_one_joined_table_that_has_it(wh):
    schema = wh.schema()
    fixed = requalify("SELECT T1.Name, SUM(T1.Quantity) AS units FROM Genre AS T1 JOIN Track AS T2 ON "
                      "T1.GenreId = T2.GenreId JOIN InvoiceLine AS T3 ON T3.TrackId = T2.TrackId GROUP BY T1.Name",
                      schema)
    assert "SUM(T3.Quantity)" in fixed and "T1.Name" in fixed
    # a join condition is left alone (moving it would compare a column with itself)
    on = "SELECT Album.Title FROM Album JOIN Track ON Track.ArtistId = Album.ArtistId"
    assert requalify(on, schema) == on
    # nobody has the column, or SQL that does not parse: unchanged
    assert requalify("SELECT T1.Duration FROM Track AS T1", schema) == "SELECT T1.Duration FROM Track AS T1"
    assert requalify("SELEC nonsense (", schema) == "SELEC nonsense ("
    # through the whole path: the candidate runs without a repair round
    llm = queue_llm(["SELECT T2.Name AS media, COUNT(*) AS n FROM Track AS T1 JOIN MediaType AS T2 ON "
                     "T1.MediaTypeId = T2.MediaTypeId WHERE T2.Milliseconds > 600000 GROUP BY T2.Name"])
    result, attempts = generate_and_run(llm, wh, "Long tracks per media type?", candidates=1)
    assert result.ok and attempts[0]["requalified"] and len(llm.calls) == 1
    assert "T1.Milliseconds > 600000" in result.sql


def test_a_write_ends_the_question_as_a_refusal_and_nothing_changes(wh):
    before = fingerprint(Path(wh.path))
    llm = queue_llm(["DELETE FROM Invoice", "SELECT COUNT(*) FROM Invoice", "SELECT COUNT(*) FROM Invoice"])
    result, attempts = generate_and_run(llm, wh, "Delete all invoices", candidates=3)
    assert result.refused and len(llm.calls) == 1 and len(attempts) == 1
    assert fingerprint(Path(wh.path)) == before


WRITES = ["DROP TABLE Album", "DELETE FROM Invoice WHERE InvoiceId > 0", "UPDATE Track SET UnitPrice = 0",
          "INSERT INTO Genre VALUES (99, 'x')", "ATTACH DATABASE '/tmp/evil.db' AS evil", "SELECT 1; DROP TABLE Album",
          "SELECT 1 --\n; DELETE FROM InvoiceLine", "COPY Invoice TO '/tmp/i.csv'",
          "WITH d AS (DELETE FROM Invoice RETURNING *) SELECT * FROM d", "CREATE TABLE t AS SELECT * FROM Invoice",
          "SELECT * FROM read_csv('/etc/passwd')", "PRAGMA database_list", "INSTALL httpfs", "VACUUM",
          "CALL pragma_version()", "SELECT * FROM Invoice; CHECKPOINT"]


def test_nothing_any_candidate_runs_can_write(wh):
    """Every candidate of every variant and every repair round goes through the guard: with a model that
    answers only writes (and repairs with more writes), nothing runs and the database file and its folder
    are unchanged."""
    before = fingerprint(Path(wh.path))
    for i in range(len(WRITES)):
        queue = WRITES[i:] + WRITES[:i]
        llm = ScriptedLLM(lambda messages, schema, q=queue: {"sql": q.pop(0) if q else "DROP TABLE Track",
                                                             "tables": [], "assumptions": []})
        llm.name = "openai:test"
        result, attempts = generate_and_run(llm, wh, "Clean up the tables", candidates=5)
        assert result is not None and not result.ok
        assert all(a["refused"] or a["error"] for a in attempts)
    assert fingerprint(Path(wh.path)) == before
    assert wh.query("SELECT COUNT(*) FROM Invoice").rows == [[412]]


def test_candidates_default_per_backend_and_the_setting_wins(monkeypatch, home):
    from relayrag.errors import ConfigError
    from relayrag.settings import load_settings

    def named(n):
        return type("L", (), {"name": n})()
    assert candidates_for(named("llamacpp:qwen2.5-coder-1.5b")) == 3
    assert candidates_for(named("openai:gpt-4o-mini")) == 5 and candidates_for(named("vertex:gemini-2.5-flash")) == 5
    assert candidates_for(named("scripted")) == 1 and candidates_for(named("llamacpp:x"), 2) == 2
    monkeypatch.setenv("RELAYRAG_SQL_CANDIDATES", "7")
    load_settings.cache_clear()
    assert load_settings().sql_candidates == 7
    monkeypatch.setenv("RELAYRAG_SQL_CANDIDATES", "-1")
    load_settings.cache_clear()
    with pytest.raises(ConfigError, match="RELAYRAG_SQL_CANDIDATES"):
        load_settings()
    monkeypatch.setenv("RELAYRAG_SQL_CANDIDATES", "0")
    monkeypatch.setenv("RELAYRAG_SQL_EXAMPLES", "random")
    load_settings.cache_clear()
    with pytest.raises(ConfigError, match="RELAYRAG_SQL_EXAMPLES='random': invalid SQL example selection"):
        load_settings()
    load_settings.cache_clear()


def test_variants_never_repeat_a_prompt_and_speak_the_question_language(wh):
    from relayrag.sql.generate import _variants
    plain = build_context("List all genres.", wh, plan=True)  # no shape detected: "plan" == "plain"
    names = [v.name for v in _variants(plain, 4)]
    assert names == ["plan", "plan-cte", "plan-t0.7", "plan-cte-t0.9"]
    keys = {(user_message(plain, v), v.temperature) for v in _variants(plain, 4)}
    assert len(keys) == 4
    ja = build_context("各年で最も売上が多かった国はどこ？", wh, plan=True)
    v = _variants(ja, 3)
    assert "SQLの形（計画）" in user_message(ja, v[0]) and "RANK() OVER" in user_message(ja, v[0])
    assert "CTE" in user_message(ja, v[2]) and "段階的" in user_message(ja, v[2])


def test_eval_sql_reports_the_method_and_the_votes(make_llm_ctx, home, tmp_path):
    """`relayrag eval sql` runs the candidates with the backend's default and records the method."""
    from relayrag.evaluation.sql import evaluate_sql
    load_warehouse(home, "chinook", [CHINOOK], config=CONFIG)
    rows = [json.loads(x) for x in (REPO / "tests/fixtures/text2sql/dev.jsonl").read_text().splitlines()]
    row = next(r for r in rows if r["id"] == "dev-01")
    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps(row) + "\n")
    queue = ["SELECT 1", row["gold_sql"], row["gold_sql"]]
    ctx, llm = make_llm_ctx(lambda messages, schema: {"sql": queue.pop(0), "tables": [], "assumptions": []})
    llm.name = "llamacpp:test"
    rep = evaluate_sql(ctx, data, "chinook")
    assert rep["method"] == {"candidates": 3, "plan": True, "linking": True, "examples": "both",
                             "schema_format": "json"}
    item = rep["items"][0]
    # no shape detected, so "plain" would repeat "plan": the second candidate is "plan-cte"
    assert item["correct"] and item["attempts"] == 3 and item["chosen"] == "plan-cte" and item["votes"] == 2
    assert rep["llm_calls_per_question"] == 3
