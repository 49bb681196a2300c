"""A who-question's answer names someone else (issue 31, responsive.restates_person / question_persons): "Who will
replace Dana Whitfield as Head of Finance?" is not answered by "Dana Whitfield told the staff that she will retire",
a sentence whose only person is the one the question names (her pronouns and her own title do not count). Replace /
succeed is an act of office: the answer says it, with a person beside it. A who-question that names nobody is
unaffected ("Who approved the report?" → "Approved by: Dana Whitfield"). Small inputs of their own, English and
Japanese."""

from __future__ import annotations

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.stages.hallucination_check import responsive
from relayrag.stages.responsive import question_persons, restates_person


def _answers(question: str, sentence: str) -> bool:
    return responsive(question, [{"text": sentence, "context": "Finance team notes"}])


@pytest.mark.parametrize("question, persons", [
    ("Who will replace Dana Whitfield as Head of Finance?", ["Dana Whitfield"]),
    ("Who is Dana Whitfield's successor?", ["Dana Whitfield"]),
    ("Whom does Dr Marek Holub report to?", ["Dr Marek Holub"]),
    ("Who chairs the Harbour Board?", []),                 # a body, not a person
    ("Who approved the report?", []),
    ("田中さんの後任は誰ですか？", ["田中さん"]),
    ("ダナ・ホイットフィールド氏の後任はどなたですか？", ["ダナ・ホイットフィールド氏", "ダナ・ホイットフィールド"]),
])
def test_persons_the_question_names(question, persons):
    assert question_persons(question) == persons


@pytest.mark.parametrize("question, sentence", [
    ("Who will replace Dana Whitfield as Head of Finance?",
     "Dana Whitfield told the staff that she will retire as Head of Finance in June."),
    ("Who is Dana Whitfield's successor?", "Dana Whitfield (Head of Finance) announced her retirement in March."),
    ("Who is Dana Whitfield's successor?", "Head of Finance Dana Whitfield will retire on 30 June."),
    ("Who will take over from Dana Whitfield?", "Dana Whitfield has worked for the company since 2016."),
    ("Whom does Dr Marek Holub report to?", "Dr Marek Holub joined the laboratory in 2021 and he leads it."),
    ("田中さんの後任は誰ですか？", "田中さんは来年3月に退職する予定である。"),
    ("田中さんの後任はどなたですか？", "田中さんは2016年から経理を担当してきた。"),
    ("ダナ・ホイットフィールド氏の後任は誰ですか？", "ダナ・ホイットフィールド氏は6月に退職する。"),
])
def test_a_sentence_naming_only_the_questions_person_does_not_answer(question, sentence):
    assert restates_person(question, sentence)
    assert not _answers(question, sentence)


@pytest.mark.parametrize("question, sentence", [
    ("Who will replace Dana Whitfield as Head of Finance?",
     "The board appointed Priya Nandakumar to succeed Dana Whitfield as Head of Finance."),
    ("Who is Dana Whitfield's successor?", "Dana Whitfield's successor is the current Deputy Controller, Priya Nandakumar."),
    ("Whom does Dr Marek Holub report to?", "Dr Marek Holub reports to the Research Director."),
    ("田中さんの後任は誰ですか？", "田中さんの後任は鈴木課長である。"),
    ("田中さんの後任はどなたですか？", "田中さんの後任には佐藤氏が就任する。"),
])
def test_a_sentence_naming_someone_else_still_answers(question, sentence):
    assert not restates_person(question, sentence)
    assert _answers(question, sentence)


@pytest.mark.parametrize("question, sentence", [
    ("Who approved the report?", "Approved by: Dana Whitfield"),
    ("Who signed the contract?", "The contract was signed by the Head of Procurement."),
    ("Who approves travel requests?", "Travel requests are approved by the line manager."),
    ("経費精算の担当者は？", "経費精算の担当は経理課である。"),
    ("誰が申請を承認しますか？", "申請は部長が承認する。"),
])
def test_who_questions_naming_nobody_are_unaffected(question, sentence):
    assert not restates_person(question, sentence)
    assert _answers(question, sentence)


def test_replace_is_an_act_the_answer_says():
    q = "Who will replace Dana Whitfield as Head of Finance?"
    # names other people, but says nothing of who replaces her
    assert not _answers(q, "Present: Dana Whitfield (Head of Finance), Owen Marsh (Controller), Lena Ruiz (HR).")


MINUTES = """# Finance committee minutes, May

Present: Dana Whitfield (Head of Finance), Owen Marsh (Controller).

Dana Whitfield told the committee that she will retire as Head of Finance in June.
The committee approved the annual budget.
"""


def test_who_replaces_end_to_end(ctx, tmp_path):
    d = tmp_path / "minutes"
    d.mkdir()
    (d / "minutes.md").write_text(MINUTES, encoding="utf-8")
    assert not ingest(ctx, d, "mn").failed
    for question in ("Who will replace Dana Whitfield as Head of Finance?", "Who is Dana Whitfield's successor?",
                     "Who will take over from Dana Whitfield?"):
        res = ask(question, "mn", ctx=ctx)
        assert not res["grounded"], (question, res["answer"])
    (d / "minutes.md").write_text(MINUTES + "\nThe committee appointed Priya Nandakumar to succeed Dana Whitfield as "
                                  "Head of Finance.\n", encoding="utf-8")
    assert not ingest(ctx, d, "mn").failed
    res = ask("Who will replace Dana Whitfield as Head of Finance?", "mn", ctx=ctx)
    assert res["grounded"] and "Priya Nandakumar" in res["answer"], res["answer"]
