"""`grounded` means the answer answers the question's own predicate and qualifiers (issue 31), not only that it
quotes a sentence of the right document with a value of the asked type:

- the predicate: "Who can answer my questions about the locker procedure?" is not answered by the role that lost
  keys are reported to, a sentence that says nothing of what is asked beyond what its title says (the procedure);
  nor 「規程を改定するときは誰が承認しますか」 by the rule of who approves a purchase;
- another named thing in the slot of the question's: "When did the Ghent service centre open?" is not answered by "The
  Antwerp sales and service office was added in 2015." (Ghent is named only in a list of the same block);
- a qualifier: "the daily allowance for overseas training" / 「海外研修の日当」 is not answered by the article on
  the (domestic) daily allowance when the documents speak of overseas training elsewhere.

Small inputs of their own: a locker procedure, a depot history, training rules in English and Japanese."""

from __future__ import annotations

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.stages.answerability import Support
from relayrag.stages.hallucination_check import responsive

LOCKERS = """Locker Allocation Procedure

Purpose: to make sure every employee who needs a locker gets one.

Allocation
Lockers are assigned by the facilities team at least 2 days before the start date.
Lost keys must be reported to the Site Security Coordinator.
"""

FOOTER = """
For questions about this document, contact the Workplace Desk at workplace@example.test.
"""

PARKING = """Parking Rules

Employees park in the north car park. Visitors park next to the reception.
""" + FOOTER

DEPOTS = """About Calder Freight

History

The Dover depot opened in 1998 and the Calais service centre in 2006.
The Antwerp sales and service office was added in 2015.

Today

- Service centres: Calais (France) and Ghent (Belgium)
- Staff: 420 at the end of 2026
"""

TRAINING = """# Training Rules

## Article 4 (Overseas training)

Overseas training is governed by the separate overseas training rules.

## Article 5 (Daily allowance)

The daily allowance is EUR 30 for each training day.
"""

TRAINING_JA = """# 研修旅費規程

## 第3条（受講の承認）

研修を受講する者は、事前に所属課長の承認を得なければならない。

## 第4条（海外研修）

海外研修の取扱いについては、別に定める規程による。

## 第5条（日当）

日当は、日帰り研修の場合は1日につき1,500円、宿泊を伴う研修の場合は1日につき2,500円を支給する。
"""


def test_predicate_and_qualifier_helpers():
    from relayrag.stages.answer_shape import names_another
    from relayrag.stages.responsive import missing_qualifiers, qualifiers, unanswered_predicate
    q = "Who can answer my questions about the locker allocation procedure?"
    context = "Locker Allocation Procedure\nAllocation"
    assert unanswered_predicate(q, "Lost keys must be reported to the Site Security Coordinator.", context)
    assert not unanswered_predicate(q, "For questions about this document, contact the Workplace Desk.", context)
    # a heading or the sentence before that restates the question says its predicate: the answer under it need not
    assert not unanswered_predicate("Who replaces a lost badge?", "The reception desk does, within a day.",
                                    "Badges\nWho replaces a lost badge?")
    # an act the documents never name is not answered by a rule about another one
    assert unanswered_predicate("Who do I ask about the locker allocation procedure?",
                                "Lockers are assigned by the facilities team.", context)
    q = "規程を改定するときは誰が承認しますか？"
    assert unanswered_predicate(q, "研修を受講する者は、事前に所属課長の承認を得なければならない。",
                                "研修規程\n第3条（受講の承認）")
    assert qualifiers("What is the daily allowance for overseas training?") == ["overseas"]
    assert qualifiers("海外研修の日当はいくらですか？") == ["海外"]
    assert missing_qualifiers("海外研修の日当はいくらですか？", "日当は、研修1日につき1,500円を支給する。",
                              "研修規程\n第5条（日当）")
    assert not missing_qualifiers("海外研修の日当はいくらですか？", "日当は1日につき5,000円とする。", "第9条（海外研修の日当）")
    assert not missing_qualifiers("What is the daily allowance for overseas training?", "The allowance is EUR 30.",
                                  "Daily allowance", absent={"oversea"})  # the documents never say it
    sup = Support(0.8, 0.5, 1, 0.5, 0.8)
    assert names_another("When did the Ghent service centre open?", "The Antwerp sales and service office was added in 2015.",
                         sup)
    assert not names_another("When did the Ghent service centre open?", "The service centre opened in 2015, said Ms Baker.",
                             Support(0.8, 1.0, 1, 1.0, 0.8))


def test_grounded_needs_the_predicate_and_qualifiers():
    q = "Who can answer my questions about the locker allocation procedure?"
    ctx = "Locker Allocation Procedure\nAllocation"
    assert not responsive(q, [{"text": "Lost keys must be reported to the Site Security Coordinator.", "context": ctx}])
    assert responsive(q, [{"text": "For questions about this document, contact the Workplace Desk.", "context": ctx}])
    q = "海外研修の日当はいくらですか？"
    assert not responsive(q, [{"text": "日当は、研修1日につき1,500円を支給する。", "context": "研修規程\n第5条（日当）"}])


