"""Retrieval evaluation on BEIR-format datasets (Thakur et al., 2021).

Metrics with binary or graded qrels, computed as trec_eval does: nDCG@k with gain = relevance and
discount log2(rank + 1) (Järvelin & Kekäläinen 2002), Recall@k, MRR@k. Rankings are of documents: a
chunk ranking becomes a document ranking by each document's best chunk. Cross-checked against ranx in
tests/unit/test_evaluation.py.
"""

from __future__ import annotations

import math
import time
import uuid
from collections import defaultdict
from pathlib import Path

import numpy as np

from relayrag import jsonl
from relayrag.context import StageContext
from relayrag.errors import RelayragError
from relayrag.retrieval.bandit import Arm, ThompsonBandit


def ndcg_at_k(ranking: list[str], rels: dict[str, int], k: int = 10) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: list[str], rels: dict[str, int], k: int = 100) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    return len(relevant & set(ranking[:k])) / len(relevant) if relevant else 0.0


def mrr_at_k(ranking: list[str], rels: dict[str, int], k: int = 10) -> float:
    for i, d in enumerate(ranking[:k]):
        if rels.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def score_run(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    """Mean metrics over the queries of `qrels` (a missing ranking scores 0)."""
    qs = list(qrels)
    if not qs:
        return {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    return {
        "ndcg@10": round(float(np.mean([ndcg_at_k(rankings.get(q, []), qrels[q]) for q in qs])), 4),
        "recall@100": round(float(np.mean([recall_at_k(rankings.get(q, []), qrels[q]) for q in qs])), 4),
        "mrr@10": round(float(np.mean([mrr_at_k(rankings.get(q, []), qrels[q]) for q in qs])), 4),
    }


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if i == 0 and parts[0] in ("query-id", "query_id", "qid"):
                continue
            if len(parts) < 3:
                continue
            qrels[parts[0]][parts[1]] = int(parts[2])
    return dict(qrels)


def load_queries(path: Path) -> dict[str, str]:
    return {str(row["_id"]): row["text"] for row in jsonl.read(path)}


def doc_ranking(snapshot, rows: list[int], depth: int = 100) -> list[str]:
    """Chunk rows (best first) → document ids (best chunk wins), at most `depth`."""
    seen: dict[str, None] = {}
    for r in rows:
        seen.setdefault(snapshot.chunks[r]["doc"], None)
        if len(seen) >= depth:
            break
    return list(seen)


def evaluate_beir(ctx: StageContext, dataset: Path, collection: str, *, limit: int | None = None,
                  split: str = "test", pipeline: bool = True, progress: bool = False,
                  seed: int = 0) -> dict:
    """Ingest `dataset/corpus.jsonl` into `collection` if needed and score every arm, the bandit and
    (optionally) the full pipeline. Returns the report dict printed by `relayrag eval beir --json`."""
    from relayrag.ingest.pipeline import ingest
    from relayrag.stages.retrieve import arm_ranking

    dataset = Path(dataset)
    for name in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (dataset / name).is_file():
            raise RelayragError(f"{dataset} is not a BEIR dataset: {name} is missing")
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    summary = ingest(ctx, dataset / "corpus.jsonl", collection, progress=progress)
    timings["ingest_s"] = round(time.perf_counter() - t0, 2)
    if summary.failed:
        raise RelayragError(f"ingestion failed: {summary.failed[0]['error']}")
    if summary.chunks_embedded:
        timings["ingest_ms_per_chunk"] = round(1000 * timings["ingest_s"] / summary.chunks_embedded, 2)
    snap = ctx.snapshot(collection)
    qrels = load_qrels(dataset / "qrels" / f"{split}.tsv")
    queries = load_queries(dataset / "queries.jsonl")
    qids = [q for q in qrels if q in queries]
    if limit:
        qids = qids[:limit]
    qrels = {q: qrels[q] for q in qids}

    arms: dict[str, dict] = {}
    per_arm: dict[str, dict[str, list[str]]] = {}
    for arm in Arm:
        t = time.perf_counter()
        per_arm[arm.value] = {q: doc_ranking(snap, [r for r, _ in arm_ranking(
            snap, ctx.embedder, [{"text": queries[q], "kind": "original", "weight": 1.0}], arm.value)])
            for q in qids}
        timings[f"{arm.value}_ms_per_query"] = round(1000 * (time.perf_counter() - t) / max(1, len(qids)), 2)
        arms[arm.value] = score_run(per_arm[arm.value], qrels)

    # Bandit: Thompson sampling online over the query sequence; reward = nDCG@10 of the chosen arm's
    # ranking (simulated explicit feedback), so the score shows how fast it settles on the best arm.
    bandit = ThompsonBandit(rng=np.random.default_rng(seed))
    params = {a.value: (1.0, 1.0) for a in Arm}
    chosen: dict[str, list[str]] = {}
    picks: dict[str, int] = defaultdict(int)
    for q in qids:
        arm, _ = bandit.choose(params)
        picks[arm] += 1
        chosen[q] = per_arm[arm][q]
        r = ndcg_at_k(chosen[q], qrels[q])
        a, b = params[arm]
        params[arm] = (a + r, b + 1 - r)
    arms["bandit"] = {**score_run(chosen, qrels), "picks": dict(picks)}

    report = {"dataset": dataset.name, "collection": collection, "queries": len(qids), "arms": arms,
              "pipeline": None, "timings": timings, "index": {"chunks": len(snap), "version": snap.version}}
    if pipeline:
        from relayrag.engine.local import ask
        t = time.perf_counter()
        rankings, routes = {}, defaultdict(int)
        for q in qids:
            run_id = f"eval-{uuid.uuid4().hex[:12]}"
            res = ask(queries[q], collection, run_id=run_id, ctx=ctx)
            routes[res["route"]] += 1
            rec = ctx.docstore.get_run(run_id) or {}
            rows = [c["row"] for c in rec.get("candidates", [])]
            rankings[q] = doc_ranking(snap, rows)
        timings["pipeline_ms_per_query"] = round(1000 * (time.perf_counter() - t) / max(1, len(qids)), 2)
        report["pipeline"] = {**score_run(rankings, qrels), "routes": dict(routes)}
    return report
