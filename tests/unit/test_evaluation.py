import json
import math

import pytest

from relayrag.evaluation.retrieval import evaluate_beir, mrr_at_k, ndcg_at_k, recall_at_k, score_run


def test_metrics_by_hand():
    rels = {"a": 1, "b": 1}
    assert ndcg_at_k(["a", "x", "b"], rels) == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert ndcg_at_k(["x"], rels) == 0.0
    assert recall_at_k(["b", "x"], rels, 100) == 0.5
    assert mrr_at_k(["x", "x", "a"], rels) == pytest.approx(1 / 3)
    assert score_run({}, {"q": rels}) == {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}


def test_metrics_match_ranx():
    import ranx  # in the dev extra: the cross-check must run, not skip
    qrels = {"q1": {"a": 1, "c": 1}, "q2": {"b": 1}}
    run = {"q1": ["c", "x", "a"], "q2": ["x", "y", "b"]}
    ours = score_run(run, qrels)
    r = ranx.Run({q: {d: 1.0 / (i + 1) for i, d in enumerate(ds)} for q, ds in run.items()})
    ref = ranx.evaluate(ranx.Qrels(qrels), r, ["ndcg@10", "recall@100", "mrr@10"])
    for k in ref:
        assert ours[k] == pytest.approx(ref[k], abs=1e-4)


@pytest.fixture
def tiny_beir(tmp_path):
    d = tmp_path / "tiny"
    (d / "qrels").mkdir(parents=True)
    docs = {"d1": ("Solar power", "Photovoltaic cells convert sunlight into electricity."),
            "d2": ("Honey bees", "Bees communicate flower locations with a waggle dance."),
            "d3": ("Rail", "The standard rail gauge is 1,435 millimetres."),
            "d4": ("東京", "東京タワーの高さは333メートルです。")}
    with (d / "corpus.jsonl").open("w") as fh:
        for i, (t, x) in docs.items():
            fh.write(json.dumps({"_id": i, "title": t, "text": x}) + "\n")
    qs = {"q1": "how do solar cells make electricity", "q2": "bee dance", "q3": "東京タワーの高さ"}
    with (d / "queries.jsonl").open("w") as fh:
        for i, t in qs.items():
            fh.write(json.dumps({"_id": i, "text": t}) + "\n")
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td4\t1\n")
    return d


def test_evaluate_beir_end_to_end(ctx, tiny_beir):
    rep = evaluate_beir(ctx, tiny_beir, "tiny")
    assert rep["queries"] == 3 and set(rep["arms"]) == {"dense", "bm25", "hybrid", "bandit"}
    assert rep["arms"]["bm25"]["ndcg@10"] == 1.0 and rep["arms"]["hybrid"]["recall@100"] == 1.0
    assert rep["pipeline"]["ndcg@10"] == 1.0 and rep["pipeline"]["routes"] == {"rag": 3}
    b = rep["arms"]["bandit"]
    assert set(b["contexts"]) == {"latin", "ja"} and b["contexts"]["ja"]["picks"] == {"bm25": 1}
    latin = b["contexts"]["latin"]
    assert latin["queries"] == 2 and latin["curve"][0]["queries"] == "1-2" and set(latin["curve"][0]) == {
        "queries", "bandit", "dense", "bm25", "hybrid"} and latin["regret"] >= -1e-9
    assert sum(sum(p.values()) for p in rep["pipeline"]["picks"].values()) == 3
    assert rep["pipeline"]["picks"]["ja"] == {"bm25": 1}  # the English dense arm is never offered for Japanese
    assert "pipeline_ms_per_query" in rep["timings"]
    again = evaluate_beir(ctx, tiny_beir, "tiny", pipeline=False)
    assert again["pipeline"] is None and "ingest_ms_per_chunk" not in again["timings"]  # nothing re-embedded


def test_bandit_replay_with_simulated_feedback(ctx, tiny_beir):
    """Verdicts go only to the queries drawn (the share), only where more than one arm is offered, and move
    the served arm's human posterior by the qrels' verdict on its first document."""
    from relayrag.evaluation import bandit_replay, load_qrels, load_queries
    evaluate_beir(ctx, tiny_beir, "tiny", pipeline=False)
    snap = ctx.snapshot("tiny")
    queries, qrels = load_queries(tiny_beir / "queries.jsonl"), load_qrels(tiny_beir / "qrels" / "test.tsv")
    qids = ["q1", "q2", "q3"] * 4
    none = bandit_replay(snap, snap.embedder, queries, qids, qrels, feedback=0.0)
    every = bandit_replay(snap, snap.embedder, queries, qids, qrels, feedback=1.0)
    assert none["verdicts"] == 0 and not any(k.endswith("/human") for k in none["params"])
    assert every["verdicts"] == 8  # the Japanese query has one offered arm: no verdict teaches there
    human = {k: v for k, v in every["params"].items() if k.endswith("/human")}
    assert human and all(k.startswith("latin/") for k in human)
    assert sum(a + b - 2.0 for a, b in human.values()) == 8
    rep = evaluate_beir(ctx, tiny_beir, "tiny", pipeline=False, feedback=(0.3,))
    assert rep["arms"]["bandit_feedback_30"]["verdicts"] >= 0 and "regret" in rep["arms"]["bandit_feedback_30"][
        "contexts"]["latin"]
