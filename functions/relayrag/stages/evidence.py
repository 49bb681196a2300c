"""Sentence-level evidence shared by rerank, grade, generate and the hallucination check (no LLM).

Two signals per (query, sentence): semantic = cosine of MiniLM embeddings; lexical = share of the query's
BM25 tokens (stemmed words, CJK bigrams) found in the sentence. Lexical evidence keeps the no-LLM path
working where the English embedder is weak (Japanese: a quarter of MiniLM's word pieces are [UNK]).
"""

from __future__ import annotations

import math

import numpy as np

from relayrag.retrieval.tokenize import tokenize
from relayrag.text import split_sentences


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


def query_idf(query_tokens: list[str], bm25_index) -> dict[str, float]:
    """BM25-style idf per distinct query token over the snapshot's chunks: ln(1 + (N - df + 0.5)/(df + 0.5)),
    with df >= 1: a word no chunk contains weighs as much as the rarest word that occurs, not more (else a
    generic question word absent from the corpus would outweigh all the words an answer does contain)."""
    n = max(1, bm25_index.n_total)
    out = {}
    for t in dict.fromkeys(query_tokens):
        df = bm25_index.df(t) if bm25_index.n_docs else 0
        df = max(df, 1)
        out[t] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return out


def absent_tokens(query_tokens: list[str], bm25_index) -> set[str]:
    """The query tokens no chunk of the index contains."""
    if not bm25_index.n_docs:
        return set(query_tokens)
    return {t for t in dict.fromkeys(query_tokens) if not bm25_index.df(t)}


def sentence_spans(text: str, max_sentences: int = 40) -> list[tuple[int, int]]:
    spans = split_sentences(text)
    return spans[:max_sentences] if spans else [(0, len(text))]


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


def embed_sentences(embedder, texts: list[str], max_sentences: int = 24
                    ) -> tuple[list[list[tuple[int, int]]], list[np.ndarray]]:
    """Split each text into sentences and embed them in one batch.
    Returns (spans per text, float32 [n_sentences_i, dim] per text)."""
    spans = [sentence_spans(t, max_sentences) for t in texts]
    flat = [t[s:e] for t, sp in zip(texts, spans) for s, e in sp]
    vecs = embedder.embed(flat, kind="document") if flat else np.zeros((0, embedder.dim), np.float32)
    out, i = [], 0
    for sp in spans:
        out.append(vecs[i:i + len(sp)])
        i += len(sp)
    return spans, out
