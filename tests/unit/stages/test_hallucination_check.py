"""hallucination_check: is every answer sentence supported by its cited chunk? Sentence support by embedding
without an LLM, the LLM's verdict with one, sentence support (named as a fallback) when the LLM fails."""

from tests.unit.stages.conftest import call, prepare

METHOD = {"no-llm": "sentence-support", "llm": "llm", "llm-failure": "sentence-support (llm failed)"}


def test_a_supported_answer_is_grounded(mode_ctx):
    mode, ctx, llm = mode_ctx
    prepare(ctx, "hallucination_check")
    out = call("hallucination_check", {"run_id": "r"}, ctx)
    assert out["method"] == METHOD[mode] and out["route"] == "grounded" and out["grounded"]
    assert ctx.docstore.get_run("r")["grounded"] is True
    assert ("llm_error" in out) == (mode == "llm-failure")


def test_an_unsupported_answer_regenerates_then_refuses(ctx, small_corpus):
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "t")
    prepare(ctx, "hallucination_check")
    ctx.docstore.update_run("r", {"answer_sentences": [{"text": "The queen lays 9 million eggs on Mars.", "cites": [1]}]})
    assert call("hallucination_check", {"run_id": "r"}, ctx)["route"] == "regenerate"
    ctx.docstore.update_run("r", {"answer_sentences": [{"text": "Bees live on the Moon.", "cites": [1]}]})
    assert call("hallucination_check", {"run_id": "r"}, ctx)["route"] == "refuse"
    assert ctx.docstore.get_run("r")["refused"] is True
