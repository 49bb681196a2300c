"""Sentence-level evidence shared by rerank, grade, generate and the hallucination check (no LLM).

Two signals per (query, sentence): semantic = cosine of MiniLM embeddings; lexical = share of the query's
BM25 tokens (stemmed words, CJK bigrams) found in the sentence. Lexical evidence keeps the no-LLM path
working where the English embedder is weak (Japanese: a quarter of MiniLM's word pieces are [UNK]).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from relayrag.retrieval.tokenize import tokenize
from relayrag.text import sentence_spans


def lexical_coverage(query_tokens: list[str], text: str) -> float:
    """Share of distinct query tokens present in `text`, in [0, 1]; 0 if the query has no tokens."""
    q = set(query_tokens)
    if not q:
        return 0.0
    return len(q & set(tokenize(text))) / len(q)


def weighted_coverage(query_weights: dict[str, float], text: str) -> float:
    """IDF-weighted share of the query's tokens present in `text`, in [0, 1]. query_weights: token → idf.
    A rare term ("Texas" in a table of states) counts for more than the words every row shares."""
    total = sum(query_weights.values())
    if total <= 0:
        return 0.0
    present = set(tokenize(text))
    return sum(w for t, w in query_weights.items() if t in present) / total


IDF_BACKGROUND = 20  # background chunks of the smoothed idf (see query_idf)


def query_idf(query_tokens: list[str], bm25_index) -> dict[str, float]:
    """Smoothed BM25-style idf per distinct query token over the snapshot's chunks, for the answerability
    weights: ln(1 + (N' - df' + 0.5)/(df' + 0.5)) with N' = N + IDF_BACKGROUND and df' = max(df, 1) + 1, as
    if the collection also held IDF_BACKGROUND background chunks of which one contains the term.

    The background keeps the weights meaningful in a tiny collection: in a one-document collection the
    document's topic words ("refund" in a refund policy) occur in every chunk, and the raw idf (0.1 there
    against 1.2 for a word of one chunk, at N = 4) let one rare or absent word decide alone, so a question
    a larger collection answered from the same document was refused. With N = 1 every term weighs the
    same. At N in the hundreds the background barely moves the weights. df >= 1: a word no chunk contains
    weighs as much as the rarest word that occurs, not more (else a generic question word absent from the
    corpus would outweigh all the words an answer does contain)."""
    n = max(1, bm25_index.n_total) + IDF_BACKGROUND
    out = {}
    for t in dict.fromkeys(query_tokens):
        df = bm25_index.df(t) if bm25_index.n_docs else 0
        df = max(df, 1) + 1
        out[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return out


def absent_tokens(query_tokens: list[str], bm25_index) -> set[str]:
    """The query tokens no chunk of the index contains."""
    if not bm25_index.n_docs:
        return set(query_tokens)
    return {t for t in dict.fromkeys(query_tokens) if not bm25_index.df(t)}


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def relevance_probability(semantic: float, lexical: float) -> float:
    """P(relevant) from the best sentence's cosine and the chunk's lexical coverage, in [0, 1].

    A logistic per signal, combined by noisy-OR. Cosine 0.45 and coverage 0.6 each give p = 0.5; the
    midpoints were set on the bundled PDFs and SciFact (MiniLM cosines of a matching sentence mostly
    exceed 0.5, unrelated ones sit below 0.3)."""
    p_sem = sigmoid(14.0 * (semantic - 0.45))
    p_lex = sigmoid(10.0 * (lexical - 0.6))
    return 1.0 - (1.0 - p_sem) * (1.0 - p_lex)


def span_vectors(embedder, snap, items: Sequence[tuple[int | None, str, Sequence[tuple[int, int]]]]) -> list[np.ndarray]:
    """float32 [len(spans), dim] per (snapshot row or None, chunk text, spans): the snapshot's stored sentence
    vector where it holds that exact span of that row (relayrag.retrieval.sentences), the others embedded now in
    one batch (kind "document"). Same vectors either way; only the time differs."""
    stored = getattr(snap, "sentences", None)
    out: list[np.ndarray] = []
    todo: list[tuple[int, int, str]] = []  # (item, position, text)
    for n, (row, text, spans) in enumerate(items):
        found = stored.lookup(row, spans) if stored is not None and row is not None else [None] * len(spans)
        vecs = np.zeros((len(spans), int(embedder.dim)), np.float32)
        for k, ((s, e), v) in enumerate(zip(spans, found)):
            if v is None:
                todo.append((n, k, text[s:e]))
            else:
                vecs[k] = v
        out.append(vecs)
    if todo:
        fresh = embedder.embed([t for _, _, t in todo], kind="document")
        for (n, k, _), v in zip(todo, fresh):
            out[n][k] = v
    return out


def embed_sentences(embedder, texts: list[str], max_sentences: int = 24, *, snap=None,
                    rows: Sequence[int | None] | None = None) -> tuple[list[list[tuple[int, int]]], list[np.ndarray]]:
    """Split each text into sentences (sentence_spans) and get their vectors: looked up in `snap`'s stored
    sentence vectors for the texts' snapshot `rows`, the rest embedded in one batch.
    Returns (spans per text, float32 [n_sentences_i, dim] per text)."""
    spans = [sentence_spans(t, max_sentences) for t in texts]
    keys: Sequence[int | None] = rows if rows is not None else [None] * len(texts)
    return spans, span_vectors(embedder, snap, list(zip(keys, texts, spans)))
