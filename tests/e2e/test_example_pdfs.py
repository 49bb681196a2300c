"""The bundled public-domain PDFs, as the README's demo uses them: table and OCR-only answers cite the
right document and page."""

import shutil

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest

from tests.conftest import EXAMPLES


@pytest.fixture(scope="module")
def examples_ctx(tmp_path_factory):
    import os

    from relayrag.context import set_default_context
    from relayrag.settings import load_settings
    home = tmp_path_factory.mktemp("pdfs-home")
    old = os.environ.get("RELAYRAG_HOME")
    os.environ["RELAYRAG_HOME"] = str(home)
    load_settings.cache_clear()
    set_default_context(None)
    from relayrag.context import default_context
    ctx = default_context()
    summary = ingest(ctx, EXAMPLES / "pdfs", "examples")
    yield ctx, summary
    if old is None:
        os.environ.pop("RELAYRAG_HOME", None)
    else:
        os.environ["RELAYRAG_HOME"] = old
    load_settings.cache_clear()
    set_default_context(None)


def test_all_pdfs_ingest(examples_ctx):
    _, s = examples_ctx
    assert not s.failed and s.ingested == 5


def test_cost_table_answer_cites_federal_register_page(examples_ctx):
    ctx, _ = examples_ctx
    res = ask("What is the labor cost of the stabilizer wiring change?", "examples", ctx=ctx)
    top = res["citations"][0]
    assert top["doc"] == "federal-register-2020-17221.pdf" and top["page"] in (5, 6)
    assert "$6,715" in res["answer"] and res["grounded"]


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract-ocr is not installed (OCR-only pages)")
def test_ocr_only_page_answer_cites_it(examples_ctx):
    ctx, _ = examples_ctx
    res = ask("What should the pilot do if the autopilot is engaged when airspeed is unreliable?", "examples", ctx=ctx)
    cited = {(c["doc"], c["page"]) for c in res["citations"]}
    assert ("federal-register-2020-17221.pdf", 8) in cited
    rec = ctx.docstore.get_file("examples", str((EXAMPLES / "pdfs" / "federal-register-2020-17221.pdf").resolve()))
    assert 8 in rec["ocr_pages"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract-ocr is not installed (OCR-only pages)")
def test_golden_set_meets_the_no_llm_targets(examples_ctx):
    """benchmarks/golden/examples-pdfs.jsonl through the whole workflow (about 5 minutes on 2 cores): the
    issue-18 targets for the no-LLM path."""
    from relayrag.context import StageContext
    from relayrag.evaluation.answers import evaluate_answers
    from tests.conftest import REPO

    ctx, _ = examples_ctx
    plain = StageContext(ctx.settings, ctx.blobstore, ctx.docstore, embedder=ctx.embedder, llm_configured=False)
    o = evaluate_answers(plain, REPO / "benchmarks" / "golden" / "examples-pdfs.jsonl", "examples",
                         compare_llm=False)["methods"]["no-llm"]["overall"]
    assert o["answer_accuracy"] >= 0.85 and o["citation_precision"] >= 0.90, o
    assert o["refusal_recall"] >= 0.90 and o["grounded_unanswerable"] == 0, o
