"""Answers about the entity the question names, not a sibling of it (issue 31, stages/entity_scope.py):

- a sibling name: a sentence under the heading of "Northern Lark" (or after a sentence naming it) does not answer a
  question about "Northern Wren", which it never names; a one-entity document that names its subject only in its
  opening keeps answering;
- a contrasting modifier: "her working weight is 101 tonnes" does not answer "the service weight", nor "A primary
  carer receives …" a question about a secondary carer, nor the day fare a question about the night fare, while a
  synonym the collection does not set apart keeps answering.

Small inputs of their own: two locomotives, an aircraft report, a leave policy, a fares notice."""

from __future__ import annotations

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.stages.entity_scope import (
    collection_kinds, modifier_pairs, off_scope, other_kind, question_names, sibling_name)
from relayrag.stages.hallucination_check import responsive

LOCOS = """Locomotive Particulars

The depot keeps two locomotives of the same class for the coastal line.

Northern Lark

Northern Lark is a diesel locomotive built in 1999 by Corby Works. She has an overall length of 21.2 metres and her
service weight is 98 tonnes. Her top speed is 120 km/h and her fuel tank holds 4,500 litres.

Northern Wren

Northern Wren is a diesel locomotive built in 2003 by Corby Works. She has an overall length of 21.6 metres and her
working weight is 101 tonnes.
"""

REPORT = """Incident Report 2026-04

The aircraft Skylark Seven left Brno at 09:10 on 3 March 2026 for a training flight with two crew on board.

Flight details

The flight lasted 95 minutes. The cruising speed was 140 knots at 6,000 feet, and the aircraft landed at 10:45.
"""


@pytest.mark.parametrize("question,text,context,sibling", [
    # the sentence's heading names the sibling
    ("What is the top speed of Northern Wren?", "Her top speed is 120 km/h.", "Locomotive Particulars\nNorthern Lark",
     "Northern Lark"),
    # the sentence before names it
    ("How long is the MV Heron Star?", "She has a length overall of 64.1 metres.",
     "Fleet\nMV Osprey Star is a ferry built in 2014.", "MV Osprey Star"),
    # a title naming the operator, which shares the ship's first word
    ("What is the service speed of MV Calder Spirit?", "Two units give her a service speed of 14.0 knots.",
     "Calder Bay Ferries Ltd", "Calder Bay Ferries Ltd"),
    # a person sharing a title and surname
    ("What is the extension of Dr Anna Berg?", "Her extension is 4412.", "Staff list\nDr Jonas Berg, cardiology",
     "Dr Jonas Berg"),
    # a name with a head noun: another name before the same head
    ("When did the Leeds service centre open?", "It opened in 2019 with twelve staff.",
     "History\nThe Porto service centre", "Porto service centre"),
    # Japanese: katakana names whose parts are split by ・
    ("ヘロン・ポイント号の全長は何メートルですか？", "全長は62.4メートルである。", "船舶要目\nケストレル・ポイント号",
     "ケストレル・ポイント"),
])
def test_sibling_names_in_the_local_context(question, text, context, sibling):
    assert sibling_name(question, text, context) == sibling
    assert off_scope(question, text, context) is not None


@pytest.mark.parametrize("question,text,context", [
    # the name said in full, in the sentence, its heading or the sentence before
    ("What is the top speed of Northern Lark?", "Her top speed is 120 km/h.", "Locomotive Particulars\nNorthern Lark"),
    ("How long is the MV Heron Star?", "She has a length overall of 64.1 metres.",
     "Fleet\nMV Heron Star is a ferry built in 2016.\nMV Osprey Star"),
    # a one-entity document: the subject named only in the opening, no other name sharing part of it here
    ("What was the cruising speed of the Skylark Seven?", "The cruising speed was 140 knots at 6,000 feet.",
     "Incident Report 2026-04\nFlight details"),
    ("When did the Leeds service centre open?", "The Leeds service centre opened in 2019.", "History"),
    ("ヘロン・ポイント号の全長は何メートルですか？", "全長は64.1メートルである。", "船舶要目\nヘロン・ポイント号"),
])
def test_the_right_entity_keeps_answering(question, text, context):
    assert sibling_name(question, text, context) is None


def test_question_names_and_modifier_pairs():
    names = question_names("When did the Leeds service centre open?")
    assert [n.head for n in names] == [("servic", "centr")]
    assert len(question_names("What is the air draught of MV Heron Point?")[0].words) == 3
    assert modifier_pairs("What is the air draught of MV Heron Point?") == [("air", "draught")]
    assert ("secondari", "carer") in modifier_pairs("How many weeks of leave does a secondary carer get?")
    assert collection_kinds("What is the night fare?", ["Day fare: 2 EUR.", "The night fare is 3 EUR."]) == \
        {("night", "fare")}


