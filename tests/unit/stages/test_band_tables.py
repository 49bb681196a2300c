"""Numeric band tables (issue 31): a question that states a number ("orders of 250 units", "a 12-year-old record")
is answered by the band row holding it ("200-499", "10–15 years"), with the row's other cells named by their
column names; the column-name row is the table's first full label row even when the first data row has no bare
number ("fewer than 50 units | Bronze | next week"). Small inputs of their own: a Markdown price list, a Markdown
retention table and an unruled PDF table."""

from __future__ import annotations

from relayrag.engine.local import ask
from relayrag.ingest.chunking import table_header
from relayrag.ingest.pipeline import ingest
from relayrag.stages.answer_shape import band, band_holds, quantities
from relayrag.stages.answerability import asking_clause, expected_answer_type
from relayrag.stages.local_context import table_header_above
from relayrag.stages.extractive import data_row_header, table_cell
from relayrag.text import column_header

TIERS = """# Wholesale terms

Discounts depend on the size of a single order.

| Order size | Discount tier | Dispatch |
|---|---|---|
| fewer than 50 units | Bronze | next week |
| 50-199 units | Silver | within 3 days |
| 200-499 units | Gold | within 2 days |
| 500 units or more | Platinum | same day |

Prices exclude VAT.
"""

RETENTION = """# Archive rules

## Storage by age

| Age of record | Storage tier | Reviewed by |
|---|---|---|
| under 5 years | Tier A | the records clerk |
| 5-9 years | Tier B | the archive supervisor |
| 10–15 years | Tier C | the legal counsel |
| over 15 years | Tier D | the board secretary |
"""


def test_first_data_row_without_a_bare_number_is_data_not_the_column_names():
    text = TIERS[TIERS.index("Order size"):].replace("|---|---|---|\n", "")
    text = "\n".join(" | ".join(c.strip() for c in ln.strip().strip("|").split("|")) for ln in text.splitlines())
    first = text.index("fewer than 50")
    later = text.index("500 units")
    assert table_header_above(text, later) == "Order size | Discount tier | Dispatch"
    assert data_row_header(text, first, text.index("\n", first)) == "Order size | Discount tier | Dispatch"
    top = text.index("Order size")
    assert data_row_header(text, top, text.index("\n", top)) == ""  # the column names are not a data row
    assert table_header(text, later) == "Order size | Discount tier | Dispatch"
    # of equally full label rows the first names the columns; a group row above them does not
    assert column_header(["Order size | Discount tier | Dispatch", "fewer than 50 units | Bronze | next week"]) \
        == "Order size | Discount tier | Dispatch"
    assert column_header(["| | Terms | |", "Order size | Discount tier | Dispatch"]).startswith("Order size")
    # an address block's lines are not column names over the lines under them
    block = "Market desk\n12 Harbour Road, Room 4 | Email: desk@example.org\nPort Ellen, Islay 7 | www.example.org/desk\n"
    at = block.index("Port Ellen")
    assert data_row_header(block, at, block.index("\n", at)) == ""


def test_bands_with_units_and_currencies_hold_the_question_number():
    assert band("up to EUR 5,000") == (None, 5000.0)
    assert band("EUR 5,001 to 25,000") == (5001.0, 25000.0)
    assert band_holds("over EUR 25,000", ["40,000"]) and not band_holds("over EUR 25,000", ["25,000"])
    assert band_holds("10–15 years", ["12"]) and band_holds("200-499 units", ["250"])
    assert band_holds("1,000,000 or more", ["2,500,000"])
    assert quantities("I started a year ago. What do I get?") == ("1",)
    assert quantities("Drills are held once a year.") == ()
    assert quantities("a 12-year-old record") == ("12",)


def test_asking_clause_and_duration_phrasings():
    assert asking_clause("I joined two years ago. How much leave do I get?") == "How much leave do I get?"
    assert expected_answer_type("How many vacation days does a new hire get?") == "duration"
    assert expected_answer_type("How many days of holiday are there?") == "duration"
    assert expected_answer_type("How many customers do we have in Brazil?") == "count"
    assert expected_answer_type("The box is ready. How soon will it arrive?") == "duration"
    assert expected_answer_type("How much notice does the courier need?") == "duration"
    assert expected_answer_type("Up to what amount can a team lead approve?") == "money"
    assert expected_answer_type("再発行には何日かかりますか？") == "duration"


def test_row_answer_names_the_other_cells_by_their_columns():
    header = "Age of record | Storage tier | Reviewed by"
    row = "10–15 years | Tier C | the legal counsel"
    assert table_cell({"storag", "tier"}, row, header) == "10–15 years — Storage tier: Tier C"
    assert table_cell({"record"}, row, header, named_row=True) == \
        "10–15 years — Storage tier: Tier C; Reviewed by: the legal counsel"
    assert table_cell({"record"}, row, header) is None  # a row the question does not name is quoted as it is


def test_band_question_answers_with_the_band_row(ctx, tmp_path):
    d = tmp_path / "tiers"
    d.mkdir()
    (d / "terms.md").write_text(TIERS, encoding="utf-8")
    (d / "archive.md").write_text(RETENTION, encoding="utf-8")
    assert not ingest(ctx, d, "tiers").failed
    res = ask("Which discount tier applies to an order of 250 units?", "tiers", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert "Gold" in res["answer"] and "Silver" not in res["answer"], res["answer"]
    # the first data row has no bare number: it is still a row, not the column names
    res = ask("What discount tier does an order of 20 units get?", "tiers", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert "Bronze" in res["answer"] and "Gold" not in res["answer"], res["answer"]
    res = ask("Which storage tier holds a 12-year-old record?", "tiers", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert res["answer"].startswith("10–15 years — Storage tier: Tier C"), res["answer"]


def _unruled_band_pdf() -> bytes:
    """A page with a three-column band table drawn as text at three x positions, without a single line; its
    first data row holds no bare number."""
    from tests.unit.ingest.test_loaders import _Pdf, text_ops
    intro = text_ops(["Courier selection for outgoing parcels.", "The courier depends on the parcel weight."],
                     60, 760)
    cols = [["Parcel weight", "up to 5 kg", "5.1-20 kg", "over 20 kg"],
            ["Courier", "Swiftpost", "Ardent Freight", "Pallet line"],
            ["Pickup", "same day", "next day", "in 3 days"]]
    body = b"".join(text_ops(col, x, 700, leading=18) for col, x in zip(cols, (60, 250, 430)))
    return _Pdf().page(intro + body).bytes()


def test_unruled_pdf_band_table(ctx, tmp_path):
    from relayrag.ingest.loaders import load_document
    d = tmp_path / "parcels"
    d.mkdir()
    (d / "couriers.pdf").write_bytes(_unruled_band_pdf())
    text = load_document(d / "couriers.pdf").pages[0].text
    assert "up to 5 kg | Swiftpost | same day" in text, text
    assert not ingest(ctx, d, "parcels").failed
    res = ask("Which courier takes a 12 kg parcel?", "parcels", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert "Ardent Freight" in res["answer"] and "Swiftpost" not in res["answer"], res["answer"]
    res = ask("Which courier takes a 2 kg parcel?", "parcels", ctx=ctx)
    assert res["found"] and res["grounded"], res["answer"]
    assert "Swiftpost" in res["answer"], res["answer"]
