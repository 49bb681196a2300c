"""Verified queries without slots (relayrag.sql.verified): an example with no `slots:` is a template with nothing to
fill, so a question must ask the same thing with the same numbers and named values; opposite, negated or other
aggregates get no match. Without an LLM the sql route runs the match through the guard; other questions get the
two-line no-LLM answer. Real MiniLM embedder, real Chinook DuckDB warehouse."""

import pytest

from relayrag.engine.local import ask
from relayrag.sql.config import Example
from relayrag.sql.verified import match_verified
from relayrag.sql.warehouse import load_warehouse, open_warehouse
from tests.unit.sql.conftest import CHINOOK, CONFIG

JAZZ = Example(question="How many tracks belong to the Jazz genre?",
               sql="SELECT COUNT(*) AS tracks FROM Track JOIN Genre ON Genre.GenreId = Track.GenreId "
                   "WHERE Genre.Name = 'Jazz'")
BY_YEAR = Example(question="What was the revenue per billing country in 2022, highest first?",
                  sql="SELECT BillingCountry, ROUND(SUM(Total), 2) AS revenue FROM Invoice WHERE InvoiceDate >= "
                      "'2022-01-01' AND InvoiceDate < '2023-01-01' GROUP BY BillingCountry ORDER BY revenue DESC")
MOST = Example(question="Which three countries have the most customers? Show the country and the number of customers.",
               sql="SELECT Country, COUNT(*) AS customers FROM Customer GROUP BY Country ORDER BY customers DESC "
                   "LIMIT 3")


def test_without_slots_the_same_numbers_and_named_values_are_needed(embedder, wh):
    examples = [JAZZ, BY_YEAR]
    m, miss = match_verified("What was revenue per billing country in 2022, highest first", examples, embedder, wh)
    assert m is not None and m.sql == BY_YEAR.sql and m.cosine >= 0.8 and m.slots == {}
    m, miss = match_verified("Revenue per billing country in 2023, highest first?", examples, embedder, wh)
    assert m is None and "2023" in miss.reason and BY_YEAR.question in miss.closest
    m, miss = match_verified("How many tracks are in the Rock genre?", examples, embedder, wh)
    assert m is None and JAZZ.question in miss.closest
    m, _ = match_verified("How many tracks belong to the jazz genre?", examples, embedder, wh)
    assert m is not None and m.sql == JAZZ.sql
    m, miss = match_verified("Who was the first employee hired?", examples, embedder, wh)
    assert m is None and miss.reason
    assert match_verified("anything", [], embedder, wh)[0] is None and match_verified("x", examples, None)[0] is None


@pytest.mark.parametrize("question", [
    "Which three countries have the fewest customers?",          # antonym
    "Which three countries have the least customers",
    "Which three countries do not have the most customers?",     # negation
    "Which three countries don't have the most customers?",
    "Which three countries have the most customers on average?",  # another aggregate
    "Which three countries have customers?",                     # the example's "most" dropped
    "顧客が少ない国を3つ",                                          # Japanese antonym
])
def test_opposite_negated_or_other_aggregate_questions_get_no_match(question, embedder, wh):
    m, miss = match_verified(question, [MOST], embedder, wh)
    assert m is None and miss.reason


def test_same_question_with_fewer_words_matches_and_japanese_aggregates_differ(embedder, wh):
    assert match_verified("Which three countries have the most customers", [MOST], embedder, wh)[0] is not None
    canada = Example(question="カナダで請求された金額の合計はいくら？",
                     sql="SELECT ROUND(SUM(Total), 2) AS total FROM Invoice WHERE BillingCountry = 'Canada'")
    assert match_verified("カナダで請求された金額の合計は？", [canada], embedder, wh)[0] is not None
    assert match_verified("カナダで請求された金額の平均は？", [canada], embedder, wh)[0] is None
    avg = Example(question="What is the average invoice total of business customers?",
                  sql="SELECT ROUND(AVG(i.Total), 2) FROM Invoice AS i JOIN Customer AS c ON c.CustomerId = "
                      "i.CustomerId WHERE c.Company IS NOT NULL")
    assert match_verified("What is the total invoice amount of business customers?", [avg], embedder, wh)[0] is None


@pytest.fixture
def chinook(home):
    load_warehouse(home, "chinook", [CHINOOK], config=CONFIG)
    yield
    w = open_warehouse(home, "chinook")
    if w is not None:
        w.close()


def test_without_an_llm_the_sql_route_runs_the_verified_query(ctx, chinook):
    res = ask("Which three countries have the most customers?", "chinook", ctx=ctx)
    assert res["route"] == "sql" and res["stages"][-1]["method"] == "verified"
    assert res["rows"] == [["USA", 13], ["Canada", 8], ["Brazil", 5]]
    assert "verified query" in res["answer"] and "no LLM was used" in res["answer"]
    assert res["sql"].startswith("SELECT Country, COUNT(*) AS customers FROM Customer")
    ja = ask("カナダで請求された金額の合計は？", "chinook", ctx=ctx)
    assert ja["stages"][-1]["method"] == "verified" and ja["rows"] and ja["rows"][0][0] > 0


def test_without_an_llm_other_questions_say_what_was_not_matched_in_two_lines(ctx, chinook):
    res = ask("How many customers does each support rep have?", "chinook", ctx=ctx)
    assert res["route"] == "sql" and res["stages"][-1]["method"] == "no-llm" and res["sql"] is None
    first, second = res["answer"].splitlines()
    assert "RELAYRAG_LLM" in first and "template" in first
    assert second.startswith("Closest templates: “") and "{rep}" in second  # templates shown with their slots
    ja = ask("サポート担当ごとの顧客数は？", "chinook", ctx=ctx)
    first, second = ja["answer"].splitlines()
    assert "LLMが必要です" in first and second.startswith("近いテンプレート: 「")
