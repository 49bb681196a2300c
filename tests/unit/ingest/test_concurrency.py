"""Ingestion under writers that share no lock (Cloud Functions instances): compare-and-set on the
collection's version, retry on conflict, no lost update, no half-written version left behind."""

from __future__ import annotations

import threading
import time

import pytest

from relayrag.backends.blobstore import LocalBlobStore
from relayrag.backends.docstore import SQLiteDocStore
from relayrag.context import StageContext
from relayrag.errors import ConflictError
from relayrag.ingest import pipeline
from relayrag.ingest.snapshot import gc_versions, new_version, prefix, read_chunks
from relayrag.settings import Settings


class RemoteLikeStore:
    """The local store seen through the BlobStore protocol only (not a LocalBlobStore), as GCS would be:
    the pipeline must then not rely on its machine-local lock."""

    def __init__(self, root):
        self._s = LocalBlobStore(root)

    def put_bytes(self, key, data):
        self._s.put_bytes(key, data)

    def get_bytes(self, key):
        return self._s.get_bytes(key)

    def exists(self, key):
        return self._s.exists(key)

    def list(self, prefix, include_partial=False):
        return self._s.list(prefix, include_partial)

    def delete_prefix(self, prefix):
        return self._s.delete_prefix(prefix)

    def local_path(self, key):
        return None


def race(n: int, work, *, commit_delay_s: float = 0.0) -> tuple[list, list[Exception], list[int]]:
    """Run work(i) for i in range(n) on n threads while SQLiteDocStore.commit_ingest counts the
    ConflictErrors it raises (commit_delay_s widens the race window). Returns (results, errors, conflicts)."""
    results, errors, conflicts = [], [], []
    real_commit = SQLiteDocStore.commit_ingest

    def counting_commit(self, *a, **kw):
        time.sleep(commit_delay_s)
        try:
            return real_commit(self, *a, **kw)
        except ConflictError:
            conflicts.append(1)
            raise

    def run(i):
        try:
            results.append(work(i))
        except Exception as exc:  # surfaced to the caller
            errors.append(exc)

    SQLiteDocStore.commit_ingest = counting_commit
    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        SQLiteDocStore.commit_ingest = real_commit
    return results, errors, conflicts


def test_commit_ingest_is_compare_and_set(tmp_path):
    ds = SQLiteDocStore(tmp_path / "d.sqlite3")
    ds.commit_ingest("c", "v1", {}, [{"path": "/a"}], [], expected_version=None)
    with pytest.raises(ConflictError, match="moved from version None to 'v1'"):
        ds.commit_ingest("c", "v2", {}, [{"path": "/b"}], [], expected_version=None)
    assert ds.get_file("c", "/b") is None and ds.get_collection("c")["current_version"] == "v1"
    ds.commit_ingest("c", "v2", {}, [{"path": "/b"}], [], expected_version="v1")
    assert ds.get_collection("c")["current_version"] == "v2"


def test_dead_letters_are_cleared_by_a_later_commit(tmp_path):
    ds = SQLiteDocStore(tmp_path / "d.sqlite3")
    ds.record_dead_letter("c", "gs://b/c/x.pdf", {"error": "not a PDF", "generation": "7"})
    assert ds.get_dead_letter("c", "gs://b/c/x.pdf")["error"] == "not a PDF"
    assert [d["path"] for d in ds.list_dead_letters("c")] == ["gs://b/c/x.pdf"]
    ds.commit_ingest("c", "v1", {}, [{"path": "gs://b/c/x.pdf"}], [], expected_version=None)
    assert ds.get_dead_letter("c", "gs://b/c/x.pdf") is None and ds.list_dead_letters("c") == []


def test_gc_spares_young_versions_when_writers_share_no_lock(tmp_path):
    store = LocalBlobStore(tmp_path / "b")
    old = f"v{int((time.time() - 3600) * 1000):013d}-aaaaaa"
    young = new_version()
    for v in (old, young, "v9999999999999-cur"):
        store.put_bytes(prefix("c", v) + "chunks.jsonl", b"")
    assert gc_versions(store, "c", keep={"v9999999999999-cur"}, min_age_s=900) == [old]
    assert gc_versions(store, "c", keep={"v9999999999999-cur"}) == [young]


