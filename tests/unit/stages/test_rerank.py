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


def test_rerank_scores_every_candidate_and_grade_judges_its_head(home, small_corpus):
    """By default rerank scores all the candidates retrieve keeps (the stored sentence vectors make that a
    lookup); `rerank_k` still caps it, and grade judges only the top `grade_k` of the reranked order — the
    only candidates whose texts the run record carries."""
    from relayrag.context import default_context
    from relayrag.ingest.pipeline import ingest
    ctx = default_context()
    assert not ingest(ctx, small_corpus, "t").failed
    prepare(ctx, "rerank", run_id="all")
    out = call("rerank", {"run_id": "all"}, ctx)
    cands = ctx.docstore.get_run("all")["candidates"]
    assert len(cands) >= 3 and out["n_reranked"] == len(cands)
    assert all("rerank_score" in c for c in cands)

    ctx.settings = ctx.settings.model_copy(update={"rerank_k": 2, "grade_k": 1})
    prepare(ctx, "rerank", run_id="capped")
    assert call("rerank", {"run_id": "capped"}, ctx)["n_reranked"] == 2
    cands = ctx.docstore.get_run("capped")["candidates"]
    assert ["rerank_score" in c for c in cands[:3]] == [True, True, False]
    assert ["text" in c for c in cands[:2]] == [True, False]
    assert ["lexical" in c for c in cands[:2]] == [True, False]  # what grade reads, for its head only
    call("grade", {"run_id": "capped"}, ctx)
    graded = ctx.docstore.get_run("capped")["candidates"]
    assert "p_relevant" in graded[0] and not any("p_relevant" in c for c in graded[1:])
