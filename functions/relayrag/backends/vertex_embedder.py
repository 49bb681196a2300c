"""Vertex AI text embeddings through google-genai (`vertexai=True`; extra `gcp`), selected by
RELAYRAG_EMBEDDER=vertex with RELAYRAG_VERTEX_EMBEDDING_MODEL (default text-multilingual-embedding-002,
which handles Japanese), RELAYRAG_GCP_PROJECT and RELAYRAG_GCP_LOCATION.

`VertexEmbedder.embed(texts, kind="document"|"query") -> float32 [n, dim]`, unit rows, like the embedded
MiniLM: kind "document" is sent as task type RETRIEVAL_DOCUMENT, "query" as RETRIEVAL_QUERY (the models embed
the two asymmetrically, so index and query sides must say which they are).

Batching within the documented API limits: at most 250 texts and 20,000 input tokens per request (each text
is auto-truncated at 2,048 tokens by the service); gemini-* embedding models take one text per request.
Token counts are estimated without a tokenizer (UTF-8 bytes / 3, which over-counts English and counts one
token per CJK character) against a budget of 15,000; a request the service still rejects as too large
(HTTP 400) is split in halves and retried. HTTP 429 and 5xx are retried with exponential backoff and jitter
(1 s doubling to 32 s, 8 attempts), then raised as EmbeddingError.

Rows are L2-normalised here (norm clamped at 1e-12) because vectors shortened with `output_dimensionality`
are not unit length. `dim` is the model's native size (768; gemini-embedding-001: 3072) or
`output_dimensionality`; for a model not in the table it is learnt from the first response (one probe call
if `dim` is read first). `model_id` = "vertex:<model>/<dim>" is what snapshot manifests record, so a
snapshot is only ever queried with the model and size that built it.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Sequence

import numpy as np

from relayrag.errors import ConfigError, RelayragError

try:  # the `gcp` extra; the embedded default never imports this module
    from google.genai import errors as genai_errors
    from google.genai import types as genai_types
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigError("RELAYRAG_EMBEDDER=vertex needs google-genai: pip install 'relayrag[gcp]'") from exc

__all__ = ["VertexEmbedder", "EmbeddingError", "NATIVE_DIMS", "MAX_TEXTS", "MAX_REQUEST_TOKENS"]

TASK_TYPES = {"document": "RETRIEVAL_DOCUMENT", "query": "RETRIEVAL_QUERY"}
NATIVE_DIMS = {
    "text-multilingual-embedding-002": 768,
    "text-embedding-005": 768,
    "text-embedding-004": 768,
    "gemini-embedding-001": 3072,
}
MAX_TEXTS = 250              # texts per request (Vertex AI text embeddings API)
MAX_REQUEST_TOKENS = 20_000  # input tokens per request (a 400 above it)
TOKEN_BUDGET = 15_000        # what batches are packed to, by the estimate below
MAX_TEXT_TOKENS = 2_048      # the service truncates each text here (auto_truncate)
RETRY_STATUS = {429, 500, 502, 503, 504}


class EmbeddingError(RelayragError):
    """The embedding service failed (after retries) or answered with something unusable."""


def estimate_tokens(text: str) -> int:
    """Upper-bound-ish token estimate without a tokenizer: UTF-8 bytes / 3, at least 1, at most 2,048."""
    return max(1, min(MAX_TEXT_TOKENS, len(text.encode("utf-8")) // 3 + 1))


def _normalise(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.maximum(norms, 1e-12)).astype(np.float32)


class VertexEmbedder:
    """Embedder over Vertex AI text-embedding models (see the module docstring for limits and retries)."""

    def __init__(self, model: str = "text-multilingual-embedding-002", *, project: str = "",
                 location: str = "us-central1", output_dimensionality: int | None = None, client: Any = None,
                 max_attempts: int = 8, backoff_s: float = 1.0, max_backoff_s: float = 32.0,
                 sleep: Callable[[float], None] = time.sleep):
        if not model:
            raise ConfigError("RELAYRAG_VERTEX_EMBEDDING_MODEL is empty; name a Vertex AI embedding model "
                              "(e.g. text-multilingual-embedding-002)")
        if output_dimensionality is not None and output_dimensionality < 1:
            raise ValueError(f"output_dimensionality must be >= 1; got {output_dimensionality}")
        self.model = model
        self.output_dimensionality = output_dimensionality
        self.max_texts = 1 if model.startswith("gemini-") else MAX_TEXTS
        self.max_attempts = max(1, max_attempts)
        self.backoff_s, self.max_backoff_s, self._sleep = backoff_s, max_backoff_s, sleep
        self._dim = output_dimensionality or NATIVE_DIMS.get(model)
        if client is None:
            from google import genai
            client = genai.Client(vertexai=True, project=project or None, location=location or None)
        self._client = client
        self.requests = 0  # API calls made (retries included)

    def __repr__(self) -> str:
        return f"VertexEmbedder(model={self.model!r}, dim={self._dim})"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"], kind="query")
        assert self._dim is not None
        return self._dim

    @property
    def model_id(self) -> str:
        return f"vertex:{self.model}/{self.dim}"

    # -- batching ----------------------------------------------------------------------------------
    def batches(self, texts: Sequence[str]) -> list[list[int]]:
        """Index lists, in order: each at most max_texts texts and TOKEN_BUDGET estimated tokens."""
        out: list[list[int]] = []
        cur: list[int] = []
        tokens = 0
        for i, t in enumerate(texts):
            n = estimate_tokens(t)
            if cur and (len(cur) >= self.max_texts or tokens + n > TOKEN_BUDGET):
                out.append(cur)
                cur, tokens = [], 0
            cur.append(i)
            tokens += n
        if cur:
            out.append(cur)
        return out

    # -- calls -----------------------------------------------------------------------------------
    def _call(self, texts: list[str], task_type: str) -> list[list[float]]:
        config = genai_types.EmbedContentConfig(task_type=task_type, auto_truncate=True,
                                                output_dimensionality=self.output_dimensionality)
        delay = self.backoff_s
        for attempt in range(1, self.max_attempts + 1):
            self.requests += 1
            try:
                resp = self._client.models.embed_content(model=self.model, contents=texts, config=config)
            except genai_errors.APIError as exc:
                if exc.code in RETRY_STATUS and attempt < self.max_attempts:
                    self._sleep(min(self.max_backoff_s, delay) * random.uniform(0.5, 1.0))
                    delay *= 2
                    continue
                if exc.code in RETRY_STATUS:
                    raise EmbeddingError(f"Vertex AI embeddings ({self.model}) still failing after "
                                         f"{self.max_attempts} attempts: {exc}") from exc
                raise
            vectors = [list(e.values or []) for e in (resp.embeddings or [])]
            if len(vectors) != len(texts):
                raise EmbeddingError(f"Vertex AI returned {len(vectors)} embeddings for {len(texts)} texts")
            return vectors
        raise AssertionError("unreachable")

    def _embed_batch(self, texts: list[str], task_type: str) -> list[list[float]]:
        try:
            return self._call(texts, task_type)
        except genai_errors.APIError as exc:
            if exc.code == 400 and len(texts) > 1:  # e.g. over the request token limit: split and retry
                half = len(texts) // 2
                return self._embed_batch(texts[:half], task_type) + self._embed_batch(texts[half:], task_type)
            raise EmbeddingError(f"Vertex AI embeddings ({self.model}) rejected the request: {exc}") from exc

    def embed(self, texts: Sequence[str], *, kind: str = "document") -> np.ndarray:
        """float32 [len(texts), dim], unit rows. kind: "document" (indexing) or "query" (searching).
        Raises EmbeddingError when the service fails after retries or answers inconsistently."""
        if kind not in TASK_TYPES:
            raise ValueError(f"kind must be one of {', '.join(TASK_TYPES)}; got {kind!r}")
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows: list[list[float]] = []
        for idx in self.batches(texts):
            rows.extend(self._embed_batch([texts[i] for i in idx], TASK_TYPES[kind]))
        widths = {len(r) for r in rows}
        if len(widths) != 1 or 0 in widths:
            raise EmbeddingError(f"Vertex AI returned vectors of sizes {sorted(widths)} from {self.model}")
        width = widths.pop()
        if self._dim is None:
            self._dim = width
        elif width != self._dim:
            raise EmbeddingError(f"{self.model} returned {width}-d vectors, expected {self._dim}")
        return _normalise(np.asarray(rows, dtype=np.float32))


def build_vertex_embedder(settings: Any, client: Any = None) -> VertexEmbedder:
    """The VertexEmbedder the settings describe (model, project, location)."""
    return VertexEmbedder(settings.vertex_embedding_model, project=settings.gcp_project,
                          location=settings.gcp_location, client=client)
