"""Latency of a no-LLM ask, per stage and per question, with stored sentence vectors vs the old path (sentences
embedded at query time), both measured in the same run on the same snapshot, questions interleaved A/B so the
machine's load falls on both alike. Also: ingest cost (ms per doc, sentence vectors' share), snapshot size, and
nDCG@10 / Recall@100 of the final ranking in both modes when qrels are given (BEIR data).

Usage:
  python benchmarks/bench_latency.py --data examples/pdfs --questions benchmarks/golden/examples-pdfs.jsonl -c pdfs
  python benchmarks/bench_latency.py --data ../shared/bench/scifact -c scifact --limit 100
RELAYRAG_HOME decides where the collection lives (reuse one to avoid re-ingesting SciFact); the data is ingested
first (a no-op when unchanged; a snapshot without sentence vectors is rebuilt once with them, chunk vectors
reused: that ingest's time is the sentence vectors' cost). Writes benchmarks/results/latency_<collection>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MODES = {"stored": True, "query-time": False}  # sentence vectors looked up vs embedded per ask (the old path)


def pct(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (as the dashboard's metrics)."""
    if not xs:
        return 0.0
    s = sorted(xs)
    return round(float(s[max(0, min(len(s) - 1, int(np.ceil(q / 100 * len(s))) - 1))]), 1)


def load_questions(a) -> tuple[list[tuple[str, str]], dict | None]:
    """[(id, question)] and the qrels (BEIR) or None."""
    from relayrag.evaluation.retrieval import load_qrels, load_queries
    if a.questions:
        rows = [json.loads(line) for line in Path(a.questions).read_text(encoding="utf-8").splitlines() if line.strip()]
        qs = [(str(r.get("id", i)), r["question"]) for i, r in enumerate(rows)]
        return qs[: a.limit or None], None
    qrels = load_qrels(a.data / "qrels" / f"{a.split}.tsv")
    queries = load_queries(a.data / "queries.jsonl")
    qids = [q for q in qrels if q in queries][: a.limit or None]
    return [(q, queries[q]) for q in qids], {q: qrels[q] for q in qids}


