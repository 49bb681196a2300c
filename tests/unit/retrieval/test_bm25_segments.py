"""BM25 across segments equals bm25s over one merged index of the same live rows (exact collection-wide IDF)."""

from __future__ import annotations

import json
from pathlib import Path

import bm25s
import numpy as np
import pytest

from relayrag.retrieval.bm25 import BM25Index, TermStats
from relayrag.retrieval.tokenize import tokenize

CORPUS = Path("/work/shared/bench/scifact/corpus.jsonl")
QUERIES = ["cell protein expression in cancer", "mortality mortality risk of smoking", "zzzunknown blood pressure",
           "microstructural development of white matter", "vitamin D deficiency", "東京タワーの高さ"]


@pytest.fixture(scope="module")
def texts() -> list[str]:
    if CORPUS.exists():
        with CORPUS.open(encoding="utf-8") as fh:
            return [(d := json.loads(line))["title"] + "\n" + d["text"] for line, _ in zip(fh, range(400))]
    # without the shared corpus: a generated one with a Zipf-like vocabulary (still 400 varied documents)
    rng = np.random.default_rng(0)
    words = [f"term{i}" for i in range(2000)] + ["cell", "protein", "cancer", "mortality", "blood", "vitamin"]
    p = 1 / np.arange(1, len(words) + 1)
    return [" ".join(rng.choice(words, size=int(rng.integers(20, 200)), p=p / p.sum())) for _ in range(400)]


def reference(tokens: list[list[str]], query: str) -> np.ndarray:
    """bm25s (lucene, k1 1.5, b 0.75) over one index of `tokens`: the scores a merged index gives."""
    model = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    model.index(tokens, show_progress=False)
    q = [t for t in tokenize(query) if t in model.vocab_dict]
    return np.asarray(model.get_scores(q), dtype=np.float32) if q else np.zeros(len(tokens), np.float32)


def test_scores_across_segments_equal_one_merged_bm25s_index(texts):
    toks = [tokenize(t) for t in texts]
    parts = [TermStats.from_tokens(toks[:150]), TermStats.from_tokens(toks[150:151]), TermStats.from_tokens(toks[151:])]
    parts[1] = TermStats.from_bytes(parts[1].to_bytes())  # one of them read back from its stored form
    index = BM25Index([(p, None) for p in parts])
    assert index.n_docs == len(texts)
    for q in QUERIES:
        ref, got = reference(toks, q), index.scores(q)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
        top = np.argsort(-ref, kind="stable")[:10]
        if ref[top[0]] > 0:  # the same ranking (ties aside)
            assert [round(float(got[i]), 4) for i in top] == [round(float(ref[i]), 4) for i in top]


def test_tombstoned_rows_count_nowhere(texts):
    """Deleted rows are neither scored nor counted in N, df or avgdl: the scores equal bm25s over the live rows."""
    toks = [tokenize(t) for t in texts]
    a, b = TermStats.from_tokens(toks[:200]), TermStats.from_tokens(toks[200:])
    live_a = np.setdiff1d(np.arange(200), np.arange(10, 90))
    live_b = np.setdiff1d(np.arange(200), [0, 5, 199])
    index = BM25Index([(a, live_a), (b, live_b)])
    rest = [toks[i] for i in live_a] + [toks[200 + i] for i in live_b]
    assert index.n_docs == len(rest)
    for q in QUERIES:
        np.testing.assert_allclose(index.scores(q), reference(rest, q), rtol=1e-5, atol=1e-5)
    # a merge (select + concat, no re-tokenizing) scores the same as the segments it replaces
    merged = BM25Index([(TermStats.concat([a.select(live_a), b.select(live_b)]), None)])
    for q in QUERIES:
        np.testing.assert_allclose(merged.scores(q), index.scores(q), rtol=1e-6, atol=1e-6)
    t = tokenize("cell")[0]
    assert merged.df(t) == index.df(t) == sum(t in set(r) for r in rest)


def test_a_deleted_only_occurrence_is_unknown():
    stats = TermStats.from_texts(["the capybara is the largest rodent", "bees dance"])
    index = BM25Index([(stats, np.array([1]))])
    assert index.n_docs == 1 and index.scores("capybara rodent").tolist() == [0.0]
    assert index.df(tokenize("capybara")[0]) == 0
