"""Answers on documents nobody tuned for (issue 31), one small input of its own per class: an FAQ page whose
headings are the questions, a title line asked "who", answer types of every question word, near-identical
records that differ only in an identifier, a sentence repeated across documents, a summary question, a
heading glued to its sentence, a grounded badge that needs a responsive answer, and the LLM's routes."""

from __future__ import annotations

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.stages.answer_shape import (
    identifiers, is_question_sentence, not_an_answer, restates_question, states_wh_type, wh_answer_type)
from relayrag.text import answer_units

FAQ = """<html><head><title>Northwind Help Center</title></head><body>
<h1>Northwind Help Center</h1>
<h2>How do I reset my password?</h2>
<p>Open the sign-in page and choose Forgot password. A reset link arrives by e-mail within 10 minutes.</p>
<h2>Where can I collect my visitor badge?</h2>
<p>Visitor badges are handed out at the reception desk on the ground floor of Building C.</p>
<h2>How often are backups taken?</h2>
<p>The file servers are backed up every night at 02:00, and full copies are kept for 30 days.</p>
</body></html>
"""


@pytest.fixture
def faq(ctx, tmp_path):
    d = tmp_path / "faq"
    d.mkdir()
    (d / "help.html").write_text(FAQ, encoding="utf-8")
    assert not ingest(ctx, d, "faq").failed
    return ctx


def test_faq_heading_that_is_the_question_is_not_the_answer(faq):
    res = ask("How do I reset my password?", "faq", ctx=faq)
    assert res["found"] and res["grounded"], res["answer"]
    assert "Forgot password" in res["answer"] or "reset link" in res["answer"], res["answer"]
    assert "How do I reset my password?" not in res["answer"]


def test_where_and_how_often_answer_with_a_place_and_a_frequency(faq):
    res = ask("Where can I collect my visitor badge?", "faq", ctx=faq)
    assert res["found"] and res["grounded"], res["answer"]
    assert "reception desk" in res["answer"]
    res = ask("How often are backups taken?", "faq", ctx=faq)
    assert res["found"] and res["grounded"], res["answer"]
    assert "every night" in res["answer"]


PROCEDURE = """# Procedure for Handling Spilled Solvents

Approved by: Dana Whitfield, Head of Site Safety

## Steps

Stop work and ventilate the room before anything else. Absorb the spill with the grey granules from the spill kit.
"""


