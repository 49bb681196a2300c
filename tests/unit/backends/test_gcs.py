"""GCSBlobStore with the real google-cloud-storage client against gcp-storage-emulator on 127.0.0.1."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from relayrag.backends.blobstore import BlobStore
from relayrag.backends.gcs import GCSBlobStore, download_object, object_info, storage_client
from relayrag.errors import ConfigError


@pytest.fixture
def store(gcs_server):
    # a fresh prefix per test: the emulator's bucket is shared by the session
    return GCSBlobStore(gcs_server["bucket"], client=storage_client(), prefix=f"t-{uuid.uuid4().hex[:8]}")


def test_protocol_roundtrip(store, gcs_server):
    assert isinstance(store, BlobStore)
    assert store.local_path("a/b.txt") is None
    assert not store.exists("a/b.txt") and store.list("") == []
    store.put_bytes("a/b.txt", b"one")
    store.put_bytes("a/c/d.bin", bytes(range(256)) * 100)
    store.put_bytes("ab/e.txt", "東京".encode("utf-8"))
    store.put_bytes("a/b.txt", b"two")  # overwrite
    assert store.get_bytes("a/b.txt") == b"two"
    assert store.get_bytes("a/c/d.bin") == bytes(range(256)) * 100
    assert store.get_bytes("ab/e.txt").decode("utf-8") == "東京"
    assert store.exists("a/c/d.bin") and not store.exists("a/c")
    assert store.list("") == ["a/b.txt", "a/c/d.bin", "ab/e.txt"]
    assert store.list("a") == ["a/b.txt", "a/c/d.bin"]  # a folder prefix: not "ab/..."
    assert store.list("a/") == ["a/b.txt", "a/c/d.bin"]
    assert store.list("zzz") == []
    # other prefixes (environments sharing the bucket) are invisible
    other = GCSBlobStore(gcs_server["bucket"], client=store.client, prefix=f"t-{uuid.uuid4().hex[:8]}")
    assert other.list("") == [] and not other.exists("a/b.txt")
    assert store.delete_prefix("a") == 2
    assert store.list("") == ["ab/e.txt"]
    assert store.delete_prefix("ab/e.txt") == 1  # a key is a prefix of itself
    assert store.delete_prefix("nothing") == 0 and store.list("") == []


def test_missing_objects_and_bad_keys(store, gcs_server):
    with pytest.raises(FileNotFoundError, match=rf"gs://{gcs_server['bucket']}/{store.prefix}missing\.txt"):
        store.get_bytes("missing.txt")
    with pytest.raises(FileNotFoundError, match=r"#12345"):
        store.get_bytes("missing.txt", generation=12345)
    for bad in ("", "../x", "a/../b", "/abs", "trailing/", "a//b"):
        with pytest.raises(ValueError, match="invalid blob key"):
            store.put_bytes(bad, b"x")
    with pytest.raises(ConfigError, match="RELAYRAG_GCS_BUCKET"):
        GCSBlobStore("gs://bucket/x", client=store.client)


def test_generation_reads_and_download_helpers(store, gcs_server, tmp_path):
    bucket = gcs_server["bucket"]
    name = store.prefix + "docs/report.final.pdf"
    store.put_bytes("docs/report.final.pdf", b"%PDF-1.4 first")
    info = object_info(bucket, name, client=store.client)
    assert info["bucket"] == bucket and info["name"] == name
    assert isinstance(info["generation"], int) and info["generation"] > 0 and info["size"] == 14
    assert info["md5"] and isinstance(info["updated"], float)
    # the live generation can be read by number
    assert store.get_bytes("docs/report.final.pdf", generation=info["generation"]) == b"%PDF-1.4 first"
    path = download_object(bucket, name, generation=info["generation"], dest_dir=tmp_path, client=store.client)
    assert path.parent == tmp_path and path.name.endswith("-report.final.pdf") and path.suffix == ".pdf"
    assert path.read_bytes() == b"%PDF-1.4 first"
    store.put_bytes("docs/report.final.pdf", b"%PDF-1.4 second")
    assert object_info(bucket, name, client=store.client)["generation"] != info["generation"]
    path2 = download_object(bucket, name, client=store.client)  # live generation, own temp folder
    try:
        assert path2.read_bytes() == b"%PDF-1.4 second" and path2 != path
    finally:
        path2.unlink()
        path2.parent.rmdir()
    assert object_info(bucket, store.prefix + "nope.pdf", client=store.client) is None
    with pytest.raises(FileNotFoundError, match=r"nope\.pdf#7"):
        download_object(bucket, store.prefix + "nope.pdf", generation=7, dest_dir=tmp_path, client=store.client)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # the failed download left no file
    with pytest.raises(ValueError, match="not an object name"):
        download_object(bucket, "folder/", client=store.client)


def test_snapshot_write_and_load_through_gcs(store):
    from relayrag.ingest.snapshot import gc_versions, load_snapshot, read_vectors, write_snapshot

    chunks = [
        {"chunk_id": f"c{i}", "doc": "d.txt", "source": "/d.txt", "title": "D", "text": text,
         "page": 1, "content_hash": f"h{i}"}
        for i, text in enumerate(["solar panels make electricity", "bees dance to share flowers",
                                  "the rail gauge is 1435 millimetres"])
    ]
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(3, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    write_snapshot(store, "col", "v1", chunks, vecs, {"embedder": "test/8"})
    keys = store.list("snapshots/col/v1")
    assert keys == ["snapshots/col/v1/manifest.json"]  # a version is its manifest; the rows are in a segment
    seg = [k for k in store.list("snapshots/col/segments") if k.endswith("/bm25.npz")]
    assert len(seg) == 1
    snap = load_snapshot(store, "col", "v1")  # segment files are downloaded: local_path is None
    assert snap.version == "v1" and [c["chunk_id"] for c in snap.chunks] == ["c0", "c1", "c2"]
    assert snap.manifest["embedder"] == "test/8" and snap.manifest["n_chunks"] == 3
    np.testing.assert_allclose(read_vectors(store, "col", "v1"), vecs.astype(np.float16))
    assert int(np.argmax(snap.bm25.scores("bees flowers"))) == 1  # the BM25 index came back from GCS
    assert int(np.argmax(snap.dense.scores(vecs[2]))) == 2
    write_snapshot(store, "col", "v2", chunks[:1], vecs[:1], {"embedder": "test/8"})
    assert gc_versions(store, "col", keep={"v2"}) == ["v1"]
    assert store.list("snapshots/col/v1") == [] and store.list("snapshots/col/v2")
    assert not any(k.startswith(seg[0].rsplit("/", 1)[0]) for k in store.list("snapshots/col"))  # v1's segment


def test_pipeline_ingest_end_to_end_on_gcs(gcs_server, tmp_path, monkeypatch):
    """relayrag.ingest.pipeline.ingest with the GCS blob store (and the Firestore docstore over fake-firestore):
    snapshots land in the bucket, the context loads them back, a re-ingest of unchanged files writes nothing,
    a removed file leaves the index."""
    from fake_firestore import FakeFirestoreClient

    from relayrag.backends.firestore import FirestoreDocStore
    from relayrag.context import StageContext
    from relayrag.ingest.pipeline import ingest
    from relayrag.settings import Settings

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "solar.md").write_text("# Solar power\n\nSolar panels convert sunlight into electricity.\n", "utf-8")
    (docs / "bees.txt").write_text("Honey bees communicate the direction of flowers with a waggle dance.", "utf-8")
    store = GCSBlobStore(gcs_server["bucket"], client=storage_client(), prefix=f"t-{uuid.uuid4().hex[:8]}")
    ctx = StageContext(Settings(home=tmp_path / "home"), store, FirestoreDocStore(FakeFirestoreClient(), "t"))

    s1 = ingest(ctx, docs, "kb")
    assert s1.ingested == 2 and not s1.failed and s1.chunks_total >= 2
    v1 = ctx.docstore.get_collection("kb")["current_version"]
    assert store.exists(f"snapshots/kb/{v1}/manifest.json")
    snap = ctx.snapshot("kb")
    assert snap.version == v1 and snap.manifest["embedder"] == ctx.embedder.model_id
    assert {c["doc"] for c in snap.chunks} == {"solar.md", "bees.txt"}
    assert snap.dense.n_docs == len(snap.chunks)
    q = ctx.embedder.embed(["waggle dance of honey bees"], kind="query")[0]
    assert snap.chunks[int(np.argmax(snap.dense.scores(q)))]["doc"] == "bees.txt"
    assert sorted(r["name"] for r in ctx.docstore.list_files("kb")) == ["bees.txt", "solar.md"]

    s2 = ingest(ctx, docs, "kb")
    assert s2.skipped == 2 and s2.ingested == 0
    assert ctx.docstore.get_collection("kb")["current_version"] == v1  # nothing changed, no new version

    (docs / "bees.txt").unlink()
    s3 = ingest(ctx, docs, "kb")
    assert s3.deleted == 1
    snap3 = ctx.snapshot("kb")
    assert snap3.version != v1 and {c["doc"] for c in snap3.chunks} == {"solar.md"}
    assert [r["name"] for r in ctx.docstore.list_files("kb")] == ["solar.md"]


def test_stages_read_only_a_runs_rows_from_gcs(gcs_server, tmp_path, monkeypatch):
    """Stage instances of their own (no whole version loaded) read a run's rows from the bucket by ranged reads
    (relayrag.retrieval.view) and answer as the whole version does (issue 16 item 4, cloud path)."""
    import relayrag.context as C
    from relayrag.context import StageContext, build_docstore, set_default_context
    from relayrag.engine.local import ask, local_transport
    from relayrag.retrieval import view as V
    from relayrag.settings import Settings
    from tests.unit.retrieval.test_run_view import _collection

    store = GCSBlobStore(gcs_server["bucket"], client=storage_client(), prefix=f"t-{uuid.uuid4().hex[:8]}")
    settings = Settings(home=tmp_path / "home", retrieve_k=8)
    ctx = StageContext(settings, store, build_docstore(settings))
    set_default_context(ctx)
    try:
        _collection(ctx, tmp_path)
        loads: list[str] = []
        real = C._load
        monkeypatch.setattr(C, "_load", lambda s, c, v, **kw: loads.append(v) or real(s, c, v, **kw))

        def transport(method, url, body, timeout):
            if not url.endswith("/retrieve"):
                ctx._snapshots.clear()
            return local_transport(method, url, body, timeout)
        question = "Which is the largest living rodent?"
        whole = ask(question, "c", arm="hybrid")
        V._views.clear()
        V._layouts.clear()
        loads.clear()
        viewed = ask(question, "c", arm="hybrid", transport=transport)
        assert len(loads) == 1  # retrieve's
        assert viewed["answer"] == whole["answer"] and "capybara" in viewed["answer"].lower()
        assert viewed["citations"] == whole["citations"]
        runs = [ctx.docstore.get_run(r["run_id"]) for r in (whole, viewed)]
        assert [c["chunk_id"] for c in runs[0]["candidates"]] == [c["chunk_id"] for c in runs[1]["candidates"]]
        assert any(key[3] == runs[1]["snapshot_version"] for key in V._views)
    finally:
        set_default_context(None)
