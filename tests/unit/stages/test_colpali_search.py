"""Page images and page-image search without torch: page images at ingestion (every PDF page, image files as
one-page documents), their reuse and deletion with the version flip, the visual route through workflows/rag.yaml
on the embedded engine, the page/text RRF fusion, the fallback to text when a collection has no page vectors,
and citations that carry the page image. The page encoder / scorer is a deterministic double implementing the
same interfaces as byaldi's (tests/pages_doubles.py); the real byaldi path runs in `nox -s colpali`
(tests/colpali)."""

from __future__ import annotations

import json

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.stage_registry import STAGES
from relayrag.stages.base import execute
from relayrag.stages.classify import visual_cue
from tests.pages_doubles import MANUAL, use_doubles, write_manual, write_png

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def page_blobs(ctx, collection: str) -> list[str]:
    return ctx.blobstore.list(f"pages/{collection}/")


def stages_of(result: dict) -> list[str]:
    return [s["name"] for s in result["stages"]]


@pytest.fixture
def docs(tmp_path):
    d = tmp_path / "docs"
    write_manual(d)
    write_png(d / "site-photo.png", "green", "PUMP HOUSE")
    return d


def test_ingestion_renders_every_pdf_page_and_each_image_file_as_a_page(ctx, docs):
    s = ingest(ctx, docs, "m").to_dict()
    assert s["files"]["ingested"] == 2 and s["pages"] == {"indexed": 4, "rendered": 4, "embedded": 0}
    snap = ctx.snapshot("m")
    assert snap.manifest["pages"] == 4 and "page_vectors" not in snap.manifest
    assert sorted((p["doc"], p["page"]) for p in snap.pages) == [("manual.pdf", 1), ("manual.pdf", 2),
                                                                  ("manual.pdf", 3), ("site-photo.png", 1)]
    for p in snap.pages:
        for key in (p["image"], p["thumbnail"]):
            assert ctx.blobstore.get_bytes(key).startswith(PNG_MAGIC)
        assert max(p["width"], p["height"]) <= 1600
    from PIL import Image
    thumb = Image.open(ctx.blobstore.local_path(snap.pages[0]["thumbnail"]))
    assert max(thumb.size) == 256
    # the image file is a document with OCR'd text (tesseract is on this machine image)
    texts = [c["text"] for c in snap.chunks if c["doc"] == "site-photo.png"]
    assert texts and "PUMP" in texts[0].upper()


