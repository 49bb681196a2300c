"""`grounded` means responsive, third round (issue 31): classes found on a corpus nobody tuned for, each with a small
input of its own:

- a year the question asks about that the answer's sentence and section do not say, while they say another: "the
  adult fare in 2024" is not answered from the "Fares 2026" table;
- a "who" question about an act of office (chairs, approved, signed, manages …): the answer sentence itself says the
  act and a person or role other than the question's own subject ("The Safety Committee inspects the boats" does
  not say who chairs the Safety Committee);
- a band row ("4 or more | EUR 90") answers a question whose number falls in its band, not "how many night shifts
  were worked" (the banded quantity itself);
- "which document …?" / 「…規程の名称は何ですか」 is answered by the document's title, not a purpose clause."""

from __future__ import annotations

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest

NEWS = """# Harbour Ferry News

In 2024 the ferry carried 1.2 million passengers, and in 2025 a new pier opened.
"""

FARES = """# Harbour Ferry Fares 2026

These fares apply from 1 January 2026 to 31 December 2026. They were adopted by the harbour board on 3 March 2024.

## Single tickets

| Ticket | Fare |
|---|---|
| Adult | EUR 4.20 |
| Child | EUR 2.10 |
"""


def test_period_helpers():
    from relayrag.stages.responsive import missing_period, question_years
    assert question_years("What was the adult fare in 2024?") == ["2024"]
    assert question_years("What does a crate of 2,500 kg cost?") == []  # not a year
    assert question_years("2025年度の会費はいくらですか？") == ["2025"]
    assert missing_period("What was the adult fare in 2024?", "Adult | EUR 4.20", "Harbour Ferry Fares 2026\nTicket | Fare")
    assert not missing_period("What is the adult fare in 2026?", "Adult | EUR 4.20",
                              "Harbour Ferry Fares 2026\nTicket | Fare")
    # a rule that names no year at all may hold in any year
    assert not missing_period("What was the adult fare in 2024?", "The adult fare is EUR 4.20.", "Ferry Fares")


def test_year_the_documents_do_not_cover_is_not_grounded(ctx, tmp_path):
    d = tmp_path / "fares"
    d.mkdir()
    (d / "fares.md").write_text(FARES, encoding="utf-8")
    assert not ingest(ctx, d, "fa").failed
    res = ask("What was the adult fare in 2024?", "fa", ctx=ctx)
    assert not res["grounded"], res["answer"]  # the 2026 fare is not the 2024 one
    res = ask("What is the adult fare in 2026?", "fa", ctx=ctx)
    assert res["grounded"] and "EUR 4.20" in res["answer"], res["answer"]


CLUB = """# Riverside Rowing Club Rules

## Boats

Members book a boat at least 1 day in advance.

## Review

The Safety Committee reviews these rules every 2 years and proposes changes to the General Meeting.

## Officers

The Finance Committee is chaired by Tom Baker.
"""


def test_office_act_helpers():
    from relayrag.stages.responsive import office_act, unanswered_office_act
    from relayrag.stages.hallucination_check import responsive
    assert office_act("Who can answer my questions about the rota?") is None  # no act of office
    assert "chaired" in office_act("Who chairs the Safety Committee?")
    assert unanswered_office_act("Who chairs the Safety Committee?",
                                 "The Safety Committee inspects the boats every 3 months.")
    assert not unanswered_office_act("Who chairs the Finance Committee?", "Tom Baker chairs the Finance Committee.")
    assert not unanswered_office_act("Who approved the budget?", "The budget was approved by the club treasurer.")
    assert unanswered_office_act("Who signed the budget?", "The budget covers 12 months.")
    # the act said, but only of the question's own subject: no one else is named
    assert unanswered_office_act("Who approved the budget?", "The budget must be approved.")
    # "which <person> <act>": the body that the question's own noun names is not the member asked for, and a role
    # far from the act (the rules' owner) did not do it
    q = "Which committee member signed the Boat Safety Rules?"
    assert office_act(q) is not None
    assert unanswered_office_act(q, "Rules BSR-2 · Approved by the Safety Committee on 4 May 2026 (minute 2026/11) "
                                    "Rules owner: Head Coach")
    assert not unanswered_office_act(q, "The rules were signed by Ada Lind, a member of the Safety Committee.")
    ctx = "Riverside Rowing Club Rules\nCommittees"
    assert not responsive("Who chairs the Safety Committee?",
                          [{"text": "The Safety Committee inspects the boats every 3 months.", "context": ctx}])


def test_who_needs_the_act_and_a_person(ctx, tmp_path):
    d = tmp_path / "club"
    d.mkdir()
    (d / "rules.md").write_text(CLUB, encoding="utf-8")
    assert not ingest(ctx, d, "cl").failed
    res = ask("Who chairs the Safety Committee?", "cl", ctx=ctx)
    assert not res["grounded"], res["answer"]
    res = ask("Who chairs the Finance Committee?", "cl", ctx=ctx)
    assert res["grounded"] and "Tom Baker" in res["answer"], res["answer"]


COURIER = """# Courier Pay Rules

## 3. Weekend supplement

Drivers on the weekend rota receive a weekly supplement that depends on the number of deliveries in that week.

| Deliveries in the week | Supplement |
|---|---|
| 1-3 | EUR 40 |
| 4 or more | EUR 90 |

These rules apply from 1 April 2025.
"""


