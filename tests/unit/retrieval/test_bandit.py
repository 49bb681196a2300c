"""The contextual bandit and its reward: synthetic rankings of known quality, no index needed."""

from __future__ import annotations

import numpy as np
import pytest

from relayrag.retrieval.bandit import (PRIORS, ThompsonBandit, context_params, fusion_weights, offered_arms,
                                       query_context, readable, update_keys)
from relayrag.retrieval.reward import arm_rewards, dcg, judge


def _synthetic(rng, n_docs=50):
    """One query: doc 0 is relevant; the good arm puts it in its top 3, the noise arm ranks at random.
    Soft labels as a judge of AUC < 1 gives: relevant ~0.8, others ~0.15, with noise."""
    others = list(rng.permutation(np.arange(1, n_docs)))
    pos = int(rng.integers(0, 3))
    good = others[:pos] + [0] + others[pos:]
    noise = list(rng.permutation(np.arange(n_docs)))
    p = {d: float(np.clip(rng.normal(0.15, 0.1), 0, 1)) for d in range(n_docs)}
    p[0] = float(np.clip(rng.normal(0.8, 0.1), 0, 1))
    return {"bm25": good, "dense": noise}, p


def test_bandit_with_one_good_and_one_noise_arm_converges_within_bounded_pulls():
    """As retrieve + grade run it: both lists judged each query, wins and quality recorded, Thompson picks."""
    rng = np.random.default_rng(7)
    bandit = ThompsonBandit(rng=rng)
    stored: dict = {}
    picks = []
    for _ in range(150):
        lists, p = _synthetic(rng)
        arm, _ = bandit.choose(context_params(stored, "latin", ["dense", "bm25"]), ["dense", "bm25"])
        picks.append(arm)
        for k, r in update_keys("latin", arm_rewards(lists, p)).items():
            x, y = stored.get(k, (1.0, 1.0))
            stored[k] = (x + r, y + 1 - r)
    assert picks.index("bm25") < 5 and picks[20:].count("dense") == 0   # settled within 20 pulls
    assert picks.count("dense") <= 10
    quality = context_params(stored, "latin", ["dense", "bm25"], quality=True)
    assert fusion_weights(quality) == {"dense": 0.0, "bm25": 1.0}         # hybrid would not fuse the noise


def test_full_information_rewards_rank_the_arms_by_quality():
    rng = np.random.default_rng(3)
    totals = {"bm25": 0.0, "dense": 0.0}
    for _ in range(40):
        lists, p = _synthetic(rng)
        for a, r in arm_rewards({a: lst for a, lst in lists.items()}, p).items():
            totals[a] += r
    assert totals["bm25"] > 1.4 * totals["dense"]  # the noise list keeps a floor: its chunks get P ~0.15 each


def test_reward_for_relevant_at_rank_1_exceeds_rank_50():
    others = [f"d{i}" for i in range(60)]
    p = {"r": 0.9, **{d: 0.05 for d in others}}
    first = ["r"] + others[:59]
    fiftieth = others[:49] + ["r"] + others[49:59]
    assert arm_rewards({"a": first}, p)["a"] > 0.9  # one list: the relevant chunk on top is (nearly) full marks
    assert arm_rewards({"a": fiftieth}, p) == {}    # and none in its top 10 teaches nothing, as with several lists
    both = arm_rewards({"first": first, "fiftieth": fiftieth}, p)                          # compared
    assert both["first"] == 1.0 and both["fiftieth"] < 0.5
    # DCG discount as nDCG's: rank 1 counts 1, rank 3 counts 1/log2(4)
    assert dcg(["r"], p) == pytest.approx(0.9) and dcg(["x", "y", "r"], p) == pytest.approx(0.45)


def test_update_keys_record_wins_and_quality():
    assert update_keys("ja", {"bm25": 1.0, "hybrid": 0.995, "dense": 0.4}) == {
        "ja/bm25": 1.0, "ja/bm25/dcg": 1.0, "ja/hybrid": 1.0, "ja/hybrid/dcg": 0.995,  # a tie within 1 % wins
        "ja/dense": 0.0, "ja/dense/dcg": 0.4}
    assert update_keys("ja", {"bm25": 0.7}) == {"ja/bm25/dcg": 0.7}  # alone: nothing to win against


def test_no_reward_when_nothing_is_judged_relevant():
    p = {"a": 0.1, "b": 0.2}
    assert arm_rewards({"x": ["a", "b"], "y": ["b", "a"]}, p) == {}


