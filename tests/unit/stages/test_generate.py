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


def test_a_not_found_says_when_the_question_and_the_documents_are_in_other_languages(ctx, tmp_path):
    """A Japanese question over an English collection found nothing and said only 見つかりませんでした (the new
    user's finding): the not-found now says, in the question's language, that the documents are in another
    language; an English question over it, and a Japanese one over a Japanese collection, get no such note."""
    from relayrag.engine.local import ask
    from relayrag.ingest.pipeline import ingest
    en = tmp_path / "en"
    en.mkdir()
    (en / "fleet.txt").write_text("The fleet has 14 delivery vans. Each van is serviced every 10,000 kilometres. "
                                  "The depot opens at 6 am on weekdays.", encoding="utf-8")
    ja = tmp_path / "ja"
    ja.mkdir()
    (ja / "kitei.txt").write_text("第1条 この規程は、車両の管理について定める。第2条 車両は毎月点検する。"
                                  "第3条 点検の記録は5年間保存する。", encoding="utf-8")
    ingest(ctx, en, "fleet")
    ingest(ctx, ja, "kitei")
    jq = ask("配送車は何台ありますか？", "fleet", ctx=ctx)
    assert jq["found"] is False and "日本語以外の言語" in jq["answer"]
    eq = ask("What colour are the office chairs?", "fleet", ctx=ctx)
    assert eq["found"] is False and "language" not in eq["answer"]
    other = ask("What is the parking fee for visitors?", "kitei", ctx=ctx)
    assert other["found"] is False and "in Japanese, Chinese or Korean" in other["answer"]
    same = ask("会議室の予約方法は？", "kitei", ctx=ctx)
    assert same["found"] is False and "言語" not in same["answer"]
    from relayrag.stages.answer_text import language_note
    assert language_note("配送車は何台？", "mixed") == "" and language_note("How many vans?", "mixed") == ""
