"""generate: the cited answer. Extractive sentences without an LLM, the LLM's answer with [n] markers with
one, extractive (named as a fallback) when the LLM fails; every citation names the document and page."""

from tests.unit.stages.conftest import call, prepare

METHOD = {"no-llm": "extractive", "llm": "llm", "llm-failure": "extractive (llm failed)"}


def test_generate_cites_the_page(mode_ctx):
    mode, ctx, llm = mode_ctx
    prepare(ctx, "generate")
    out = call("generate", {"run_id": "r"}, ctx)
    assert out["method"] == METHOD[mode] and out["n_citations"] >= 1
    rec = ctx.docstore.get_run("r")
    assert "2,000 eggs" in rec["answer"] and "[1]" in rec["answer"]
    c = rec["citations"][0]
    assert c["doc"] == "bees.txt" and c["page"] == 1 and c["n"] == 1 and c["quote"]
    assert ("llm_error" in out) == (mode == "llm-failure")


def test_chitchat_gets_a_template_without_citations(ctx, small_corpus):
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "t")
    call("classify", {"run_id": "c", "question": "hello!", "collection": "t"}, ctx)
    out = call("generate", {"run_id": "c"}, ctx)
    assert out["method"] == "template" and ctx.docstore.get_run("c")["citations"] == []


def test_not_found_names_each_related_page_once_in_the_question_language():
    from relayrag.stages.generate import not_found_text
    related = [{"doc": "a.pdf", "page": 1}, {"doc": "a.pdf", "page": 1}, {"doc": "a.pdf", "page": 6}]
    en = not_found_text("Who is the chief executive?", "c", related)
    assert en.endswith("Related passages (not an answer): a.pdf p. 1; a.pdf p. 6.")
    ja = not_found_text("社長は誰ですか？", "c", related)
    assert "見つかりませんでした" in ja and ja.count("a.pdf p. 1") == 1
