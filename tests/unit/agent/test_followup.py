"""Follow-ups made standalone without an LLM (relayrag.agent.followup): the fragment takes the place of what it
stands in parallel to, or becomes a new aspect of the previous subject; pronouns and ordinals are resolved; a
standalone question is left alone."""

import pytest

from relayrag.agent.followup import condense, names, subject

EU = "What is the refund window for EU customers?"
TEXAS = "How many handgun checks were there in Texas?"
COUNTRIES = ["USA", "Canada", "Brazil"]


@pytest.mark.parametrize("follow_up, previous, standalone", [
    # the same preposition: the phrase after it is replaced
    ("And for Brazil?", EU, "What is the refund window for Brazil?"),
    ("And in Pennsylvania?", TEXAS, "How many handgun checks were there in Pennsylvania?"),
    # a named thing replaces the previous question's last named thing (a number replaces a number)
    ("What about Florida?", TEXAS, "How many handgun checks were there in Florida?"),
    ("How about Canada", "What refunds do customers in the European Union get?",
     "What refunds do customers in Canada get?"),
    ("what about 2016?", "How many handgun checks were there in Texas in 2015?",
     "How many handgun checks were there in Texas in 2016?"),
    ("Brazil?", EU, "What is the refund window for Brazil customers?"),
    ("And how about the UK?", "What refunds do customers in Brazil get?", "What refunds do customers in the UK get?"),
    ("Is that also true for Canada?", "What refunds do customers in Brazil get?",
     "What refunds do customers in Canada get?"),
    ("Does it apply to Canada too?", "What refunds do customers in Brazil get?",
     "What refunds do customers in Canada get?"),
    # only the name of a fragment is new: the name replaces the name
    ("what about customers in Canada?", "What refunds do customers in Brazil get?",
     "What refunds do customers in Canada get?"),
    # the same head noun: the noun phrase is replaced
    ("ok, and long gun checks?", TEXAS, "How many long gun checks were there in Texas?"),
    # a new aspect of the previous subject; a later aspect takes the earlier one's place
    ("What about the exceptions?", EU, "What about the exceptions for the refund window for EU customers?"),
    ("And the drones?", "What about the queen for worker bees?", "What about the drones for worker bees?"),
    # pronouns stand for the previous question's subject
    ("When was it published?", "What does the federal register notice propose?",
     "When was the federal register notice published?"),
    ("and how much output do they lose per year?", "How much power does a residential solar panel produce?",
     "How much output do a residential solar panel lose per year?"),
    ("What are its exceptions?", EU, "What are the exceptions of the refund window for EU customers?"),
    ("and their refund rights?", "How many customers live in Brazil?",
     "What about the refund rights of customers in Brazil?"),
    # ordinals are the items of the thread's latest list
    ("What does our refund policy say about the first one?", "Which three countries have the most customers?",
     "What does our refund policy say about USA?"),
    ("and the second one?", "What does our refund policy say about USA?",
     "What does our refund policy say about Canada?"),
    ("And the last one?", "What does our refund policy say about USA?",
     "What does our refund policy say about Brazil?"),
    # a question of several parts: the follow-up continues the last part; a name takes the pronoun's place
    ("And Germany?", "Which three countries have the most customers, and what does our refund policy say about "
     "them?", "What does our refund policy say about Germany?"),
    # Japanese: a named topic is replaced, anything else is an aspect of the topic, pronouns are the topic
    ("富士山は？", "東京タワーの高さは？", "富士山の高さは？"),
    ("じゃあ、ブラジルの場合は？", "EUの顧客の返金期間は何日ですか？", "ブラジルの顧客の返金期間は何日ですか？"),
    ("例外は？", "EUの顧客の返金期間は何日ですか？", "EUの例外は？"),
    ("それはいつ建てられましたか？", "東京タワーの高さは？", "東京タワーはいつ建てられましたか？"),
    ("2つ目は？", "アメリカの返金ルールは？", "カナダの返金ルールは？"),
    ("カナダの場合はどうですか？", "ブラジルの顧客の返金期限は何日ですか？", "カナダの顧客の返金期限は何日ですか？"),
    ("その理由は？", "ブラジルの顧客の返金期限は何日ですか？", "ブラジルの理由は？"),
])
def test_follow_ups_become_standalone_questions(follow_up, previous, standalone):
    items = ["アメリカ", "カナダ"] if follow_up == "2つ目は？" else COUNTRIES
    got = condense(follow_up, previous, items)
    assert got is not None and got.question == standalone, got
    assert got.how  # the note says what was done


@pytest.mark.parametrize("question", [
    "How many permit checks did Illinois run in November 2015?",  # standalone
    "Is there a refund for faulty tracks?",                        # "there" is no reference
    "Refund policy?",                                              # two common words: a short question of its own
    "Thanks!",
    "Also, how many permit checks were there in Texas?",           # a lead, then a whole question
    "And for the UK, what is the deadline?",                       # a fragment, then a whole question
    "Why?",
    "What did the senate spend on travel, and which of those trips went to New York in the spring of 2019?",
])
def test_standalone_questions_are_left_alone(question):
    assert condense(question, EU, COUNTRIES) is None


def test_nothing_is_rewritten_without_a_previous_question_and_an_ordinal_without_a_list_stays():
    assert condense("And for Brazil?", None) is None and condense("And for Brazil?", "") is None
    assert condense("ブラジルは？", EU) is None  # another language: nothing to translate the subject with
    got = condense("and the second one?", TEXAS, [])
    assert got is not None and "second one" in got.question  # an aspect of the subject, nothing invented


def test_subjects_and_names():
    assert subject(EU) == "the refund window for EU customers"
    assert subject("What does the federal register notice propose?") == "the federal register notice"
    assert subject(TEXAS) == "handgun checks in Texas"
    assert subject("Who wrote the AMT handbook?") == "the AMT handbook"
    assert subject("How many worker bees live in a colony in summer?") == "worker bees"
    assert subject("How many customers live in Brazil?") == "customers in Brazil"
    assert names("What refunds do customers in the European Union get in 2023?") == ["European Union", "2023"]
    assert names("How many worker bees live in a colony?") == []
    assert names("東京タワーの高さは？") == ["東京タワー"]