def test_title_line_does_not_answer_who(ctx, tmp_path):
    d = tmp_path / "proc"
    d.mkdir()
    (d / "solvents.md").write_text(PROCEDURE, encoding="utf-8")
    assert not ingest(ctx, d, "proc").failed
    res = ask("Who approved the procedure for handling spilled solvents?", "proc", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert "Dana Whitfield" in res["answer"], res["answer"]
    assert not res["answer"].startswith("Procedure for Handling Spilled Solvents")


def test_question_shapes_and_restatements():
    assert is_question_sentence("How do I reset my password?")
    assert is_question_sentence("有給休暇は何日ですか？")
    assert not is_question_sentence("Open the sign-in page and choose Forgot password.")
    q = "How do I reset my password?"
    assert restates_question(q, "Resetting your password")
    assert restates_question(q, "Northwind Help Center How do I reset my password", title="Northwind Help Center")
    assert not restates_question(q, "Reset your password from the sign-in page within 24 hours.")
    assert not_an_answer("Who signed the policy?", "Travel Policy", title="Travel Policy") == "title"
    assert not_an_answer("What is the document's title?", "Travel Policy", title="Travel Policy") is None


@pytest.mark.parametrize("question, kind, yes, no", [
    ("Who approves travel requests?", "person", "Your line manager approves them.", "Requests are approved quickly."),
    ("Who signed off the procedure?", "person", "It was signed by Dana Whitfield.", "The procedure was signed off."),
    ("Where are the spare keys kept?", "place", "They are kept in the cabinet in room 4.", "They are kept safely."),
    ("When is the report due?", "when", "It is due before the end of March.", "It is important."),
    ("Which year was the plant opened?", "year", "The plant opened in 1998.", "The plant opened long ago."),
    ("How often is the filter cleaned?", "frequency", "Clean it every week.", "Clean it carefully."),
    ("誰が承認しますか？", "person", "所属長が承認します。", "承認が必要です。"),
    ("どこで受け取りますか？", "place", "総務部の窓口で受け取ります。", "すぐ受け取れます。"),
    ("いつまでに提出しますか？", "when", "翌月5日までに提出します。", "提出してください。"),
    ("何回まで申請できますか？", "frequency", "年に2回まで申請できます。", "申請できます。"),
])
def test_answer_types_of_question_words(question, kind, yes, no):
    from relayrag.text import has_cjk
    assert wh_answer_type(question) == kind
    cjk = has_cjk(question)
    assert states_wh_type(kind, yes, cjk, question)
    assert not states_wh_type(kind, no, cjk, question)


def test_identifiers_are_exact():
    assert identifiers("Compressor K1 delivers 6 bar.") >= {"K1", "6"}
    assert "1234" in identifiers("Note 1234: the badge number of clerk 1234 is B-77.")
    assert "123" not in identifiers("Note 1234: the badge number of clerk 1234 is B-77.")
    assert "RX-7" in identifiers("The RX-7 model")
    assert "B" in identifiers("Category B covers invoices.")


MACHINES = ["Compressor K1 is a screw compressor for the paint shop and it delivers 6 bar at full load.",
            "Compressor K2 is a screw compressor for the paint shop and it delivers 9 bar at full load."]


def test_near_duplicate_sentences_about_another_machine_are_not_added_or_cited(ctx, tmp_path):
    d = tmp_path / "machines"
    d.mkdir()
    (d / "k1.txt").write_text("The first machine of the plant.\n\n" + MACHINES[0] + "\n", encoding="utf-8")
    (d / "k2.txt").write_text("The second machine of the plant.\n\n" + MACHINES[1] + "\n", encoding="utf-8")
    assert not ingest(ctx, d, "m").failed
    res = ask("What pressure does compressor K1 deliver?", "m", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert "6 bar" in res["answer"] and "9 bar" not in res["answer"], res["answer"]
    assert {c["doc"] for c in res["citations"]} == {"k1.txt"}, res["citations"]


def test_templated_records_cite_only_the_asked_record(ctx, tmp_path):
    """A small version of benchmarks/bench_entity_citations.py: notes that differ only in the clerk's number."""
    d = tmp_path / "notes"
    d.mkdir()
    for i in range(1, 300):
        (d / f"note-{i:04d}.txt").write_text(f"Note {i}: the badge number of clerk {i} is B{(i * 7919) % 100000:05d}.\n",
                                              encoding="utf-8")
    assert not ingest(ctx, d, "notes").failed
    for i in (123, 12, 201):
        res = ask(f"What is the badge number of clerk {i}?", "notes", ctx=ctx)
        assert res["found"], res["answer"]
        assert f"B{(i * 7919) % 100000:05d}" in res["answer"], res["answer"]
        assert [c["doc"] for c in res["citations"]] == [f"note-{i:04d}.txt"], res["citations"]


def test_sentence_repeated_across_documents_is_cited_once(ctx, tmp_path):
    d = tmp_path / "policies"
    d.mkdir()
    footer = "Questions about this policy go to the compliance office at extension 4410."
    for name, body in [("a.txt", "Laptops must be locked when unattended."),
                       ("b.txt", "Visitors must sign in at reception."),
                       ("c.txt", "Printers are serviced by the facilities team.")]:
        (d / name).write_text(body + "\n\n" + footer + "\n", encoding="utf-8")
    assert not ingest(ctx, d, "p").failed
    res = ask("Which extension does the compliance office have for policy questions?", "p", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert res["answer"].count("4410") == 1
    assert len(res["citations"]) == 1, res["citations"]
    assert "also in 2 other documents" in res["answer"], res["answer"]


HANDBOOK = """# Expense Handbook

This handbook sets out how employees claim travel and meal expenses and who approves the claims.

## Meals

Meals are reimbursed up to 40 euros per day.
"""


def test_summary_question_answers_with_title_and_purpose(ctx, tmp_path):
    d = tmp_path / "hb"
    d.mkdir()
    (d / "expenses.md").write_text(HANDBOOK, encoding="utf-8")
    assert not ingest(ctx, d, "hb").failed
    res = ask("What is this document about?", "hb", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert res["answer"].startswith("Expense Handbook:"), res["answer"]
    assert "sets out how employees claim" in res["answer"]
    assert res["citations"] and res["citations"][0]["doc"] == "expenses.md"


def test_heading_line_is_not_glued_to_its_sentence():
    text = "Costs of Compliance\nThe agency estimates that 73 airplanes are affected."
    assert [text[s:e] for s, e in answer_units(text, False)] == [
        "Costs of Compliance", "The agency estimates that 73 airplanes are affected."]
    faq = "Help Center\n\nHow do I reset my password?\n\nChoose Forgot password on the sign-in page."
    units = [faq[s:e] for s, e in answer_units(faq, False)]
    assert "How do I reset my password?" in units and "Help Center" in units


def test_grounded_needs_a_responsive_answer():
    from relayrag.stages.hallucination_check import responsive
    q = "Who approves travel requests?"
    assert not responsive(q, [{"text": "Who approves travel requests?", "cites": [1]}])
    assert not responsive(q, [{"text": "Travel requests must be filed on time.", "cites": [1]}])
    assert responsive(q, [{"text": "Your line manager approves travel requests.", "cites": [1]}])
    assert not responsive("How long is the warranty?", [{"text": "The warranty covers parts.", "cites": [1]}])


def test_llm_may_not_route_a_content_question_to_small_talk(make_llm_ctx, tmp_path):
    """The LLM double labels everything chitchat and answers from its own knowledge; the no-LLM checks allow
    chitchat only for small talk, and a small-talk reply that states facts is replaced by the template."""
    calls = []

    def reply(messages, schema):
        calls.append(schema)
        props = (schema or {}).get("properties", {})
        if "route" in props:
            return {"route": "chitchat"}
        if "relevance" in props:
            return {"relevance": 3}
        if "relevant" in props:
            return {"relevant": True}
        if "unsupported" in props:
            return {"unsupported": [], "answers_question": True}
        if "hypothetical_passage" in props:
            return {"hypothetical_passage": "", "rewrites": []}
        return "Yes, you can. First open settings, then press reset [1]."

    c, _ = make_llm_ctx(reply)
    d = tmp_path / "faq2"
    d.mkdir()
    (d / "help.html").write_text(FAQ, encoding="utf-8")
    assert not ingest(c, d, "faq2").failed
    res = ask("How do I reset my password?", "faq2", ctx=c)
    assert res["route"] != "chitchat", res
    hello = ask("hello", "faq2", ctx=c)
    assert hello["route"] == "chitchat"
    assert "First open settings" not in hello["answer"] and "faq2" in hello["answer"], hello["answer"]
    assert not hello["grounded"]


LEAVE = """# Staff Handbook

## Annual leave

Annual leave grows with the years of service.

| Years of service | Annual leave |
|---|---|
| up to 5 | 25 days |
| 6-10 | 28 days |
| 11 or more | 30 days |
"""


def test_numeric_band_rows_match_the_number_inside_them(ctx, tmp_path):
    from relayrag.stages.answer_shape import band_holds
    assert band_holds("6-10", ["7"]) and band_holds("11 or more", ["12"]) and band_holds("up to 5", ["3"])
    assert band_holds("over 50 kg", ["60"]) and not band_holds("over 50 kg", ["50"])
    assert band_holds("5年以上", ["7"]) and not band_holds("6-10", ["11"])
    d = tmp_path / "hb2"
    d.mkdir()
    (d / "handbook.md").write_text(LEAVE, encoding="utf-8")
    assert not ingest(ctx, d, "hb2").failed
    res = ask("How much annual leave does an employee with 7 years of service get?", "hb2", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert "28 days" in res["answer"] and "30 days" not in res["answer"], res["answer"]


def _unruled_pdf() -> bytes:
    """A page with a three-column table drawn as text at three x positions, without a single line."""
    from tests.unit.ingest.test_loaders import _Pdf, text_ops
    intro = text_ops(["Storage rules for the archive team.", "Keep each record for the period below."], 60, 760)
    cols = [["Record class", "Class A", "Class B", "Class C"], ["Example", "Payslips", "Purchase orders", "Visitor logs"],
            ["Keep for", "10 years", "7 years", "1 year"]]
    body = b"".join(text_ops(col, x, 700, leading=18) for col, x in zip(cols, (60, 250, 430)))
    return _Pdf().page(intro + body).bytes()


def test_unruled_pdf_table_reads_as_rows_with_column_names(ctx, tmp_path):
    from relayrag.ingest.loaders import load_document
    d = tmp_path / "arch"
    d.mkdir()
    (d / "archive.pdf").write_bytes(_unruled_pdf())
    text = load_document(d / "archive.pdf").pages[0].text
    assert "Class B | Purchase orders | 7 years" in text, text
    assert not ingest(ctx, d, "arch").failed
    res = ask("How long do we keep Class B records?", "arch", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert "7 years" in res["answer"] and "10 years" not in res["answer"], res["answer"]