@pytest.mark.parametrize("question,text,kinds,absent,other", [
    ("What is the air draught of the Heron?", "Her loaded draught is 3.0 metres.", {("air", "draught")}, set(),
     "loaded draught"),
    ("How many weeks of leave does a secondary carer get?", "A primary carer receives 18 weeks of leave.", set(),
     {"secondari"}, "primary carer"),
    ("How much is the night fare to the airport?", "The day fare to the airport is EUR 4.20.", {("night", "fare")},
     set(), "day fare"),
    ("What is the service weight of Northern Wren?", "Her working weight is 101 tonnes.", {("servic", "weight")}, set(),
     "working weight"),
])
def test_contrasting_modifiers(question, text, kinds, absent, other):
    assert other_kind(question, text, "", kinds, absent) == other


@pytest.mark.parametrize("question,text,context,kinds,absent", [
    # the question's modifier is said here
    ("What is the air draught of the Heron?", "Her air draught, not her loaded draught, is 21 metres.", "", set(), set()),
    ("What is the night fare?", "The day fare is EUR 4.20.", "Night fares", {("night", "fare")}, set()),
    # a synonym the collection does not set apart ("yearly leave" is written nowhere; "yearly" is in the documents)
    ("How many days of yearly leave do I get?", "Staff get 25 days of annual leave.", "", set(), set()),
    ("What is the maximum speed of the Lark?", "Her top speed is 120 km/h.", "", set(), set()),
])
def test_same_kind_keeps_answering(question, text, context, kinds, absent):
    assert other_kind(question, text, context, kinds, absent) is None


def test_grounded_needs_the_question_s_own_entity():
    q = "What is the top speed of Northern Wren?"
    sent = {"text": "Her top speed is 120 km/h.", "context": "Locomotive Particulars\nNorthern Lark", "cites": [1]}
    assert not responsive(q, [sent])
    q = "What is the top speed of Northern Lark?"
    assert responsive(q, [sent])
    q = "What is the service weight of Northern Wren?"
    sent = {"text": "Her working weight is 101 tonnes.", "context": "Northern Wren", "cites": [1]}
    assert not responsive(q, [sent], kinds={("servic", "weight")})
    assert responsive(q, [sent])  # nothing says the collection tells service and working weight apart


def test_sibling_locomotive_is_refused_and_the_right_one_answers(ctx, tmp_path):
    d = tmp_path / "locos"
    d.mkdir()
    (d / "locos.txt").write_text(LOCOS, encoding="utf-8")
    (d / "report.txt").write_text(REPORT, encoding="utf-8")
    assert not ingest(ctx, d, "lc").failed
    res = ask("What is the top speed of Northern Wren?", "lc", ctx=ctx)
    assert not res["grounded"] and "120" not in res["answer"], res["answer"]
    res = ask("What is the fuel tank capacity of Northern Wren?", "lc", ctx=ctx)
    assert not res["grounded"] and "4,500" not in res["answer"], res["answer"]
    res = ask("What is the top speed of Northern Lark?", "lc", ctx=ctx)
    assert res["grounded"] and "120 km/h" in res["answer"], res["answer"]
    # another kind of weight: the collection writes "service weight" (of the Lark), so it tells the kinds apart
    res = ask("What is the service weight of Northern Wren?", "lc", ctx=ctx)
    assert not res["grounded"] and "101" not in res["answer"], res["answer"]
    res = ask("What is the working weight of Northern Wren?", "lc", ctx=ctx)
    assert res["grounded"] and "101 tonnes" in res["answer"], res["answer"]
    # the one-entity report names its aircraft only in its opening
    res = ask("How long did the flight of the Skylark Seven last?", "lc", ctx=ctx)
    assert res["grounded"] and "95 minutes" in res["answer"], res["answer"]


FLEET_CHUNK = """MV Tern Point
MV Tern Point is a ferry built in 2016. She has a beam of 15.6 metres.

MV Skua Spirit
MV Skua Spirit is a passenger launch built in 1998."""


def test_sentence_in_another_entity_s_section():
    """A document laid out by entity: the question's name heads a section of the chunk, the sentence sits under a
    heading of the same pattern (MV …) that it does not name; a one-entity report keeps answering."""
    context = "Fleet\nMV Tern Point\nMV Tern Point is a ferry built in 2016."
    for q in ("What is the beam of Skua Spirit?", "How wide is the Skua Spirit?"):
        assert sibling_name(q, "She has a beam of 15.6 metres.", context, FLEET_CHUNK) == "MV Tern Point"
        assert sibling_name(q, "She has a beam of 15.6 metres.", context) is None  # without the chunk: unseen
    assert sibling_name("What is the beam of Tern Point?", "She has a beam of 15.6 metres.", context,
                        FLEET_CHUNK) is None
    report = "Skylark Seven\nThe aircraft left Brno at 09:10.\n\nFlight details\nThe flight lasted 95 minutes."
    assert sibling_name("How long did the flight of the Skylark Seven last?", "The flight lasted 95 minutes.",
                        "Incident Report\nFlight details", report) is None
