"""Stages after retrieve read only the run's rows of an embedded collection (issue 16 item 4).

A stage instance of its own (a Cloud Function) used to load the whole pinned version; now it reads the rows its
run record names and their documents by ranged reads (relayrag.retrieval.view). These tests hold it to the
whole-version path: same chunks, vectors, BM25 scores, idf and stored sentence vectors at every row the run
reads, the same final ranking, answer and citations, deleted documents never held, and no whole load."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import write_docs
from relayrag.engine.local import ask, local_transport
from relayrag.ingest.pipeline import ingest
from relayrag.retrieval import view as V
from relayrag.retrieval.reward import query_idf

RODENT = ("The capybara is the largest living rodent. Capybaras live in groups near rivers and lakes. "
          "They graze on grasses and aquatic plants.")


def _doc(i: int) -> str:
    return (f"Report {i} on municipal budgets. The council of district {i} approved road repairs and new street "
            f"lights. Rivers in district {i} flooded twice, and the rodent control office asked for funds.")


def _collection(ctx, tmp_path):
    """Three segments, a changed document and a deleted one (tombstones in older segments)."""
    folder = write_docs(tmp_path / "d", {f"r{i:02d}.txt": _doc(i) for i in range(12)})
    ingest(ctx, folder, "c")
    write_docs(folder, {"capybara.txt": RODENT, **{f"s{i:02d}.txt": _doc(100 + i) for i in range(6)}})
    ingest(ctx, folder, "c")
    (folder / "r03.txt").unlink()
    (folder / "r05.txt").write_text(_doc(5) + " The capybara was seen near the river.", encoding="utf-8")
    ingest(ctx, folder, "c")
    return folder


@pytest.fixture(autouse=True)
def _few_candidates(monkeypatch):
    """8 candidates out of ~20 chunks, so a run reads fewer rows than the version holds."""
    monkeypatch.setenv("RELAYRAG_RETRIEVE_K", "8")


def _clear_views():
    V._views.clear()
    V._layouts.clear()


@pytest.fixture
def forced_view(ctx, monkeypatch):
    """A transport that gives every stage after retrieve a process with no whole version loaded (as separate
    stage instances are) and records which stage loaded a whole version."""
    import relayrag.context as C
    loads: list[str] = []
    real = C._load

    def counting(store, collection, version, **kw):
        import traceback
        stages = [f.filename.rsplit("/", 1)[-1][:-3] for f in traceback.extract_stack() if "/relayrag/stages/" in f.filename]
        loads.append(next((s for s in stages if s not in ("base", "http")), "?"))  # the adapter calls every stage
        return real(store, collection, version, **kw)
    monkeypatch.setattr(C, "_load", counting)

    def transport(method, url, body, timeout):
        if not url.endswith("/retrieve"):
            ctx._snapshots.clear()
        return local_transport(method, url, body, timeout)
    return transport, loads


def test_view_rows_equal_the_whole_version(ctx, tmp_path):
    _collection(ctx, tmp_path)
    res = ask("Which is the largest living rodent near rivers?", "c", arm="hybrid")
    run = ctx.docstore.get_run(res["run_id"])
    assert run["bm25_stats"]["n"] > 0
    whole = ctx.snapshot("c", run["snapshot_version"])
    _clear_views()
    view = V.run_view(ctx, run)
    assert view is not None and len(view) < len(whole)
    rows = V.wanted_rows(run)
    assert rows and set(rows) <= set(view.chunks.rows.tolist())
    for r in rows:
        assert view.chunks[r] == whole.chunks[r]
    np.testing.assert_array_equal(view.dense.rows(rows), whole.dense.rows(rows))
    q = run["question"]
    np.testing.assert_array_equal(view.bm25.scores(q)[rows], whole.bm25.scores(q)[rows])
    assert len(view.bm25.scores(q)) == len(whole)
    assert query_idf(q, view.bm25) == query_idf(q, whole.bm25)
    assert whole.sentences is not None and view.sentences is not None
    for r in rows:
        spans, vecs = whole.sentences.chunk(r)
        got = view.sentences.lookup(r, [tuple(s) for s in spans])
        assert all(g is not None for g in got)
        np.testing.assert_array_equal(np.stack(got), vecs.astype(np.float32))
    # every chunk held is a live chunk of the pinned version at its own row (deleted r03 never held)
    for r, c in zip(view.chunks.rows.tolist(), view.chunks):
        assert whole.chunks[r] == c and c["source"] != "r03.txt"
        assert view.row_of[c["chunk_id"]] == whole.row_of[c["chunk_id"]]
    # the documents of the rows read are held whole (page headings, document openings)
    sources = {whole.chunks[r]["source"] for r in rows}
    assert {c["chunk_id"] for c in whole.chunks if c["source"] in sources} == set(view.row_of)


def test_segments_without_source_spans_read_their_source_map(ctx, tmp_path):
    """Segments written before source_spans.npy locate rows through sources.json: the same view."""
    import json
    from relayrag.ingest.snapshot import read_manifest, segment_prefix, version_segments
    _collection(ctx, tmp_path)
    res = ask("Which is the largest living rodent near rivers?", "c", arm="hybrid")
    run = ctx.docstore.get_run(res["run_id"])
    _clear_views()
    new = V.run_view(ctx, run)
    version = run["snapshot_version"]
    for ref in version_segments(read_manifest(ctx.blobstore, "c", version), version):
        key = segment_prefix("c", ref.id) + "manifest.json"
        seg = json.loads(ctx.blobstore.get_bytes(key))
        assert seg["files"].pop("source_spans.npy") > 0
        ctx.blobstore.put_bytes(key, json.dumps(seg).encode())
        ctx.blobstore.delete_prefix(segment_prefix("c", ref.id) + "source_spans.npy")
    _clear_views()
    old = V.run_view(ctx, run)
    assert old is not None and new is not None
    assert old.chunks.rows.tolist() == new.chunks.rows.tolist() and list(old.chunks) == list(new.chunks)
    np.testing.assert_array_equal(old.dense.rows(old.chunks.rows), new.dense.rows(new.chunks.rows))


@pytest.mark.parametrize("question", ["Which is the largest living rodent?",
                                      "What did the council of district 7 approve?"])
def test_stages_on_the_view_answer_as_on_the_whole_version(ctx, tmp_path, forced_view, question):
    _collection(ctx, tmp_path)
    transport, loads = forced_view
    whole = ask(question, "c", arm="hybrid")
    _clear_views()
    loads.clear()
    viewed = ask(question, "c", arm="hybrid", transport=transport)
    assert loads == ["retrieve"], loads  # rerank, grade, generate, hallucination_check read the view
    a, b = (ctx.docstore.get_run(r["run_id"]) for r in (whole, viewed))
    assert [c["chunk_id"] for c in a["candidates"]] == [c["chunk_id"] for c in b["candidates"]]
    assert viewed["answer"] == whole["answer"] and viewed["answer"]
    assert viewed["citations"] == whole["citations"]
    assert viewed.get("route") == whole.get("route")


def test_a_run_without_recorded_stats_reads_the_whole_version(ctx, tmp_path):
    _collection(ctx, tmp_path)
    res = ask("Which is the largest living rodent?", "c", arm="hybrid")
    run = ctx.docstore.get_run(res["run_id"])
    assert V.run_view(ctx, {**run, "bm25_stats": None}) is None
    assert V.run_view(ctx, {**run, "page_candidates": [{"source": "x", "page": 1}]}) is None


def test_a_row_holding_another_chunk_than_recorded_is_a_stage_error(ctx, tmp_path):
    from relayrag.errors import StageError
    _collection(ctx, tmp_path)
    res = ask("Which is the largest living rodent?", "c", arm="hybrid")
    run = ctx.docstore.get_run(res["run_id"])
    cands = [dict(c) for c in run["candidates"]]
    cands[0]["chunk_id"] = "not-this-one"
    _clear_views()
    with pytest.raises(StageError, match="ask again"):
        V.run_view(ctx, {**run, "candidates": cands})


def test_page_images_of_the_documents_read_are_cited_from_the_view(ctx, tmp_path, forced_view):
    """A PDF's page images (pages.jsonl, no page vectors): citations and related passages name the page image from
    the view too."""
    from tests.pages_doubles import write_manual
    folder = write_manual(tmp_path / "docs").parent
    write_docs(folder, {f"r{i:02d}.txt": _doc(i) for i in range(12)})
    ingest(ctx, folder, "m")
    run_version = ctx.current_version("m")
    manifest = ctx.snapshot("m", run_version).manifest
    assert manifest.get("pages") and not manifest.get("page_vectors")
    transport, loads = forced_view
    question = "How often should the oil level of the pump be checked?"
    whole = ask(question, "m", arm="hybrid")
    _clear_views()
    loads.clear()
    viewed = ask(question, "m", arm="hybrid", transport=transport)
    # the ranking stages load it (retrieve; colpali_search and hyde's feedback on the visual route), no other
    assert "retrieve" in loads and not set(loads) & {"rerank", "grade", "generate", "hallucination_check"}, loads
    assert viewed["answer"] == whole["answer"] and viewed["citations"] == whole["citations"]
    shown = whole["citations"] + (whole.get("related") or [])
    assert any(c.get("thumbnail") for c in shown) and viewed.get("related") == whole.get("related")
