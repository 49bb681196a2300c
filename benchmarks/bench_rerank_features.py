"""Rerank variants on a BEIR set, offline: features are computed once per query over the hybrid arm's top 100
chunks (sentence vectors looked up in the snapshot), then each variant re-orders them and is scored with the
qrels — on all queries and on two halves (odd / even position), so a variant is kept only if it wins on both.
Only equal-weight combinations (Σ of z-scores over the candidates) and rank aggregations are compared: no
weight is fitted. Variant "current" is what stages/rerank.py does.

Usage: RELAYRAG_HOME=... python benchmarks/bench_rerank_features.py --data ../shared/bench/scifact -c scifact
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def zs(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return (v - v.mean()) / (v.std() + 1e-9)


def features(snap, embedder, question: str) -> dict:
    from relayrag.backends.embedder import query_vector
    from relayrag.ingest.snapshot import index_text
    from relayrag.retrieval.bandit import readable
    from relayrag.retrieval.reward import coverage, query_idf
    from relayrag.stages.evidence import embed_sentences
    from relayrag.stages.retrieve import arm_rankings
    qv = query_vector(embedder, question)
    can_read = readable(embedder, question)
    hybrid = arm_rankings(snap, embedder, [{"text": question, "kind": "original", "weight": 1.0}], ["hybrid"],
                          dense_readable=can_read)["hybrid"][:100]
    rows = [r for r, _ in hybrid]
    bm_all = snap.bm25.scores(question)
    texts = [snap.chunks[r]["text"] for r in rows]
    _, svecs = embed_sentences(embedder, texts, snap=snap, rows=rows)
    sims = [np.sort(v @ qv)[::-1] if len(v) else np.zeros(1) for v in svecs]
    idf = query_idf(question, snap.bm25)
    return {
        "rows": rows, "readable": can_read,
        "cos": snap.dense.rows(rows) @ qv if rows else np.zeros(0),
        "bm25": bm_all[rows] if len(bm_all) else np.zeros(len(rows)),
        "s1": np.array([s[0] for s in sims]),
        "s2": np.array([s[:2].mean() for s in sims]),
        "idfcov": np.array([coverage(idf, index_text(snap.chunks[r])) for r in rows]),
        "titlecov": np.array([coverage(idf, snap.chunks[r].get("title") or "") for r in rows]),
    }


def order(f: dict, head_k: int, keys: tuple[str, ...], pre: tuple[str, ...] = ("cos", "bm25")) -> list[int]:
    """Indices into f["rows"]: prefilter by Σz(pre) over all, then the head re-ordered by Σz(keys)."""
    n = len(f["rows"])
    if n < 2:
        return list(range(n))
    if not f["readable"]:
        pre = tuple(k for k in pre if k != "cos") or ("bm25",)
        keys = tuple(k for k in keys if k not in ("cos", "s1", "s2")) or ("bm25",)
    pidx = np.argsort(-sum(zs(f[k]) for k in pre), kind="stable")
    head, tail = pidx[:head_k], pidx[head_k:]
    hs = sum(zs(f[k][head]) for k in keys)
    return [int(head[i]) for i in np.argsort(-hs, kind="stable")] + [int(i) for i in tail]


def doc_rank(snap, f: dict, idx: list[int], agg: str = "max") -> list[str]:
    if agg == "max":
        seen: dict[str, None] = {}
        for i in idx:
            seen.setdefault(snap.chunks[f["rows"][i]]["doc"], None)
        return list(seen)
    score: dict[str, float] = {}
    for rank, i in enumerate(idx, start=1):  # "rrf": Σ 1/(60 + rank) over a document's chunks
        d = snap.chunks[f["rows"][i]]["doc"]
        score[d] = score.get(d, 0.0) + 1.0 / (60 + rank)
    return sorted(score, key=lambda d: -score[d])


VARIANTS = {
    "current (head 30: s1+cos+bm25)": dict(head_k=30, keys=("s1", "cos", "bm25")),
    "head 100": dict(head_k=100, keys=("s1", "cos", "bm25")),
    "sentence window (top-2 mean)": dict(head_k=30, keys=("s2", "cos", "bm25")),
    "+ idf coverage": dict(head_k=30, keys=("s1", "cos", "bm25", "idfcov")),
    "+ title coverage": dict(head_k=30, keys=("s1", "cos", "bm25", "titlecov")),
    "s1+s2+cos+bm25": dict(head_k=30, keys=("s1", "s2", "cos", "bm25")),
    "doc agg rrf": dict(head_k=30, keys=("s1", "cos", "bm25"), agg="rrf"),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("-c", "--collection", required=True)
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    a = ap.parse_args()
    from relayrag.context import default_context
    from relayrag.evaluation import load_qrels, load_queries, ndcg_at_k, score_run
    ctx = default_context()
    snap = ctx.snapshot(a.collection)
    emb = snap.embedder or ctx.embedder
    qrels = load_qrels(a.data / "qrels" / f"{a.split}.tsv")
    queries = load_queries(a.data / "queries.jsonl")
    qids = [q for q in qrels if q in queries][: a.limit or None]
    t = time.perf_counter()
    feats = {q: features(snap, emb, queries[q]) for q in qids}
    feat_s = time.perf_counter() - t
    halves = {"odd": qids[0::2], "even": qids[1::2]}
    report: dict = {"collection": a.collection, "queries": len(qids), "embedder": getattr(emb, "model_id", "?"),
                    "features_s": round(feat_s, 1), "loadavg": [round(x, 2) for x in os.getloadavg()], "variants": {}}
    for name, v in VARIANTS.items():
        runs = {q: doc_rank(snap, feats[q], order(feats[q], v["head_k"], v["keys"]), v.get("agg", "max"))
                for q in qids}
        all_ = score_run(runs, {q: qrels[q] for q in qids})
        parts = {h: round(float(np.mean([ndcg_at_k(runs[q], qrels[q]) for q in qs])), 4) for h, qs in halves.items()}
        report["variants"][name] = {**all_, **{f"ndcg@10_{h}": s for h, s in parts.items()}}
        print(f"{name:34s} nDCG@10 {all_['ndcg@10']:.4f} (odd {parts['odd']:.4f}, even {parts['even']:.4f})  "
              f"R@100 {all_['recall@100']:.4f}", flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"rerank_features_{a.collection}.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
