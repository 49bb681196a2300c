"""Aggregate metrics computed from run records and traces (never counted by hand).

`summarize(runs, traces)` takes run records (docstore `list_runs`) and their traces and returns:
- stages: per stage name, n, p50_ms and p95_ms (nearest-rank percentiles of the trace entries' `ms`);
- runs, refusal_rate (refused / runs that reached an answer), regenerate_rate (rag runs with
  regen_count > 0 / rag runs), retry_rate (rag runs with retry_count > 0 / rag runs), llm_errors (runs
  with at least one stage that fell back because its LLM call failed), routes (count per route);
- bandit: per (collection, arm), pulls (rewards the arm got from a bandit-chosen run, as the grade stage
  records them in `rewards`) and mean reward; forced arms (`--arm`, no `arm_draws`) are not pulls.
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
    """One row per reward a bandit-chosen arm received, oldest first: {collection, arm, reward, at, run_id}."""
    out = []
    for r in sorted(runs, key=lambda r: r.get("created_at") or 0):
        if not r.get("arm_draws"):
            continue
        for rw in r.get("rewards") or []:
            if rw.get("arm") and rw.get("reward") is not None:
                out.append({"collection": r.get("collection"), "arm": rw["arm"], "reward": float(rw["reward"]),
                            "at": r.get("created_at"), "run_id": r.get("run_id")})
    return out


def summarize(runs: list[dict], traces: dict[str, list[dict]]) -> dict:
    by_stage: dict[str, list[float]] = defaultdict(list)
    for run_id, trace in traces.items():
        for t in trace:
            if isinstance(t.get("ms"), (int, float)):
                by_stage[t["name"]].append(float(t["ms"]))
    stages = {name: {"n": len(v), "p50_ms": percentile(v, 50), "p95_ms": percentile(v, 95)}
              for name, v in by_stage.items()}
    answered = [r for r in runs if r.get("answer") is not None or r.get("refused")]
    rag = [r for r in runs if r.get("route") == "rag"]
    routes: dict[str, int] = defaultdict(int)
    for r in runs:
        routes[r.get("route") or "unfinished"] += 1
    llm_errors = sum(1 for r in runs if any(t.get("llm_error") for t in traces.get(r.get("run_id"), [])))
    pulls: dict[tuple[str, str], list[float]] = defaultdict(list)
    for p in bandit_pulls(runs):
        pulls[(p["collection"], p["arm"])].append(p["reward"])
    bandit = [{"collection": c, "arm": a, "pulls": len(v), "mean_reward": round(sum(v) / len(v), 4)}
              for (c, a), v in sorted(pulls.items())]
    return {
        "runs": len(runs),
        "routes": dict(routes),
        "refusal_rate": _rate(sum(1 for r in answered if r.get("refused")), len(answered)),
        "regenerate_rate": _rate(sum(1 for r in rag if (r.get("regen_count") or 0) > 0), len(rag)),
        "retry_rate": _rate(sum(1 for r in rag if (r.get("retry_count") or 0) > 0), len(rag)),
        "llm_errors": llm_errors,
        "stages": stages,
        "bandit": bandit,
    }
