"""VertexEmbedder against a test double of google-genai's Client (only `client.models.embed_content` is
replaced; requests and errors are google-genai's own types)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from google.genai import errors as genai_errors
from google.genai import types

from relayrag.backends.vertex_embedder import (MAX_TEXTS, TOKEN_BUDGET, EmbeddingError, VertexEmbedder,
                                               estimate_tokens)


def _vector(text: str, task: str, dim: int) -> list[float]:
    """A deterministic, deliberately non-unit vector per (text, task type)."""
    seed = int.from_bytes(hashlib.sha256(f"{task}|{text}".encode()).digest()[:8], "little")
    return list(np.random.default_rng(seed).normal(scale=3.0, size=dim))


class FakeModels:
    def __init__(self, dim=768, fail=None):
        self.dim = dim
        self.calls: list[dict] = []
        self.fail = fail or []  # exceptions raised by the next calls, in order

    def embed_content(self, *, model, contents, config):
        assert isinstance(config, types.EmbedContentConfig)
        self.calls.append({"model": model, "contents": list(contents), "task_type": config.task_type,
                           "output_dimensionality": config.output_dimensionality,
                           "auto_truncate": config.auto_truncate})
        if self.fail:
            exc = self.fail.pop(0)
            if callable(exc) and not isinstance(exc, BaseException):
                exc = exc(contents)
            if exc is not None:
                raise exc
        dim = config.output_dimensionality or self.dim
        return types.EmbedContentResponse(embeddings=[
            types.ContentEmbedding(values=_vector(t, config.task_type, dim)) for t in contents])


class FakeClient:
    def __init__(self, **kw):
        self.models = FakeModels(**kw)


def _err(code, status):
    cls = genai_errors.ClientError if code < 500 else genai_errors.ServerError
    return cls(code, {"error": {"code": code, "message": f"{status} (test)", "status": status}})


def _embedder(client, **kw):
    sleeps = []
    emb = VertexEmbedder(kw.pop("model", "text-multilingual-embedding-002"), client=client,
                         sleep=sleeps.append, **kw)
    return emb, sleeps


def test_task_types_unit_rows_and_model_id():
    client = FakeClient()
    emb, _ = _embedder(client)
    assert emb.dim == 768 and emb.model_id == "vertex:text-multilingual-embedding-002/768"
    docs = emb.embed(["東京タワーの高さは333メートルです。", "bees dance"], kind="document")
    q = emb.embed(["how tall is Tokyo Tower"], kind="query")
    assert docs.dtype == np.float32 and docs.shape == (2, 768) and q.shape == (1, 768)
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, rtol=1e-6)
    calls = client.models.calls
    assert [c["task_type"] for c in calls] == ["RETRIEVAL_DOCUMENT", "RETRIEVAL_QUERY"]
    assert all(c["model"] == "text-multilingual-embedding-002" and c["auto_truncate"] for c in calls)
    # the rows are the service's vectors, normalised, in input order
    raw = np.asarray(_vector("bees dance", "RETRIEVAL_DOCUMENT", 768), dtype=np.float32)
    np.testing.assert_allclose(docs[1], raw / np.linalg.norm(raw), rtol=1e-5)
    assert emb.embed([], kind="query").shape == (0, 768)
    with pytest.raises(ValueError, match="kind must be one of"):
        emb.embed(["x"], kind="passage")
    with pytest.raises(TypeError):
        emb.embed("a single string")


def test_output_dimensionality_is_sent_and_normalised():
    client = FakeClient(dim=3072)
    emb, _ = _embedder(client, model="gemini-embedding-001", output_dimensionality=256)
    assert emb.dim == 256 and emb.model_id == "vertex:gemini-embedding-001/256"
    out = emb.embed(["a", "b", "c"])
    assert out.shape == (3, 256)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    # gemini embedding models take one text per request
    assert [len(c["contents"]) for c in client.models.calls] == [1, 1, 1]
    assert {c["output_dimensionality"] for c in client.models.calls} == {256}


def test_unknown_model_learns_its_dim_from_the_service():
    client = FakeClient(dim=512)
    emb, _ = _embedder(client, model="some-future-embedding-model")
    assert emb.dim == 512  # one probe call
    assert len(client.models.calls) == 1 and client.models.calls[0]["task_type"] == "RETRIEVAL_QUERY"
    assert emb.embed(["x"]).shape == (1, 512)


def test_batches_respect_text_and_token_limits():
    client = FakeClient(dim=16)
    emb, _ = _embedder(client, output_dimensionality=16)
    short = [f"sentence number {i}" for i in range(MAX_TEXTS * 2 + 7)]
    out = emb.embed(short)
    assert out.shape == (len(short), 16)
    sizes = [len(c["contents"]) for c in client.models.calls]
    assert sizes == [MAX_TEXTS, MAX_TEXTS, 7]
    assert [t for c in client.models.calls for t in c["contents"]] == short  # order kept
    client.models.calls.clear()
    long = ["word " * 2000] * 30  # ~3,300 estimated tokens each (capped at 2,048 by auto-truncation)
    emb.embed(long)
    for c in client.models.calls:
        assert sum(estimate_tokens(t) for t in c["contents"]) <= TOKEN_BUDGET
    assert sum(len(c["contents"]) for c in client.models.calls) == 30 and len(client.models.calls) > 1
    # CJK text counts about one token per character
    assert estimate_tokens("東京" * 100) >= 200


def test_retries_429_and_5xx_with_backoff():
    client = FakeClient(dim=8, fail=[_err(429, "RESOURCE_EXHAUSTED"), _err(503, "UNAVAILABLE"),
                                     _err(429, "RESOURCE_EXHAUSTED")])
    emb, sleeps = _embedder(client, output_dimensionality=8, backoff_s=1.0, max_backoff_s=32.0)
    out = emb.embed(["a", "b"])
    assert out.shape == (2, 8) and len(client.models.calls) == 4 and emb.requests == 4
    assert len(sleeps) == 3
    # exponential with jitter: attempt k sleeps within [0.5, 1] x 2^(k-1) s
    for k, s in enumerate(sleeps):
        assert 0.5 * 2 ** k <= s <= 2 ** k


def test_gives_up_after_max_attempts_with_a_clear_error():
    client = FakeClient(dim=8, fail=[_err(429, "RESOURCE_EXHAUSTED")] * 10)
    emb, sleeps = _embedder(client, output_dimensionality=8, max_attempts=4)
    with pytest.raises(EmbeddingError, match="still failing after 4 attempts"):
        emb.embed(["a"])
    assert len(client.models.calls) == 4 and len(sleeps) == 3


def test_request_rejected_as_too_large_is_split():
    too_big = _err(400, "INVALID_ARGUMENT")
    client = FakeClient(dim=8, fail=[lambda contents: too_big if len(contents) > 2 else None] * 20)
    emb, sleeps = _embedder(client, output_dimensionality=8)
    texts = [f"t{i}" for i in range(8)]
    out = emb.embed(texts)
    assert out.shape == (8, 8) and not sleeps
    ok = [c["contents"] for c in client.models.calls if len(c["contents"]) <= 2]
    assert [t for part in ok for t in part] == texts  # every text embedded once, in order
    raw = np.asarray(_vector("t5", "RETRIEVAL_DOCUMENT", 8), dtype=np.float32)
    np.testing.assert_allclose(out[5], raw / np.linalg.norm(raw), rtol=1e-5)


def test_other_client_errors_are_not_retried():
    client = FakeClient(dim=8, fail=[_err(403, "PERMISSION_DENIED")])
    emb, sleeps = _embedder(client, output_dimensionality=8)
    with pytest.raises(EmbeddingError, match="rejected the request.*PERMISSION_DENIED"):
        emb.embed(["a"])
    assert len(client.models.calls) == 1 and not sleeps


def test_wrong_count_or_size_from_the_service_is_an_error():
    class Short(FakeModels):
        def embed_content(self, *, model, contents, config):
            resp = super().embed_content(model=model, contents=contents, config=config)
            return types.EmbedContentResponse(embeddings=resp.embeddings[:-1])

    client = FakeClient(dim=8)
    client.models = Short(dim=8)
    emb, _ = _embedder(client, output_dimensionality=8)
    with pytest.raises(EmbeddingError, match="returned 1 embeddings for 2 texts"):
        emb.embed(["a", "b"])
    emb2, _ = _embedder(FakeClient(dim=8), model="text-embedding-005")  # expects 768, gets 8
    with pytest.raises(EmbeddingError, match="returned 8-d vectors, expected 768"):
        emb2.embed(["a"])
