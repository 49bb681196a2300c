"""Title and summary questions (issue 31), each class with a small corpus of its own:

- a question for a document's title, name or reference number ("What is the title of the … page?", "What is the
  … page called?", "What is the reference number of the … manual?", 「…のタイトルは？」「…規程の名称は？」) is
  answered by the title (HTML <title>, Markdown H1, a text file's heading line) or the reference line of the
  document that matches the rest of the question, cited — never by a body sentence, and not at all when no
  document of that description is in the collection;
- a summary question that names a document ("What is the delivery van policy about?", "Summarise …",
  「…規程の概要は？」) summarises that document (title + purpose or lead), whatever ranked first; one that names
  none, in a collection of several, says which document it summarises."""

from __future__ import annotations

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest

FAQ_HTML = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Payroll Help Desk - Frequently Asked Questions</title></head><body>
<h1>Payroll questions</h1>
<p>This page gathers what staff most often ask the payroll team of Brightloaf Bakeries.</p>
<h2>When is salary paid?</h2>
<p>Salary is paid on the 25th of each month by bank transfer.</p>
<h2>How do I change my bank account?</h2>
<p>Send the new account details to payroll at least ten days before the payment date.</p>
</body></html>
"""

MANUAL_MD = """# Kitchen Hygiene Manual for Ovens and Mixers

Manual KH-07, edition 2. Owner: Quality department.

This manual explains how bakery staff clean and check the ovens and dough mixers every shift.

## Ovens

Ovens are cleaned with a food-safe degreaser after the last bake of the day.

## Mixers

Mixer bowls are washed with hot water at 80 degrees after each batch of dough.
"""

VAN_TXT = """DELIVERY VAN POLICY
Brightloaf Bakeries - Policy FL-19
Effective date: 1 March 2026

1. Purpose
This policy sets out how the bakery's delivery vans are booked, driven and refuelled.

2. Booking
Drivers book a van in the FleetBook app by 17:00 on the day before the delivery round.
Vans are refuelled whenever the tank is below one quarter.
"""

UNIFORM_JA = """# 制服貸与規程

ブライトローフ製パン株式会社

第1条（目的）
この規程は、従業員に貸与する制服の取扱いについて、必要な事項を定めることを目的とする。

第2条（貸与枚数）
制服は、一人につき3着を貸与する。

第3条（返却）
退職する者は、制服を最終出勤日までに返却しなければならない。
"""


VAN_LOG_MD = """# Delivery Round Log, week 12

