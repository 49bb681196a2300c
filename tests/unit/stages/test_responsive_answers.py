"""`grounded` means supported AND responsive (issue 31): a lead about the document ("This section of the bulletin
contains notices …"), a heading, a list number or a sentence about another named thing does not answer a
question, whatever words it shares with it; the answer finds the responsive sentence or refuses. Answer types
per question word: when → a date or time (not "twice a year", not "1. Scope"), which <named kind> → a name,
what … number / extension → a code, 何日 → a duration; a record code (B-14) must be named exactly. Small inputs of
their own: a harbour bulletin, a mooring procedure with a header block, berth records and a Japanese rule."""

from __future__ import annotations

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.stages.answer_shape import (
    about_the_document, cjk_heading, codes, names_a_thing, not_an_answer, record_codes, states_wh_type, wh_answer_type)
from relayrag.stages.answerability import expected_answer_type
from relayrag.stages.hallucination_check import responsive

BULLETIN = """Harbour Bulletin

This section of the Harbour Bulletin contains notices to the public of proposed changes to the mooring rules,
published so that boat owners can comment before the rules are adopted.

The harbour board proposes to close the east pier to private boats from 1 June 2027 while its piles are replaced.
"""

LEAD_ONLY = """Marina Gazette

This section of the Marina Gazette contains notices to the public of proposed changes to the marina rules,
published so that members can comment before the rules are adopted.

Comments may be sent to the marina office.
"""

PROCEDURE = """Mooring Procedure

Document OPS-17, revision 2
Approved by: Mira Castell, Operations Director
Effective date: 3 March 2027

1. Scope
These rules apply to all berths of the inner basin.

This procedure sets out how berths are booked, paid for and released at the end of a stay.
Berths are booked in the TideDesk system at least two days before arrival.
Safety inspections of the pontoons are held twice a year.
The Kestrel pier opened in 2001 and the Osprey pier in 2009. The Heron pier serves the fishing fleet.

Today

- Piers: Kestrel, Osprey and Heron
- Berths: 140 at the end of 2026
"""

BERTHS = "\n".join(f"Berth B-{n}: assigned to the vessel Aster {n}, length {20 + n} metres, fee paid until {m} May."
                   for n, m in ((12, 3), (13, 9), (15, 21))) + "\n"

RULE_JA = """# 研修規程

## 第5条（海外研修）

海外研修については、別に定める規程による。

## 第6条（研修手当）

研修手当は、1日につき1,500円を支給する。
"""


def test_answer_shapes_of_question_words():
    assert about_the_document("This section of the Harbour Bulletin contains notices to the public of changes.")
    assert about_the_document("This procedure sets out how berths are booked.")
    assert not about_the_document("These rules apply to all berths of the inner basin.")
    assert not_an_answer("What does the notice propose?", "This section of the bulletin contains notices.") \
        == "about the document"
    assert not_an_answer("What is the purpose of the bulletin?", "This section of the bulletin contains notices.") \
        is None
    assert wh_answer_type("What is the document number of the mooring procedure?") == "identifier"
    assert wh_answer_type("What extension do I call for the harbour master?") == "identifier"
    assert wh_answer_type("In which system do I book a berth?") == "named"
    assert codes("Document OPS-17, revision 2") == ["OPS-17"] and codes("within 2 working days, EUR 25,000") == []
    assert names_a_thing("Berths are booked in the TideDesk system.", "In which system do I book a berth?")
    assert not names_a_thing("This procedure sets out how berths are booked.", "In which system do I book a berth?")
    assert not names_a_thing("NOTICE - PONTOON INSPECTION", "Which pontoon is inspected?")
    assert not states_wh_type("when", "Safety inspections of the pontoons are held twice a year.", question="When?")
    assert not states_wh_type("when", "1. Scope These rules apply to all berths.", question="When?")
    assert states_wh_type("when", "Effective date: 3 March 2027", question="When?")
    assert record_codes("What is the fee of berth B-14 and the vessel Aster 2?") == {"B-14"}
    assert not states_wh_type("when", "Assembly point: car park P3, next to the pier.", question="When?")
    q = "What is the document number of the mooring procedure?"  # the code next to its noun, not a footer's
    assert not states_wh_type("identifier", "For questions about this document, call extension 4410.", question=q)
    assert states_wh_type("identifier", "Document OPS-17, revision 2", question=q)
    q = "Which building is the notice for?"  # a name of the kind asked, not any code
    assert not states_wh_type("named", "Assembly point: car park P3.", question=q)
    assert states_wh_type("named", "The drill covers Building C on Friday.", question=q)
    assert cjk_heading("第5条（海外研修）") and not cjk_heading("研修手当は、1日につき1,500円を支給する。")
    assert expected_answer_type("研修の申し込みは何日前までに必要ですか？") == "duration"


