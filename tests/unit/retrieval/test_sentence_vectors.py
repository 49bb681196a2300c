"""Sentence vectors stored at ingestion (relayrag.retrieval.sentences): the format, ingestion (reuse by content
hash, the upgrade of an older snapshot), and the stages looking them up instead of embedding at query time."""

from __future__ import annotations

import numpy as np
import pytest

from relayrag.retrieval.sentences import SentenceVectors, index_spans
from relayrag.text import answer_units, sentence_spans
from tests.conftest import write_docs
from tests.unit.stages.conftest import QUESTION, call, prepare


class CountingEmbedder:
    """Wraps the real embedder and records every text it embeds, by kind."""

    def __init__(self, inner):
        self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim
        self.calls: dict[str, list[str]] = {"query": [], "document": []}

    def embed(self, texts, *, kind="document"):
        self.calls[kind].extend(texts)
        return self.inner.embed(texts, kind=kind)

    def unknown_rate(self, text):
        return self.inner.unknown_rate(text)


def test_format_round_trip_lookup_and_validation():
    parts = [(np.array([[0, 5], [6, 12]]), np.eye(2, 4)), (np.zeros((0, 2)), np.zeros((0, 4))),
             (np.array([[0, 3]]), np.ones((1, 4)) / 2)]
    sv = SentenceVectors.from_parts(parts, dim=4)
    assert (sv.n_chunks, len(sv), sv.dim) == (3, 3, 4) and list(sv.offsets) == [0, 2, 2, 3]
    back = SentenceVectors.from_bytes(sv.to_bytes())
    assert np.array_equal(back.offsets, sv.offsets) and np.array_equal(back.vectors, sv.vectors)
    hit, miss = back.lookup(0, [(6, 12), (0, 6)])
    assert miss is None and hit.dtype == np.float32 and np.allclose(hit, [0, 1, 0, 0])
    assert back.lookup(1, [(0, 3)]) == [None] and back.lookup(7, [(0, 3)]) == [None]
    with pytest.raises(ValueError, match="disagree"):
        SentenceVectors(np.array([0, 2]), np.zeros((1, 2)), np.zeros((1, 4)))
    with pytest.raises(ValueError, match="start at 0"):
        SentenceVectors(np.array([1, 2]), np.zeros((1, 2)), np.zeros((1, 4)))


def test_index_spans_cover_what_rerank_and_generate_read():
    text = ("Figure 7-26. Self-locking nuts. The nut holds under vibration: it does not loosen. "
            "Short one. Then a longer sentence follows here.\nKentucky | 14,847 | 2.5. | 9")
    spans = set(index_spans(text))
    assert set(sentence_spans(text, 24)) <= spans and set(answer_units(text, cjk=False)) <= spans


def test_ingest_stores_sentence_vectors_equal_to_fresh_embeddings(ctx, small_corpus):
    from relayrag.ingest.pipeline import ingest
    summary = ingest(ctx, small_corpus, "t")
    snap = ctx.snapshot("t")
    sv = snap.sentences
    assert sv is not None and sv.n_chunks == len(snap) and summary.sentences_embedded == len(sv) > 0
    assert snap.manifest["sentence_vectors"]["n"] == len(sv)
    for row, chunk in enumerate(snap.chunks):
        spans, vecs = sv.chunk(row)
        assert [tuple(s) for s in spans] == index_spans(chunk["text"])
        fresh = ctx.embedder.embed([chunk["text"][s:e] for s, e in spans], kind="document")
        assert np.allclose(vecs.astype(np.float32), fresh, atol=2e-3)  # float16 storage