def snapshot_sizes(ctx, collection: str) -> dict:
    """Bytes per file name over the current version's segments (chunks.jsonl, dense.npy, sentences.npz, ...)."""
    from relayrag.ingest.snapshot import read_manifest, segment_prefix, version_segments
    version = ctx.current_version(collection)
    manifest = read_manifest(ctx.blobstore, collection, version)
    sizes: dict[str, int] = {}
    for ref in version_segments(manifest, version):
        p = segment_prefix(collection, ref.id)
        for key in ctx.blobstore.list(p):
            name = key[len(p):].split("/", 1)[0]
            sizes[name] = sizes.get(name, 0) + len(ctx.blobstore.get_bytes(key))
    sent = ctx.snapshot(collection).sentences
    return {"version": version, "mb": {k: round(v / 2**20, 3) for k, v in sorted(sizes.items())},
            "total_mb": round(sum(sizes.values()) / 2**20, 3), "n_chunks": manifest.get("n_chunks"),
            "n_sentences": len(sent) if sent is not None else 0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="a folder/file to ingest, or a BEIR dataset folder")
    ap.add_argument("-c", "--collection", required=True)
    ap.add_argument("--questions", help="JSON Lines with 'question' (default: the BEIR queries of --split)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--arm", default="", help="force an arm (dense | bm25 | hybrid): both modes then rank the same "
                                            "candidate lists, so their nDCG@10 differ only by the sentence vectors")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")
    a = ap.parse_args()

    from relayrag.context import StageContext, build_blobstore, build_docstore, set_default_context
    from relayrag.engine.local import ask
    from relayrag.evaluation.retrieval import doc_ranking, score_run
    from relayrag.ingest.pipeline import ingest
    from relayrag.settings import load_settings

    settings = load_settings()
    base = StageContext(settings, build_blobstore(settings), build_docstore(settings))
    beir = (a.data / "corpus.jsonl").is_file()
    source = a.data / "corpus.jsonl" if beir else a.data
    t = time.perf_counter()
    summary = ingest(base, source, a.collection)
    ingest_s = time.perf_counter() - t
    if summary.failed:
        print(f"ingest failed: {summary.failed[0]}", file=sys.stderr)
        return 2
    n_docs = len(base.docstore.list_files(a.collection)) if not beir else sum(1 for _ in source.open())
    questions, qrels = load_questions(a)
    if not questions:
        print("no questions", file=sys.stderr)
        return 2

    contexts = {m: StageContext(settings.model_copy(update={"sentence_vectors": on}), base.blobstore, base.docstore,
                                embedder=base.embedder, llm_configured=False) for m, on in MODES.items()}
    per_q: dict[str, list[float]] = {m: [] for m in MODES}
    per_stage: dict[str, dict[str, list[float]]] = {m: {} for m in MODES}
    rankings: dict[str, dict[str, list[str]]] = {m: {} for m in MODES}
    load_before = os.getloadavg()
    for m, ctx in contexts.items():  # warm-up (snapshot load, models), not counted
        set_default_context(ctx)
        ask(questions[0][1], a.collection, run_id=f"warm-{uuid.uuid4().hex[:8]}", ctx=ctx)
    for n, (qid, text) in enumerate(questions):
        order = list(MODES) if n % 2 == 0 else list(reversed(MODES))
        for m in order:
            ctx = contexts[m]
            set_default_context(ctx)
            run_id = f"lat-{uuid.uuid4().hex[:12]}"
            t = time.perf_counter()
            ask(text, a.collection, run_id=run_id, ctx=ctx, arm=a.arm or None)
            per_q[m].append(1000 * (time.perf_counter() - t))
            for e in ctx.docstore.get_trace(run_id):
                per_stage[m].setdefault(e["name"], []).append(float(e.get("ms") or 0.0))
            if qrels is not None:
                rec = ctx.docstore.get_run(run_id) or {}
                snap = ctx.snapshot(a.collection, rec.get("snapshot_version"))
                rankings[m][qid] = doc_ranking(snap, [c["row"] for c in rec.get("candidates", [])])
    set_default_context(None)
    load_after = os.getloadavg()

    report: dict = {
        "collection": a.collection, "questions": len(questions), "arm": a.arm or "bandit", "machine": {
            "cpus": os.cpu_count(), "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in load_after]},
        "ingest": {**summary.to_dict(), "wall_s": round(ingest_s, 2), "docs": n_docs},
        "snapshot": snapshot_sizes(base, a.collection),
        "modes": {}}
    for m in MODES:
        report["modes"][m] = {
            "question_ms": {"p50": pct(per_q[m], 50), "p95": pct(per_q[m], 95), "mean": round(float(np.mean(per_q[m])), 1)},
            "stage_ms": {s: {"p50": pct(v, 50), "p95": pct(v, 95)} for s, v in per_stage[m].items()},
            **({"retrieval": score_run(rankings[m], qrels)} if qrels is not None else {})}
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"latency_{a.collection}.json").write_text(json.dumps(report, indent=2))

    print(f"{a.collection}: {len(questions)} questions, no LLM; load avg {load_before[0]:.1f} → {load_after[0]:.1f} "
          f"on {os.cpu_count()} CPUs")
    stages = list(dict.fromkeys(s for m in MODES for s in per_stage[m]))
    print(f"  {'':14s}" + "".join(f"{m + ' p50/p95':>24s}" for m in MODES))
    for s in stages + ["question"]:
        cells = []
        for m in MODES:
            d = report["modes"][m]["question_ms"] if s == "question" else report["modes"][m]["stage_ms"].get(s, {})
            cells.append(f"{d.get('p50', 0):>11.1f} / {d.get('p95', 0):>9.1f}")
        print(f"  {s:14s}" + "".join(f"{c:>24s}" for c in cells))
    if qrels is not None:
        for m in MODES:
            r = report["modes"][m]["retrieval"]
            print(f"  {m}: nDCG@10 {r['ndcg@10']:.4f}  Recall@100 {r['recall@100']:.4f}")
    sn = report["snapshot"]
    print(f"  snapshot {sn['total_mb']} MB {sn['mb']}; {sn['n_chunks']} chunks, {sn['n_sentences']} sentence vectors")
    ing = report["ingest"]
    print(f"  ingest this run: {ing['wall_s']} s ({ing['chunks_embedded']} chunks, {ing['sentences_embedded']} "
          f"sentences embedded; {n_docs} docs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
