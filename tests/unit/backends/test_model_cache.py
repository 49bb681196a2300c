"""Issue 28 item 6: the optimised ONNX graph and the classifier's prototype vectors are stored once and read by
later processes (relayrag.backends.model_cache); a torn or altered entry is rebuilt, never used; the cache off
or unwritable changes nothing but speed."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "models"
    monkeypatch.setenv("RELAYRAG_MODEL_CACHE", str(d))
    return d


def test_optimised_graph_is_cached_and_gives_the_same_vectors(cache, monkeypatch):
    from relayrag.backends import embedder as emb
    texts = ["What was the price of straw biomass?", "hello there"]
    first = emb.OnnxMiniLMEmbedder(threads=1)
    a = first.embed(texts, kind="query")
    graphs = list(cache.glob("minilm-*.onnx"))
    assert len(graphs) == 1 and (cache / (graphs[0].name + ".sha256")).is_file()
    # the weights are a file of their own (ONNX external data, mapped when a session loads the graph)
    weights = cache / (graphs[0].name + ".weights")
    assert weights.is_file() and (cache / (weights.name + ".sha256")).is_file()
    assert weights.stat().st_size > 50 * graphs[0].stat().st_size
    assert not [p for p in cache.iterdir() if p.name.startswith(".tmp")]
    # a second instance (a new process) loads the cached graph: neither the model nor the graph surgery is read
    monkeypatch.setattr(emb, "_read_verified", lambda *a, **k: pytest.fail("the original model was read again"))
    second = emb.OnnxMiniLMEmbedder(threads=1)
    b = second.embed(texts, kind="query")
    assert np.allclose(a, b, atol=1e-5)
    assert np.array_equal(b, emb.OnnxMiniLMEmbedder(threads=1).embed(texts, kind="query"))  # cache to cache: exact


def test_a_torn_cached_graph_is_not_used(cache):
    from relayrag.backends import embedder as emb
    a = emb.OnnxMiniLMEmbedder(threads=1).embed(["rail gauge"], kind="query")
    graph = next(cache.glob("minilm-*.onnx"))
    graph.write_bytes(graph.read_bytes()[:1000])  # torn: size no longer matches its sidecar
    b = emb.OnnxMiniLMEmbedder(threads=1).embed(["rail gauge"], kind="query")
    assert np.allclose(a, b, atol=1e-5)


def test_torn_cached_weights_are_not_used(cache):
    from relayrag.backends import embedder as emb
    a = emb.OnnxMiniLMEmbedder(threads=1).embed(["rail gauge"], kind="query")
    weights = next(cache.glob("minilm-*.onnx.weights"))
    with open(weights, "r+b") as f:
        f.truncate(1000)  # torn: its size no longer matches its sidecar, so the entry is rebuilt, not mapped
    b = emb.OnnxMiniLMEmbedder(threads=1).embed(["rail gauge"], kind="query")
    assert np.allclose(a, b, atol=1e-5)
    assert weights.stat().st_size > 1000  # rebuilt in place


def test_move_atomic_records_size_and_digest(cache):
    import hashlib

    from relayrag.backends import model_cache
    root = model_cache.cache_dir()
    assert root is not None
    src = root / ".tmp-src"
    src.write_bytes(b"x" * 3000)
    dst = root / "blob.bin"
    assert model_cache.move_atomic(src, dst) and not src.exists()
    assert model_cache.intact_path(dst) == dst
    assert (root / "blob.bin.sha256").read_text().split() == [hashlib.sha256(b"x" * 3000).hexdigest(), "3000"]
    assert not model_cache.move_atomic(root / ".tmp-missing", root / "other.bin")
    assert model_cache.intact_path(root / "other.bin") is None


def test_cache_off_and_unwritable(tmp_path, monkeypatch):
    from relayrag.backends import model_cache
    monkeypatch.setenv("RELAYRAG_MODEL_CACHE", "off")
    assert model_cache.cache_dir() is None
    assert model_cache.cached_array("x", lambda: np.arange(3)).tolist() == [0, 1, 2]
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RELAYRAG_MODEL_CACHE", str(blocker / "sub"))
    assert model_cache.cache_dir() is None


def test_cached_array_round_trip_and_altered_entry(cache):
    from relayrag.backends import model_cache
    calls = []

    def compute():
        calls.append(1)
        return np.array([[1.0, 2.0]], dtype=np.float32)
    assert model_cache.cached_array("t", compute).tolist() == [[1.0, 2.0]]
    assert model_cache.cached_array("t", compute).tolist() == [[1.0, 2.0]] and len(calls) == 1
    (cache / "t.npy").write_bytes((cache / "t.npy").read_bytes()[:-4] + b"\0\0\0\0")  # altered, same size
    assert model_cache.cached_array("t", compute).tolist() == [[1.0, 2.0]] and len(calls) == 2


def test_classifier_prototypes_are_embedded_once_per_model(cache):
    from relayrag.backends.embedder import OnnxMiniLMEmbedder
    from relayrag.stages import classify
    e = OnnxMiniLMEmbedder(threads=1)
    classify._prototypes.cache_clear()
    vecs, labels = classify._prototypes(e)
    assert len(list(cache.glob("prototypes-*.npy"))) == 1
    classify._prototypes.cache_clear()

    class Counting(OnnxMiniLMEmbedder):
        def embed(self, texts, *, kind="document"):
            raise AssertionError("prototypes embedded again")
    again, labels2 = classify._prototypes(Counting(threads=1))
    assert np.array_equal(vecs, again) and labels == labels2
    classify._prototypes.cache_clear()


def test_an_ask_path_does_not_import_sqlglot_or_bm25s():
    """Issue 28 item 6: reading a warehouse record imported sqlglot (~0.5 s) and BM25 stopwords imported bm25s
    (scipy, ~0.7 s) in every `relayrag ask` process."""
    import subprocess
    import sys
    code = ("import sys, relayrag.sql.warehouse as w, relayrag.stages.classify\n"
            "from relayrag.retrieval.tokenize import tokenize\n"
            "assert tokenize('the queen bees') == ['queen', 'bee'], tokenize('the queen bees')\n"
            "print(sorted(m for m in ('sqlglot', 'bm25s') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
