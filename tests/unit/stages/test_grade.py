"""grade: decide relevance, reward the arms, route. The calibrated judge without an LLM, the LLM's yes/no
with one, the judge (named as a fallback) when the LLM fails; an answerable question passes every time."""

from tests.unit.stages.conftest import call, prepare

METHOD = {"no-llm": "calibrated", "llm": "llm", "llm-failure": "calibrated (llm failed)"}


def test_grade_passes_a_relevant_candidate(mode_ctx):
    mode, ctx, llm = mode_ctx
    prepare(ctx, "grade")
    out = call("grade", {"run_id": "r"}, ctx)
    assert out["method"] == METHOD[mode] and out["route"] == "pass" and out["n_relevant"] >= 1
    rec = ctx.docstore.get_run("r")
    assert rec["relevant"] and rec["retry_count"] == 0 and rec["reward"] == out["reward"]
    assert ("llm_error" in out) == (mode == "llm-failure")


def test_nothing_relevant_retries_once_then_passes(ctx, small_corpus):
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "t")
    prepare(ctx, "grade", question="What is the boiling point of mercury in kelvin?")
    first = call("grade", {"run_id": "r"}, ctx)
    assert first["route"] == "retry" and first["retry_count"] == 1
    rec = ctx.docstore.get_run("r")
    assert first["n_relevant"] == 0 and first.get("reward") is None and rec["rewards"][-1]["basis"] is None


def test_a_chunk_grade_keeps_rewards_the_arms_when_the_judge_rates_everything_below_half(ctx, small_corpus,
                                                                                           monkeypatch):
    """Issue seen on examples/pdfs: grade kept 3 chunks (n_relevant 3) and the answer cited one, but the reward
    judge, fitted on SciFact, rated that table row 0.37, so the run had reward None and the bandit learnt nothing
    from it. A judge that ranks the chunks as the real one but rates them all
    below 0.5 stands in for it here."""
    from relayrag.ingest.pipeline import ingest
    from relayrag.stages import grade
    ingest(ctx, small_corpus, "t")
    real = grade.judge
    monkeypatch.setattr(grade, "judge", lambda f, readable: {r: 0.3 * p for r, p in real(f, readable).items()})
    prepare(ctx, "grade")  # the bandit chooses the arm, so the run teaches
    out = call("grade", {"run_id": "r"}, ctx)
    rec = ctx.docstore.get_run("r")
    assert out["n_relevant"] >= 1 and out["reward"] is not None and out["reward"] > 0
    assert rec["rewards"][-1]["basis"] == "grade" and rec["rewards"][-1]["arm_rewards"]
    stored = ctx.docstore.get_arms("t")
    assert set(stored) == {f"latin/{a}{s}" for a in rec["arm_lists"] for s in ("", "/dcg")}


def test_the_record_names_the_judge_when_it_found_the_relevant_chunk(ctx, small_corpus):
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "t")
    prepare(ctx, "grade", question="How many worker bees can a colony contain?")  # the judge: P >= 0.5 here
    out = call("grade", {"run_id": "r"}, ctx)
    assert out["reward"] is not None and ctx.docstore.get_run("r")["rewards"][-1]["basis"] == "judge"


def test_a_contended_reward_write_never_fails_the_run(ctx, small_corpus, monkeypatch):
    """Firestore answers contention on hot documents (ABORTED / DEADLINE_EXCEEDED,
    https://cloud.google.com/firestore/docs/solutions/counters); grade must still route, and say why no reward
    was recorded. Before the fix the exception escaped grade: HTTP 500, which the workflow does not retry."""
    from google.api_core import exceptions as gexc

    from relayrag.engine.local import ask
    from relayrag.ingest.pipeline import ingest
    ingest(ctx, small_corpus, "c")
    calls = []

    def contended(collection, rewards, *, reward_id):
        calls.append(reward_id)
        raise gexc.Aborted("Too much contention on these documents. Please try again.")

    monkeypatch.setattr(ctx.docstore, "reward_arms", contended)
    result = ask("How many worker bees can a colony contain?", "c")
    assert calls, "the bandit update was attempted"
    assert result["answer"] and result.get("error") is None
    rec = ctx.docstore.get_run(result["run_id"])
    assert rec["rewards"][0]["reward_error"].startswith("Aborted")
    assert ctx.docstore.get_arms("c") == {}
