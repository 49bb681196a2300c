"""A "who approved / signed … X?" question is not answered by a passive about another thing (issue 31).

Found when grade's lexical coverage began to read the chunk's title: "Who approved the employee handbook?" (no
document says) was answered by "Overtime must be approved in advance by the shift supervisor." — under the title
"Employee Handbook", whose words covered the question. The passive's subject (overtime) is what the person approves.
"""

import pytest

from relayrag.stages.responsive import unanswered_office_act


@pytest.mark.parametrize("question, text", [
    ("Who approved the employee handbook?", "Overtime must be approved in advance by the shift supervisor."),
    ("Who signed the travel policy?", "Expense claims are signed by the line manager before payment."),
    ("Who approved the procurement procedure?", "Orders above EUR 5,000 must first be approved by the Finance "
                                                "Director."),
])
def test_a_passive_about_another_thing_does_not_say_who_did_the_act(question, text):
    assert unanswered_office_act(question, text)


@pytest.mark.parametrize("question, text", [
    ("Who approved the employee handbook?", "This handbook was approved by the Managing Director on 2 May 2026."),
    ("Who signed the travel policy?", "The travel policy was signed by Anna Berg, Chief Financial Officer."),
    ("Who approved the procurement procedure?", "It was approved by the Board of Directors in March."),
    ("Who approves purchases over EUR 5,000?", "Purchases over EUR 5,000 are approved by the Finance Director."),
    ("Who must approve my annual leave?", "Annual leave must be approved by your line manager."),
    ("Who approved the leak policy?", "Approved by: Board of Directors, 12 February 2026"),
])
def test_the_act_on_the_question_s_own_thing_or_the_document_itself_still_answers(question, text):
    assert not unanswered_office_act(question, text)
