"""grade: decide which reranked candidates are relevant, reward the retrieval arm, and route.

No-LLM method `calibrated`: P(relevant) per candidate of the top `grade_k` (30) of rerank's order, from
its best sentence's cosine and lexical coverage (relevance_probability); relevant = P >= 0.5. LLM method
`llm`: a yes/no judgement per candidate (top `context_k`). Reward to the bandit: every arm whose list
retrieve computed (`arm_lists`) is rewarded for its own ranking before rerank — its DCG@10 under the reward
judge's P(relevant) (relayrag.retrieval.reward; the LLM's yes/no replaces it for the chunks the LLM judged)
relative to the best list's, and the arm(s) with the best list win the query
(relayrag.retrieval.bandit.update_keys) — in one idempotent docstore update per (run, attempt), under the
query's context. A query is rewarded when some list's top 10 holds a chunk the reward judge rates P >= 0.5 or
one grade kept (the two scorers differ: the judge was fitted on SciFact and rates a cited table row of the
bundled PDFs far below grade); the run's `rewards` entry names which (`basis`: judge, llm or grade).
Ambiguous (CRAG's middle band): candidates of the head with AMBIGUOUS <= P < 0.5 are recorded as `ambiguous`, best
first; they are not relevant (no routing, no reward) but generate reads them after the relevant ones when fewer
than `context_k` chunks are relevant, and its answerability check decides whether they answer.
Route: `pass` when something is relevant; else `retry` (back to hyde, with retry_count + 1) while
retry_count < max_retries; then `pass` with nothing relevant (generate will say it found nothing rather than
guess). CRAG-style corrective loop (Yan et al., 2024).
"""

from __future__ import annotations

import logging

from relayrag.backends.embedder import query_vector, reference_cosine
from relayrag.backends.llm import LLMError, complete_json
from relayrag.context import StageContext
from relayrag.prompts import quote_document, with_data_rule
from relayrag.retrieval.bandit import update_keys
from relayrag.retrieval.reward import arm_rewards, judge, judge_features, judge_reads_cosine, reward_basis
from relayrag.stages.base import (Stage, StageRequest, StageResponse, embedder_of, llm_failure, load_run, run_snapshot,
                                  write_run)
from relayrag.stages.evidence import relevance_probability


class GradeRequest(StageRequest):
    """Only the run_id: the stage reads its inputs from the run record."""


class GradeResponse(StageResponse):
    n_relevant: int = 0
    reward: float | None = None  # None: no arm's top 10 holds a chunk the judge or grade found relevant
    retry_count: int = 0


log = logging.getLogger(__name__)

# CRAG (Yan et al., 2024) sorts retrieved passages into correct / ambiguous / incorrect by two thresholds. The
# calibrated P(relevant) puts the passage that answers a question in plain words near 0.4 when the question and the
# passage share few words (an FAQ answer, a table row under the document's title, a footer line): cosine 0.42 and
# coverage 0.4 give P = 0.47. 0.3 keeps those and leaves out what shares neither words nor meaning (P < 0.1 for
# the unrelated chunks of the dev sets); the answerability check, not this band, decides what is an answer.
AMBIGUOUS = 0.3


def ambiguous_ids(head: list[dict]) -> list[str]:
    """Chunk ids of the head's candidates with AMBIGUOUS <= P(relevant) < 0.5, in the head's (rerank's) order."""
    return [c["chunk_id"] for c in head if AMBIGUOUS <= float(c.get("p_relevant", 0.0)) < 0.5]


YESNO = {"type": "object", "properties": {"relevant": {"type": "boolean"}}, "required": ["relevant"],
         "additionalProperties": False}


