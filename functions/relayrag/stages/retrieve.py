"""retrieve: candidate chunks from the collection's current snapshot with one arm — dense, bm25 or hybrid
(weighted RRF of both, Cormack et al. 2009) — chosen by contextual Thompson sampling (see
relayrag.retrieval.bandit) unless the request forces one. Several queries (from hyde) are fused with
weighted RRF.

The query's context is its script. The dense arm is offered only where the embedder can read the query
(few unknown word pieces), and hybrid fuses only readable lists, weighted by their posterior mean rewards in
that context (a list far below the best is dropped: `fusion_weights`). Every offered arm's list is computed
(they cost milliseconds; hybrid needs both base lists anyway) and their top 10 rows go to the run record as
`arm_lists`, so grade can reward each arm for its own ranking. Candidates (with `retrieve_rank`, the rank in
the chosen arm's list before rerank) go to the run record; the response carries the arm and a few scalars.

Metadata filters (the run record's `filters`, relayrag.metadata) become a row mask applied to every base
list's scores before its top-k — dense, BM25 and so hybrid — so a filter never loses recall to rows it
removes, and the reward's arm lists hold only rows that pass. By default expired documents are left out.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, field_validator

from relayrag.backends.embedder import query_vectors
from relayrag.context import StageContext
from relayrag.ingest.snapshot import RUN_PIN_TTL_S
from relayrag.retrieval.bandit import (BASE_ARMS, Arm, ThompsonBandit, context_params, fusion_weights,
                                       offered_arms, query_context, readable)
from relayrag.metadata import Filters, document_passes, snapshot_filters
from relayrag.retrieval.fusion import rrf_fuse, top_k
from relayrag.retrieval.reward import DEPTH as REWARD_DEPTH
from relayrag.retrieval.spelling import respell
from relayrag.stages.base import Stage, StageRequest, StageResponse, embedder_of, load_run, write_run
from relayrag.stages.colpali_search import page_search_reason

DEPTH = 100  # per-arm list depth before fusion (as the baseline: top-100 per arm)


class RetrieveRequest(StageRequest):
    arm: str | None = Field(None, description="Force an arm (dense | bm25 | hybrid); default: the bandit picks.")

    @field_validator("arm")
    @classmethod
    def _arm(cls, v: str | None) -> str | None:
        return None if v in (None, "") else Arm.from_str(v).value


class RetrieveResponse(StageResponse):
    arm: str
    n_candidates: int = 0
    top_score: float = 0.0
    context: str = ""
    page_vectors: int = Field(0, description="1 when page-image search can serve this snapshot here (a model is "
                                             "configured and the snapshot has page vectors from it: the workflow "
                                             "then fuses page hits with these candidates), else 0.")


def _base_lists(snapshot, embedder, queries: list[dict], arms, depth: int,
                mask: np.ndarray | None = None) -> dict[str, list]:
    """{base arm: [(ranking of rows, weight) per query]} for the base arms in `arms`; rows where `mask` is
    False never enter a list (their scores are removed before the top-k)."""
    out: dict[str, list] = {}
    if "dense" in arms:
        dense_q = [q for q in queries if q["kind"] != "keywords"]
        if dense_q:
            vecs = query_vectors(embedder, [q["text"] for q in dense_q])
            out["dense"] = []
            for q, v in zip(dense_q, vecs):
                s = snapshot.dense.scores(v)
                if mask is not None:
                    s = np.where(mask, s, -np.inf)
                out["dense"].append(([int(i) for i in top_k(s, depth) if s[i] > -np.inf], q["weight"]))
    if "bm25" in arms:
        out["bm25"] = []
        for q in (q for q in queries if q["kind"] != "hyde"):
            s = snapshot.bm25.scores(q["text"])
            if mask is not None and len(s):
                s = np.where(mask, s, 0.0)
            out["bm25"].append(([int(i) for i in top_k(s, depth) if s[i] > 0], q["weight"]))
    return out


def _fuse(parts: list[tuple[list[int], float]]) -> list[tuple[int, float]]:
    if not parts:
        return []
    return [(int(r), float(sc)) for r, sc in rrf_fuse([p for p, _ in parts], k=60, weights=[w for _, w in parts])]


def _needed(arms: list[str], dense_readable: bool, weights: dict[str, float]) -> tuple[list[str], set[str]]:
    """(hybrid's input lists, the base lists `arms` need)."""
    hybrid_inputs = [a for a in BASE_ARMS if (a != "dense" or dense_readable) and weights.get(a, 1.0) > 0]
    return hybrid_inputs, set(a for a in arms if a != "hybrid") | (set(hybrid_inputs) if "hybrid" in arms else set())


def arm_rankings(snapshot, embedder, queries: list[dict], arms: list[str], depth: int = DEPTH, *,
                 dense_readable: bool = True, weights: dict[str, float] | None = None,
                 mask: np.ndarray | None = None, base: dict[str, list] | None = None
                 ) -> dict[str, list[tuple[int, float]]]:
    """{arm: [(row, fused score)] best first} for each of `arms`; the base lists are computed once (or given
    as `base`, e.g. by the distributed backend).

    hybrid = weighted RRF of the readable base lists (dense only if `dense_readable`), list weights
    `weights` (default 1 each; a weight of 0 leaves that list out) times each query's own weight.
    mask: bool [n_chunks] (relayrag.metadata.row_mask), rows that may be retrieved (None: all)."""
    weights = weights or {}
    hybrid_inputs, need = _needed(arms, dense_readable, weights)
    if base is None:
        base = _base_lists(snapshot, embedder, queries, need, depth, mask)
    elif mask is not None:  # given lists (distributed candidates): rows outside the mask leave them
        base = {a: [([r for r in rows if mask[r]], w) for rows, w in lists] for a, lists in base.items()}
    out = {}
    for arm in arms:
        if arm == "hybrid":
            out[arm] = _fuse([(r, w * weights.get(a, 1.0)) for a in hybrid_inputs for r, w in base.get(a, [])])
        else:
            out[arm] = _fuse(base.get(arm, []))
    return out


def arm_ranking(snapshot, embedder, queries: list[dict], arm: str, depth: int = DEPTH, *,
                weights: dict[str, float] | None = None, mask: np.ndarray | None = None,
                base: dict[str, list] | None = None) -> list[tuple[int, float]]:
    """[(row, fused score)] best first for one arm over all queries (weighted RRF across queries). Hybrid
    leaves out the dense list when the embedder cannot read the first query (bandit.readable)."""
    dense_readable = arm != "hybrid" or not queries or readable(embedder, queries[0]["text"])
    return arm_rankings(snapshot, embedder, queries, [arm], depth, dense_readable=dense_readable,
                        weights=weights, mask=mask, base=base)[arm]



EXPIRED_DEPTH = 5  # BM25 ranks of the unfiltered collection checked for expired documents


def expired_matches(snapshot, queries: list[dict], filters, mask: np.ndarray, question: str = "",
                    embedder=None) -> list[dict]:
    """[{doc, valid_until}] of the expired documents (passing every other condition) that BM25 ranks above
    every retrievable chunk in the unfiltered collection's top EXPIRED_DEPTH for one of the run's queries, and
    whose chunk is about `question` by the reward judge's test (the one `search` uses for "a good match":
    P(relevant) >= 0.5 or a third of the question's IDF-weighted words; `relevant_rows`): what the default
    validity filter left out that matched the question best, so a "not found" can say so
    (generate.expired_note) instead of staying silent. Being the best BM25 rank is not enough: with a filter
    that leaves nothing else (department=Finance), an expired policy that shares one word with the question
    ranks first too. Without `question` every ranked chunk counts."""
    base = _base_lists(snapshot, None, queries, {"bm25"}, EXPIRED_DEPTH)
    keep = Filters(conditions=filters.conditions, include_expired=True)
    ranked: list[int] = []  # the expired chunks ranked above every retrievable one, best first per query
    for rows, _ in base.get("bm25", []):
        for r in rows:
            if mask[r]:
                break  # a retrievable chunk matches better: what ranks below it is no better evidence
            if int(r) not in ranked and document_passes(snapshot.chunks[r].get("meta"), keep):
                ranked.append(int(r))  # (one the user's own conditions leave out is skipped)
    about = relevant_rows(snapshot, embedder, question, ranked) if question else set(ranked)
    out: dict[str, dict] = {}
    for r in ranked:
        c = snapshot.chunks[r]
        if r in about and c.get("doc") not in out:
            out[c.get("doc")] = {"doc": c.get("doc"), "valid_until": (c.get("meta") or {}).get("valid_until")}
    return list(out.values())


def relevant_rows(snapshot, embedder, question: str, rows: list[int]) -> set[int]:
    """The rows among `rows` whose chunk is about `question` by the reward judge (relayrag.retrieval.reward):
    P(relevant) >= 0.5, or coverage (the IDF-weighted share of the question's words it holds) >= 1/3. When
    the snapshot cannot be judged (a partial candidate snapshot) every row counts."""
    from relayrag.backends.embedder import query_vector
    from relayrag.retrieval.bandit import query_context
    from relayrag.retrieval.reward import judge, judge_features, judge_reads_cosine
    if not rows:
        return set()
    try:
        can_read = embedder is not None and judge_reads_cosine(readable(embedder, question), query_context(question))
        qvec = query_vector(embedder, question) if can_read else None
        feats = judge_features(question, qvec, rows, snapshot)
        p = judge(feats, can_read)
        return {r for r in p if p[r] >= 0.5 or feats[r][1] >= 1 / 3}
    except (AttributeError, KeyError, IndexError, ValueError):
        return set(rows)


def run(req: RetrieveRequest, ctx: StageContext) -> RetrieveResponse:
    run_rec = load_run(ctx, req.run_id)
    collection = run_rec["collection"]
    version = ctx.current_version(collection)
    # lease the version to this run before loading it: later stages read the same rows (run_snapshot) and
    # ingest's GC spares it while the run is in flight
    ctx.docstore.pin_version(collection, version, req.run_id, RUN_PIN_TTL_S)
    question = run_rec["question"]
    queries = run_rec.get("queries") or [{"text": question, "kind": "original", "weight": 1.0}]
    context = query_context(question)
    index = ctx.index_backend(collection)
    if index is None:
        snap = ctx.snapshot(collection, version)
        embedder = embedder_of(ctx, snap)
    else:  # the candidates snapshot is built below; its embedder is the one the version's manifest names
        from relayrag.retrieval import distributed
        embedder = distributed.version_embedder(ctx, collection, version)
    can_read = readable(embedder, question, context)
    offered = offered_arms(can_read)
    stored = ctx.docstore.get_arms(collection)
    params = context_params(stored, context, [a.value for a in Arm])
    weights = fusion_weights(context_params(stored, context, BASE_ARMS, quality=True))
    draws: dict
    if req.arm:
        arm, method, draws = req.arm, "forced", {}
    else:
        arm, draws = ThompsonBandit().choose(params, offered)
        method = "thompson"
    computed = list(dict.fromkeys([*offered, arm]))
    extra: dict = {}
    if index is None:
        # a word neither the collection nor the English lexicon has, near a word of the collection: search for
        # the corrected question too (relayrag.retrieval.spelling); generate answers it if the question as typed
        # finds no answer. Not on the distributed backend, whose snapshot holds the run's candidates only.
        respelled, changes = respell(question, snap)
        if changes:
            queries = [*queries, {"text": respelled, "kind": "respelled", "weight": 1.0}]
            extra["respelled"] = {"text": respelled, "changes": [list(c) for c in changes]}
        base = None
        # what the later stages need of the whole version's BM25 to read only the run's rows (retrieval.view)
        from relayrag.retrieval.view import record_stats
        extra["bm25_stats"] = record_stats(snap.bm25, question, queries)
    else:  # distributed: the backend ranks, this run keeps only its candidates (relayrag.retrieval.distributed)
        snap, base = distributed.candidates(ctx, index, collection, version, queries,
                                            _needed(computed, can_read, weights)[1], DEPTH, embedder=embedder)
        extra = distributed.record_fields(snap)
    # metadata filters (FilterError: HTTP 400); on the distributed backend they apply to its candidates
    filters, mask = snapshot_filters(snap, run_rec.get("filters"))
    lists = arm_rankings(snap, embedder, queries, computed, dense_readable=can_read, weights=weights,
                         mask=mask, base=base)
    if base is None and mask is not None and not filters.valid_on and not filters.include_expired:
        extra["expired_matches"] = expired_matches(snap, queries, filters, mask, question, embedder)
    ranking = lists[arm][: ctx.settings.retrieve_k]
    candidates = [{"chunk_id": snap.chunks[r]["chunk_id"], "row": r, "retrieve_score": s, "retrieve_rank": i}
                  for i, (r, s) in enumerate(ranking, start=1)]
    write_run(ctx, req.run_id, {
        "arm": arm, "arm_draws": draws, "bandit_context": context, "dense_readable": can_read,
        "fusion_weights": weights, "snapshot_version": snap.version, "candidates": candidates,
        "filters_applied": {**filters.describe(),
                            "rows": int(mask.sum()) if mask is not None else len(snap)},
        "arm_lists": {a: [r for r, _ in lists[a][:REWARD_DEPTH]] for a in computed}, **extra})
    return RetrieveResponse(run_id=req.run_id, method=method, arm=arm, n_candidates=len(candidates),
                            top_score=round(candidates[0]["retrieve_score"], 6) if candidates else 0.0,
                            context=context, page_vectors=0 if page_search_reason(ctx, snap.manifest) else 1)


STAGE = Stage("retrieve", RetrieveRequest, RetrieveResponse, run,
              lambda r: {"arm": r.arm, "n_candidates": r.n_candidates, "context": r.context})
