"""Issue 31, grounded-wrong classes on documents nobody tuned for: the wh-part of a question behind a leading phrase
or a yes/no clause gives the type asked; contact details; a table cell the question names; a sibling record code;
signed bands; sentences broken across lines; "What is the <document>?" and banner titles; date bounds."""
from __future__ import annotations

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.stages.answer_shape import band_holds, names_other_code, quantities, record_codes, wh_answer_type
from relayrag.stages.answerability import expected_answer_type
from relayrag.stages.contact_details import contact_kinds, states_contact
from relayrag.stages.date_bounds import misses_date_bound
from relayrag.stages.extractive import table_cell
from relayrag.stages.answerability import content_weights
from relayrag.stages.hallucination_check import responsive
from relayrag.stages.summary import subtitle
from relayrag.text import answer_units, typed_clause


@pytest.mark.parametrize("question, kind", [
    ("During the shutdown, how long may a chamber door stay open?", "duration"),
    ("For a part-time driver, how many days of leave are there?", "duration"),
    ("In the winter timetable, how much does a return ticket cost?", "money"),
    ("Is there a fee for late returns, and how much?", "money"),
    ("Do I have to give notice, and how long?", "duration"),
    ("Is parking charged, and what does it cost?", "money"),
])
def test_the_wh_part_gives_the_type_asked(question, kind):
    assert expected_answer_type(question) == kind, typed_clause(question)


@pytest.mark.parametrize("question, sentence", [
    ("Is there a fee for late returns, and how much?", "Late returns are accepted until 18:00."),
    ("Is a deposit required for the hall, and how much?", "A deposit is required for the hall."),
    ("During the audit, how long may a visitor stay?", "Visitors must stay with their host during the audit."),
])
def test_a_sentence_without_the_value_asked_does_not_answer(question, sentence):
    assert not responsive(question, [{"text": sentence, "cites": [1], "context": "Visitor rules"}])


@pytest.mark.parametrize("question, bad, good", [
    ("What is the transport office's e-mail address?", "E-mail the log to the transport office.",
     "Write to transport@example.org."),
    ("Which email do I use for invoices?", "Invoices are e-mailed every Friday.", "Send invoices to ap@example.com."),
    ("What is the website for bookings?", "Bookings open at 9:00.", "Book at www.example.net/bookings."),
    ("What is the postal address for returns?", "Returns are handled by the warehouse.",
     "Returns: Unit 7, Mill Lane, Harlow CM20 2QT"),
    ("What is the address of the head office?", "The head office is in the north.", "It is at 12 Harbour Road, Dunmore."),
    ("本社の住所はどこですか？", "株式会社サンプル 本社", "本社は東京都港区芝五丁目7番1号にあります。"),
    ("問い合わせ先のメールアドレスは？", "お問い合わせはメールでどうぞ。", "info@example.co.jp までご連絡ください。"),
])
def test_a_contact_question_needs_the_detail(question, bad, good):
    assert wh_answer_type(question) == "contact"
    assert not states_contact(bad, question) and states_contact(good, question)


@pytest.mark.parametrize("question", [
    "What should I do with a phishing email?", "What does the website say about returns?",
    "住所変更の手続きは？", "申請はメールでできますか？", "What does the address field contain?"])
def test_questions_that_mention_contact_words_ask_no_contact_detail(question):
    assert not contact_kinds(question)


@pytest.mark.parametrize("question, row, header, expected", [
    ("What temperature is trailer TR-14 set to?", "R4 | TR-14 | 07:45 | -18 °C", "Route | Trailer | Depart | Set point",
     "R4 — Set point: -18 °C"),
    ("Which depot does driver Amos Pell work from?", "D7 | Amos Pell | Northgate", "Id | Driver | Depot",
     "D7 — Depot: Northgate"),
    ("When does vessel Nordic Star sail?", "V2 | Nordic Star | 14:00", "Code | Vessel | Departure", None),
])
def test_a_cell_the_question_names_is_not_the_answer(question, row, header, expected):
    assert table_cell(set(content_weights(question)), row, header) == expected


@pytest.mark.parametrize("question, other, own", [
    ("How long does the RT-16 heater take to warm up?", "The RT-20 heater warms the cab within 8 minutes.",
     "The RT-16 and RT-20 heaters take 8 minutes."),
    ("What pressure does compressor K1 deliver?", "Compressor K2 delivers 9 bar.", "Compressor K1 delivers 6 bar."),
    ("When was asset AY-1043 serviced?", "Asset AY-1042 was serviced in May.", "The asset was serviced in May."),
])
def test_a_sentence_naming_a_sibling_record(question, other, own):
    codes = record_codes(question)
    assert names_other_code(codes, other) and not names_other_code(codes, own)


