"""Calibrate and measure the bandit's no-LLM reward judge (relayrag.retrieval.reward) against qrels.

For every query of a BEIR dev set, the judged chunks are the top 10 of each arm (dense, BM25 and unweighted
hybrid, also where the dense arm is not offered, so a judge that cannot tell the English embedder's noise on
Japanese from BM25's hits shows here). Label = the chunk's document is relevant in the qrels. Reports
the ROC AUC of the shipped coefficients (reward.JUDGE) and of a logistic regression fitted two-fold by query
(fit on half the queries, AUC on the other half), and the coefficients fitted on all queries, per judge kind
("readable": cosine + IDF-weighted coverage; "lexical": coverage only, for queries the embedder cannot read).
The old grade judge (evidence.relevance_probability on the chunk cosine and plain coverage) is shown for
comparison. Needs the collection ingested (relayrag ingest DATASET/corpus.jsonl -c COLLECTION).

    python benchmarks/bench_judge.py ../shared/bench/scifact -c scifact
    python benchmarks/bench_judge.py ../shared/bench/ja-qa -c ja
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC AUC by the rank-sum (Mann-Whitney U) formula, ties counted half."""
    from scipy.stats import rankdata
    pos = labels.astype(bool)
    n1, n0 = int(pos.sum()), int((~pos).sum())
    if n1 == 0 or n0 == 0:
        return float("nan")
    r = rankdata(scores)
    return float((r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-3, iters: int = 50) -> np.ndarray:
    """Newton-Raphson (IRLS) for logistic regression with an intercept; returns (b0, b1, ...)."""
    X = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(X.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-X @ w))
        g = X.T @ (p - y) + l2 * w
        h = (X * (p * (1 - p))[:, None]).T @ X + l2 * np.eye(len(w))
        step = np.linalg.solve(h, g)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def collect(ctx, dataset: Path, collection: str, split: str = "test"):
    from relayrag.evaluation.retrieval import load_qrels, load_queries
    from relayrag.retrieval.bandit import query_context, readable
    from relayrag.retrieval.reward import DEPTH, judge_features
    from relayrag.stages.evidence import lexical_coverage
    from relayrag.retrieval.tokenize import tokenize
    from relayrag.ingest.snapshot import index_text
    from relayrag.stages.retrieve import arm_rankings

    snap = ctx.snapshot(collection)
    qrels = load_qrels(dataset / "qrels" / f"{split}.tsv")
    queries = load_queries(dataset / "queries.jsonl")
    rows = []  # (qi, readable, cos, coverage, plain coverage, label)
    for qi, q in enumerate(x for x in qrels if x in queries):
        text = queries[q]
        can = readable(ctx.embedder, text, query_context(text))
        arms = ["dense", "bm25", "hybrid"]
        lists = arm_rankings(snap, ctx.embedder, [{"text": text, "kind": "original", "weight": 1.0}], arms)
        cand = list(dict.fromkeys(r for a in arms for r, _ in lists[a][:DEPTH]))
        qvec = ctx.embedder.embed([text], kind="query")[0]  # the cosine is recorded even where unused
        feats = judge_features(text, qvec, cand, snap)
        qtok = tokenize(text)
        for r in cand:
            cos, cov = feats[r]
            plain = lexical_coverage(qtok, index_text(snap.chunks[r]))
            rows.append((qi, can, cos, cov, plain, int(qrels[q].get(snap.chunks[r]["doc"], 0) > 0)))
    return np.array(rows, dtype=np.float64)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path)
    ap.add_argument("-c", "--collection", required=True)
    ap.add_argument("--json", type=Path, help="also write the report here")
    a = ap.parse_args()
    from relayrag.context import default_context
    from relayrag.retrieval.reward import JUDGE
    from relayrag.stages.evidence import relevance_probability

    data = collect(default_context(), a.data, a.collection)
    qi, can, cos, cov, plain, y = data.T
    report: dict = {"dataset": a.data.name, "judged_chunks": len(y), "relevant": int(y.sum()),
                    "queries": int(qi.max() + 1), "readable_share": round(float(can.mean()), 3)}
    old = np.array([relevance_probability(c, p) for c, p in zip(cos, plain)])
    report["auc_old_grade_judge"] = round(auc(old, y), 4)
    for kind, mask, cols in (("readable", can > 0, [cos, cov]), ("lexical", np.ones_like(can, bool), [cov])):
        if mask.sum() == 0 or y[mask].sum() == 0:
            continue
        x = np.stack([c[mask] for c in cols], axis=1)
        yy, qq = y[mask], qi[mask]
        coef = np.array(JUDGE[kind])
        shipped = 1 / (1 + np.exp(-(coef[0] + x @ coef[1:])))
        folds = (qq % 2).astype(int)
        cross = np.zeros(len(yy))
        for f in (0, 1):
            w = fit_logistic(x[folds != f], yy[folds != f])
            cross[folds == f] = 1 / (1 + np.exp(-(w[0] + x[folds == f] @ w[1:])))
        w_all = fit_logistic(x, yy)
        report[kind] = {"n": int(mask.sum()), "auc_shipped": round(auc(shipped, yy), 4),
                        "auc_two_fold_fit": round(auc(cross, yy), 4),
                        "auc_cosine_only": round(auc(x[:, 0], yy), 4) if kind == "readable" else None,
                        "auc_coverage_only": round(auc(x[:, -1], yy), 4),
                        "fit_all": [round(float(v), 3) for v in w_all],
                        "mean_p_shipped_relevant": round(float(shipped[yy > 0].mean()), 3),
                        "mean_p_shipped_other": round(float(shipped[yy == 0].mean()), 3)}
    print(json.dumps(report, indent=1))
    if a.json:
        a.json.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