def test_reingest_embeds_only_the_changed_files_sentences(ctx, tmp_path):
    from relayrag.ingest.pipeline import ingest
    docs = write_docs(tmp_path / "d", {"a.txt": "Alpha particles are helium nuclei. They stop in paper.",
                                       "b.txt": "Beta decay emits electrons. Neutrinos carry energy away."})
    ingest(ctx, docs, "t")
    before = ctx.snapshot("t")
    a_row = next(r for r, c in enumerate(before.chunks) if c["doc"] == "a.txt")
    a_vecs = before.sentences.chunk(a_row)[1].copy()
    (docs / "b.txt").write_text("Gamma rays are photons. Lead shields absorb them well. A third sentence.")
    s2 = ingest(ctx, docs, "t")
    after = ctx.snapshot("t")
    assert s2.chunks_embedded == 1 and s2.sentences_embedded == len(index_spans(
        next(c["text"] for c in after.chunks if c["doc"] == "b.txt")))
    a_row2 = next(r for r, c in enumerate(after.chunks) if c["doc"] == "a.txt")
    assert np.array_equal(after.sentences.chunk(a_row2)[1], a_vecs)


def test_snapshot_without_sentence_vectors_is_upgraded_once(home, monkeypatch, small_corpus):
    from relayrag.context import default_context, set_default_context
    from relayrag.ingest.pipeline import ingest
    from relayrag.settings import load_settings
    monkeypatch.setenv("RELAYRAG_SENTENCE_VECTORS", "false")
    load_settings.cache_clear()
    set_default_context(None)
    off = default_context()
    ingest(off, small_corpus, "t")
    v1 = off.current_version("t")
    assert off.snapshot("t").sentences is None and "sentence_vectors" not in off.snapshot("t").manifest
    monkeypatch.delenv("RELAYRAG_SENTENCE_VECTORS")
    load_settings.cache_clear()
    set_default_context(None)
    on = default_context()
    s = ingest(on, small_corpus, "t")
    assert s.chunks_embedded == 0 and s.sentences_embedded > 0 and on.current_version("t") != v1
    assert on.snapshot("t").sentences.n_chunks == len(on.snapshot("t"))
    again = ingest(on, small_corpus, "t")  # now nothing changes: no new version
    assert again.sentences_embedded == 0 and on.current_version("t") == s.version


def test_no_llm_ask_embeds_no_sentence_and_the_question_once(ctx, small_corpus):
    """rerank, grade, generate and hallucination_check look sentence vectors up; one query embedding per run."""
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "t")
    counting = CountingEmbedder(ctx.embedder)
    ctx._embedder = counting
    prepare(ctx, "hallucination_check")
    out = call("hallucination_check", {"run_id": "r"}, ctx)
    rec = ctx.docstore.get_run("r")
    assert rec["found"] and "2,000 eggs" in rec["answer"] and out["route"] == "grounded"
    assert counting.calls["document"] == []
    assert counting.calls["query"].count(QUESTION) == 1


def test_stored_and_query_time_sentence_vectors_rank_alike(home, small_corpus):
    """The same run's rerank with stored sentence vectors and with the old query-time path: same order, and
    the same evidence up to float16 rounding."""
    from relayrag.context import StageContext, build_blobstore, build_docstore
    from relayrag.ingest.pipeline import ingest
    from relayrag.settings import load_settings
    s = load_settings()
    on = StageContext(s, build_blobstore(s), build_docstore(s), llm_configured=False)
    off = StageContext(s.model_copy(update={"sentence_vectors": False}), on.blobstore, on.docstore,
                       embedder=on.embedder, llm_configured=False)
    ingest(on, small_corpus, "t")
    evidence = {}
    for name, c in (("on", on), ("off", off)):
        call("classify", {"run_id": name, "question": QUESTION, "collection": "t"}, c)
        call("hyde", {"run_id": name}, c)
        call("retrieve", {"run_id": name, "arm": "hybrid"}, c)  # the same arm (the bandit draws at random)
        call("rerank", {"run_id": name}, c)
        evidence[name] = c.docstore.get_run(name)["candidates"]
    assert off.snapshot("t").sentences is None and on.snapshot("t").sentences is not None
    assert [c["chunk_id"] for c in evidence["on"]] == [c["chunk_id"] for c in evidence["off"]]
    for a, b in zip(evidence["on"], evidence["off"]):
        if "sentence_cos" in a:
            assert a["best_sentence"] == b["best_sentence"] and abs(a["sentence_cos"] - b["sentence_cos"]) < 2e-3


