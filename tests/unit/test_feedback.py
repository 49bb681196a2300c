"""relayrag.feedback: validation, who may give and see verdicts, and what the bandit learns from them."""

from __future__ import annotations

import threading

import pytest

from relayrag import feedback
from relayrag.backends.docstore import SQLiteDocStore
from relayrag.errors import BadRequestError, NotFoundError
from relayrag.records import new_run
from relayrag.retrieval.bandit import HUMAN_WEIGHT, context_params, human_key


@pytest.fixture
def ds(tmp_path):
    store = SQLiteDocStore(tmp_path / "d.sqlite3")
    store.create_run("r1", new_run("r1", "What is the refund window?", "docs", route="rag", arm="bm25",
                                   arm_draws={"bm25": 0.9, "dense": 0.2}, bandit_context="latin",
                                   answer="30 days [1]."))
    store.create_run("refused", new_run("refused", "Who won in 1990?", "docs", route="rag", arm="dense",
                                        arm_draws={"dense": 0.7}, bandit_context="latin", answer="",
                                        found=False))
    store.create_run("forced", new_run("forced", "q", "docs", route="rag", arm="dense", answer="x"))
    store.create_run("secret", new_run("secret", "q", "hr", route="rag", arm="bm25", arm_draws={"bm25": 1}))
    return store


def test_parse_checks_every_rule():
    assert feedback.parse_feedback(verdict="👍").verdict == "up"
    assert feedback.parse_feedback(verdict="bad", reason="wrong", answer=" 30 days ").answer == "30 days"
    for fields, msg in [({"verdict": "meh"}, "verdict: must be one of up, down"),
                        ({"verdict": "down", "reason": "rude"}, "reason: must be one of wrong"),
                        ({"verdict": "up", "reason": "wrong"}, r"down\) verdict only"),
                        ({"verdict": "up", "answer": "x"}, r"down\) verdict only"),
                        ({"verdict": "down", "page": 3}, "needs the document"),
                        ({"verdict": "down", "doc": "a.pdf", "page": 0}, "page"),
                        ({"verdict": "down", "answer": "x" * (feedback.MAX_ANSWER_CHARS + 1)}, "answer"),
                        ({"verdict": "down", "doc": "d" * (feedback.MAX_DOC_CHARS + 1)}, "doc"),
                        ({"verdict": "down", "comment": "hi"}, "comment")]:
        with pytest.raises(BadRequestError, match=msg):
            feedback.parse_feedback(**fields)


def test_submit_needs_a_visible_existing_run_and_an_identity(ds):
    down = feedback.parse_feedback(verdict="down", reason="wrong")
    with pytest.raises(NotFoundError, match="no run 'nope'"):
        feedback.submit(ds, "nope", "alice", down, visible={"docs"})
    with pytest.raises(NotFoundError, match="no run 'secret'"):  # exists, but not in a visible collection
        feedback.submit(ds, "secret", "alice", down, visible={"docs"})
    with pytest.raises(BadRequestError, match="identity"):
        feedback.submit(ds, "r1", " ", down, visible={"docs"})
    assert ds.list_feedback("docs") == [] and ds.list_feedback("hr") == []


def test_rewards_follow_the_reasons(ds):
    def human(run_id, **kw):
        e = feedback.submit(ds, run_id, "alice", feedback.parse_feedback(**kw), visible={"docs"})
        return e["bandit"]

    assert human("r1", verdict="up") == {"latin/bm25/human": 1.0}
    assert human("r1", verdict="down") == {"latin/bm25/human": 0.0}
    assert human("r1", verdict="down", reason="wrong_source") == {"latin/bm25/human": 0.0}
    assert human("r1", verdict="down", reason="not_answered") == {"latin/bm25/human": 0.0}  # it answered
    assert human("r1", verdict="down", reason="outdated") == {}
    assert human("refused", verdict="down", reason="not_answered") == {}  # an honest refusal is not punished
    assert human("refused", verdict="down", reason="wrong") == {"latin/dense/human": 0.0}
    assert human("forced", verdict="up") == {}  # a forced arm is an experiment: it teaches nothing
    # three replacements on r1 and one on refused: each run holds only alice's last verdict
    arms = ds.get_arms("docs")
    assert arms.get(human_key("latin", "bm25"), (1.0, 1.0)) == (1.0, 1.0)
    assert arms[human_key("latin", "dense")] == (1.0, 2.0)


def test_identity_sees_its_own_verdicts_unless_admin(ds):
    up = feedback.parse_feedback(verdict="up")
    feedback.submit(ds, "r1", "alice", up, visible={"docs"})
    feedback.submit(ds, "r1", "bob", feedback.parse_feedback(verdict="down", reason="wrong"), visible={"docs"})
    mine = feedback.list_verdicts(ds, ["docs"], identity="alice")
    assert [e["identity"] for e in mine] == ["alice"]
    every = feedback.list_verdicts(ds, ["docs"], identity="alice", admin=True)
    assert sorted(e["identity"] for e in every) == ["alice", "bob"]
    assert [e["identity"] for e in feedback.list_verdicts(ds, ["docs"], identity="x", admin=True,
                                                          verdict="down")] == ["bob"]
    share = feedback.down_share(every, "arm")
    assert share == [{"arm": "bm25", "n": 2, "down": 1, "share": 0.5}]
    # the stored entry holds nothing the run does not hold, except who said what
    assert "question" not in every[0] and every[0]["collection"] == "docs"


def test_verdicts_move_the_thompson_posterior_with_the_human_weight(ds):
    before = context_params(ds.get_arms("docs"), "latin", ["bm25", "dense"])
    feedback.submit(ds, "r1", "alice", feedback.parse_feedback(verdict="up"), visible={"docs"})
    after = context_params(ds.get_arms("docs"), "latin", ["bm25", "dense"])
    assert after["bm25"] == (before["bm25"][0] + HUMAN_WEIGHT, before["bm25"][1])
    assert after["dense"] == before["dense"]
    assert context_params(ds.get_arms("docs"), "latin", ["bm25"], human_weight=0.0)["bm25"] == before["bm25"]


def test_concurrent_submissions_are_counted_once_each(ds):
    """16 identities, each giving 👎 then 👍 from its own thread: the posterior holds exactly 16 👍."""
    errors = []

    def go(i):
        try:
            for v in ("down", "up"):
                feedback.submit(ds, "r1", f"u{i}", feedback.parse_feedback(verdict=v), visible={"docs"})
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert ds.get_arms("docs")[human_key("latin", "bm25")] == (17.0, 1.0)
