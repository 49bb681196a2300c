"""Issue 28: evaluation runs are not production traffic. They are marked (relayrag.records.eval_run_id) and the
Overview and Bandit statistics leave them out; the Runs page lists them, labelled."""

from __future__ import annotations

import pytest


@pytest.fixture
def docs(ctx, small_corpus):
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "docs")
    return small_corpus


def test_eval_runs_are_marked_listed_and_left_out_of_production_stats(api, docs, ctx):
    from relayrag.engine.local import ask
    from relayrag.records import eval_run_id, is_eval_run
    ask("hello", "docs", ctx=ctx)  # production: small talk
    ask("How many eggs does the queen bee lay per day?", "docs", ctx=ctx, arm="bm25")
    for q in ("What is the boiling point of tungsten on Venus?", "How many worker bees live in a colony?",
              "What is the standard rail gauge?"):
        ask(q, "docs", ctx=ctx, run_id=eval_run_id())
    runs = ctx.docstore.list_runs(10)
    assert sorted(is_eval_run(r) for r in runs) == [False, False, True, True, True]

    m = api.get("/api/metrics").json()
    assert m["runs"] == 2 and m["evaluation_runs_left_out"] == 3
    assert m["routes"] == {"chitchat": 1, "rag": 1}  # no evaluation question counted
    assert m["questions"] == 1 and m["not_found"] == 0  # the evaluation's unanswerable question is not a refusal
    overview = api.get("/").text
    assert "3 evaluation runs</span> in that time left out" in overview
    page = api.get("/runs").text
    assert page.count('class="src-type eval-run"') == 3 and "tungsten on Venus" in page
    assert "evaluation runs left out" in api.get("/bandit").text


def test_evaluations_mint_marked_run_ids(ctx, small_corpus, tmp_path):
    import json

    from relayrag.evaluation.answers import load_golden, run_set
    from relayrag.ingest.pipeline import ingest
    from relayrag.records import is_eval_run
    ingest(ctx, small_corpus, "docs")
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"id": "q1", "question": "How many eggs does the queen bee lay per day?",
                                  "answers": ["2,000"], "category": "fact"}) + "\n", encoding="utf-8")
    rows = run_set(ctx, load_golden(golden), "docs")
    assert rows[0]["run_id"].startswith("eval-")
    runs = ctx.docstore.list_runs(10)
    assert runs and all(is_eval_run(r) for r in runs)