@pytest.mark.parametrize("question, holds, not_holds", [
    ("After a spell in a -10 °C chamber, how long is the break?", "-1 °C to -20 °C", ["0 °C to +5 °C", "below -30 °C"]),
    ("What allowance applies at minus 25 degrees?", "-21 °C to -30 °C", ["-1 °C to -20 °C", "above 0 °C"]),
    ("How long may I stay in a −35 °C room?", "below -30 °C", ["-21 °C to -30 °C", "0 °C to +5 °C"]),
    ("For 7 years of service, how many days?", "6-10", ["11 or more"]),
])
def test_signed_bands(question, holds, not_holds):
    n = quantities(question)
    assert band_holds(holds, n) and not any(band_holds(x, n) for x in not_holds)


@pytest.mark.parametrize("text, unit", [
    ("NOTICE\n\nDo not open any chamber door\n\nfor longer than 2 minutes. Goods-in is suspended.",
     "Do not open any chamber door for longer than 2 minutes."),
    ("The main compressor house will be shut down\n\non Sunday 16 August from 06:00.", None),
    ("Goods-in and goods-out\n\nare suspended until 15:00.\n\nThe contractor is Northgate.", None),
])
def test_lines_of_one_sentence_are_one_unit(text, unit):
    units = [" ".join(text[s:e].split()) for s, e in answer_units(text, False)]
    if unit is None:
        unit = " ".join(text.split("\n\n")[:2]).strip()
        unit = " ".join(unit.split())
    assert unit in units, units


def test_a_line_ending_a_sentence_is_not_joined():
    text = "Shipping\n\nOrders ship daily.\n\nreturns are free."
    units = [" ".join(text[s:e].split()) for s, e in answer_units(text, False)]
    assert "Orders ship daily." in units


@pytest.mark.parametrize("text, title, expected", [
    ("NOTICE TO ALL STAFF\n\nAmmonia Plant Shutdown for Annual Inspection\n\nThe plant stops on Sunday.",
     "NOTICE TO ALL STAFF", "Ammonia Plant Shutdown for Annual Inspection"),
    ("MEMO\n\nNew Parking Rules for Visitors\n\nVisitors park at gate B.", "MEMO", "New Parking Rules for Visitors"),
    ("お知らせ\n\n年末年始の営業時間について\n\n12月29日から休業します。", "お知らせ", "年末年始の営業時間について"),
    ("Staff Handbook\n\n1. Scope of this handbook\n\nIt applies to all staff.", "Staff Handbook", ""),
    ("Staff Handbook\n\nThis handbook applies to all staff.", "Staff Handbook", ""),
])
def test_a_banner_title_carries_its_subject_heading(text, title, expected):
    assert subtitle(text, title, any(ord(ch) > 0x3000 for ch in text)) == expected


@pytest.mark.parametrize("question, outside, inside", [
    ("When is the next plant shutdown after August 2026?", "It stops on Sunday 16 August 2026.",
     "The next shutdown is on 3 March 2027."),
    ("Which audits took place since 2024?", "The audit was held in May 2023.", "The audit was held in May 2024."),
    ("What changed before 2020?", "In 2021 the policy changed.", "In 2019 the policy changed."),
    ("2025年4月以降の料金はいくらですか？", "2024年10月に改定しました。", "2025年4月から1,200円です。"),
])
def test_a_date_outside_the_questions_bound(question, outside, inside):
    assert misses_date_bound(question, outside) and not misses_date_bound(question, inside)


REGISTER_MD = """# Pallet Register - North Yard

One record per bay. Weights are in kilograms.

## Bay 1

Bay 1 holds 24 pallets. Bay supervisor: Ana Ruiz.

## Bay 2

Bay 2 holds 30 pallets. Bay supervisor: Tom Hale.
"""

VISITOR_MD = """# Visitor Policy

This policy sets out how visitors are received at the North Yard.

Visitors sign in at reception and wear a badge at all times.
"""


@pytest.fixture
def yard(ctx, tmp_path):
    d = tmp_path / "yard"
    d.mkdir()
    (d / "pallet_register.md").write_text(REGISTER_MD, encoding="utf-8")
    (d / "visitor_policy.md").write_text(VISITOR_MD, encoding="utf-8")
    assert not ingest(ctx, d, "yd").failed
    return "yd"


@pytest.mark.parametrize("question, expected", [
    ("What is the pallet register?", "One record per bay."),
    ("What's the pallet register?", "One record per bay."),
    ("What is the visitor policy?", "sets out how visitors are received"),
])
def test_what_is_the_document_is_its_summary(ctx, yard, question, expected):
    res = ask(question, yard, ctx=ctx)
    assert res["grounded"] and expected in res["answer"], res["answer"]


@pytest.mark.parametrize("question, cell", [
    ("My pallets are 2 m tall - how are they charged?", "+2 to +5 °C"),
    ("For 7 years of service, how much allowance at 0 °C?", "6-10 °C"),
    ("After a spell in a -10 °C chamber, how long is the break?", "6-10"),
])
def test_a_temperature_and_another_quantity_do_not_hold_each_others_bands(question, cell):
    assert not band_holds(cell, quantities(question))