def test_role_of_another_predicate_is_not_grounded(ctx, tmp_path):
    d = tmp_path / "lockers"
    d.mkdir()
    (d / "lockers.txt").write_text(LOCKERS, encoding="utf-8")
    (d / "parking.txt").write_text(PARKING, encoding="utf-8")  # questions are answered for another document
    assert not ingest(ctx, d, "lk").failed
    res = ask("Who can answer my questions about the locker allocation procedure?", "lk", ctx=ctx)
    assert not res["grounded"], res["answer"]  # the coordinator receives lost keys; nobody is named for questions
    (d / "lockers.txt").write_text(LOCKERS + FOOTER, encoding="utf-8")
    assert not ingest(ctx, d, "lk").failed
    res = ask("Who can answer my questions about the locker allocation procedure?", "lk", ctx=ctx)
    assert res["grounded"] and "Workplace Desk" in res["answer"], res["answer"]


def test_other_name_in_the_slot_is_not_grounded(ctx, tmp_path):
    d = tmp_path / "depots"
    d.mkdir()
    (d / "about.md").write_text(DEPOTS, encoding="utf-8")
    assert not ingest(ctx, d, "dp").failed
    res = ask("When did the Ghent service centre open?", "dp", ctx=ctx)
    assert not res["grounded"], res["answer"]
    res = ask("When did the Calais service centre open?", "dp", ctx=ctx)
    assert res["grounded"] and "2006" in res["answer"], res["answer"]


def test_missing_qualifier_is_not_grounded(ctx, tmp_path):
    d = tmp_path / "training"
    d.mkdir()
    (d / "rules.md").write_text(TRAINING, encoding="utf-8")
    (d / "rules_ja.md").write_text(TRAINING_JA, encoding="utf-8")
    assert not ingest(ctx, d, "tr").failed
    # the rule for the unqualified variant (or for another act) is no grounded answer; a referral to the separate
    # overseas rules may be
    for question, wrong in (("What is the daily allowance for overseas training?", "EUR 30"),
                            ("海外研修の日当はいくらですか？", "1,500円"),
                            ("研修旅費規程を改定するときは誰が承認しますか？", "所属課長")):
        res = ask(question, "tr", ctx=ctx)
        assert not (res["grounded"] and wrong in res["answer"]), (question, res["answer"])
    for question, expected in (("What is the daily allowance for a training day?", "EUR 30"),
                               ("研修の日当はいくらですか？", "1,500円"),
                               ("研修を受講するときは誰の承認が必要ですか？", "所属課長")):
        res = ask(question, "tr", ctx=ctx)
        assert res["grounded"] and expected in res["answer"], (question, res["answer"])


INCIDENT = """Marine Incident Summary

Background
On 3 May 2024, the ferry Marlin 7 operated by Skerry Lines was involved in an accident near Holm Point after an
engine failure. The accident injured 12 passengers, who were treated on board.
"""


def test_count_names_what_it_counts(ctx, tmp_path):
    from relayrag.stages.answerability import counted_things
    assert counted_things("How many fatalities resulted from the Marlin 7 accident?") == ["fatal", "result"]
    d = tmp_path / "incident"
    d.mkdir()
    (d / "incident.txt").write_text(INCIDENT, encoding="utf-8")
    assert not ingest(ctx, d, "inc").failed
    res = ask("How many fatalities resulted from the Skerry Lines Marlin 7 accident?", "inc", ctx=ctx)
    assert not res["grounded"], res["answer"]  # a date in a sentence about the accident counts no fatalities
    res = ask("How many passengers were injured in the Marlin 7 accident?", "inc", ctx=ctx)
    assert res["grounded"] and "12 passengers" in res["answer"], res["answer"]


FIGURES = """# Northwind Bakery at a glance

## Key figures

| Year | Sales | Loaves baked |
|------|-------|--------------|
| 2021 | GBP 4.1 million | 310,000 |
| 2022 | GBP 4.6 million | 342,500 |
| 2023 | GBP 5.2 million | 388,000 |
"""


def test_row_named_by_its_year_answers(ctx, tmp_path):
    d = tmp_path / "figures"
    d.mkdir()
    (d / "figures.md").write_text(FIGURES, encoding="utf-8")
    assert not ingest(ctx, d, "fig").failed
    res = ask("What were the sales in 2022?", "fig", ctx=ctx)  # the row whose label is the question's year
    assert res["grounded"] and "4.6 million" in res["answer"] and "5.2" not in res["answer"], res["answer"]
    res = ask("What were the sales in 2019?", "fig", ctx=ctx)
    assert not res["grounded"], res["answer"]
