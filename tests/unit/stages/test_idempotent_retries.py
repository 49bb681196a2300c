"""A stage re-run on a 504 retry must not double-count (issue 10 item 6).

Cloud Workflows retries a stage call on 504 (`http.default_retry_predicate`) even when the function finished
and only its response was lost (a gateway timeout). The workflow sends `attempt` (its loop round) with every
call; a repeated (run_id, stage, attempt) replays the stored response and writes nothing: no second bandit
reward, no second retry_count increment, no second trace entry."""

from __future__ import annotations

from relayrag.engine.local import ask, local_transport
from relayrag.ingest.pipeline import ingest


def _lose_first_response_of(stage: str, calls: list):
    def transport(method, url, body, timeout):
        status, out = local_transport(method, url, body, timeout)
        calls.append((url.rsplit("/", 1)[-1], body.get("attempt"), status))
        if url.endswith("/" + stage) and sum(1 for c in calls if c[0] == stage) == 1:
            return 504, {"error": "upstream request timeout"}  # the stage ran; its answer never arrived
        return status, out
    return transport


def test_a_retried_grade_rewards_the_bandit_once(ctx, small_corpus, monkeypatch):
    import relayrag.engine.interpreter as interp
    monkeypatch.setattr(interp.time, "sleep", lambda s: None)  # the workflow's backoff, not under test
    ingest(ctx, small_corpus, "c")
    calls: list = []
    result = ask("How many worker bees can a colony contain?", "c", transport=_lose_first_response_of("grade", calls))
    grades = [c for c in calls if c[0] == "grade"]
    assert len(grades) == 2 and grades[0][1] == grades[1][1] == 0  # the same call, retried
    rec = ctx.docstore.get_run(result["run_id"])
    assert len(rec["rewards"]) == 1 and rec["retry_count"] == 0
    assert [s["name"] for s in result["stages"]].count("grade") == 1
    # the win counts (keys "<context>/<arm>"; "/dcg" keys hold graded quality): Beta(1,1) prior, each reward adds 1
    pulls = sum(a + b - 2.0 for k, (a, b) in ctx.docstore.get_arms("c").items() if not k.endswith("/dcg"))
    assert 0 < pulls <= len(rec["rewards"][0]["arm_rewards"]) + 1e-9


def test_a_later_round_is_not_a_replay(ctx, small_corpus):
    """Same stage, next attempt: runs again (the retrieval retry loop's second round)."""
    from relayrag.stages.base import execute
    from relayrag.stage_registry import STAGES
    ingest(ctx, small_corpus, "c")
    execute(STAGES["classify"], {"run_id": "r", "question": "How tall is Tokyo Tower?", "collection": "c"}, ctx)
    execute(STAGES["hyde"], {"run_id": "r", "attempt": 0}, ctx)
    first = execute(STAGES["retrieve"], {"run_id": "r", "attempt": 0, "arm": "bm25"}, ctx)
    again = execute(STAGES["retrieve"], {"run_id": "r", "attempt": 0, "arm": "bm25"}, ctx)
    later = execute(STAGES["retrieve"], {"run_id": "r", "attempt": 1, "arm": "bm25"}, ctx)
    assert first == again and later[0] == 200
    assert [t["name"] for t in ctx.docstore.get_trace("r")].count("retrieve") == 2
