"""retrieve: the bandit picks an arm (or the request forces one) and the arm's ranking becomes the run's
candidates. No LLM is involved: the three LLM setups give the same method and never call it."""

import pytest

from tests.unit.stages.conftest import call, prepare


def test_retrieve_never_calls_the_llm(mode_ctx):
    mode, ctx, llm = mode_ctx
    prepare(ctx, "retrieve")
    before = len(llm.calls) if llm else 0
    out = call("retrieve", {"run_id": "r"}, ctx)
    assert out["method"] == "thompson" and out["n_candidates"] > 0
    assert (len(llm.calls) if llm else 0) == before
    rec = ctx.docstore.get_run("r")
    assert rec["arm"] == out["arm"] and rec["snapshot_version"] == ctx.snapshot("t").version
    assert ctx.snapshot("t").chunks[rec["candidates"][0]["row"]]["doc"] == "bees.txt"


@pytest.mark.parametrize("arm", ["dense", "bm25", "hybrid"])
def test_a_forced_arm_is_used(ctx, small_corpus, arm):
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "t")
    prepare(ctx, "retrieve", question="What is the standard rail gauge in millimetres?")
    out = call("retrieve", {"run_id": "r", "arm": arm}, ctx)
    assert out["arm"] == arm and out["method"] == "forced"
    rec = ctx.docstore.get_run("r")
    assert ctx.snapshot("t").chunks[rec["candidates"][0]["row"]]["doc"] == "rail.html"
