"""rerank: order the candidates. Sentence evidence without an LLM, pointwise LLM relevance with one, sentence
evidence (named as a fallback) when the LLM fails; the relevant chunk ends on top in every case."""

from tests.unit.stages.conftest import call, prepare

METHOD = {"no-llm": "sentence-evidence", "llm": "llm-pointwise", "llm-failure": "sentence-evidence (llm failed)"}


def test_rerank_puts_the_answer_chunk_first(mode_ctx):
    mode, ctx, llm = mode_ctx
    prepare(ctx, "rerank")
    out = call("rerank", {"run_id": "r"}, ctx)
    assert out["method"] == METHOD[mode] and out["n_reranked"] >= 1
    rec = ctx.docstore.get_run("r")
    top = rec["candidates"][0]
    assert ctx.snapshot("t").chunks[top["row"]]["doc"] == "bees.txt" and out["top_chunk_id"] == top["chunk_id"]
    assert ("llm_error" in out) == (mode == "llm-failure")