def test_band_row_answers_a_number_in_its_band(ctx, tmp_path):
    from relayrag.stages.responsive import band_numbers
    from relayrag.stages.hallucination_check import responsive
    assert band_numbers("How many deliveries did the drivers have in 2025?") == ()  # a year is no quantity
    assert band_numbers("What is the supplement for 5 deliveries in 2025?") == ("5",)
    row = {"text": "4 or more — Supplement: EUR 90", "source": "4 or more | EUR 90",
           "context": "Courier Pay Rules\n3. Weekend supplement\nDeliveries in the week | Supplement\n"
                      "Drivers on the weekend rota receive a weekly supplement that depends on the number of "
                      "deliveries in that week.\n2025"}
    assert not responsive("How many deliveries did the weekend drivers have in 2025?", [row])
    assert responsive("What is the supplement for 5 deliveries in the week?", [row])
    assert not responsive("What is the supplement for 2 deliveries in the week?", [row])  # the 1-3 row's
    d = tmp_path / "courier"
    d.mkdir()
    (d / "pay.md").write_text(COURIER, encoding="utf-8")
    assert not ingest(ctx, d, "co").failed
    res = ask("How many deliveries did the weekend drivers have in 2025?", "co", ctx=ctx)
    assert not res["grounded"], res["answer"]  # a band of deliveries counts none
    res = ask("What is the supplement for 5 deliveries in the week?", "co", ctx=ctx)
    assert res["grounded"] and "EUR 90" in res["answer"], res["answer"]


VISITORS = """# Visitor Access Procedure

1. Purpose This procedure sets the rules for admitting visitors to the laboratory and the duties of their hosts.

2. Badges Every visitor wears a red badge and is accompanied by the host at all times.
"""

VISITORS_JA = """# 来客受付規程

第1条（目的） この規程は、研究所における来客の受付について、必要な事項を定めることを目的とする。

第2条（入館証） 来客は、受付で入館証を受け取り、常に着用する。
"""


def test_document_name_question_is_answered_by_the_title(ctx, tmp_path):
    from relayrag.stages.answer_shape import asks_document_name
    assert asks_document_name("Which document sets the rules for admitting visitors?")
    assert asks_document_name("来客の受付について定めた規程の名称は何ですか？")
    assert not asks_document_name("Which document number is printed on the badge?")
    assert not asks_document_name("Which colour is the visitor badge?")
    assert not asks_document_name("What two parts does the badge holder consist of?")  # a part is no document
    d = tmp_path / "visitors"
    d.mkdir()
    (d / "visitors.md").write_text(VISITORS, encoding="utf-8")
    (d / "visitors_ja.md").write_text(VISITORS_JA, encoding="utf-8")
    assert not ingest(ctx, d, "vi").failed
    for question, title in (("Which document sets the rules for admitting visitors to the laboratory?",
                             "Visitor Access Procedure"),
                            ("研究所の来客の受付について定めた規程の名称は何ですか？", "来客受付規程")):
        res = ask(question, "vi", ctx=ctx)
        assert res["grounded"] and title in res["answer"], (question, res["answer"])  # the title, cited


def test_interval_question_needs_an_interval():
    """「何か月ごとに」 asks an interval: a rule about the day in each district (地区ごとに) states none."""
    from relayrag.stages.answer_shape import wh_answer_type
    from relayrag.stages.hallucination_check import responsive
    q = "点検は何か月ごとに行いますか？"
    assert wh_answer_type(q) == "frequency"
    ctx = "設備点検規程\n第4条（点検日）"
    assert not responsive(q, [{"text": "点検は、地区ごとに定める日の前後3日以内に行う。", "context": ctx}])
    assert responsive(q, [{"text": "点検は、3か月に1回行う。", "context": "設備点検規程\n第3条（点検の頻度）"}])
    assert responsive("点検は何回行いますか？", [{"text": "点検は毎月行う。", "context": ctx}])


REGISTER = """# Bus Depot Register

| Depot | Code | Buses | Last inspection |
|---|---|---|---|
| Northgate | D-01 | 40 | March 2025 |
| Southmoor | D-02 | 25 | June 2024 |

The first depot was opened in 1998.
"""


def test_row_date_answers_only_the_event_its_columns_name(ctx, tmp_path):
    """A row's date is the event its column names ("Last inspection"): "When was the Southmoor depot built?" is
    not answered by the date of its last inspection."""
    d = tmp_path / "register"
    d.mkdir()
    (d / "register.md").write_text(REGISTER, encoding="utf-8")
    assert not ingest(ctx, d, "rg").failed
    res = ask("When was the Southmoor depot built?", "rg", ctx=ctx)
    assert not (res["grounded"] and "June 2024" in res["answer"]), res["answer"]
    res = ask("When was the Southmoor depot last inspected?", "rg", ctx=ctx)
    assert res["grounded"] and "June 2024" in res["answer"], res["answer"]


def test_which_question_needs_its_value():
    """"Which depot has 25 buses?" names its answer by a value: the sentence that defines the column does not say
    which depot, the row that says 25 does."""
    from relayrag.stages.responsive import misses_the_value
    from relayrag.stages.hallucination_check import responsive
    q = "Which depot has 25 buses?"
    assert misses_the_value(q, "Buses is the number of buses allocated to the depot on 1 January.")
    assert not misses_the_value(q, "Southmoor | D-02 | 25 | June 2024")
    assert not misses_the_value("Which band applies to 7 call-outs?", "6-10 | EUR 90")  # a band holding the value
    assert not misses_the_value("Which depot opened in 1998?", "Northgate opened first.")  # a year is no value
    ctx = "Bus Depot Register\nDepots"
    assert not responsive(q, [{"text": "Buses is the number of buses allocated to the depot on 1 January.",
                               "context": ctx}])
