import numpy as np
import pytest

from relayrag.retrieval.bandit import Arm, ThompsonBandit
from relayrag.retrieval.bm25 import BM25Index, TermStats
from relayrag.retrieval.dense import DenseIndex
from relayrag.retrieval.fusion import rrf_fuse, top_k
from relayrag.retrieval.tokenize import tokenize


def test_tokenize_english_stems_and_drops_stopwords():
    assert tokenize("The cats are running") == ["cat", "run"]


def test_tokenize_japanese_bigrams():
    toks = tokenize("東京タワー")
    assert toks == ["東京", "京タ", "タワ", "ワー"]


def test_tokenize_mixed_and_fullwidth():
    toks = tokenize("ＡＢＣ社の売上")  # NFKC folds full-width Latin
    assert "abc" in toks and "売上" in toks


def test_rrf_matches_formula():
    fused = dict(rrf_fuse([["a", "b", "c"], ["b", "a"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)


def test_rrf_weights_and_order():
    fused = rrf_fuse([["a"], ["b"]], weights=[1.0, 0.5])
    assert [d for d, _ in fused] == ["a", "b"]
    with pytest.raises(ValueError):
        rrf_fuse([["a"]], weights=[1, 2])


def test_top_k_sorted_and_bounded():
    s = np.array([0.1, 0.9, 0.5, 0.7], dtype=np.float32)
    assert top_k(s, 2).tolist() == [1, 3]
    assert top_k(s, 10).tolist() == [1, 3, 2, 0]
    assert top_k(np.zeros(0), 3).tolist() == []


def test_bm25_ranks_matching_doc_first_and_roundtrips(tmp_path):
    idx_stats = TermStats.from_texts(["solar panels make electricity", "bees dance to share flower locations",
                                      "東京タワーの高さは333メートル"])
    idx = BM25Index([(idx_stats, None)])
    assert int(np.argmax(idx.scores("how do bees communicate flowers"))) == 1
    assert int(np.argmax(idx.scores("東京タワーの高さ"))) == 2
    stats = TermStats.from_bytes(idx_stats.to_bytes())  # what a segment stores and reads back
    again = BM25Index([(stats, None)])
    np.testing.assert_allclose(again.scores("solar electricity"), idx.scores("solar electricity"))
    assert idx.scores("zzzz unknownword").max() == 0


def test_bm25_empty_index(tmp_path):
    idx = BM25Index.build([])
    assert idx.scores("x").shape == (0,)
    stats = TermStats.from_bytes(TermStats.from_texts([]).to_bytes())
    assert stats.n_rows == 0 and BM25Index([(stats, None)]).scores("x").shape == (0,)


def test_dense_cosine():
    v = np.eye(3, dtype=np.float32)
    idx = DenseIndex(v)
    assert idx.scores(np.array([0, 1, 0])).tolist() == [0, 1, 0]
    assert idx.scores_many(v).shape == (3, 3)


def test_thompson_prefers_the_better_arm():
    rng = np.random.default_rng(0)
    bandit = ThompsonBandit(rng=rng)
    params = {"dense": (2, 40), "bm25": (40, 2), "hybrid": (2, 40)}
    picks = [bandit.choose(params)[0] for _ in range(200)]
    assert picks.count("bm25") > 190


def test_thompson_learns_from_rewards():
    rng = np.random.default_rng(1)
    bandit = ThompsonBandit(rng=rng)
    truth = {"dense": 0.3, "bm25": 0.5, "hybrid": 0.8}
    params: dict = {}
    picks = []
    for _ in range(400):
        arm, _ = bandit.choose(params)
        r = float(rng.random() < truth[arm])
        a, b = params.get(arm, (1.0, 1.0))
        params[arm] = (a + r, b + 1 - r)
        picks.append(arm)
    assert picks[-100:].count("hybrid") > 70


def test_arm_from_str_lists_valid():
    assert Arm.from_str("bm25") is Arm.bm25
    with pytest.raises(ValueError, match="valid: dense, bm25, hybrid"):
        Arm.from_str("sparse")