def test_a_lone_list_without_anything_relevant_gets_no_reward():
    """A Japanese question on English MiniLM is offered bm25 alone. Before, a lone list got min(1, DCG@10) even
    when nothing in it was relevant: six "not found" runs each recorded reward 0.000 against ja/bm25's quality,
    blaming the arm for questions the collection cannot answer, while several lists in the same situation gave
    no reward."""
    assert arm_rewards({"bm25": ["a", "b", "c"]}, {"a": 0.2, "b": 0.1, "c": 0.05}) == {}
    assert arm_rewards({"bm25": ["a", "b"]}, {"a": 0.9, "b": 0.1})["bm25"] == pytest.approx(0.9 + 0.1 / np.log2(3))


def test_a_chunk_grade_kept_opens_the_reward_but_the_judge_still_ranks_the_arms():
    """examples/pdfs: the judge (fitted on SciFact) gave the cited table row P = 0.37 where grade kept it at
    0.999, so the grounded answer taught nothing. Grade's verdict now opens the gate; the arms are compared by
    the judge's soft labels, the same for every arm."""
    from relayrag.retrieval.reward import reward_basis
    p = {"row": 0.37, "x": 0.06, "y": 0.01}
    lists = {"dense": ["y", "x", "row"], "bm25": ["row", "x", "y"]}
    assert arm_rewards(lists, p) == {} and reward_basis(lists, p) is None  # the judge alone: nothing >= 0.5
    r = arm_rewards(lists, p, evidence={"row"})
    assert r["bm25"] == 1.0 and 0 < r["dense"] < 0.6
    assert reward_basis(lists, p, evidence={"row"}) == "grade"
    assert reward_basis(lists, {**p, "x": 0.6}, evidence={"row"}) == "judge"  # the judge decides where it can
    assert arm_rewards(lists, p, evidence={"elsewhere"}) == {}  # kept, but in no arm's top 10: nothing to compare
    assert arm_rewards({"bm25": lists["bm25"]}, p, evidence={"row"})["bm25"] == pytest.approx(dcg(lists["bm25"], p))


def test_judge_is_monotone_in_its_evidence():
    f = {1: (0.2, 0.1), 2: (0.6, 0.1), 3: (0.6, 0.8)}
    p = judge(f, readable=True)
    assert p[1] < p[2] < p[3]
    q = judge(f, readable=False)  # cosine ignored where the embedder cannot read the query
    assert q[1] == q[2] < q[3]


def test_query_context_by_script():
    assert query_context("What causes scurvy?") == "latin"
    assert query_context("富士山の標高は何メートルですか？") == "ja"
    assert query_context("东京塔有多高") == "zh"
    assert query_context("서울의 인구는?") == "ko"
    assert query_context("Что такое BRCA1?") == "other"
    assert query_context("BRCA1 とは") == "ja"      # a little kana in Latin text
    assert query_context("12345 !!") == "other"


def test_english_minilm_reads_english_not_japanese():
    from relayrag.backends.embedder import get_embedder
    emb = get_embedder("minilm-int8")
    assert readable(emb, "Does vitamin C prevent scurvy?")
    assert not readable(emb, "富士山の標高は何メートルですか？")
    assert not readable(emb, "東京")                     # short: the script's reference text decides
    assert offered_arms(False) == ["bm25"]


class _Multilingual:
    """An embedder without an unknown-piece measure (e.g. Vertex multilingual) reads everything."""


def test_embedder_without_unknown_rate_is_readable():
    assert readable(_Multilingual(), "富士山の標高は何メートルですか？")


def test_priors_start_on_hybrid_and_fusion_weights_gate_a_bad_list():
    params = context_params({}, "ja", ["dense", "bm25", "hybrid"])
    assert params == {a: PRIORS[a] for a in ("dense", "bm25", "hybrid")}
    assert fusion_weights(params) == {"dense": 1.0, "bm25": 1.0}            # no evidence: plain RRF
    close = {"dense": (1 + 45.0, 1 + 5.0), "bm25": (1 + 48.0, 1 + 2.0)}
    w = fusion_weights(close)
    assert w["bm25"] == 1.0 and 0.9 < w["dense"] < 1.0
    bad = {"dense": (1 + 10.0, 1 + 40.0), "bm25": (1 + 48.0, 1 + 2.0)}
    assert fusion_weights(bad) == {"dense": 0.0, "bm25": 1.0}               # below GATE: left out
    early = {"dense": (1 + 0.5, 1 + 2.5), "bm25": (1 + 3.0, 1 + 0.0)}
    assert fusion_weights(early)["dense"] > 0                               # too little evidence to drop
