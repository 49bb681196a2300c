"""Backends chosen by settings only; clear errors for a missing extra, a missing bucket, a foreign snapshot."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from relayrag.context import (StageContext, build_blobstore, build_docstore, build_embedder,
                              check_snapshot_embedder)
from relayrag.errors import ConfigError, StageError
from relayrag.settings import Settings


def test_gcs_needs_a_bucket(tmp_path):
    with pytest.raises(ConfigError, match="RELAYRAG_BLOBSTORE=gcs needs RELAYRAG_GCS_BUCKET"):
        build_blobstore(Settings(home=tmp_path, blobstore="gcs"))
    with pytest.raises(ConfigError, match="unknown blob store 's3'; valid: local, gcs"):
        build_blobstore(Settings(home=tmp_path, blobstore="s3"))
    with pytest.raises(ConfigError, match="unknown docstore 'mongo'; valid: sqlite, firestore"):
        build_docstore(Settings(home=tmp_path, docstore="mongo"))
    with pytest.raises(ConfigError, match="unknown embedder 'bert'; valid: minilm-int8, e5-small, vertex"):
        build_embedder(Settings(home=tmp_path, embedder="bert"))


def test_settings_select_the_cloud_backends(tmp_path, gcs_server, monkeypatch):
    from relayrag.backends.firestore import FirestoreDocStore
    from relayrag.backends.gcs import GCSBlobStore

    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:9")  # the client connects lazily
    s = Settings(home=tmp_path, blobstore="gcs", gcs_bucket=gcs_server["bucket"], docstore="firestore",
                 firestore_prefix="envA", gcp_project="demo-relayrag")
    bs, ds = build_blobstore(s), build_docstore(s)
    assert isinstance(bs, GCSBlobStore) and bs.bucket_name == gcs_server["bucket"]
    assert isinstance(ds, FirestoreDocStore) and ds.prefix == "envA"
    bs.put_bytes("probe/x", b"1")  # really talks to the emulated bucket
    assert bs.get_bytes("probe/x") == b"1"
    bs.delete_prefix("probe")
    with pytest.raises(ConfigError, match="RELAYRAG_FIRESTORE_PREFIX"):
        build_docstore(Settings(home=tmp_path, docstore="firestore", firestore_prefix="a/b"))


def test_vertex_embedder_selected_by_settings(tmp_path, monkeypatch):
    import google.genai

    import relayrag.context as context
    from relayrag.backends.vertex_embedder import VertexEmbedder

    made = []

    class RecordingClient:
        def __init__(self, **kw):
            made.append(kw)
            self.models = None

    monkeypatch.setattr(google.genai, "Client", RecordingClient)
    monkeypatch.setattr(context, "_vertex_embedders", {})
    s = Settings(home=tmp_path, embedder="vertex", gcp_project="p1", gcp_location="asia-northeast1",
                 vertex_embedding_model="text-multilingual-embedding-002")
    emb = StageContext(s, None, None).embedder
    assert isinstance(emb, VertexEmbedder) and emb.model_id == "vertex:text-multilingual-embedding-002/768"
    assert made == [{"vertexai": True, "project": "p1", "location": "asia-northeast1"}]
    assert build_embedder(s) is emb  # one per process


@pytest.mark.parametrize("module, extra_module", [
    ("relayrag.backends.gcs", "google.cloud.storage"),
    ("relayrag.backends.firestore", "google.cloud.firestore"),
    ("relayrag.backends.vertex_embedder", "google.genai"),
])
def test_missing_extra_says_what_to_install(module, extra_module, monkeypatch):
    monkeypatch.delitem(sys.modules, module, raising=False)
    import importlib
    parent, _, child = extra_module.rpartition(".")
    monkeypatch.delattr(importlib.import_module(parent), child, raising=False)
    monkeypatch.setitem(sys.modules, extra_module, None)  # import of it fails like an absent package
    with pytest.raises(ConfigError, match=r"pip install 'relayrag\[gcp\]'"):
        __import__(module)


# what the `gcp` extra brings (google.cloud.functions is functions-framework's, a default dependency)
GCP_EXTRA_MODULES = ("google.cloud.storage", "google.cloud.firestore", "google.cloud.firestore_v1", "google.genai",
                     "google.cloud.workflows", "google.cloud.bigquery", "google.cloud.pubsub", "google.api_core",
                     "google.auth", "grpc", "fake_firestore", "gcp_storage_emulator")


def test_embedded_default_imports_no_gcp_extra(tmp_path):
    code = (
        "import sys, relayrag.context, relayrag.cli, relayrag.entrypoints, relayrag.ingest.pipeline\n"
        "from relayrag.context import build_blobstore, build_docstore\n"
        "from relayrag.settings import Settings\n"
        f"s = Settings(home={str(tmp_path)!r})\n"
        "build_blobstore(s); build_docstore(s)\n"
        f"extra = {GCP_EXTRA_MODULES!r}\n"
        "print(sorted(m for m in sys.modules if any(m == e or m.startswith(e + '.') for e in extra)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_querying_a_snapshot_built_by_another_embedder_is_a_clear_error(ctx):
    from relayrag.ingest.snapshot import write_snapshot

    chunk = {"chunk_id": "c0", "doc": "d", "source": "/d", "title": "", "text": "hello", "page": 1,
             "content_hash": "h"}
    vec = np.ones((1, 768), np.float32) / np.sqrt(768)
    write_snapshot(ctx.blobstore, "kb", "v1", [chunk], vec, {"embedder": "vertex:text-multilingual-embedding-002/768"})
    ctx.docstore.commit_ingest("kb", "v1", {}, [], [], expected_version=None)
    with pytest.raises(StageError, match=r"indexed with embedder 'vertex:text-multilingual-embedding-002/768', "
                                         r"but this process embeds with 'all-MiniLM-L6-v2-onnx-int8'"):
        ctx.snapshot("kb")
    # the same embedder (or a snapshot that names none) passes
    write_snapshot(ctx.blobstore, "kb", "v2", [chunk], vec[:, :384] * np.sqrt(2),
                   {"embedder": ctx.embedder.model_id})
    ctx.docstore.commit_ingest("kb", "v2", {}, [], [], expected_version="v1")
    assert ctx.snapshot("kb").version == "v2"
    snap = ctx.snapshot("kb")
    snap.manifest = {}
    check_snapshot_embedder(snap, ctx.embedder)
    assert json.loads(ctx.blobstore.get_bytes("snapshots/kb/v2/manifest.json"))["embedder"] == ctx.embedder.model_id