def test_header_blocks_and_lists_are_one_fact_a_unit():
    from relayrag.text import answer_units
    text = "Document OPS-17, revision 2\nApproved by: Mira Castell\nEffective date: 3 March 2027\n\n" \
           "Today\n\n- Berths: 140 in the inner basin\n- Opened: the Kestrel pier in 2001, with a\n  fuel dock\n"
    units = [text[s:e] for s, e in answer_units(text, False)]
    assert "Approved by: Mira Castell" in units and "Effective date: 3 March 2027" in units
    assert "- Berths: 140 in the inner basin" in units
    assert "- Opened: the Kestrel pier in 2001, with a\n  fuel dock" in units
    listed = "Set the following:\nFlaps up: 4 degrees\nFlaps down: 10 degrees"  # introduced as one list: kept
    assert len(answer_units(listed, False)) == 1


def test_grounded_needs_a_responsive_answer_of_the_asked_type():
    q = "When did the mooring rules take effect?"
    assert not responsive(q, [{"text": "1. Scope These rules apply to all berths of the inner basin."}])
    assert responsive(q, [{"text": "Effective date: 3 March 2027"}])
    q = "What is the fee for berth B-14?"
    assert not responsive(q, [{"text": "Berth B-12: assigned to the vessel Aster 12, fee paid until 3 May."}])
    q = "What does the notice propose?"
    assert not responsive(q, [{"text": "This section of the Harbour Bulletin contains notices to the public."}])


def test_lead_about_the_document_is_not_the_answer(ctx, tmp_path):
    d = tmp_path / "bulletin"
    d.mkdir()
    (d / "bulletin.txt").write_text(BULLETIN, encoding="utf-8")
    (d / "gazette.txt").write_text(LEAD_ONLY, encoding="utf-8")
    assert not ingest(ctx, d, "bul").failed
    res = ask("What does the Harbour Bulletin notice propose?", "bul", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert "east pier" in res["answer"] and "contains notices" not in res["answer"], res["answer"]
    res = ask("What does the Marina Gazette notice propose?", "bul", ctx=ctx)
    assert not res["grounded"], res["answer"]  # its only lead says what the section contains, not what it proposes


def test_procedure_header_block_and_typed_questions(ctx, tmp_path):
    d = tmp_path / "moor"
    d.mkdir()
    (d / "mooring.txt").write_text(PROCEDURE, encoding="utf-8")
    (d / "berths.txt").write_text(BERTHS, encoding="utf-8")
    assert not ingest(ctx, d, "moor").failed
    cases = [("What is the document number of the mooring procedure?", "OPS-17"),
             ("Who approved the mooring procedure?", "Mira Castell"),
             ("When did the mooring procedure take effect?", "3 March 2027"),
             ("In which system do I book a berth?", "TideDesk")]
    for question, expected in cases:
        res = ask(question, "moor", ctx=ctx)
        assert res["found"] and res["grounded"] and expected in res["answer"], (question, res["answer"])
    res = ask("Until when is the fee of berth B-13 paid?", "moor", ctx=ctx)
    assert res["grounded"] and "B-13" in res["answer"] and "B-12" not in res["answer"], res["answer"]
    for question in ("When is the next pontoon safety inspection?",  # "twice a year" is no date
                     "When did the Heron pier open?",  # the sentence with years is about Kestrel and Osprey
                     "Until when is the fee of berth B-14 paid?"):  # B-12, B-13 and B-15 are other records
        res = ask(question, "moor", ctx=ctx)
        assert not res["grounded"], (question, res["answer"])


def test_japanese_article_heading_is_not_the_answer(ctx, tmp_path):
    d = tmp_path / "ja"
    d.mkdir()
    (d / "rule.md").write_text(RULE_JA, encoding="utf-8")
    assert not ingest(ctx, d, "ja").failed
    res = ask("海外研修の研修手当はいくらですか？", "ja", ctx=ctx)
    assert "第5条（海外研修）" not in res["answer"].split("[")[0], res["answer"]
    res = ask("研修手当の支給には何日かかりますか？", "ja", ctx=ctx)  # 何日 asks a duration; 1,500円 is money
    assert not res["grounded"], res["answer"]

