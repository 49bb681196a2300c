"""Segments: an ingest writes only what changed (one segment, tombstones, a small version manifest), search
across segments equals search over one merged index, deleted documents never answer, merges keep content and
pins, and a failed or lost write leaves the previous version serving."""

from __future__ import annotations

import json

import numpy as np
import pytest

from relayrag.engine.local import ask
from relayrag.errors import ConflictError
from relayrag.ingest import pipeline, segments
from relayrag.ingest.pipeline import ingest
from relayrag.ingest.snapshot import (index_text, load_snapshot, prefix, read_chunks, read_manifest, read_vectors,
                                      segment_prefix, version_segments)
from relayrag.retrieval.bm25 import BM25Index
from relayrag.retrieval.dense import DenseIndex
from tests.conftest import write_docs

RODENT = "The capybara is the largest living rodent. Capybaras live in groups near rivers and lakes."


def _doc(i: int) -> str:
    return (f"Report {i} on municipal budgets: the council approved road repairs and {i} new street lights. "
            f"Wetland survey {i} counted herons, otters and {i * 3} frogs near the river bend.")


class Recorder:
    """A blob store wrapper that records the keys written."""

    def __init__(self, inner):
        self.inner, self.written = inner, []

    def put_bytes(self, key, data):
        self.written.append(key)
        return self.inner.put_bytes(key, data)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class CountingEmbedder:
    def __init__(self, inner):
        self.inner, self.texts = inner, []
        self.dim, self.model_id = inner.dim, inner.model_id

    def embed(self, texts, kind="document"):
        if kind == "document":
            self.texts.extend(texts)
        return self.inner.embed(texts, kind=kind)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _refs(ctx, collection="c"):
    v = ctx.docstore.get_collection(collection)["current_version"]
    return v, version_segments(read_manifest(ctx.blobstore, collection, v), v)


def test_adding_a_document_writes_one_segment_and_a_manifest_only(ctx, tmp_path):
    # chunk embeddings only: the sentence vectors an ingest also embeds are counted in
    # tests/unit/retrieval/test_sentence_vectors.py
    ctx.settings = ctx.settings.model_copy(update={"sentence_vectors": False})
    folder = write_docs(tmp_path / "d", {f"f{i:02d}.txt": _doc(i) for i in range(20)})
    ingest(ctx, folder, "c")
    v1, refs1 = _refs(ctx)
    rec = Recorder(ctx.blobstore)
    ctx.blobstore = rec
    ctx._embedder = CountingEmbedder(ctx.embedder)
    new = write_docs(tmp_path / "new", {"rodent.txt": RODENT}) / "rodent.txt"
    s = ingest(ctx, new, "c")
    assert s.ingested == 1 and s.chunks_embedded == 1 and ctx.embedder.texts == [index_text(read_chunks(
        ctx.blobstore, "c", s.version)[-1])]
    v2, refs2 = _refs(ctx)
    assert v2 == s.version and refs2[:-1] == refs1 and refs2[-1].n_rows == 1
    seg = segment_prefix("c", refs2[-1].id)
    files = ("chunks.jsonl", "dense.npy", "bm25.npz", "sources.json", "source_spans.npy", "manifest.json")
    assert sorted(rec.written) == sorted([seg + n for n in files] + [prefix("c", v2) + "manifest.json"])
    assert s.chunks_total == 21 and ctx.docstore.get_collection("c")["stats"]["n_files"] == 21
    assert "capybara" in ask("Which is the largest living rodent?", "c")["answer"].lower()


