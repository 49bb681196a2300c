"""A bounded load test on the emulated cloud's state (issue 30 C6): 20 concurrent asks on one collection, run
state and bandit counters in the real Firestore emulator (127.0.0.1), every stage in-process. No run may fail
because of a reward write: neither from the concurrent increments themselves nor when Firestore answers
contention (ABORTED) on a share of them, which the test injects since the emulator rarely contends."""

from __future__ import annotations

import threading
import uuid

import pytest

from relayrag.backends.firestore import FirestoreDocStore
from relayrag.context import StageContext, build_blobstore, set_default_context
from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.settings import load_settings

QUESTIONS = ["How many worker bees can a colony contain?", "How much does a residential solar panel produce?",
             "How many eggs does the queen lay per day?", "How much output do solar panels lose per year?"]


@pytest.mark.parametrize("contended_share", [0, 3])
def test_twenty_concurrent_asks_never_fail_on_reward_writes(firestore_emulator_client, home, small_corpus,
                                                            contended_share):
    from google.api_core import exceptions as gexc
    s = load_settings()
    docstore = FirestoreDocStore(firestore_emulator_client, f"load{uuid.uuid4().hex[:8]}")
    ctx = StageContext(s, build_blobstore(s), docstore)
    set_default_context(ctx)
    assert not ingest(ctx, small_corpus, "c").failed
    real, lock, calls = docstore.reward_arms, threading.Lock(), []

    def reward_arms(collection, rewards, *, reward_id):
        with lock:
            calls.append(reward_id)
            n = len(calls)
        if contended_share and n % contended_share == 0:
            raise gexc.Aborted("Too much contention on these documents. Please try again.")
        return real(collection, rewards, reward_id=reward_id)
    docstore.reward_arms = reward_arms  # type: ignore[method-assign]

    results, errors = {}, []

    def worker(i):
        try:
            results[i] = ask(QUESTIONS[i % len(QUESTIONS)], "c", ctx=ctx)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not any(t.is_alive() for t in threads) and not errors, errors
    assert len(results) == 20 and all(r["answer"] for r in results.values())
    recs = [docstore.get_run(r["run_id"]) for r in results.values()]
    failed = [r for rec in recs for r in rec.get("rewards", []) if r.get("reward_error")]
    assert len(failed) == (len(calls) // contended_share if contended_share else 0)
    applied = len(calls) - len(failed)
    arms = docstore.get_arms("c")
    wins = sum(a + b - 2.0 for k, (a, b) in arms.items() if not k.endswith("/dcg"))
    assert applied == 0 or wins > 0  # the applied rewards reached the sharded counters
