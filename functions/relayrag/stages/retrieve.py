"""retrieve: candidate chunks from the collection's current snapshot with one arm — dense, bm25 or
hybrid (RRF of both, Cormack et al. 2009) — chosen per collection by Thompson sampling (see
relayrag.retrieval.bandit) unless the request forces one. Several queries (from hyde) are fused with
weighted RRF. Candidates go to the run record; the response carries only the arm and a few scalars.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from relayrag.context import StageContext
from relayrag.ingest.snapshot import RUN_PIN_TTL_S
from relayrag.retrieval.bandit import Arm, ThompsonBandit
from relayrag.retrieval.fusion import rrf_fuse, top_k
from relayrag.stages.base import Stage, StageRequest, StageResponse, load_run

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


def arm_ranking(snapshot, embedder, queries: list[dict], arm: str, depth: int = DEPTH
                ) -> list[tuple[int, float]]:
    """[(row, fused score)] best first for one arm over all queries (weighted RRF across queries)."""
    rankings, weights = [], []
    dense_q = [q for q in queries if q["kind"] != "keywords"]
    sparse_q = [q for q in queries if q["kind"] != "hyde"]
    if arm in ("dense", "hybrid") and dense_q:
        vecs = embedder.embed([q["text"] for q in dense_q], kind="query")
        for q, v in zip(dense_q, vecs):
            rankings.append([int(i) for i in top_k(snapshot.dense.scores(v), depth)])
            weights.append(q["weight"])
    if arm in ("bm25", "hybrid"):
        for q in sparse_q:
            s = snapshot.bm25.scores(q["text"])
            rankings.append([int(i) for i in top_k(s, depth) if s[i] > 0])
            weights.append(q["weight"])
    return [(int(r), float(sc)) for r, sc in rrf_fuse(rankings, k=60, weights=weights)]


def run(req: RetrieveRequest, ctx: StageContext) -> RetrieveResponse:
    run_rec = load_run(ctx, req.run_id)
    collection = run_rec["collection"]
    version = ctx.current_version(collection)
    # lease the version to this run before loading it: later stages read the same rows (run_snapshot) and
    # ingest's GC spares it while the run is in flight
    ctx.docstore.pin_version(collection, version, req.run_id, RUN_PIN_TTL_S)
    snap = ctx.snapshot(collection, version)
    queries = run_rec.get("queries") or [{"text": run_rec["question"], "kind": "original", "weight": 1.0}]
    if req.arm:
        arm, method, draws = req.arm, "forced", {}
    else:
        arm, draws = ThompsonBandit().choose(ctx.docstore.get_arms(collection))
        method = "thompson"
    ranking = arm_ranking(snap, ctx.embedder, queries, arm)[: ctx.settings.retrieve_k]
    candidates = [{"chunk_id": snap.chunks[r]["chunk_id"], "row": r, "retrieve_score": s} for r, s in ranking]
    ctx.docstore.update_run(req.run_id, {"arm": arm, "arm_draws": draws, "snapshot_version": snap.version,
                                         "candidates": candidates})
    return RetrieveResponse(run_id=req.run_id, method=method, arm=arm, n_candidates=len(candidates),
                            top_score=round(candidates[0]["retrieve_score"], 6) if candidates else 0.0)


STAGE = Stage("retrieve", RetrieveRequest, RetrieveResponse, run,
              lambda r: {"arm": r.arm, "n_candidates": r.n_candidates})
