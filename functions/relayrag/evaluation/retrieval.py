"""Retrieval evaluation on BEIR-format datasets (Thakur et al., 2021).

Metrics with binary or graded qrels, computed as trec_eval does: nDCG@k with gain = relevance and
discount log2(rank + 1) (Järvelin & Kekäläinen 2002), Recall@k, MRR@k. Rankings are of documents: a
chunk ranking becomes a document ranking by each document's best chunk. Cross-checked against ranx in
tests/unit/test_evaluation.py.

The bandit is replayed online over the query sequence exactly as the retrieve and grade stages run it —
contextual Thompson sampling, fusion weights from the posteriors, each computed arm rewarded by the no-LLM
judge (relayrag.retrieval.reward), no qrels — and scored with the qrels afterwards: nDCG@10 per block of
BLOCK queries (the learning curve), regret against the best fixed arm, and the score after the first block.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from relayrag import jsonl
from relayrag.backends.embedder import query_vector
from relayrag.context import StageContext
from relayrag.errors import RelayragError
from relayrag.retrieval.bandit import (BASE_ARMS, Arm, ThompsonBandit, context_params, fusion_weights,
                                       offered_arms, posterior_mean, query_context, readable, update_keys)


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


BLOCK = 50  # learning-curve block size (queries)


def bandit_replay(snap, embedder, queries: dict[str, str], qids: list[str], qrels: dict[str, dict[str, int]],
                  *, seed: int = 0, depth: int = 100, oracle: bool = False, feedback: float = 0.0) -> dict:
    """Replay the contextual bandit over `qids` in order. Returns {"rankings": {qid: docs of the chosen
    arm}, "fixed": {arm: {qid: docs}} (plain fixed arms, hybrid = unweighted RRF of the readable lists),
    "picks": [arm per query], "contexts": [context per query], "params": final {key: (alpha, beta)},
    "weights": [fusion weights per query]}. oracle=True rewards with the qrels' nDCG@10 instead of the judge
    (an upper bound on what any reward could teach). feedback=f in (0, 1]: on a random share f of the queries
    (seeded) a simulated person also gives a verdict on the served ranking, from the qrels — 👍 when its first
    document is relevant, else 👎 wrong_source — stored under the arm's human key and blended into the
    Thompson draw with HUMAN_WEIGHT, as relayrag.feedback does with real verdicts; "verdicts" counts them."""
    from relayrag.retrieval.bandit import human_key
    from relayrag.retrieval.reward import DEPTH, arm_rewards, judge, judge_features, judge_reads_cosine
    from relayrag.stages.retrieve import arm_rankings

    bandit = ThompsonBandit(rng=np.random.default_rng(seed))
    asks = np.random.default_rng(seed + 1).random(len(qids)) < feedback  # which queries get a verdict
    stored: dict[str, tuple[float, float]] = {}
    out: dict = {"rankings": {}, "fixed": {a.value: {} for a in Arm}, "picks": [], "contexts": [], "weights": []}
    all_arms = [a.value for a in Arm]
    out["verdicts"] = 0
    for i, q in enumerate(qids):
        text = queries[q]
        qs = [{"text": text, "kind": "original", "weight": 1.0}]
        context = query_context(text)
        can_read = readable(embedder, text, context)
        fixed = arm_rankings(snap, embedder, qs, all_arms, depth, dense_readable=can_read)
        for a in all_arms:
            out["fixed"][a][q] = doc_ranking(snap, [r for r, _ in fixed[a]])
        params = context_params(stored, context, all_arms)
        weights = fusion_weights(context_params(stored, context, BASE_ARMS, quality=True))
        offered = offered_arms(can_read)
        lists = {a: fixed[a] for a in offered}
        if "hybrid" in offered and any(w != 1.0 for w in weights.values()):
            lists["hybrid"] = arm_rankings(snap, embedder, qs, ["hybrid"], depth, dense_readable=can_read,
                                           weights=weights)["hybrid"]
        arm, _ = bandit.choose(params, offered)
        docs = {a: doc_ranking(snap, [r for r, _ in lst]) for a, lst in lists.items()}
        out["rankings"][q] = docs[arm]
        out["picks"].append(arm)
        out["contexts"].append(context)
        out["weights"].append(weights)
        if oracle:
            rewards = {a: ndcg_at_k(d, qrels[q]) for a, d in docs.items()}
        else:
            top = {a: [r for r, _ in lst[:DEPTH]] for a, lst in lists.items()}
            use_cos = judge_reads_cosine(can_read, context)
            qvec = query_vector(embedder, text) if use_cos else None
            p = judge(judge_features(text, qvec, [r for t in top.values() for r in t], snap), use_cos)
            rewards = arm_rewards(top, p)  # as grade: a lone offered arm records its quality only
        if oracle and len(rewards) > 1:  # graded rewards relative to the query's best list, as the judge's
            best = max(rewards.values())
            rewards = {a: r / best for a, r in rewards.items()} if best > 0 else {}
        for k, r in update_keys(context, rewards).items():
            x, y = stored.get(k, (1.0, 1.0))
            stored[k] = (x + r, y + 1.0 - r)
        if asks[i] and len(offered) > 1:  # a verdict on the served answer's source (only where it can teach)
            r = 1.0 if docs[arm] and qrels[q].get(docs[arm][0], 0) > 0 else 0.0
            x, y = stored.get(human_key(context, arm), (1.0, 1.0))
            stored[human_key(context, arm)] = (x + r, y + 1.0 - r)
            out["verdicts"] += 1
    out["params"] = stored
    return out


def learning_curve(per_query: dict[str, list[float]], block: int = BLOCK) -> list[dict]:
    """[{"queries": "1-50", name: mean per block, ...}] from {name: [score per query, in order]}."""
    n = len(next(iter(per_query.values()), []))
    rows = []
    for s in range(0, n, block):
        row: dict = {"queries": f"{s + 1}-{min(n, s + block)}"}
        for name, scores in per_query.items():
            row[name] = round(float(np.mean(scores[s:s + block])), 4)
        rows.append(row)
    return rows


def bandit_report(replay: dict, qids: list[str], qrels: dict[str, dict[str, int]], block: int = BLOCK) -> dict:
    """Scores of a bandit_replay: overall, after the first block, per block, regret and picks — overall
    and per context (each context's best fixed arm is its own)."""
    def nd(rankings):
        return [ndcg_at_k(rankings[q], qrels[q]) for q in qids]
    bandit = nd(replay["rankings"])
    fixed = {a: nd(r) for a, r in replay["fixed"].items()}
    rep: dict = {**score_run(replay["rankings"], {q: qrels[q] for q in qids})}
    by_ctx: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(replay["contexts"]):
        by_ctx[c].append(i)
    contexts = {}
    for c, idx in by_ctx.items():
        fx = {a: [v[i] for i in idx] for a, v in fixed.items()}
        best = max(fx, key=lambda a: np.mean(fx[a]))
        b = [bandit[i] for i in idx]
        regret = np.cumsum([fx[best][j] - b[j] for j in range(len(idx))])
        after = slice(block, None) if len(idx) > block else slice(0, None)
        picks: dict[str, int] = defaultdict(int)
        for i in idx:
            picks[replay["picks"][i]] += 1
        contexts[c] = {
            "queries": len(idx), "ndcg@10": round(float(np.mean(b)), 4),
            "fixed": {a: round(float(np.mean(v)), 4) for a, v in fx.items()}, "best_fixed": best,
            "ndcg@10_after_first_block": round(float(np.mean(b[after])), 4),
            "best_fixed_after_first_block": round(float(np.mean(fx[best][after])), 4),
            "regret": round(float(regret[-1]), 3),
            "picks": dict(picks),
            "curve": learning_curve({"bandit": b, **fx}, block),
            "regret_per_block": [round(float(regret[min(len(regret), s + block) - 1]), 3)
                                 for s in range(0, len(idx), block)],
            "picks_per_block": [{a: [replay["picks"][i] for i in idx[s:s + block]].count(a) for a in fixed}
                                for s in range(0, len(idx), block)],
        }
    rep["contexts"] = contexts
    rep["curve"] = learning_curve({"bandit": bandit, **fixed}, block)
    picks = defaultdict(int)
    for a in replay["picks"]:
        picks[a] += 1
    rep["picks"] = dict(picks)
    rep["posterior_means"] = {k: round(v, 4) for k, v in posterior_mean(replay["params"]).items()}
    rep["final_fusion_weights"] = {c: replay["weights"][idx[-1]] for c, idx in by_ctx.items()}
    return rep


def evaluate_beir(ctx: StageContext, dataset: Path, collection: str, *, limit: int | None = None,
                  split: str = "test", pipeline: bool = True, progress: bool = False,
                  seed: int = 0, block: int = BLOCK, oracle: bool = False, feedback: tuple[float, ...] = ()) -> dict:
    """Ingest `dataset/corpus.jsonl` into `collection` if needed and score every arm, the contextual bandit
    (replayed with the no-LLM judge's rewards; `oracle` adds a replay rewarded with the qrels) and
    (optionally) the full pipeline. All queries of the split unless `limit`. Returns the report dict printed
    by `relayrag eval beir --json`. `feedback`: shares of queries with a simulated person's verdict; each adds a
    replay `bandit_feedback_<percent>` (same seed as the judge-only `bandit`, so the difference is the
    verdicts')."""
    from relayrag.ingest.pipeline import ingest

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

    t = time.perf_counter()
    embedder = snap.embedder if snap.embedder is not None else ctx.embedder
    replay = bandit_replay(snap, embedder, queries, qids, qrels, seed=seed)
    timings["bandit_replay_ms_per_query"] = round(1000 * (time.perf_counter() - t) / max(1, len(qids)), 2)
    arms: dict[str, dict] = {a: score_run(r, qrels) for a, r in replay["fixed"].items()}
    arms["bandit"] = bandit_report(replay, qids, qrels, block)
    for share in feedback:
        fb = bandit_replay(snap, embedder, queries, qids, qrels, seed=seed, feedback=share)
        arms[f"bandit_feedback_{round(100 * share)}"] = {**bandit_report(fb, qids, qrels, block),
                                                         "verdicts": fb["verdicts"]}
    if oracle:
        arms["bandit_oracle"] = bandit_report(bandit_replay(snap, embedder, queries, qids, qrels, seed=seed,
                                                            oracle=True), qids, qrels, block)

    report = {"dataset": dataset.name, "collection": collection, "queries": len(qids), "arms": arms,
              "pipeline": None, "timings": timings, "index": {"chunks": len(snap), "version": snap.version}}
    if pipeline:
        from relayrag.engine.local import ask
        from relayrag.records import eval_run_id
        report["arms_before_pipeline"] = ctx.docstore.get_arms(collection)
        t = time.perf_counter()
        rankings, routes = {}, defaultdict(int)
        picks: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for q in qids:
            run_id = eval_run_id()  # marks it: dashboards leave it out of production stats
            res = ask(queries[q], collection, run_id=run_id, ctx=ctx)
            routes[res["route"]] += 1
            rec = ctx.docstore.get_run(run_id) or {}
            if rec.get("arm"):
                picks[rec.get("bandit_context", "?")][rec["arm"]] += 1
            rows = [c["row"] for c in rec.get("candidates", [])]
            rankings[q] = doc_ranking(snap, rows)
        timings["pipeline_ms_per_query"] = round(1000 * (time.perf_counter() - t) / max(1, len(qids)), 2)
        report["pipeline"] = {**score_run(rankings, qrels), "routes": dict(routes),
                              "picks": {c: dict(v) for c, v in picks.items()},
                              "contexts": {c: score_run({q: rankings[q] for q in qids if query_context(queries[q]) == c},
                                                        {q: qrels[q] for q in qids if query_context(queries[q]) == c})
                                           for c in {query_context(queries[q]) for q in qids}}}
        report["arms_after_pipeline"] = ctx.docstore.get_arms(collection)
    return report
