"""Spelling tolerance (relayrag.retrieval.spelling): a misspelt word is corrected to the collection's nearest
word, and only such a word — identifiers, numbers, words the collection has and correct English words it lacks
stay as typed. A tiny collection of our own; the end-to-end case is the one a new user hit on examples/pdfs
("labr cost of the stabliizer wirng change" → "I could not find an answer")."""

from __future__ import annotations

import pytest

from tests.conftest import write_docs

DOCS = {
    "maintenance.txt": (
        "Stabilizer wiring change. The labor cost of the stabilizer wiring change is 79 work-hours at $85 per "
        "hour, up to $6,715 per airplane. The RX-7 control unit uses relay K1 for the trim motor. Inspect the "
        "anemometer every 30 days and replace its bearings after 2,000 hours of operation."),
    "checks.txt": (
        "Background checks in November. Texas recorded 56,941 handgun checks and 51,670 long gun checks. "
        "Ohio recorded 21,550 handgun checks."),
}


@pytest.fixture
def tiny(ctx, tmp_path):
    from relayrag.ingest.pipeline import ingest
    assert not ingest(ctx, write_docs(tmp_path / "tiny", DOCS), "tiny").failed
    return ctx.snapshot("tiny")


@pytest.mark.parametrize("typed, corrected", [
    ("What is the labr cost of the stabilizer wiring change?",
     "What is the labor cost of the stabilizer wiring change?"),
    ("What is the labor cost of the stabliizer wirng change?",
     "What is the labor cost of the stabilizer wiring change?"),
    ("How many handgun chekcs were there in Texas?", "How many handgun checks were there in Texas?"),
    ("How often is the anemomter inspected?", "How often is the anemometer inspected?"),
    ("When are the \"bearigns\" replaced?", "When are the \"bearings\" replaced?"),
])
def test_misspelt_words_are_corrected_to_the_collections_nearest_word(tiny, typed, corrected):
    from relayrag.retrieval.spelling import respell
    assert respell(typed, tiny)[0] == corrected


@pytest.mark.parametrize("question", [
    "Which relay does the RX-8 control unit use?",          # an identifier one edit from RX-7
    "What does relay K2 drive?",                            # an identifier one edit from K1
    "What happens after 2,001 hours of operation?",         # a number
    "How often is the anemometer inspected?",               # a rare word the collection has
    "What is the boiling point of tungsten?",               # a correct word the collection lacks
    "Which USAF units use it?",                             # an acronym
    "テキサス州の拳銃チェックは何件ですか？",                   # Japanese: left as asked
])
def test_identifiers_numbers_known_and_correct_words_are_never_changed(tiny, question):
    from relayrag.retrieval.spelling import respell
    assert respell(question, tiny) == (question, [])


def test_the_nearest_and_then_most_frequent_word_wins():
    from collections import Counter

    from relayrag.retrieval.spelling import distance, nearest
    assert distance("chekcs", "checks", 2) == 1 and distance("labr", "labor", 1) == 1
    assert distance("abcdef", "uvwxyz", 2) == 3  # stops past the limit
    assert nearest("chekcs", Counter({"checks": 5, "chicks": 9})) == "checks"   # nearer beats more frequent
    assert nearest("cots", Counter({"cost": 2, "cats": 1, "coats": 7})) == "coats"  # equally near: the frequent
    assert nearest("wxyz", Counter({"labor": 3})) is None


def test_a_misspelt_question_is_answered_as_corrected_and_says_what_was_searched(tiny, ctx):
    from relayrag.engine.local import ask
    res = ask("What is the labr cost of the stabliizer wirng change?", "tiny", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert "79 work-hours" in res["answer"]
    assert "(searched for: What is the labor cost of the stabilizer wiring change?)" in res["answer"]
    rec = ctx.docstore.get_run(res["run_id"])
    assert rec["question"] == "What is the labr cost of the stabliizer wirng change?"  # the record keeps it as asked
    assert rec["respelled"]["changes"] == [["labr", "labor"], ["stabliizer", "stabilizer"], ["wirng", "wiring"]]
    right = ask("What is the labor cost of the stabilizer wiring change?", "tiny", ctx=ctx)
    assert "searched for" not in right["answer"] and not ctx.docstore.get_run(right["run_id"]).get("respelled")