def run(req: GradeRequest, ctx: StageContext) -> GradeResponse:
    run_rec = load_run(ctx, req.run_id)
    cands = run_rec.get("candidates") or []
    head = cands[: min(run_rec.get("reranked_k", len(cands)), ctx.settings.grade_k)]
    scale = run_snapshot(ctx, run_rec).embedder if head else None  # cosines on MiniLM's scale (COSINE_MAP)
    for c in head:
        c["p_relevant"] = round(relevance_probability(reference_cosine(scale, c.get("sentence_cos", 0.0)),
                                                      c.get("lexical", 0.0)), 4)
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
    arm = run_rec.get("arm")
    retry = int(run_rec.get("retry_count", 0))
    kept = {c["row"] for c in head if c.get("p_relevant", 0.0) >= 0.5 and "row" in c}
    rewards, basis = _arm_rewards(ctx, run_rec, head if method == "llm" else [], kept)
    # no reward (None) when nothing was found relevant: 0.0 would claim the arm ranked badly
    reward = round(rewards[arm], 4) if arm and arm in rewards else None
    reward_error = None
    if rewards and run_rec.get("arm_draws"):  # only bandit-chosen runs teach (a forced arm is an experiment)
        reward_error = _reward_best_effort(ctx, run_rec, rewards, f"{req.run_id}:{retry}")
    if relevant:
        route = "pass"
    elif retry < ctx.settings.max_retries:
        route, retry = "retry", retry + 1
    else:
        route = "pass"
    write_run(ctx, req.run_id, {"candidates": head + cands[len(head):], "relevant": relevant,
                                         "ambiguous": ambiguous_ids(head),
                                         "reward": reward, "retry_count": retry,
                                         "rewards": run_rec.get("rewards", []) + [
                                             {"arm": arm, "reward": reward, "basis": basis,
                                              "arm_rewards": {a: round(r, 4) for a, r in rewards.items()},
                                              **({"reward_error": reward_error} if reward_error else {})}]})
    return GradeResponse(run_id=req.run_id, route=route, method=method, llm_error=llm_error, n_relevant=len(relevant),
                         reward=reward, retry_count=retry)


def _reward_best_effort(ctx: StageContext, run_rec: dict, rewards: dict[str, float], reward_id: str) -> str | None:
    """Apply the bandit update; a failed write (Firestore contention, a timeout, a lost connection) is logged and
    returned as text, never raised: the reward is a side effect of grading, and a run must not fail because the
    bandit's counters are busy (a 500 from grade is not retried by the workflow's default predicate).
    The update is idempotent per reward_id, so nothing is double-counted if a retry of grade applies it later."""
    context = run_rec.get("bandit_context", "latin")
    try:
        ctx.docstore.reward_arms(run_rec["collection"], update_keys(context, rewards), reward_id=reward_id)
    except Exception as exc:  # noqa: BLE001 - any failure of the best-effort write; the run goes on
        log.warning("grade: bandit reward %s not recorded (%s: %s); the run continues",
                    reward_id, type(exc).__name__, exc)
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return None


def _arm_rewards(ctx: StageContext, run_rec: dict, llm_judged: list[dict], kept: set[int]
                 ) -> tuple[dict[str, float], str | None]:
    """({arm: reward}, basis) for the lists in run_rec["arm_lists"]: ({}, None) when there are none or no
    list's top 10 holds a relevant chunk; basis names the scorer that found one — "judge" (the reward judge's
    P >= 0.5), "llm" (only the LLM's yes/no did) or "grade" (only a chunk grade kept, `kept` rows, did)."""
    lists = run_rec.get("arm_lists") or {}
    if not lists:
        return {}, None
    snap = run_snapshot(ctx, run_rec)  # the rows in arm_lists index the version retrieve pinned
    can_read = judge_reads_cosine(bool(run_rec.get("dense_readable", True)), run_rec.get("bandit_context", "latin"))
    qvec = query_vector(embedder_of(ctx, snap), run_rec["question"]) if can_read else None
    rows = [r for ranking in lists.values() for r in ranking]
    p = judge(judge_features(run_rec["question"], qvec, rows, snap), can_read)
    basis = reward_basis(lists, p, evidence=kept)
    for c in llm_judged[: ctx.settings.context_k]:  # the LLM's yes/no wins where it judged
        p[c["row"]] = float(c.get("p_relevant", 0.0))
    if llm_judged and basis != "judge" and reward_basis(lists, p) == "judge":
        basis = "llm"
    rewards = arm_rewards(lists, p, evidence=kept)
    return rewards, (basis if rewards else None)


STAGE = Stage("grade", GradeRequest, GradeResponse, run,
              lambda r: {"n_relevant": r.n_relevant, "reward": r.reward, "retry_count": r.retry_count})
