"""classify: route and open the run record; few-shot embedding without an LLM, the LLM's route with one, and
the embedding method (named as a fallback, with the LLM's error) when the LLM fails."""

import pytest

from tests.unit.stages.conftest import QUESTION, call

METHOD = {"no-llm": "few-shot-embedding", "llm": "llm", "llm-failure": "few-shot-embedding (llm failed)"}


def test_classify_routes_and_opens_the_run(mode_ctx):
    mode, ctx, llm = mode_ctx
    out = call("classify", {"run_id": "c", "question": QUESTION, "collection": "t"}, ctx)
    assert out["route"] == "rag" and out["method"] == METHOD[mode]
    rec = ctx.docstore.get_run("c")
    assert rec["question"] == QUESTION and rec["route"] == "rag" and rec["route_method"] == METHOD[mode]
    assert ("llm_error" in out) == (mode == "llm-failure")
    if mode == "llm-failure":
        assert "endpoint down" in out["llm_error"]
    assert (len(llm.calls) == 1) if llm else True


@pytest.mark.parametrize("question", ["hello!", "ありがとう"])
def test_small_talk_is_chitchat_without_an_llm(ctx, small_corpus, question):
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "t")
    assert call("classify", {"run_id": "x", "question": question, "collection": "t"}, ctx)["route"] == "chitchat"
