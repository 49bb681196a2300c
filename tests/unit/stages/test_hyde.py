"""hyde: retrieval queries for the run. Without an LLM the question passes through on the first try (PRF and
keywords are added on a retry); with one, a hypothetical passage and rewrites; when the LLM fails, the
no-LLM method, named as a fallback."""

from tests.unit.stages.conftest import call, prepare

METHOD = {"no-llm": "passthrough", "llm": "llm-hyde", "llm-failure": "prf (llm failed)"}


def test_hyde_writes_the_queries(mode_ctx):
    mode, ctx, llm = mode_ctx
    prepare(ctx, "hyde")
    out = call("hyde", {"run_id": "r"}, ctx)
    assert out["method"] == METHOD[mode] and out["n_queries"] >= 1
    queries = ctx.docstore.get_run("r")["queries"]
    assert queries[0]["kind"] == "original" and len(queries) == out["n_queries"]
    assert any(q["kind"] == "hyde" for q in queries) == (mode == "llm")
    assert ("llm_error" in out) == (mode == "llm-failure")


def test_a_retry_without_llm_adds_feedback_and_keyword_queries(ctx, small_corpus):
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "t")
    prepare(ctx, "hyde")
    ctx.docstore.update_run("r", {"retry_count": 1})
    out = call("hyde", {"run_id": "r"}, ctx)
    kinds = [q["kind"] for q in ctx.docstore.get_run("r")["queries"]]
    assert out["method"] == "prf" and "keywords" in kinds and kinds[0] == "original"
