"""Verified queries (relayrag.sql.verified): without an LLM, a question worded like one of the SQL config's
examples runs that example's SQL through the guard; other wordings, other numbers and other named values get
the no-LLM answer with the closest verified questions. Real MiniLM embedder, real Chinook DuckDB warehouse."""

import pytest

from relayrag.engine.local import ask
from relayrag.sql.config import Example
from relayrag.sql.verified import asks_the_same, match_verified, numbers, same_parameters, string_literals
from relayrag.sql.warehouse import load_warehouse
from tests.unit.sql.conftest import CHINOOK, CONFIG

JAZZ = Example(question="How many tracks belong to the Jazz genre?",
               sql="SELECT COUNT(*) AS tracks FROM Track JOIN Genre ON Genre.GenreId = Track.GenreId "
                   "WHERE Genre.Name = 'Jazz'")
BY_YEAR = Example(question="What was the revenue per billing country in 2022, highest first?",
                  sql="SELECT BillingCountry, ROUND(SUM(Total), 2) AS revenue FROM Invoice WHERE InvoiceDate >= "
                      "'2022-01-01' AND InvoiceDate < '2023-01-01' GROUP BY BillingCountry ORDER BY revenue DESC")


def test_parameters_numbers_and_named_values():
    assert numbers("Which three countries, top 3, in 2022?") == {"3", "2022"}
    assert string_literals(JAZZ.sql) == ["Jazz"] and string_literals("SELEC nonsense (") == []
    assert same_parameters("How many tracks are in the jazz genre?", JAZZ.question, JAZZ.sql)
    assert not same_parameters("How many tracks are in the Rock genre?", JAZZ.question, JAZZ.sql)
    # the SQL's date literals are not named in the question; its year is, and must be the same
    assert same_parameters("Revenue per billing country in 2022, highest first?", BY_YEAR.question, BY_YEAR.sql)
    assert not same_parameters("Revenue per billing country in 2023, highest first?", BY_YEAR.question, BY_YEAR.sql)


def test_match_by_cosine_and_parameters(embedder):
    examples = [JAZZ, BY_YEAR]
    m, closest = match_verified("What was revenue per billing country in 2022, highest first", examples, embedder)
    assert m is not None and m.sql == BY_YEAR.sql and m.cosine >= 0.8 and closest[0] == BY_YEAR.question
    m, closest = match_verified("How many tracks are in the Rock genre?", examples, embedder)
    assert m is None and JAZZ.question in closest
    m, _ = match_verified("Who was the first employee hired?", examples, embedder)
    assert m is None
    assert match_verified("anything", [], embedder) == (None, []) and match_verified("x", examples, None)[0] is None


MOST = "Which three countries have the most customers? Show the country and the number of customers."


@pytest.mark.parametrize("question", [
    "Which three countries have the fewest customers?",          # antonym
    "Which three countries have the least customers",
    "Which three countries do not have the most customers?",     # negation
    "Which three countries don't have the most customers?",
    "Which three countries have the most customers on average?",  # another aggregate
    "Which three countries have customers?",                     # the example's "most" dropped
])
def test_opposite_negated_or_other_aggregate_questions_get_no_match(question, embedder):
    assert not asks_the_same(question, MOST)
    assert match_verified(question, [Example(question=MOST, sql="SELECT Country, COUNT(*) AS customers FROM "
                                             "Customer GROUP BY Country ORDER BY customers DESC LIMIT 3")],
                          embedder)[0] is None


def test_same_question_with_fewer_words_matches_and_japanese_aggregates_differ():
    assert asks_the_same("Which three countries have the most customers", MOST)
    assert asks_the_same("カナダで請求された金額の合計は？", "カナダで請求された金額の合計はいくら？")
    assert not asks_the_same("カナダで請求された金額の平均は？", "カナダで請求された金額の合計はいくら？")
    avg = "What is the average invoice total of business customers?"
    assert not asks_the_same("What is the total invoice amount of business customers?", avg)


@pytest.fixture
def chinook(home):
    load_warehouse(home, "chinook", [CHINOOK], config=CONFIG)


def test_without_an_llm_the_sql_route_runs_the_verified_query(ctx, chinook):
    res = ask("Which three countries have the most customers?", "chinook", ctx=ctx)
    assert res["route"] == "sql" and res["stages"][-1]["method"] == "verified"
    assert res["rows"] == [["USA", 13], ["Canada", 8], ["Brazil", 5]]
    assert "verified query" in res["answer"] and "no SQL was generated" in res["answer"]
    assert res["sql"].startswith("SELECT Country, COUNT(*) AS customers FROM Customer")
    ja = ask("カナダで請求された金額の合計は？", "chinook", ctx=ctx)
    assert ja["stages"][-1]["method"] == "verified" and ja["rows"] and ja["rows"][0][0] > 0


def test_without_an_llm_other_questions_name_the_closest_verified_ones(ctx, chinook):
    res = ask("How many customers does each support rep have?", "chinook", ctx=ctx)
    assert res["route"] == "sql" and res["stages"][-1]["method"] == "no-llm" and res["sql"] is None
    assert "RELAYRAG_LLM" in res["answer"] and "the closest: “" in res["answer"]
    assert "Which customers does Jane Peacock look after as their support rep?" in res["answer"]