def _writer_ctx(tmp_path, i, blob_root, db):
    # each writer has its own home (so its own lock folder): like separate function instances
    s = Settings(home=tmp_path / f"inst{i}")
    return StageContext(s, RemoteLikeStore(blob_root), SQLiteDocStore(db))


def test_concurrent_writers_without_a_shared_lock_lose_no_update(tmp_path, embedder):
    blob_root, db = tmp_path / "blobs", tmp_path / "d.sqlite3"
    files = []
    for i in range(6):
        f = tmp_path / "src" / f"doc{i}.txt"
        f.parent.mkdir(exist_ok=True)
        f.write_text(f"Document number {i} talks about topic{i} and nothing else.", encoding="utf-8")
        files.append(f)
    ctxs = [_writer_ctx(tmp_path, i, blob_root, db) for i in range(len(files))]
    for c in ctxs:
        c._embedder = embedder
    barrier = threading.Barrier(len(files))

    def work(i):
        barrier.wait()
        pipeline.ingest(ctxs[i], files[i], "c")

    _, errors, conflicts = race(len(files), work, commit_delay_s=0.05)
    assert not errors, errors
    assert conflicts, "the race did not happen; the test proves nothing"
    ds = SQLiteDocStore(db)
    meta = ds.get_collection("c")
    chunks = read_chunks(RemoteLikeStore(blob_root), "c", meta["current_version"])
    assert sorted({c["doc"] for c in chunks}) == [f"doc{i}.txt" for i in range(len(files))]
    assert len(ds.list_files("c")) == len(files)
    # losers deleted their never-current versions and segments; replaced ones wait for GC_MIN_AGE_S (another
    # instance may still be reading them), so at most one complete version and one segment per successful
    # writer remain
    keys = LocalBlobStore(blob_root).list("snapshots/c/")
    versions = {k.split("/")[2] for k in keys} - {"segments"}
    assert meta["current_version"] in versions and len(versions) <= len(files)
    assert all(f"snapshots/c/{v}/manifest.json" in keys for v in versions)
    segments = {k.split("/")[3] for k in keys if k.startswith("snapshots/c/segments/")}
    assert len(segments) <= len(files)
    assert all(f"snapshots/c/segments/{s}/manifest.json" in keys for s in segments)


def test_conflict_retries_are_bounded(tmp_path, embedder, monkeypatch):
    c = _writer_ctx(tmp_path, 0, tmp_path / "blobs", tmp_path / "d.sqlite3")
    c._embedder = embedder
    f = tmp_path / "a.txt"
    f.write_text("some text to index", encoding="utf-8")

    def always_conflict(self, *a, **kw):
        raise ConflictError("another writer won")

    monkeypatch.setattr(SQLiteDocStore, "commit_ingest", always_conflict)
    monkeypatch.setattr(pipeline.time, "sleep", lambda s: None)
    with pytest.raises(ConflictError):
        pipeline.ingest(c, f, "c")
    assert LocalBlobStore(tmp_path / "blobs").list("snapshots/c/") == []  # nothing half-written stays


def test_reingest_after_an_embedder_change_re_embeds_everything(tmp_path, embedder):
    """Vectors are reused by content hash only when the snapshot was built by the same embedder."""
    import numpy as np

    class Other:  # another model with another size: its vectors must never mix with MiniLM's
        model_id, dim = "other-model/8", 8

        def embed(self, texts, kind="document"):
            return np.ones((len(texts), 8), np.float32) / np.sqrt(8)

    c = _writer_ctx(tmp_path, 0, tmp_path / "blobs", tmp_path / "d.sqlite3")
    c._embedder = embedder
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("alpha text about rivers", encoding="utf-8")
    pipeline.ingest(c, src, "c")
    (src / "b.txt").write_text("beta text about mountains", encoding="utf-8")
    c._embedder = Other()
    summary = pipeline.ingest(c, src, "c")
    assert summary.chunks_embedded == summary.chunks_total == 2
    from relayrag.ingest.snapshot import read_vectors
    ver = c.docstore.get_collection("c")["current_version"]
    assert read_vectors(c.blobstore, "c", ver).shape == (2, 8)
