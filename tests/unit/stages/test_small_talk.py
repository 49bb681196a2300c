"""Small talk (issue 28, new-user walk): a message made only of courtesy phrases is small talk and gets the reply of
its kind in its language (thanks → "you're welcome", goodbye → goodbye, greeting → greeting); a question with
content words is never small talk; a small-talk reply states no facts; a warehouse-only collection's greeting
describes its tables, not citations to document and page."""

from __future__ import annotations

import pytest

from relayrag.smalltalk import courtesy_kinds, small_talk_reply
from relayrag.stages.answer_text import states_no_facts

THANKS = ["thanks", "Thank you very much!", "cheers", "Thanks a lot for your help!", "ありがとう",
          "ありがとうございます。", "どうもありがとうございました！"]
GOODBYE = ["bye", "Goodbye!", "see you later", "good night", "さようなら", "またね", "おやすみなさい"]
GREETING = ["hello!", "Good morning", "hi there", "おはよう", "こんにちは", "おはようございます"]
QUESTIONS = ["Thanks, what is the labor cost of the wiring change?", "thank you for the cost figures, and the hours?",
             "Goodbye procedure for engine shutdown", "How do I say goodbye to a colleague in the policy?",
             "ありがとう、費用はいくらですか", "さようならの手順は？", "おはようございます。女王蜂は一日に何個の卵を産みますか？"]


@pytest.mark.parametrize("message,kind", [*((m, "thanks") for m in THANKS), *((m, "goodbye") for m in GOODBYE),
                                          *((m, "greeting") for m in GREETING)])
def test_a_courtesy_phrase_is_small_talk_of_its_kind(message, kind):
    assert courtesy_kinds(message) == (kind,)


@pytest.mark.parametrize("question", QUESTIONS)
def test_a_question_with_content_words_is_never_small_talk(question):
    assert courtesy_kinds(question) == ()


def test_the_reply_matches_the_kind_and_the_language_and_states_no_facts():
    for m in THANKS:
        r = small_talk_reply(m, "t")
        assert ("どういたしまして" if m.isascii() is False else "You're welcome") in r, (m, r)
    for m in GOODBYE:
        r = small_talk_reply(m, "t")
        assert ("さようなら" if not m.isascii() else "Goodbye") in r and "Hello" not in r, (m, r)
    for m in GREETING:
        r = small_talk_reply(m, "t")
        assert ("こんにちは" if not m.isascii() else "Hello!") in r, (m, r)
    assert small_talk_reply("Thanks, bye!", "t").startswith("You're welcome. Goodbye!")
    for m in THANKS + GOODBYE + GREETING:
        for holds in ({}, {"has_documents": False, "has_tables": True, "tables": ["Customer", "Invoice"]},
                      {"has_documents": True, "has_tables": True}):
            assert states_no_facts(small_talk_reply(m, "t", **holds)), (m, holds)


def test_a_warehouse_only_collection_greets_with_its_tables():
    r = small_talk_reply("hello", "chinook", has_documents=False, has_tables=True, tables=["Customer", "Invoice"])
    assert "tables" in r and "Customer, Invoice" in r and "document and page" not in r
    r = small_talk_reply("こんにちは", "chinook", has_documents=False, has_tables=True, tables=["Customer"])
    assert "表" in r and "Customer" in r and "文書" not in r


def test_ask_routes_courtesy_to_small_talk_and_questions_to_the_documents(ctx, small_corpus):
    """Through the whole workflow without an LLM: each courtesy gets its reply, no citation; each question with
    content words goes to retrieval (route rag), whatever courtesy it starts with."""
    from relayrag.engine.local import ask
    from relayrag.ingest.pipeline import ingest
    assert not ingest(ctx, small_corpus, "t").failed
    for message, said in (("Thank you very much!", "You're welcome"), ("thanks", "You're welcome"),
                          ("cheers", "You're welcome"), ("bye", "Goodbye"), ("see you later", "Goodbye"),
                          ("hello", "Hello!"), ("ありがとう", "どういたしまして"), ("ありがとうございます", "どういたしまして"),
                          ("さようなら", "さようなら。"), ("おはよう", "こんにちは")):
        r = ask(message, "t", ctx=ctx)
        assert r["route"] == "chitchat" and said in r["answer"] and r["citations"] == [], (message, r["answer"])
    for question in ("Thanks, how many eggs does the queen lay per day?", "bye the way, how tall is a solar panel?",
                     "Thank you — what is the standard rail gauge?", "ありがとう、東京タワーの高さは？",
                     "さようなら。富士山の標高は？", "おはよう、東京都の人口は？"):
        r = ask(question, "t", ctx=ctx)
        assert r["route"] == "rag", (question, r["route"])


def test_with_an_llm_the_courtesy_stays_small_talk_and_its_reply_says_no_facts(make_llm_ctx, small_corpus):
    """The LLM double labels "Thank you very much!" chitchat and replies with a fact: the route stays chitchat (the
    no-LLM checks agree now) and the template replaces the reply."""
    from relayrag.engine.local import ask
    from relayrag.ingest.pipeline import ingest

    def reply(messages, schema):
        if "route" in (schema or {}).get("properties", {}):
            return {"route": "chitchat"}
        return "You're welcome! The queen lays 2,000 eggs per day."

    c, _ = make_llm_ctx(reply)
    assert not ingest(c, small_corpus, "t").failed
    r = ask("Thank you very much!", "t", ctx=c)
    assert r["route"] == "chitchat" and r["answer"].startswith("You're welcome!") and "2,000" not in r["answer"]
