"""grade: decide relevance, reward the arms, route. The calibrated judge without an LLM, the LLM's yes/no
with one, the judge (named as a fallback) when the LLM fails; an answerable question passes every time."""

from tests.unit.stages.conftest import call, prepare

METHOD = {"no-llm": "calibrated", "llm": "llm", "llm-failure": "calibrated (llm failed)"}


def test_grade_passes_a_relevant_candidate(mode_ctx):
    mode, ctx, llm = mode_ctx
    prepare(ctx, "grade")
    out = call("grade", {"run_id": "r"}, ctx)
    assert out["method"] == METHOD[mode] and out["route"] == "pass" and out["n_relevant"] >= 1
    rec = ctx.docstore.get_run("r")
    assert rec["relevant"] and rec["retry_count"] == 0 and rec["reward"] == out["reward"]
    assert ("llm_error" in out) == (mode == "llm-failure")


def test_nothing_relevant_retries_once_then_passes(ctx, small_corpus):
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "t")
    prepare(ctx, "grade", question="What is the boiling point of mercury in kelvin?")
    first = call("grade", {"run_id": "r"}, ctx)
    assert first["route"] == "retry" and first["retry_count"] == 1
