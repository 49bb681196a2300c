"""Rerank variants on a BEIR set, offline: features are computed once per query over the hybrid arm's top 100
chunks (plus every other chunk of their documents, for the document-level variants; sentence vectors looked up
in the snapshot), then each variant re-orders them and is scored with the qrels — on all queries and on two
halves (odd / even position), so a variant is kept only if it wins on both. Only equal-weight combinations
(Σ of normalised scores over the candidates) and rank aggregations are compared: no weight is fitted.
Variant "shipped" is what stages/rerank.py does (every candidate scored); "head 30" is the rerank before
issue 15 (the prefiltered top 30 scored, the rest in prefilter order).

Features per chunk: s1 = best sentence's cosine to the question; s2 = mean of the best two; swin = best
window of two adjacent sentences (their summed vectors, normalised); cos = the chunk's cosine; bm25 = the
question's BM25 score on the chunk; idfcov = IDF-weighted share of the question's tokens in the chunk (title
included); titlecov = the same on the title alone; lexwin = idfcov of the best window of two adjacent
sentences (query-term proximity); pcos / ps1 = cos / s1 against a Rocchio query (question vector + mean of
the top 3 chunk vectors by the prefilter, normalised: dense pseudo-relevance feedback).

Usage: RELAYRAG_HOME=... python benchmarks/bench_rerank_features.py --data ../shared/bench/scifact -c scifact
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
PRF_K = 3  # Rocchio: the top 3 prefiltered chunks, as ANCE-PRF's best depth (Yu et al., CIKM 2021)


def zs(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return (v - v.mean()) / (v.std() + 1e-9)


def minmax(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return (v - v.min()) / (v.max() - v.min() + 1e-9)


def rrf(v) -> np.ndarray:
    ranks = np.argsort(np.argsort(-np.asarray(v, dtype=np.float64), kind="stable"), kind="stable")
    return 1.0 / (60 + ranks)


NORMS = {"z": zs, "minmax": minmax, "rrf": rrf}


def features(snap, embedder, question: str, doc_rows: dict[str, list[int]]) -> dict:
    from relayrag.backends.embedder import query_vector
    from relayrag.ingest.snapshot import index_text
    from relayrag.retrieval.bandit import readable
    from relayrag.retrieval.reward import coverage, query_idf
    from relayrag.stages.evidence import embed_sentences
    from relayrag.stages.retrieve import arm_rankings
    qv = query_vector(embedder, question)
    can_read = readable(embedder, question)
    hybrid = [r for r, _ in arm_rankings(snap, embedder, [{"text": question, "kind": "original", "weight": 1.0}],
                                         ["hybrid"], dense_readable=can_read)["hybrid"][:100]]
    rows = list(dict.fromkeys(hybrid + [r for h in hybrid for r in doc_rows[snap.chunks[h]["doc"]]]))
    bm_all = snap.bm25.scores(question)
    texts = [snap.chunks[r]["text"] for r in rows]
    spans, svecs = embed_sentences(embedder, texts, snap=snap, rows=rows)
    idf = query_idf(question, snap.bm25)
    cvec = snap.dense.rows(rows) if rows else np.zeros((0, int(embedder.dim)), np.float32)
    sims = [v @ qv if len(v) else np.zeros(1) for v in svecs]
    swin, lexwin = [], []
    for text, sp, v in zip(texts, spans, svecs):
        if len(v) >= 2:
            w = v[:-1] + v[1:]
            swin.append(float(np.max((w / np.linalg.norm(w, axis=1, keepdims=True)) @ qv)))
        else:
            swin.append(float(np.max(v @ qv)) if len(v) else 0.0)
        lexwin.append(max((coverage(idf, text[sp[k][0]:sp[min(k + 1, len(sp) - 1)][1]]) for k in range(len(sp))),
                          default=0.0))
    return {
        "rows": rows, "n_pool": len(hybrid), "readable": can_read, "qv": qv, "cvec": cvec, "svecs": svecs,
        "docs": [snap.chunks[r]["doc"] for r in rows],
        "cos": cvec @ qv, "bm25": bm_all[rows] if len(bm_all) else np.zeros(len(rows)),
        "s1": np.array([s.max() for s in sims]), "s2": np.array([np.sort(s)[::-1][:2].mean() for s in sims]),
        "swin": np.array(swin), "lexwin": np.array(lexwin),
        "idfcov": np.array([coverage(idf, index_text(snap.chunks[r])) for r in rows]),
        "titlecov": np.array([coverage(idf, snap.chunks[r].get("title") or "") for r in rows]),
    }


def rank(f: dict, head_k: int = 100, keys: tuple[str, ...] = ("s1", "cos", "bm25"),
         pre: tuple[str, ...] = ("cos", "bm25"), agg: str = "first", norm: str = "z") -> list[str]:
    """Document ids best first: the pool prefiltered by Σz(pre), its head re-ordered by Σ norm(keys);
    agg "first" = a document at its best chunk; "max" / "mean2" / "sum2" = per document the max / mean of
    the top two / sum of the top two of each feature over all its chunks, then Σ norm over the documents."""
    n = f["n_pool"]
    if n < 2:
        return list(dict.fromkeys(f["docs"][:n]))
    if not f["readable"]:
        pre = tuple(k for k in pre if k != "cos") or ("bm25",)
        keys = tuple(k for k in keys if k not in ("cos", "s1", "s2", "swin", "pcos", "ps1")) or ("bm25",)
    F = {k: v for k, v in f.items() if isinstance(v, np.ndarray) and v.ndim == 1}
    pidx = np.argsort(-sum(zs(F[k][:n]) for k in pre), kind="stable")
    if {"pcos", "ps1"} & set(keys):
        q2 = f["qv"] + f["cvec"][pidx[:PRF_K]].mean(0)
        q2 = q2 / np.linalg.norm(q2)
        F["pcos"] = f["cvec"] @ q2
        F["ps1"] = np.array([float(np.max(v @ q2)) if len(v) else 0.0 for v in f["svecs"]])
    nz = NORMS[norm]
    head, tail = pidx[:head_k], pidx[head_k:]
    if agg == "first":
        hs = sum(nz(F[k][head]) for k in keys)
        order = [int(head[i]) for i in np.argsort(-hs, kind="stable")] + [int(i) for i in tail]
        return list(dict.fromkeys(f["docs"][i] for i in order))
    docs = list(dict.fromkeys(f["docs"][i] for i in head))
    rows_of: dict[str, list[int]] = defaultdict(list)
    for i, d in enumerate(f["docs"]):
        rows_of[d].append(i)
    pick = {"max": lambda v: v[0], "mean2": lambda v: v[:2].mean(), "sum2": lambda v: v[:2].sum()}[agg]
    ds = sum(nz([pick(np.sort(F[k][rows_of[d]])[::-1]) for d in docs]) for k in keys)
    top = [docs[i] for i in np.argsort(-ds, kind="stable")]
    return list(dict.fromkeys(top + [f["docs"][i] for i in tail]))


VARIANTS = {
    "shipped (every candidate: s1+cos+bm25)": {},
    "head 30 (before issue 15)": dict(head_k=30),
    "head 50": dict(head_k=50),
    "+ idf coverage": dict(keys=("s1", "cos", "bm25", "idfcov")),
    "+ title coverage": dict(keys=("s1", "cos", "bm25", "titlecov")),
    "+ proximity (lexwin)": dict(keys=("s1", "cos", "bm25", "lexwin")),
    "s2 for s1": dict(keys=("s2", "cos", "bm25")),
    "sentence window (swin) for s1": dict(keys=("swin", "cos", "bm25")),
    "dense PRF: pcos for cos": dict(keys=("s1", "pcos", "bm25")),
    "dense PRF: ps1+pcos": dict(keys=("ps1", "pcos", "bm25")),
    "doc max": dict(agg="max"),
    "doc mean of top 2": dict(agg="mean2"),
    "doc sum of top 2": dict(agg="sum2"),
    "min-max instead of z": dict(norm="minmax"),
    "RRF instead of z": dict(norm="rrf"),
    "head 30 + pcos + lexwin": dict(head_k=30, keys=("s1", "pcos", "bm25", "lexwin")),
    "pcos + lexwin": dict(keys=("s1", "pcos", "bm25", "lexwin")),
    "pcos + lexwin + idfcov": dict(keys=("s1", "pcos", "bm25", "lexwin", "idfcov")),
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
    from relayrag.evaluation.retrieval import load_qrels, load_queries, ndcg_at_k, score_run
    ctx = default_context()
    snap = ctx.snapshot(a.collection)
    emb = snap.embedder or ctx.embedder
    qrels = load_qrels(a.data / "qrels" / f"{a.split}.tsv")
    queries = load_queries(a.data / "queries.jsonl")
    qids = [q for q in qrels if q in queries][: a.limit or None]
    doc_rows: dict[str, list[int]] = defaultdict(list)
    for r, c in enumerate(snap.chunks):
        doc_rows[c["doc"]].append(r)
    t = time.perf_counter()
    feats = {q: features(snap, emb, queries[q], doc_rows) for q in qids}
    feat_s = time.perf_counter() - t
    halves = {"odd": qids[0::2], "even": qids[1::2]}
    report: dict = {"collection": a.collection, "queries": len(qids), "embedder": getattr(emb, "model_id", "?"),
                    "features_s": round(feat_s, 1), "loadavg": [round(x, 2) for x in os.getloadavg()], "variants": {}}
    for name, v in VARIANTS.items():
        runs = {q: rank(feats[q], **v) for q in qids}
        all_ = score_run(runs, {q: qrels[q] for q in qids})
        parts = {h: round(float(np.mean([ndcg_at_k(runs[q], qrels[q]) for q in qs])), 4) for h, qs in halves.items()}
        report["variants"][name] = {**all_, **{f"ndcg@10_{h}": s for h, s in parts.items()}}
        print(f"{name:40s} nDCG@10 {all_['ndcg@10']:.4f} (odd {parts['odd']:.4f}, even {parts['even']:.4f})  "
              f"R@100 {all_['recall@100']:.4f}", flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"rerank_features_{a.collection}.json").write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