def test_without_page_vectors_ingestion_says_once_that_page_search_is_off_and_how_to_turn_it_on(ctx, docs,
                                                                                                monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    s = ingest(ctx, docs, "m").to_dict()
    assert "page-image search is off" in s["page_search"] and "pip install 'relayrag[colpali]'" in s["page_search"]
    assert "RELAYRAG_COLPALI_MODEL" in s["page_search"]
    assert not any("page" in w["warning"] for w in s["warnings"])  # said once, not per file


def test_unchanged_reingest_reuses_page_images_and_vectors(ctx, docs):
    enc = use_doubles(ctx)
    first = ingest(ctx, docs, "m").to_dict()
    assert first["pages"] == {"indexed": 4, "rendered": 4, "embedded": 4} and enc.encoded == 4
    assert "on (4 pages" in first["page_search"]
    write_png(docs / "second.png", "red", "SECOND")  # a change elsewhere makes a new version
    again = ingest(ctx, docs, "m").to_dict()
    assert again["files"] == {"ingested": 1, "skipped": 2, "deleted": 0, "failed": 0}
    assert again["pages"] == {"indexed": 5, "rendered": 1, "embedded": 1} and enc.encoded == 5
    unchanged = ingest(ctx, docs, "m").to_dict()
    assert unchanged["files"]["skipped"] == 3 and enc.encoded == 5


def test_deleting_or_replacing_a_pdf_removes_its_page_images_and_vectors_with_the_flip(ctx, docs):
    use_doubles(ctx)
    ingest(ctx, docs, "m")
    snap = ctx.snapshot("m")
    pdf_sha = next(p["sha256"] for p in snap.pages if p["doc"] == "manual.pdf")
    before = page_blobs(ctx, "m")
    pdf_blobs = [k for k in before if f"/{pdf_sha}/" in k]
    # 3 pages x (image + thumbnail) + set.json + the vectors of the model
    assert len(pdf_blobs) == 3 * 2 + 1 + 1
    # replace: new bytes under the same name -> the old set goes, a new one comes
    write_manual(docs, pages=MANUAL[:2])
    s = ingest(ctx, docs, "m").to_dict()
    assert s["files"]["ingested"] == 1 and s["pages"]["indexed"] == 3
    after_replace = page_blobs(ctx, "m")
    assert not [k for k in after_replace if f"/{pdf_sha}/" in k]
    new_sha = next(p["sha256"] for p in ctx.snapshot("m").pages if p["doc"] == "manual.pdf")
    assert len([k for k in after_replace if f"/{new_sha}/" in k]) == 2 * 2 + 1 + 1
    index = json.loads(ctx.blobstore.get_bytes(
        f"snapshots/m/{ctx.current_version('m')}/colpali/index.json"))
    assert sorted((p["doc"], p["page"]) for p in index) == [("manual.pdf", 1), ("manual.pdf", 2),
                                                            ("site-photo.png", 1)]
    # delete: its pages leave the index and the blob store in the same ingest, even though a run read (and
    # leased) the version that still holds them
    assert ask("Which figure shows the red diagram?", "m")["pages"][0]["doc"] == "manual.pdf"
    assert ctx.docstore.pinned_versions("m")
    (docs / "manual.pdf").unlink()
    s = ingest(ctx, docs, "m").to_dict()
    assert s["files"]["deleted"] == 1
    left = page_blobs(ctx, "m")
    assert not [k for k in left if f"/{new_sha}/" in k]
    assert len(left) == 2 + 1 + 1  # the photo's page, thumbnail, set.json, vectors
    snap = ctx.snapshot("m")
    assert [p["doc"] for p in snap.pages] == ["site-photo.png"] and snap.manifest["page_vectors"]["pages"] == 1


def test_one_file_ingest_and_a_segment_merge_keep_the_other_files_page_images_and_index(ctx, docs, tmp_path):
    """Under segments a version's pages.jsonl and colpali/ index stay per version: an ingest of one file (which
    reads only that file's record and writes only its segment) carries the other files' page entries and reuses
    their vectors; a segment merge (its own version) copies the page files, so nothing re-renders or re-encodes
    and the visual route still finds the page by its image."""
    from relayrag.ingest.pipeline import merge

    enc = use_doubles(ctx)
    ingest(ctx, docs, "m")
    old = sorted((p["source"], p["page"], p["sha256"]) for p in ctx.snapshot("m").pages)
    assert len(old) == 4 and enc.encoded == 4
    extra = tmp_path / "extra"
    s = ingest(ctx, write_png(extra / "third.png", "blue", "THIRD"), "m").to_dict()
    assert s["files"]["ingested"] == 1 and s["pages"] == {"indexed": 5, "rendered": 1, "embedded": 1}
    pages = sorted((p["source"], p["page"], p["sha256"]) for p in ctx.snapshot("m").pages)
    assert set(old) < set(pages) and len(pages) == 5 and enc.encoded == 5
    blobs = page_blobs(ctx, "m")
    merged = merge(ctx, "m", everything=True)
    assert merged is not None and ctx.current_version("m") == merged
    snap = ctx.snapshot("m")
    assert sorted((p["source"], p["page"], p["sha256"]) for p in snap.pages) == pages
    assert snap.manifest["pages"] == 5 and snap.manifest["page_vectors"]["pages"] == 5
    index = json.loads(ctx.blobstore.get_bytes(f"snapshots/m/{merged}/colpali/index.json"))
    assert len(index) == 5 and page_blobs(ctx, "m") == blobs and enc.encoded == 5
    r = ask("Which figure shows the red diagram?", "m")
    assert (r["pages"][0]["doc"], r["pages"][0]["page"]) == ("manual.pdf", 2)
    assert r["citations"][0]["image"] == r["pages"][0]["image"]


@pytest.mark.parametrize("question,cue", [
    ("Which figure shows the pump impeller?", "figure"), ("What does the wiring look like?", "look like"),
    ("Show me the chart of prices", "show me"), ("この図は何を示していますか", "図"),
    ("What are the sales figures for 2017?", None), ("What is the estimated cost?", None),
    ("Who is responsible for the inspection?", None)])
def test_visual_cue(question, cue):
    got = visual_cue(question)
    assert (got is None) if cue is None else (cue in got.lower())


def test_classify_routes_visual_questions_only_for_collections_with_documents(ctx, docs, make_llm_ctx):
    ingest(ctx, docs, "m")
    status, out = execute(STAGES["classify"], {"run_id": "r1", "question": "Which diagram shows the wiring?",
                                               "collection": "m"}, ctx)
    assert status == 200 and out["route"] == "visual" and out["method"] == "few-shot-embedding"
    status, out = execute(STAGES["classify"], {"run_id": "r2", "question": "How often is the oil checked?",
                                               "collection": "m"}, ctx)
    assert out["route"] == "rag"
    llm_ctx, llm = make_llm_ctx(lambda messages, schema: {"route": "visual"})
    status, out = execute(STAGES["classify"], {"run_id": "r3", "question": "What is on page 2?",
                                               "collection": "m"}, llm_ctx)
    assert status == 200 and out["route"] == "visual" and out["method"] == "llm"
    assert "visual" in llm.calls[0]["json_schema"]["properties"]["route"]["enum"]


@pytest.mark.parametrize("question", ["Which diagram shows the wiring?", "What does the impeller look like?",
                                      "この図は何を示していますか", "How often is the oil checked?"])
def test_mcp_classify_and_ask_agree_on_whether_a_question_is_visual(ctx, docs, question):
    """One no-LLM classifier: the gateway's `classify` tool (Service.route) routes as `ask` does."""
    from relayrag.service import Service
    ingest(ctx, docs, "m")
    decision = Service(ctx).route(question, "m")
    assert decision.route == ask(question, "m")["route"]
    assert (decision.route == "visual") == (visual_cue(question) is not None)


def test_visual_route_runs_colpali_search_through_the_workflow_and_cites_the_page_found_by_its_image(ctx, docs):
    use_doubles(ctx)
    ingest(ctx, docs, "m")
    r = ask("Which figure shows the red diagram?", "m")
    assert r["route"] == "visual"
    assert stages_of(r) == ["classify", "colpali_search", "generate", "hallucination_check"]
    assert r["page_search"]["status"] == "on" and r["page_search"]["mode"] == "visual"
    top = r["pages"][0]
    assert (top["doc"], top["page"]) == ("manual.pdf", 2)  # the red page: found by its pixels, not its text
    assert open(top["image"], "rb").read(8) == PNG_MAGIC and open(top["thumbnail"], "rb").read(8) == PNG_MAGIC
    # no vision LLM, and the page's text ("Figure 2. Cross-section of the centrifugal pump impeller.") does not say
    # "red diagram": the page found by its image alone is not an answer, so it is shown as the best match by its
    # image, related reading, never grounded
    assert not r["grounded"] and r["refused"]
    assert r["answer"].endswith("The page that best matches the question by its image is manual.pdf p. 2 "
                                "(see its page image).")
    assert [(x["doc"], x["page"]) for x in r["related"]] == [("manual.pdf", 2)]
    assert r["related"][0]["image"] == top["image"]


def test_a_page_found_by_its_image_is_grounded_when_its_own_text_answers(ctx, docs):
    use_doubles(ctx)
    ingest(ctx, docs, "m")
    r = ask("Which red figure shows the cross-section of the pump impeller?", "m")
    assert r["route"] == "visual" and r["page_search"]["status"] == "on"
    assert (r["pages"][0]["doc"], r["pages"][0]["page"]) == ("manual.pdf", 2)
    assert r["answer"].startswith("(Found by its page image: manual.pdf p. 2;")
    assert "Figure 2. Cross-section of the centrifugal pump impeller. [1]" in r["answer"]
    assert r["found"] and r["grounded"] and not r["refused"]
    [c] = r["citations"]
    assert (c["doc"], c["page"]) == ("manual.pdf", 2) and c["image"] == r["pages"][0]["image"]
    assert open(c["image"], "rb").read(8) == PNG_MAGIC


def test_visual_route_without_a_model_falls_back_to_text_and_the_answer_says_so(ctx, docs, monkeypatch):
    from relayrag.retrieval import colpali
    monkeypatch.setattr(colpali, "load_rag", lambda *a, **k: pytest.fail("the page-image model loader was called"))
    ingest(ctx, docs, "m")  # no model configured (the default): page images only
    r = ask("Which figure shows the pump impeller?", "m")
    assert r["route"] == "visual"
    names = stages_of(r)
    assert names[:3] == ["classify", "colpali_search", "hyde"] and "retrieve" in names
    assert r["page_search"]["status"] == "off" and r["page_search"]["cause"] == "no_model"
    trace = ctx.docstore.get_trace(r["run_id"])
    step = next(t for t in trace if t["name"] == "colpali_search")
    assert step["method"] == "text fallback" and "page-image search is off" in step["outputs"]["reason"]
    assert r["found"] and r["citations"][0]["page"] == 2 and r["citations"][0]["image"].endswith("page-0002.png")
    assert r["answer"].endswith("(Page-image search is off, so this answer comes from the documents' text. To "
                                "search pages by their images, install relayrag[colpali], set "
                                "RELAYRAG_COLPALI_MODEL to a ColPali/ColQwen2 model id or local folder, and "
                                "ingest again.)")
    r = ask("ポンプのインペラの断面図はどれですか", "m")
    assert r["route"] == "visual" and "ページ画像検索はオフ" in r["answer"] and "RELAYRAG_COLPALI_MODEL" in r["answer"]
    # a text question pays nothing: the stage is not called
    r = ask("What must be checked every week?", "m")
    assert r["route"] == "rag" and "colpali_search" not in stages_of(r)


def test_with_a_model_but_no_page_vectors_the_stage_reads_only_the_manifest(ctx, docs, monkeypatch):
    ingest(ctx, docs, "m")  # ingested without page-image search
    use_doubles(ctx)  # now a model is configured
    loaded = []
    monkeypatch.setattr(type(ctx), "snapshot", lambda self, *a, **k: loaded.append(a) or pytest.fail("loaded"))
    assert execute(STAGES["classify"], {"run_id": "v1", "question": "Which figure shows the pump impeller?",
                                        "collection": "m"}, ctx)[0] == 200
    status, out = execute(STAGES["colpali_search"], {"run_id": "v1", "attempt": 0, "mode": "visual"}, ctx)
    assert status == 200 and out["route"] == "text" and "no page vectors" in out["reason"]
    assert ctx.docstore.get_run("v1")["page_search"]["cause"] == "no_vectors" and loaded == []


def test_text_questions_fuse_page_hits_with_text_hits_when_the_collection_has_page_vectors(ctx, docs):
    use_doubles(ctx)
    ingest(ctx, docs, "m")
    r = ask("What must be checked every week?", "m")
    assert r["route"] == "rag"
    names = stages_of(r)
    assert names.index("retrieve") < names.index("colpali_search") < names.index("rerank")
    step = next(s for s in r["stages"] if s["name"] == "colpali_search")
    assert step["method"] == "colpali+rrf"
    rec = ctx.docstore.get_run(r["run_id"])
    assert any("page_rank" in c for c in rec["candidates"])
    assert r["citations"] and r["citations"][0]["page"] == 1 and r["citations"][0]["image"].endswith("page-0001.png")


def test_fusion_brings_in_a_page_the_text_arms_missed(ctx, docs):
    """fuse mode: RRF of retrieve's candidates and the page ranking projected onto each page's chunks."""
    use_doubles(ctx)
    ingest(ctx, docs, "m")
    snap = ctx.snapshot("m")
    assert execute(STAGES["classify"], {"run_id": "f1", "question": "blue", "collection": "m"}, ctx)[0] == 200
    p1 = next(i for i, c in enumerate(snap.chunks) if c["page"] == 1 and c["doc"] == "manual.pdf")
    ctx.docstore.update_run("f1", {"snapshot_version": snap.version,
                                   "candidates": [{"chunk_id": snap.chunks[p1]["chunk_id"], "row": p1,
                                                   "retrieve_score": 1.0, "retrieve_rank": 1}]})
    status, out = execute(STAGES["colpali_search"], {"run_id": "f1", "attempt": 1, "mode": "fuse"}, ctx)
    assert status == 200 and out["route"] == "fused" and out["n_pages"] >= 3
    cands = ctx.docstore.get_run("f1")["candidates"]
    pages = [(snap.chunks[c["row"]]["doc"], snap.chunks[c["row"]]["page"]) for c in cands]
    assert ("manual.pdf", 3) in pages and ("manual.pdf", 1) in pages  # the blue page joined the text hit
    blue = next(c for c in cands if snap.chunks[c["row"]]["page"] == 3 and snap.chunks[c["row"]]["doc"] == "manual.pdf")
    assert blue["page_rank"] == 1 and "retrieve_rank" not in blue
    # a repeated call (an HTTP retry) replays the stored response and writes nothing again
    assert execute(STAGES["colpali_search"], {"run_id": "f1", "attempt": 1, "mode": "fuse"}, ctx) == (200, out)


def test_a_collection_without_pages_says_so(ctx, tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "notes.txt").write_text("The figure of merit of the pump is 0.8.", encoding="utf-8")
    s = ingest(ctx, tmp_path / "t", "t").to_dict()
    assert "pages" in s and s["pages"]["indexed"] == 0
    use_doubles(ctx)  # a model is configured: the collection itself has nothing to search by image
    r = ask("Which figure shows the pump?", "t")
    assert r["route"] == "visual" and r["page_search"]["reason"].startswith("no page images in this collection")
    assert r["page_search"]["cause"] == "no_images" and "Page-image search" not in r["answer"]


def test_a_vision_llm_reads_the_page_images_and_the_check_sees_them_too(docs, make_llm_ctx, monkeypatch):
    """With a vision-capable LLM (RELAYRAG_LLM_VISION=yes; auto = Gemini on Vertex), generate sends the pages found
    by their image and the answer cites the page it read; hallucination_check checks it against the same images."""
    from relayrag.settings import load_settings
    monkeypatch.setenv("RELAYRAG_LLM_VISION", "yes")
    load_settings.cache_clear()
    seen = []

    def reply(messages, schema):
        props = (schema or {}).get("properties", {})
        if "route" in props:
            return {"route": "visual"}
        if "unsupported" in props:
            seen.append(("check", messages[-1].get("images") or []))
            return {"unsupported": [], "answers_question": True}
        seen.append(("answer", messages[-1].get("images") or []))
        assert 'doc="manual.pdf" page="2"' in messages[-1]["content"]
        return "It shows the impeller cut open, drawn in red. [1]"

    ctx, llm = make_llm_ctx(reply)
    use_doubles(ctx)
    ingest(ctx, docs, "m")
    r = ask("What does the red drawing look like?", "m")
    assert r["route"] == "visual"
    gen = next(s for s in r["stages"] if s["name"] == "generate")
    assert gen["method"] == "llm (page images)"
    assert r["answer"] == "(Found by its page image: manual.pdf p. 2; the answer describes that page's image.) " \
                          "It shows the impeller cut open, drawn in red. [1]"
    [c] = r["citations"]
    assert (c["doc"], c["page"]) == ("manual.pdf", 2) and r["grounded"]
    kinds = [k for k, _ in seen]
    assert kinds == ["answer", "check"]
    answer_images, check_images = seen[0][1], seen[1][1]
    assert len(answer_images) == 3 and all(i.startswith(PNG_MAGIC) for i in answer_images)
    assert answer_images[0] == open(r["pages"][0]["image"], "rb").read()  # the red page first
    assert check_images == [open(c["image"], "rb").read()]


def test_openai_compatible_backend_sends_page_images_as_image_url_parts():
    import base64

    import httpx

    from relayrag.backends.llm import OpenAICompatibleLLM, accepts_images
    from relayrag.settings import Settings
    bodies = []

    def handler(request):
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})

    llm = OpenAICompatibleLLM("http://127.0.0.1:9/v1", "a-vision-model", transport=httpx.MockTransport(handler))
    png = PNG_MAGIC + b"rest"
    assert llm.complete([{"role": "system", "content": "s"}, {"role": "user", "content": "q", "images": [png]}]) == "ok"
    sys_msg, user = bodies[0]["messages"]
    assert sys_msg == {"role": "system", "content": "s"}
    assert user["content"][0] == {"type": "text", "text": "q"}
    assert user["content"][1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(png).decode()
    assert not accepts_images(Settings(llm="openai"), llm)  # auto: an OpenAI-compatible endpoint must say so
    assert accepts_images(Settings(llm="openai", llm_vision="yes"), llm)
    llm.name = "vertex:gemini-2.5-flash"
    assert accepts_images(Settings(llm="vertex"), llm) and not accepts_images(Settings(llm_vision="no"), llm)


def test_a_remote_blob_store_copies_the_page_index_into_the_instance_cache_and_refs_are_gs_uris(ctx, docs, home):
    """On GCS (no local path) the stage copies the version's page index into RELAYRAG_HOME/cache once (older
    versions' copies are dropped) and the image references are gs:// URIs of the snapshots bucket."""
    from relayrag.backends.blobstore import LocalBlobStore
    from relayrag.context import StageContext
    from relayrag.settings import Settings

    class RemoteLike(LocalBlobStore):
        def local_path(self, key):
            return None

    use_doubles(ctx)
    ingest(ctx, docs, "m")
    remote = StageContext(Settings(home=home, gcs_bucket="bkt"), RemoteLike(home / "blobs"), ctx.docstore,
                          embedder=ctx.embedder, llm_configured=False)
    use_doubles(remote)
    stale = home / "cache" / "colpali" / "m" / "v0000000000000-old"
    stale.mkdir(parents=True)
    assert execute(STAGES["classify"], {"run_id": "g1", "question": "Which figure shows the blue wiring?",
                                        "collection": "m"}, remote)[0] == 200
    status, out = execute(STAGES["colpali_search"], {"run_id": "g1", "attempt": 0, "mode": "visual"}, remote)
    assert status == 200 and out["route"] == "pages"
    version = ctx.current_version("m")
    assert (home / "cache" / "colpali" / "m" / version / "colpali" / "index.json").is_file() and not stale.exists()
    top = ctx.docstore.get_run("g1")["page_candidates"][0]
    assert top["page"] == 3 and top["image"].startswith("gs://bkt/pages/m/") and top["image"].endswith("page-0003.png")