Van V-3 did the delivery round to the north shops on Monday; the van was booked by driver Ana Ruiz.
Van V-5 did the delivery round to the station kiosks on Tuesday; the delivery van was refuelled at noon.
Van V-3 did the delivery round to the hospital on Wednesday; the van was driven by Tom Hale.
"""


@pytest.fixture
def bakery(ctx, tmp_path):
    d = tmp_path / "bakery"
    d.mkdir()
    (d / "payroll_faq.html").write_text(FAQ_HTML, encoding="utf-8")
    (d / "hygiene_manual.md").write_text(MANUAL_MD, encoding="utf-8")
    (d / "delivery_van_policy.txt").write_text(VAN_TXT, encoding="utf-8")
    (d / "uniform_kitei_ja.md").write_text(UNIFORM_JA, encoding="utf-8")
    (d / "van_log.md").write_text(VAN_LOG_MD, encoding="utf-8")  # says "delivery van" more than the policy does
    assert not ingest(ctx, d, "bk").failed
    return "bk"


def test_title_questions_are_recognised():
    from relayrag.stages.titles import title_question
    for q in ("What is the title of the payroll help page?", "What's the title of the manual for the ovens?",
              "What is the web page with the payroll questions called?",
              "What is the name of the document that explains how vans are booked?",
              "パン工場の給与FAQページのタイトルは何ですか？", "制服の貸与について定めた規程の名称は何ですか？"):
        assert title_question(q) == "title", q
    for q in ("What is the reference number of the kitchen hygiene manual?",
              "What is the document number of the delivery van policy?", "制服貸与規程の文書番号は？"):
        assert title_question(q) == "reference", q
    assert title_question("Which document sets the rules for delivery vans?") == "which"
    for q in ("What is the job title of the person who approves refunds?", "What is the name of driver D-07?",
              "What is the name of the app in the van policy?", "Which site bakes the rye bread?",
              "What is the employee handbook about?", "誰が制服を返却しますか？"):
        assert title_question(q) is None, q


def test_display_title_of_a_file_without_one():
    from relayrag.stages.titles import display_title, reference_line
    chunks = [{"doc": "delivery_van_policy.txt", "title": "delivery_van_policy", "page": 1, "start": 0,
               "text": VAN_TXT}]
    assert display_title(chunks) == "DELIVERY VAN POLICY"  # its heading line, not the file name
    notice = [{"doc": "n.pdf", "title": "n", "page": 1, "start": 0,
               "text": "RIVERSIDE WATER COMPANY\nNOTICE OF A ROAD CLOSURE\nRef. RWC/N/2026/4 Date: 2 May 2026\n\nDear "
                       "residents, the road will close."}]
    assert display_title(notice) == "NOTICE OF A ROAD CLOSURE"  # the line that names a kind of document
    assert reference_line(notice)[1] == "Ref. RWC/N/2026/4 Date: 2 May 2026"
    assert reference_line(chunks)[1] == "Brightloaf Bakeries - Policy FL-19"


@pytest.mark.parametrize("question, title", [
    ("What is the title of the payroll help page that lists common staff questions?",
     "Payroll Help Desk - Frequently Asked Questions"),                      # HTML <title>, not its <h1>
    ("What is the web page with answers to common payroll questions called?", "Payroll Help Desk - Frequently Asked Questions"),
    ("What's the title of the manual for cleaning the ovens and mixers?", "Kitchen Hygiene Manual for Ovens and Mixers"),
    ("What is the name of the document that explains how delivery vans are booked?", "DELIVERY VAN POLICY"),
    ("制服の貸与について定めた規程の名称は何ですか？", "制服貸与規程"),
    ("制服の返却について定めた文書の題名は何ですか？", "制服貸与規程"),
])
def test_title_question_is_answered_by_the_title(ctx, bakery, question, title):
    res = ask(question, bakery, ctx=ctx)
    assert res["grounded"] and title in res["answer"], (question, res["answer"])
    assert res["citations"], question


@pytest.mark.parametrize("question, code", [
    ("What is the reference number of the kitchen hygiene manual?", "KH-07"),
    ("What is the document number of the delivery van policy?", "FL-19"),
    ("What is the reference number of the van policy?", "FL-19"),
])
def test_reference_question_is_answered_by_the_reference_line(ctx, bakery, question, code):
    res = ask(question, bakery, ctx=ctx)
    assert res["grounded"] and code in res["answer"], (question, res["answer"])


@pytest.mark.parametrize("question", [
    "What is the title of the forklift training manual?",
    "What is the title of the delivery handbook?",                      # vans are delivered, but no handbook
    "What is the forklift policy about?",                               # a summary of no document
    "Summarise the bakery's fire safety plan.",
    "What is the title of the payroll security policy?",
    "フォークリフト運転規程の名称は何ですか？",
])
def test_title_of_a_document_not_in_the_collection_is_not_grounded(ctx, bakery, question):
    res = ask(question, bakery, ctx=ctx)
    assert not res["grounded"], (question, res["answer"])


@pytest.mark.parametrize("question, title, expected", [
    ("What is the delivery van policy about?", "DELIVERY VAN POLICY", "booked, driven and refuelled"),
    ("Summarise the delivery van policy.", "DELIVERY VAN POLICY", "booked, driven and refuelled"),
    ("Summarise the kitchen hygiene manual.", "Kitchen Hygiene Manual", "clean and check the ovens"),
    ("What does the Kitchen Hygiene Manual for Ovens and Mixers describe?", "Kitchen Hygiene Manual for Ovens and Mixers:",
     "clean and check the ovens"),
    ("制服貸与規程の概要は？", "制服貸与規程", "制服の取扱い"),
    ("制服貸与規程は何についての文書ですか？", "制服貸与規程", "制服の取扱い"),
])
def test_summary_question_summarises_the_document_it_names(ctx, bakery, question, title, expected):
    res = ask(question, bakery, ctx=ctx)
    assert res["grounded"] and title in res["answer"] and expected in res["answer"], (question, res["answer"])
    assert "best matches" not in res["answer"] and "最も合う" not in res["answer"]  # it named its document


def test_summary_question_naming_no_document_says_which(ctx, bakery):
    res = ask("What is this document about?", bakery, ctx=ctx)
    if res["grounded"]:  # several documents: the answer names the one it summarises
        assert "best matches" in res["answer"], res["answer"]
    res = ask("この文書の概要は？", bakery, ctx=ctx)
    if res["grounded"]:
        assert "最も合う" in res["answer"], res["answer"]