def test_select_and_concat_compose_segments():
    a = SentenceVectors.from_parts([(np.array([[0, 2]]), np.full((1, 3), 0.1)),
                                    (np.array([[0, 1], [2, 4]]), np.full((2, 3), 0.2))], dim=3)
    b = SentenceVectors.from_parts([(np.array([[1, 5]]), np.full((1, 3), 0.3))], dim=3)
    live = a.select([1])
    assert live.n_chunks == 1 and [tuple(s) for s in live.chunk(0)[0]] == [(0, 1), (2, 4)]
    both = SentenceVectors.concat([live, b], dim=3)
    assert both.n_chunks == 2 and np.allclose(both.chunk(1)[1].astype(np.float32), 0.3, atol=1e-3)


def _assert_aligned(ctx, snap):
    """snap.sentences row r holds exactly chunk r's index spans, with vectors equal to fresh embeddings."""
    sv = snap.sentences
    assert sv is not None and sv.n_chunks == len(snap)
    for row, chunk in enumerate(snap.chunks):
        spans, vecs = sv.chunk(row)
        assert [tuple(s) for s in spans] == index_spans(chunk["text"])
        fresh = ctx.embedder.embed([chunk["text"][s:e] for s, e in spans], kind="document")
        assert np.allclose(vecs.astype(np.float32), fresh, atol=2e-3)


def test_sentence_vectors_live_in_segments_follow_tombstones_and_survive_merges(ctx, tmp_path):
    """sentences.npz is a per-segment file (local rows) written with the segment; the reader composes the live
    rows of every segment in snapshot order (a replaced source's rows dropped); a merge carries the vectors
    into the merged segment without embedding anything."""
    from relayrag.ingest.pipeline import ingest, merge
    from relayrag.ingest.snapshot import SENTENCES_FILE, prefix, read_manifest, segment_prefix, version_segments
    docs = write_docs(tmp_path / "d", {"a.txt": "Alpha particles are helium nuclei. They stop in paper.",
                                       "b.txt": "Beta decay emits electrons. Neutrinos carry energy away.",
                                       "c.txt": "Cosmic rays hit the atmosphere. Muons reach the ground."})
    ingest(ctx, docs, "t")
    (docs / "b.txt").write_text("Gamma rays are photons. Lead shields absorb them well. A third sentence.")
    ingest(ctx, docs, "t")
    store, version = ctx.blobstore, ctx.current_version("t")
    refs = version_segments(read_manifest(store, "t", version), version)
    assert len(refs) == 2 and refs[0].n_deleted == 1  # b.txt's old row is tombstoned in the first segment
    assert all(store.exists(segment_prefix("t", r.id) + SENTENCES_FILE) for r in refs)
    assert not store.exists(prefix("t", version) + SENTENCES_FILE)
    snap = ctx.snapshot("t")
    assert [c["doc"] for c in snap.chunks] == ["a.txt", "c.txt", "b.txt"]
    _assert_aligned(ctx, snap)
    counting = CountingEmbedder(ctx.embedder)
    ctx._embedder = counting
    merged = merge(ctx, "t", everything=True)
    assert merged is not None and counting.calls["document"] == []
    refs = version_segments(read_manifest(store, "t", merged), merged)
    assert len(refs) == 1 and store.exists(segment_prefix("t", refs[0].id) + SENTENCES_FILE)
    ctx._embedder = counting.inner
    after = ctx.snapshot("t")
    assert after.manifest["sentence_vectors"]["n"] == len(after.sentences)
    _assert_aligned(ctx, after)
