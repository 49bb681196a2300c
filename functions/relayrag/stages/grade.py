"""grade: decide which reranked candidates are relevant, reward the retrieval arm, and route.

No-LLM method `calibrated`: P(relevant) per candidate from its best sentence's cosine and lexical
coverage (relevance_probability); relevant = P >= 0.5. LLM method `llm`: a yes/no judgement per
candidate (top `context_k`). Reward to the bandit = mean P over the top 5 candidates, so an arm is
rewarded for putting relevant chunks high. Route: `pass` when something is relevant; else `retry`
(back to hyde, with retry_count + 1) while retry_count < max_retries; then `pass` with nothing relevant
(generate will say it found nothing rather than guess). CRAG-style corrective loop (Yan et al., 2024).
"""

from __future__ import annotations

from relayrag.backends.llm import LLMError, complete_json
from relayrag.context import StageContext
from relayrag.prompts import quote_document, with_data_rule
from relayrag.stages.base import Stage, StageRequest, StageResponse, llm_failure, load_run, run_snapshot
from relayrag.stages.evidence import relevance_probability


class GradeRequest(StageRequest):
    """Only the run_id: the stage reads its inputs from the run record."""


class GradeResponse(StageResponse):
    n_relevant: int = 0
    reward: float = 0.0
    retry_count: int = 0


YESNO = {"type": "object", "properties": {"relevant": {"type": "boolean"}}, "required": ["relevant"],
         "additionalProperties": False}


def run(req: GradeRequest, ctx: StageContext) -> GradeResponse:
    run_rec = load_run(ctx, req.run_id)
    cands = run_rec.get("candidates") or []
    head = cands[: run_rec.get("reranked_k", len(cands))]
    for c in head:
        c["p_relevant"] = round(relevance_probability(c.get("sentence_cos", 0.0), c.get("lexical", 0.0)), 4)
    method, llm_error = "calibrated", None
    if ctx.llm is not None and head:
        try:
            snap = run_snapshot(ctx, run_rec)
            for c in head[: ctx.settings.context_k]:
                out = complete_json(ctx.llm, [
                    {"role": "system", "content": with_data_rule("Does the passage contain information that "
                     "helps answer the question? Answer with JSON.")},
                    {"role": "user", "content": f"Question: {run_rec['question']}\n\n"
                     f"Passage:\n{quote_document(snap.chunks[c['row']]['text'][:2000])}"}], YESNO, max_tokens=20)
                c["p_relevant"] = 1.0 if out["relevant"] else 0.0
            for c in head[ctx.settings.context_k:]:
                c["p_relevant"] = 0.0
            method = "llm"
        except (LLMError, KeyError) as exc:
            method, llm_error = "calibrated (llm failed)", llm_failure(exc)
    relevant = [c["chunk_id"] for c in head if c.get("p_relevant", 0.0) >= 0.5]
    top = head[:5]
    reward = sum(c["p_relevant"] for c in top) / len(top) if top else 0.0
    arm = run_rec.get("arm")
    if arm and run_rec.get("arm_draws"):  # only bandit-chosen arms learn (a forced arm is an experiment)
        ctx.docstore.reward_arm(run_rec["collection"], arm, reward)
    retry = int(run_rec.get("retry_count", 0))
    if relevant:
        route = "pass"
    elif retry < ctx.settings.max_retries:
        route, retry = "retry", retry + 1
    else:
        route = "pass"
    ctx.docstore.update_run(req.run_id, {"candidates": head + cands[len(head):], "relevant": relevant,
                                         "reward": round(reward, 4), "retry_count": retry,
                                         "rewards": run_rec.get("rewards", []) + [{"arm": arm, "reward": round(reward, 4)}]})
    return GradeResponse(run_id=req.run_id, route=route, method=method, llm_error=llm_error, n_relevant=len(relevant),
                         reward=round(reward, 4), retry_count=retry)


STAGE = Stage("grade", GradeRequest, GradeResponse, run,
              lambda r: {"n_relevant": r.n_relevant, "reward": r.reward, "retry_count": r.retry_count})
