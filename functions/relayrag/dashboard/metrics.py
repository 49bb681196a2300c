"""Aggregate metrics computed from run records and traces (never counted by hand).

`summarize(runs, traces)` takes run records (docstore `list_runs`) and their traces and returns:
- stages: per stage name, n, p50_ms and p95_ms (nearest-rank percentiles of the trace entries' `ms`);
- runs, refusal_rate (runs that did not answer — not found or refused — / questions that reached an answer,
  small talk excluded; `not_found` and `refused` count each kind), regenerate_rate (rag runs with
  regen_count > 0 / rag runs), retry_rate (rag runs with retry_count > 0 / rag runs), llm_errors (runs
  with at least one stage that fell back because its LLM call failed), routes (count per route);
- bandit: per (collection, query context, arm), pulls (the arm a bandit-chosen run used, with the reward the
  grade stage recorded for it in `rewards`) and mean reward; forced arms (`--arm`, no `arm_draws`) are not
  pulls.
Rates are None when their denominator is 0.
"""

from __future__ import annotations

import math
from collections import defaultdict


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in [0, 100]) of `values`; None for an empty list."""
    if not values:
        return None
    xs = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(xs)))
    return float(xs[min(rank, len(xs)) - 1])


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def bandit_pulls(runs: list[dict]) -> list[dict]:
    """One row per pull of a bandit-chosen arm (each grade of a run: its first pass and each retry), oldest
    first: {collection, context (the query's script, `bandit_context`), arm, reward, at, run_id}."""
    out = []
    for r in sorted(runs, key=lambda r: r.get("created_at") or 0):
        if not r.get("arm_draws"):
            continue
        for rw in r.get("rewards") or []:
            if rw.get("arm") and rw.get("reward") is not None:
                out.append({"collection": r.get("collection"), "context": r.get("bandit_context") or "latin",
                            "arm": rw["arm"], "reward": float(rw["reward"]), "at": r.get("created_at"),
                            "run_id": r.get("run_id")})
    return out


def offered_arms(runs: list[dict], collection: str, context: str) -> set[str] | None:
    """The retrieval arms that computed a list (`arm_lists`) for at least one run of `collection` in query
    context `context`; None when no such run is in `runs` (nothing to say). An arm outside the set was never
    offered to these queries (dense is not offered where the embedder cannot read the script), so its posterior
    is its prior and shows nothing learnt."""
    seen = [r for r in runs if r.get("collection") == collection and (r.get("bandit_context") or "latin") == context
            and r.get("arm_lists")]
    if not seen:
        return None
    return {a for r in seen for a in r["arm_lists"]}


def summarize(runs: list[dict], traces: dict[str, list[dict]]) -> dict:
    by_stage: dict[str, list[float]] = defaultdict(list)
    for run_id, trace in traces.items():
        for t in trace:
            if isinstance(t.get("ms"), (int, float)):
                by_stage[t["name"]].append(float(t["ms"]))
    stages = {name: {"n": len(v), "p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95)}
              for name, v in by_stage.items()}
    # a question the documents did not answer is a refusal to answer, whether the pipeline said "not found"
    # (found is False) or a guard or the hallucination check refused; small talk asks nothing of the documents
    answered = [r for r in runs if (r.get("answer") is not None or r.get("refused")) and r.get("route") != "chitchat"]
    not_found = [r for r in answered if r.get("found") is False and not r.get("refused")]
    refused = [r for r in answered if r.get("refused")]
    rag = [r for r in runs if r.get("route") == "rag"]
    routes: dict[str, int] = defaultdict(int)
    for r in runs:
        routes[r.get("route") or "unfinished"] += 1
    llm_errors = len([r for r in runs if any(t.get("llm_error") for t in traces.get(str(r.get("run_id")), []))])
    pulls: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for p in bandit_pulls(runs):
        pulls[(p["collection"], p["context"], p["arm"])].append(p["reward"])
    bandit = [{"collection": c, "context": x, "arm": a, "pulls": len(v), "mean_reward": round(sum(v) / len(v), 4)}
              for (c, x, a), v in sorted(pulls.items())]
    return {
        "runs": len(runs),
        "routes": dict(routes),
        "questions": len(answered),
        "not_found": len(not_found),
        "refused": len(refused),
        "refusal_rate": _rate(len(not_found) + len(refused), len(answered)),
        "regenerate_rate": _rate(sum(1 for r in rag if (r.get("regen_count") or 0) > 0), len(rag)),
        "retry_rate": _rate(sum(1 for r in rag if (r.get("retry_count") or 0) > 0), len(rag)),
        "llm_errors": llm_errors,
        "stages": stages,
        "bandit": bandit,
    }