def test_search_across_segments_equals_one_merged_index(ctx, tmp_path):
    """Several ingests (adds, a change, deletions) leave several segments with tombstones; every arm's scores
    per chunk equal those of one index built from scratch over the same live chunks and vectors."""
    folder = write_docs(tmp_path / "d", {f"f{i:02d}.txt": _doc(i) for i in range(12)})
    ingest(ctx, folder, "c")
    write_docs(folder, {"rodent.txt": RODENT, "g.txt": _doc(50)})
    ingest(ctx, folder, "c")
    (folder / "f03.txt").unlink()
    (folder / "f07.txt").write_text(_doc(7) + " Herons nested early this year.", encoding="utf-8")
    ingest(ctx, folder, "c")
    v, refs = _refs(ctx)
    assert len(refs) == 3 and any(r.n_deleted for r in refs)
    snap = ctx.snapshot("c")
    chunks, vectors = read_chunks(ctx.blobstore, "c", v), read_vectors(ctx.blobstore, "c", v)
    assert [c["chunk_id"] for c in snap.chunks] == [c["chunk_id"] for c in chunks]
    assert not any(c["source"].endswith("f03.txt") for c in snap.chunks)
    merged_bm25 = BM25Index.build([index_text(c) for c in chunks])
    merged_dense = DenseIndex(vectors)
    q = ctx.embedder.embed(["herons near the river"], kind="query")[0]
    for query in ("herons otters river", "largest rodent capybara", "street lights council 7"):
        np.testing.assert_allclose(snap.bm25.scores(query), merged_bm25.scores(query), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(snap.dense.scores(q), merged_dense.scores(q))


def test_deleted_and_replaced_documents_never_answer(ctx, tmp_path):
    folder = write_docs(tmp_path / "d", {"rodent.txt": RODENT, **{f"f{i}.txt": _doc(i) for i in range(5)}})
    ingest(ctx, folder, "c")
    (folder / "rodent.txt").write_text("The blue whale is the largest animal that ever lived.", encoding="utf-8")
    ingest(ctx, folder, "c")
    snap = ctx.snapshot("c")
    assert all("capybara" not in c["text"].lower() for c in snap.chunks)
    assert snap.bm25.scores("capybara capybaras").max() == 0  # the old text's terms count nowhere
    assert "capybara" not in ask("Which is the largest living rodent?", "c")["answer"].lower()
    gone = ingest(ctx, ".", "c", remove_paths=[str(folder / "rodent.txt")])
    assert gone.deleted == 1
    _, refs = _refs(ctx)
    assert sum(r.n_live for r in refs) == gone.chunks_total == 5
    assert all("whale" not in c["text"] for c in ctx.snapshot("c").chunks)


def test_a_changed_file_embeds_only_its_changed_chunks(ctx, tmp_path):
    # chunk embeddings only: the sentence vectors an ingest also embeds are counted in
    # tests/unit/retrieval/test_sentence_vectors.py
    ctx.settings = ctx.settings.model_copy(update={"sentence_vectors": False})
    long = " ".join(f"Paragraph {i} describes the otter colony number {i} along the northern river bank."
                    for i in range(60))
    folder = write_docs(tmp_path / "d", {"long.txt": long, "other.txt": _doc(1)})
    first = ingest(ctx, folder, "c")
    n = first.chunks_total - 1
    assert n >= 3
    ctx._embedder = CountingEmbedder(ctx.embedder)
    (folder / "long.txt").write_text(long + " A final sentence about beavers.", encoding="utf-8")
    again = ingest(ctx, folder, "c")
    assert again.ingested == 1 and again.skipped == 1
    assert 1 <= again.chunks_embedded < n and len(ctx.embedder.texts) == again.chunks_embedded
    unchanged = ingest(ctx, folder, "c")
    assert unchanged.chunks_embedded == 0 and unchanged.version == again.version


def test_merges_keep_content_pins_and_bound_the_segment_count(ctx, tmp_path, monkeypatch):
    monkeypatch.setattr(segments, "MERGE_FACTOR", 3)
    folder = write_docs(tmp_path / "d", {"base.txt": RODENT})
    ingest(ctx, folder, "c")
    pinned, _ = _refs(ctx)
    ctx.docstore.pin_version("c", pinned, "run-1", ttl_s=600)
    pinned_ids = [c["chunk_id"] for c in read_chunks(ctx.blobstore, "c", pinned)]
    counts = []
    for i in range(8):
        write_docs(folder, {f"n{i}.txt": _doc(i)})
        ingest(ctx, folder, "c")
        counts.append(len(_refs(ctx)[1]))
    # 9 one-chunk segments without merges; with them at most (MERGE_FACTOR - 1) per level, 2 levels here
    assert max(counts) <= 2 * 2 and counts[-1] < 9 and min(counts) < max(counts)
    v, refs = _refs(ctx)
    merged = json.loads(ctx.blobstore.get_bytes(prefix("c", v) + "manifest.json"))
    chunks = read_chunks(ctx.blobstore, "c", v)
    assert sorted(c["source"].rsplit("/", 1)[-1] for c in chunks) == sorted(["base.txt"] + [f"n{i}.txt" for i in range(8)])
    assert merged["n_chunks"] == len(chunks) == ctx.docstore.get_collection("c")["stats"]["n_chunks"]
    # the pinned version still loads with its own rows (GC spared it and every segment it lists)
    assert [c["chunk_id"] for c in load_snapshot(ctx.blobstore, "c", pinned).chunks] == pinned_ids
    # nothing unlisted is left behind: every stored segment is listed by the current or a pinned version
    listed = {r.id for r in refs} | {r.id for r in _refs_of(ctx, pinned)}
    stored = {k.split("/")[3] for k in ctx.blobstore.list("snapshots/c/segments")}
    previous = {r.id for r in _refs_of(ctx, _previous(ctx, v))} if _previous(ctx, v) else set()
    assert stored <= listed | previous


def _refs_of(ctx, version):
    return version_segments(read_manifest(ctx.blobstore, "c", version), version)


def _previous(ctx, current):
    versions = sorted(k.split("/")[2] for k in ctx.blobstore.list("snapshots/c") if k.endswith("/manifest.json")
                      and k.split("/")[2].startswith("v"))
    older = [x for x in versions if x < current]
    return older[-1] if older else None


def test_a_merge_that_loses_the_compare_and_set_is_dropped(ctx, tmp_path, monkeypatch):
    folder = write_docs(tmp_path / "d", {f"f{i}.txt": _doc(i) for i in range(3)})
    ingest(ctx, folder, "c")
    write_docs(folder, {"g.txt": _doc(9)})
    ingest(ctx, folder, "c")
    v, refs = _refs(ctx)
    before = set(ctx.blobstore.list("snapshots/c"))
    real = ctx.docstore.commit_ingest

    def lose(*a, **kw):
        raise ConflictError("another writer committed first")
    monkeypatch.setattr(ctx.docstore, "commit_ingest", lose)
    assert pipeline.merge(ctx, "c", everything=True) is None
    monkeypatch.setattr(ctx.docstore, "commit_ingest", real)
    assert _refs(ctx) == (v, refs) and set(ctx.blobstore.list("snapshots/c")) == before
    assert pipeline.merge(ctx, "c", everything=True) is not None
    assert len(_refs(ctx)[1]) == 1 and len(read_chunks(ctx.blobstore, "c", _refs(ctx)[0])) == 4


def test_a_failed_commit_leaves_the_previous_version_serving_and_no_garbage(ctx, tmp_path, monkeypatch):
    folder = write_docs(tmp_path / "d", {"rodent.txt": RODENT})
    ingest(ctx, folder, "c")
    v, refs = _refs(ctx)
    before = set(ctx.blobstore.list("snapshots/c"))

    def crash(*a, **kw):
        raise RuntimeError("docstore unreachable")
    monkeypatch.setattr(ctx.docstore, "commit_ingest", crash)
    write_docs(folder, {"g.txt": _doc(1)})
    with pytest.raises(RuntimeError):
        ingest(ctx, folder, "c")
    monkeypatch.undo()
    assert _refs(ctx) == (v, refs) and set(ctx.blobstore.list("snapshots/c")) == before
    assert "capybara" in ask("Which is the largest living rodent?", "c")["answer"].lower()


def test_a_writer_killed_mid_write_leaves_an_orphan_segment_that_gc_removes(ctx, tmp_path):
    """A process killed after writing its segment (before its version and commit) leaves files nobody lists:
    readers never see them, and the next commit's GC removes them (a shared lock: no age grace)."""
    from relayrag.ingest.snapshot import write_segment
    folder = write_docs(tmp_path / "d", {"rodent.txt": RODENT})
    ingest(ctx, folder, "c")
    orphan = write_segment(ctx.blobstore, "c", [], np.zeros((0, 384), np.float16))
    assert ctx.blobstore.exists(segment_prefix("c", orphan.id) + "manifest.json")
    write_docs(folder, {"g.txt": _doc(1)})
    ingest(ctx, folder, "c")
    assert not ctx.blobstore.list(segment_prefix("c", orphan.id))


def test_a_version_written_before_segments_reads_and_is_rewritten_by_the_next_merge(ctx, tmp_path):
    """Collections written by the whole-snapshot layout (chunks.jsonl and dense.npy under the version) stay
    readable; an ingest adds a segment on top, and the merge policy rewrites the old version into a segment."""
    import io

    from relayrag import jsonl
    folder = write_docs(tmp_path / "d", {"rodent.txt": RODENT, "f.txt": _doc(1)})
    ingest(ctx, folder, "c")
    v, _ = _refs(ctx)
    chunks, vectors = read_chunks(ctx.blobstore, "c", v), read_vectors(ctx.blobstore, "c", v)
    legacy = "v0000000000001-000000"
    p = prefix("c", legacy)
    ctx.blobstore.put_bytes(p + "chunks.jsonl", jsonl.dump_lines(chunks))
    buf = io.BytesIO()
    np.save(buf, vectors)
    ctx.blobstore.put_bytes(p + "dense.npy", buf.getvalue())
    ctx.blobstore.put_bytes(p + "manifest.json", json.dumps({"embedder": ctx.embedder.model_id,
                                                             "n_chunks": len(chunks)}).encode())
    meta = ctx.docstore.get_collection("c")
    ctx.docstore.commit_ingest("c", legacy, meta["stats"], [], [], expected_version=v)
    assert "capybara" in ask("Which is the largest living rodent?", "c")["answer"].lower()
    write_docs(folder, {"g.txt": _doc(2)})
    s = ingest(ctx, folder, "c")  # the legacy "segment" is rewritten by the merge policy right after
    v2, refs = _refs(ctx)
    assert s.chunks_embedded == 1 and not any(r.id.startswith("v") for r in refs)
    assert len(read_chunks(ctx.blobstore, "c", v2)) == len(chunks) + 1


def test_merges_carry_per_row_add_on_files(ctx, monkeypatch):
    """A registered per-segment file keyed by local row (how sentence vectors ride along) follows its live rows
    through a merge: deleted rows leave it, the rest keep their order."""
    import io

    from relayrag.ingest.snapshot import (ROW_FILES, RowFile, write_segment, write_tombstones, write_version)

    def to_bytes(a):
        buf = io.BytesIO()
        np.save(buf, a)
        return buf.getvalue()
    monkeypatch.setitem(ROW_FILES, "tags.npy", RowFile(
        "tags.npy", select=lambda raw, rows: np.load(io.BytesIO(raw))[rows] if raw is not None else None,
        concat=lambda parts: None if any(p is None for p in parts) else to_bytes(np.concatenate(parts))))
    chunk = {"doc": "d", "title": "", "page": 1, "start": 0, "end": 1, "context": ""}
    segs = []
    for s, texts in enumerate((["alpha", "beta", "gamma"], ["delta", "epsilon"])):
        chunks = [{**chunk, "chunk_id": f"{s}:{i}", "source": f"/src{s}-{i}", "text": t, "content_hash": t}
                  for i, t in enumerate(texts)]
        vecs = np.eye(len(texts), 384, dtype=np.float16)
        segs.append(write_segment(ctx.blobstore, "c", chunks, vecs,
                                  extras={"tags.npy": to_bytes(np.array([10 * s + i for i in range(len(texts))]))}))
    segs[0] = write_tombstones(ctx.blobstore, "c", segs[0], "v0000000000002-aaaaaa", np.array([1]))
    write_version(ctx.blobstore, "c", "v0000000000002-aaaaaa", segs, {"embedder": ctx.embedder.model_id})
    ctx.docstore.commit_ingest("c", "v0000000000002-aaaaaa", {"n_chunks": 4}, [], [], expected_version=None)
    v = pipeline.merge(ctx, "c", everything=True)
    (ref,) = _refs(ctx)[1]
    tags = np.load(io.BytesIO(ctx.blobstore.get_bytes(segment_prefix("c", ref.id) + "tags.npy")))
    assert v and tags.tolist() == [0, 2, 10, 11]
    assert [c["text"] for c in read_chunks(ctx.blobstore, "c", v)] == ["alpha", "gamma", "delta", "epsilon"]
