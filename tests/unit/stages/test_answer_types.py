"""Regression tests for answers a new user found untrustworthy on a clean clone without an LLM: a "not found"
reported as grounded; a sentence that shares the question's words but states another kind of quantity ("73
airplanes" for "what does each airplane cost?"); state rows given for a table's total; "how long" questions
refused because "long" was read as a content word; and a one-document collection refusing what a larger
collection answers from the same document (idf of a tiny collection)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from relayrag.stages.answerability import (
    asks_for_total, content_weights, expected_answer_type, is_total_label, question_numbers, states_answer_type)
from relayrag.stages.evidence import query_idf
from tests.unit.stages.test_answer_trust import nics_like

REFUND_PDF = Path(__file__).resolve().parents[3] / "examples" / "shop-policies" / "refund-policy.pdf"


def _collection(ctx, tmp_path, name: str, files: dict[str, str]) -> str:
    d = tmp_path / name
    d.mkdir()
    for fname, text in files.items():
        (d / fname).write_text(text, encoding="utf-8")
    assert not ingest(ctx, d, name).failed
    return name


COMPLIANCE = ("Costs of Compliance\n\nThe agency estimates that this directive affects 73 airplanes of U.S. "
              "registry. Operators must inspect the wiring of each airplane within 30 days.\n")


def test_a_not_found_answer_is_not_grounded_in_json_service_and_run_record(ctx, tmp_path):
    from relayrag.service import Service
    coll = _collection(ctx, tmp_path, "nf", {"ad.txt": COMPLIANCE})
    res = ask("Who is the chief executive of the airline?", coll, ctx=ctx)
    assert not res["found"] and not res["grounded"] and "could not find an answer" in res["answer"], res
    check = next(s for s in res["stages"] if s["name"] == "hallucination_check")
    assert check["method"] == "skipped (not found)"
    assert ctx.docstore.get_run(res["run_id"])["grounded"] is False
    typed = Service(ctx).ask("Who is the chief executive of the airline?", coll)  # what CLI --json and MCP print
    assert typed.found is False and typed.grounded is False
    assert json.loads(typed.model_dump_json())["grounded"] is False
    hello = ask("hello!", coll, ctx=ctx)  # small talk cites nothing: answered, not grounded
    assert hello["route"] == "chitchat" and hello["found"] and hello["grounded"] is False


def test_a_sentence_stating_another_kind_of_quantity_does_not_answer_a_cost_question(ctx, tmp_path):
    coll = _collection(ctx, tmp_path, "ad", {"ad.txt": COMPLIANCE})
    for q in ("What does each airplane cost?", "What is the cost per airplane?"):
        res = ask(q, coll, ctx=ctx)
        assert not res["found"] and not res["grounded"], res["answer"]  # "73 airplanes" is a count, not a cost
    per_operator = _collection(ctx, tmp_path, "ad1", {"ad.txt": COMPLIANCE + (
        "\nA per-operator estimate is more accurate than a per-airplane estimate. The average cost per operator "
        "is $7,650.\n")})
    res = ask("What does each airplane cost?", per_operator, ctx=ctx)
    assert not res["found"], res["answer"]  # a cost per operator is not a cost per airplane
    priced = _collection(ctx, tmp_path, "ad2", {"ad.txt": COMPLIANCE + "\nThe inspection costs $850 per airplane.\n"})
    res = ask("What does each airplane cost?", priced, ctx=ctx)
    assert res["found"] and res["grounded"] and "$850" in res["answer"] and "73 airplanes" not in res["answer"]


def test_expected_answer_types_and_the_values_that_state_them():
    assert expected_answer_type("What does each airplane cost?") == "money"
    assert expected_answer_type("How much was the train fare to New York?") == "money"
    assert expected_answer_type("How long do customers have to request a refund?") == "duration"
    assert expected_answer_type("In what year was the bridge built?") == "date"
    assert expected_answer_type("How many airplanes does the AD affect?") == "count"
    assert expected_answer_type("Who paid for the repairs?") is None
    assert expected_answer_type("この本の価格はいくらですか") == "money"
    assert expected_answer_type("価格は何で決まりますか") is None
    assert states_answer_type("money", "価格は1500円です。", cjk=True)
    assert not states_answer_type("money", "価格は高い。", cjk=True)
    assert not states_answer_type("money", "The AD affects 73 airplanes of U.S. registry.")
    assert not states_answer_type("money", "Store credit of 110 percent of the price.")
    for money in ("It costs $7,650 per operator.", "The fee is 30 euros.", "The fare was 618.00.",
                  "Shipping is free of charge."):
        assert states_answer_type("money", money), money
    # a table row of bare numbers: money when its column names give a currency or no unit, not a time unit
    assert states_answer_type("money", "Iowa | 1.35 - 1.42 | 1.38", unit_context="Ethanol ($/gal)")
    assert not states_answer_type("money", "Iowa | 12 | 14", unit_context="State | Delay (days) | Wait (days)")
    q = "What does each airplane cost?"
    assert not states_answer_type("money", "The cost per operator is $7,650 ($85 per work-hour).", question=q)
    assert states_answer_type("money", "It costs $850 per airplane.", question=q)
    assert states_answer_type("money", "The labor rate is $85 per work-hour.", question="What labor rate per hour?")
    assert states_answer_type("money", "Iowa | 54.45 | 53.99", unit_context="Crude ($/bbl)", question="Price per barrel?")
    assert states_answer_type("duration", "Support answers within two working days.")
    assert states_answer_type("duration", "They have a 14-day right of withdrawal.")
    assert not states_answer_type("duration", "A customer may choose store credit of 110 percent.")
    assert states_answer_type("date", "Comments are due by September 21, 2020.")
    assert not states_answer_type("date", "It affects 73 airplanes.")
    # the question's own numbers state nothing: a title "… November - 2015" does not answer "how many … 2015"
    own = question_numbers("How many checks were there in November 2015?")
    assert own == ("2015",)
    assert not states_answer_type("number", "NICS Firearm Background Checks November - 2015", exclude=own)
    assert states_answer_type("number", "Totals | 804,006 | 2,236,457", exclude=own)


def test_a_total_question_gets_the_total_row_not_the_rows_it_sums(ctx, tmp_path):
    from relayrag.stages.generate import total_row_chunks
    rows = nics_like().splitlines()
    body = [f"{r.split(' | ', 1)[0]} County | {r.split(' | ', 1)[1]}" for r in rows[3:-1]]  # more rows: more chunks
    text = "\n".join(rows[:-1] + body + ["Totals | 40,000 | 40,100 | 40,200 | 325 | 351 | 118,888", rows[-1]]) + "\n"
    coll = _collection(ctx, tmp_path, "nics", {"nics.txt": text})
    snap = ctx.snapshot(coll)
    assert len(snap.chunks) > 2, "the table spans several chunks"
    first = min(snap.chunks, key=lambda c: c["start"])
    added = total_row_chunks(snap, [first])  # retrieval brought the table's first rows only
    assert len(added) == 1 and "Totals | 40,000" in added[0]["text"] and added[0]["chunk_id"] != first["chunk_id"]
    assert total_row_chunks(snap, added) == []  # a context chunk holds the total row already
    # asked for a total, or for a number of the whole table (the question names none of its rows)
    for q in ("What is the total for November 2015?", "What were the total firearm checks in November 2015?",
              "How many background checks were there in November 2015?"):
        res = ask(q, coll, ctx=ctx)
        assert res["found"] and res["grounded"], (q, res["answer"])
        assert res["answer"].startswith("Totals — Totals: 118,888"), (q, res["answer"])
        assert not any(st in res["answer"] for st in ("Alabama", "Arkansas", "Kentucky", "Montana")), res["answer"]
    named = ask("What is the total for Kentucky in November 2015?", coll, ctx=ctx)  # a row the question names
    assert named["found"] and "291,162" in named["answer"], named["answer"]
    cell = ask("How many long gun checks did Kentucky have in November 2015?", coll, ctx=ctx)
    assert cell["answer"].startswith("Kentucky — Long Gun: 14,847") and "Totals" not in cell["answer"], cell["answer"]
    assert asks_for_total("How many checks were run across all states?") and not asks_for_total("How many in Iowa?")
    assert is_total_label("Totals") and is_total_label("Grand total") and not is_total_label("Kentucky")


def test_how_long_is_a_duration_question_not_a_word_to_find(ctx, tmp_path):
    assert "long" not in content_weights("How long do customers have to request a refund?")
    assert "long" in content_weights("What is the long gun count?")
    coll = _collection(ctx, tmp_path, "pol", {"policy.txt": (
        "Refund policy\n\nCustomers can request a refund within 14 days of delivery. Refunds are paid to the "
        "original card. Support answers within two working days.\n\nGift cards are not refunded in cash.\n")})
    res = ask("How long do customers have to request a refund?", coll, ctx=ctx)
    assert res["found"] and res["grounded"] and "14 days" in res["answer"], res["answer"]
    res = ask("How long does support take to answer?", coll, ctx=ctx)
    assert res["found"] and "two working days" in res["answer"], res["answer"]


@pytest.mark.skipif(not REFUND_PDF.exists(), reason="examples/shop-policies is not in this checkout")
def test_a_one_document_collection_answers_what_a_larger_collection_answers(ctx, tmp_path):
    """Same document, two collections: alone, its topic words ("refund") are in every chunk and a rare or absent
    word used to decide alone; the smoothed idf keeps the answer the same."""
    one, many = tmp_path / "one", tmp_path / "many"
    one.mkdir()
    many.mkdir()
    for d in (one, many):
        (d / "refund-policy.pdf").write_bytes(REFUND_PDF.read_bytes())
    for k, topic in enumerate(("pumps", "valves", "gaskets")):
        (many / f"{topic}.txt").write_text(f"The {topic} manual. Long {topic} last {k + 5} years. Inspect the "
                                          f"{topic} window seal every month.\n", encoding="utf-8")
    assert not ingest(ctx, one, "one").failed and not ingest(ctx, many, "many").failed
    questions = {"What is the refund window for a purchase that has not been downloaded?": "14 days",
                 "How long is the right of withdrawal in the European Union?": "14-day"}
    for q, expected in questions.items():
        answers = {c: ask(q, c, ctx=ctx) for c in ("one", "many")}
        for c, res in answers.items():
            assert res["found"] and res["grounded"] and expected in res["answer"], (c, q, res["answer"])
        assert answers["one"]["citations"][0]["page"] == answers["many"]["citations"][0]["page"]


class _Index:
    def __init__(self, n: int, df: dict[str, int]):
        self.n_total = self.n_docs = n
        self._df = df

    def df(self, t: str) -> int:
        return self._df.get(t, 0)


def test_smoothed_idf_is_flat_for_one_chunk_and_bounded_for_a_tiny_collection():
    one = query_idf(["refund", "window", "custom"], _Index(1, {"refund": 1, "custom": 1}))
    assert len({round(w, 9) for w in one.values()}) == 1  # N = 1: every term weighs the same
    tiny = query_idf(["refund", "request"], _Index(4, {"refund": 4, "request": 1}))
    assert 1.0 < tiny["request"] / tiny["refund"] < 2.0  # raw idf: 1.20 / 0.105, a ratio of 11
    big = query_idf(["rare", "common"], _Index(5000, {"rare": 1, "common": 4000}))
    assert big["rare"] / big["common"] > 20  # a large collection keeps its idf contrast


def test_not_found_and_refusals_are_said_in_the_language_code(ctx, tmp_path):
    from relayrag.stages.generate import not_found_text
    from relayrag.stages.hallucination_check import refusal_text
    from relayrag.text import language_code
    cases = {"Who is the mayor of Denver?": "en", "デンバーの市長は誰ですか？": "ja", "谁是丹佛的市长？": "zh",
             "덴버 시장은 누구입니까?": "ko", "¿Quién es el alcalde de Denver?": "es", "Qui est le maire de Denver ?": "fr",
             "Wer ist der Bürgermeister von Denver?": "de", "Quem é o prefeito de Denver?": "pt",
             "Chi è il sindaco di Denver?": "it", "What is the price of the Rol-top nut?": "en"}
    for q, lang in cases.items():
        assert language_code(q) == lang, (q, language_code(q))
    said = {lang: not_found_text(q, "c", [{"doc": "a.pdf", "page": 2}]) for q, lang in cases.items()}
    assert len(set(said.values())) == len(set(cases.values()))  # one wording per language
    assert all("a.pdf p. 2" in t and "'c'" in t or "「c」" in t for t in said.values()), said
    assert "没有找到" in said["zh"] and "찾지 못했습니다" in said["ko"] and said["es"].startswith("No encontré")
    assert refusal_text("¿Cuánto cuesta el envío?").startswith("No puedo") and refusal_text("谁？").startswith("仅凭")
    coll = _collection(ctx, tmp_path, "es", {"ad.txt": COMPLIANCE})
    res = ask("¿Quién es el alcalde de Denver?", coll, ctx=ctx)
    assert not res["found"] and res["answer"].startswith("No encontré una respuesta"), res["answer"]


def test_how_many_things_needs_a_count_not_a_time_span_money_or_an_article_number():
    assert expected_answer_type("How many customers do we have in Brazil?") == "count"
    assert expected_answer_type("How many airplanes does the AD affect?") == "count"
    assert expected_answer_type("How many days do I have?") == "duration"
    assert expected_answer_type("How many working days does support take?") == "duration"
    regret = ("Customers in Brazil have a right of regret of 7 days for any online purchase under the Consumer "
              "Defense Code (article 49).")
    assert not states_answer_type("count", regret)
    assert not states_answer_type("count", "It costs $6,715 per product, about 12 percent more, see Figure 7.")
    assert states_answer_type("count", "This proposed AD affects 73 airplanes of U.S. registry.")
    assert states_answer_type("count", "Texas | 56,941 | 1,234")
    # a count the question itself states is not its answer
    assert not states_answer_type("count", "The 2015 report.", exclude=question_numbers("How many in 2015?"))


def test_a_how_many_question_is_not_answered_by_a_sentence_that_states_only_a_time_span(ctx, tmp_path):
    coll = _collection(ctx, tmp_path, "regret", {"policy.txt": (
        "Refunds for customers in Brazil\n\nCustomers in Brazil have a right of regret of 7 days for any online "
        "purchase under the Consumer Defense Code (article 49). Brazil refunds are the full amount.\n")})
    res = ask("How many customers do we have in Brazil?", coll, ctx=ctx)
    assert not res["found"] and not res["grounded"], res["answer"]
    assert "7 days" not in res["answer"].split("Related passages")[0]
    res = ask("How many days of regret do customers in Brazil have?", coll, ctx=ctx)
    assert res["found"] and "7 days" in res["answer"], res["answer"]


def test_a_sentence_added_to_the_answer_names_the_questions_entity_as_the_best_one_does(ctx, tmp_path):
    coll = _collection(ctx, tmp_path, "countries", {"policy.txt": (
        "Refunds for customers in the USA\n\nCustomers in the USA have no statutory right to cancel, so this "
        "refund policy is all they get: a refund within 14 days if not downloaded.\n\n"
        "Refunds for customers in Canada\n\nCustomers in Canada get the refund to the original card within 30 "
        "days of the request.\n")})
    res = ask("refund policy Canada", coll, ctx=ctx, arm="hybrid")
    assert res["found"] and "Canada" in res["answer"], res["answer"]
    assert "USA" not in res["answer"], res["answer"]  # another country's rule is not an answer about Canada
