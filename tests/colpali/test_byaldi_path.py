"""The real page-image path: byaldi (RAGMultiModalModel) with tiny random ColPali / ColQwen2 models built offline.

Indexes a generated multi-page PDF and an image file at ingestion, searches, reloads the index saved in the
snapshot in a fresh context, deletes a document (its pages leave the index and the blob store), re-ingests
unchanged content (nothing re-encoded), and runs the visual route through workflows/rag.yaml. Random weights say
nothing about retrieval quality; routing and fusion quality are tested with a deterministic double
(tests/unit/stages/test_colpali_search.py)."""

from __future__ import annotations

import gzip
import json
import math

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from tests.pages_doubles import write_manual, write_png

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(params=["colpali", "colqwen2"])
def model_ctx(request, tiny_models, home, monkeypatch):
    """A fresh embedded context whose RELAYRAG_COLPALI_MODEL is the tiny model of one kind."""
    from relayrag.context import default_context
    from relayrag.settings import load_settings
    monkeypatch.setenv("RELAYRAG_COLPALI_MODEL", str(tiny_models[request.param]))
    monkeypatch.setenv("RELAYRAG_COLPALI_DEVICE", "cpu")
    load_settings.cache_clear()
    return default_context()


def fresh_context():
    """Another context on the same home and settings (what a new process or function instance builds)."""
    from relayrag.context import StageContext, build_blobstore, build_docstore
    from relayrag.settings import load_settings
    s = load_settings()
    return StageContext(s, build_blobstore(s), build_docstore(s))


def test_byaldi_indexes_searches_saves_reloads_and_forgets_deleted_pages(model_ctx, tmp_path):
    ctx = model_ctx
    docs = tmp_path / "docs"
    write_manual(docs)
    write_png(docs / "site-photo.png", "green", "PUMP HOUSE")
    s = ingest(ctx, docs, "m").to_dict()
    assert s["pages"] == {"indexed": 4, "rendered": 4, "embedded": 4}
    assert s["page_search"].startswith("page-image search: on (4 pages, model ")
    version = ctx.current_version("m")
    base = f"snapshots/m/{version}/colpali/"
    keys = ctx.blobstore.list(base)
    assert base + "index_config.json.gz" in keys and any("/embeddings/embeddings_" in k for k in keys)
    config = json.loads(gzip.decompress(ctx.blobstore.get_bytes(base + "index_config.json.gz")))
    assert config["model_name"] == ctx.settings.colpali_model and config["library_version"] == "0.0.7"

    hits = ctx.page_scorer("m", version).search("Which figure shows the impeller?", 4)
    assert len(hits) == 4 and all(math.isfinite(h.score) for h in hits)
    assert {(h.doc, h.page) for h in hits} == {("manual.pdf", 1), ("manual.pdf", 2), ("manual.pdf", 3),
                                               ("site-photo.png", 1)}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    # reloaded from the snapshot by another context (a new process): the same index, the same scores
    again = fresh_context().page_scorer("m", version).search("Which figure shows the impeller?", 4)
    assert [(h.doc, h.page, round(h.score, 3)) for h in again] == [(h.doc, h.page, round(h.score, 3)) for h in hits]

    # unchanged content is never encoded again: one new file, one page encoded
    write_png(docs / "valve.png", "red", "VALVE")
    s = ingest(ctx, docs, "m").to_dict()
    assert s["files"]["skipped"] == 2 and s["pages"] == {"indexed": 5, "rendered": 1, "embedded": 1}

    # delete the PDF: its pages leave the page index and its images and vectors leave the blob store
    sha = next(p["sha256"] for p in ctx.snapshot("m").pages if p["doc"] == "manual.pdf")
    assert ctx.blobstore.list(f"pages/m/{sha}/")
    (docs / "manual.pdf").unlink()
    s = ingest(ctx, docs, "m").to_dict()
    assert s["files"]["deleted"] == 1 and s["pages"]["indexed"] == 2 and s["pages"]["embedded"] == 0
    assert ctx.blobstore.list(f"pages/m/{sha}/") == []
    v2 = ctx.current_version("m")
    hits = fresh_context().page_scorer("m", v2).search("Which figure shows the impeller?", 10)
    assert sorted((h.doc, h.page) for h in hits) == [("site-photo.png", 1), ("valve.png", 1)]


def test_visual_question_through_the_workflow_with_byaldi(model_ctx, tmp_path):
    ctx = model_ctx
    write_manual(tmp_path / "docs")
    ingest(ctx, tmp_path / "docs", "m")
    r = ask("Which diagram shows the pump motor wiring?", "m")
    assert r["route"] == "visual"
    step = next(s for s in r["stages"] if s["name"] == "colpali_search")
    assert step["method"] == "colpali" and r["page_search"]["status"] == "on"
    assert [s["name"] for s in r["stages"]] == ["classify", "colpali_search", "generate", "hallucination_check"]
    assert len(r["pages"]) == 3 and all(open(p["image"], "rb").read(8) == PNG_MAGIC for p in r["pages"])
    assert r["found"] and r["citations"] and "page image" in r["answer"]
    assert open(r["citations"][0]["image"], "rb").read(8) == PNG_MAGIC
    # a text question in a collection with page vectors fuses the page hits with the text hits
    r = ask("What must be checked every week?", "m")
    fuse = next(s for s in r["stages"] if s["name"] == "colpali_search")
    assert r["route"] == "rag" and fuse["method"] == "colpali+rrf"
