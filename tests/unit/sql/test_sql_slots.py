"""Slot mentions (relayrag.sql.slots) and question markers (relayrag.sql.wording): what a question names that fills
a template's slot or constrains its answer, English and Japanese, each with several wordings."""

from __future__ import annotations

import pytest

from relayrag.sql.slots import ValueIndex, accepts, find_mentions, fold, kanji_number, parameters
from relayrag.sql.wording import content_words, find_markers
from relayrag.text import normalize

VALUES = ValueIndex.build(
    {"Customer.Country": ["USA", "Canada", "Brazil", "United Kingdom", "Czech Republic"],
     "Genre.Name": ["Jazz", "Rock", "Rock And Roll", "R&B/Soul", "World", "Sci Fi & Fantasy"],
     "Customer.City": ["São Paulo", "Montréal"],
     "Employee.FirstName+Employee.LastName": ["Jane Peacock", "Steve Johnson"]},
    {"USA": ["United States", "US", "アメリカ", "米国"], "Canada": ["カナダ"], "Jazz": ["ジャズ"],
     "Steve Johnson": ["スティーブ・ジョンソン"]})


def mentions(text: str) -> list[tuple]:
    return [(m.kind, m.value) for m in find_mentions(normalize(text), VALUES)]


@pytest.mark.parametrize("text, value", [
    ("Which 5 countries have the most customers?", 5),
    ("Which five countries have the most customers?", 5),
    ("the top twenty-five customers", 25),
    ("playlists with over 1,000 tracks", 1000),
    ("more than one hundred and two tracks", 102),
    ("top10 genres", 10),
    ("顧客が多い国トップ3は？", 3),
    ("上位五か国", 5),
    ("顧客数が多い国を3つ", 3),
    ("十曲より多い", 10),
    ("５件", 5),                      # full-width digits
    ("ベスト二十", 20),
])
def test_counts_in_digits_and_words_english_and_japanese(text, value):
    (kind, got), = mentions(text)
    assert kind == "number" and got == value
    assert accepts("count", find_mentions(normalize(text))[0])


def test_what_is_not_a_count():
    assert mentions("一番多い国は？") == []          # 一番: "the most", not one
    assert mentions("mp3 files") == []
    assert mentions("the 2nd most") == [("ordinal", 2)]   # no slot takes an ordinal: it is left over
    assert not accepts("count", find_mentions("2.5")[0]) and accepts("number", find_mentions("2.5")[0])
    assert kanji_number("二十五") == 25 and kanji_number("三百") == 300 and kanji_number("一二") is None


@pytest.mark.parametrize("text, kind, value", [
    ("What was the revenue in 2023?", "year", 2023),
    ("revenue of 2022, highest first", "year", 2022),
    ("2023 revenue by month", "year", 2023),
    ("2023年の売上", "year", 2023),
    ("2021年度の売上", "year", 2021),
    ("revenue in the first half of 2024", "period", ("2024-01-01", "2024-07-01")),
    ("H2 2023", "period", ("2023-07-01", "2024-01-01")),
    ("2024年上半期の売上", "period", ("2024-01-01", "2024-07-01")),
    ("2023年下期", "period", ("2023-07-01", "2024-01-01")),
    ("Q3 2023 revenue", "period", ("2023-07-01", "2023-10-01")),
    ("the fourth quarter of 2022", "period", ("2022-10-01", "2023-01-01")),
    ("2023年第3四半期", "period", ("2023-07-01", "2023-10-01")),
    ("March 2024", "period", ("2024-03-01", "2024-04-01")),
    ("2024年3月", "period", ("2024-03-01", "2024-04-01")),
    ("between 2022 and 2023", "period", ("2022-01-01", "2024-01-01")),
    ("from 2021 to 2023", "period", ("2021-01-01", "2024-01-01")),
    ("2022年から2023年まで", "period", ("2022-01-01", "2024-01-01")),
    ("since 2022", "bound", None),
    ("2022年以降", "bound", None),
    ("before 2023", "bound", None),
    ("last year", "relative", None),
    ("昨年の売上", "relative", None),
    ("over the past 3 months", "relative", None),
])
def test_years_periods_and_what_no_slot_takes(text, kind, value):
    (got_kind, got), = [m for m in mentions(text) if m[0] != "number"]
    assert got_kind == kind and (value is None or got == value)


@pytest.mark.parametrize("text, kinds", [
    ("revenue in the first half of 2023 (January-June)", [("period", ("2023-01-01", "2023-07-01")), ("months", (1, 6))]),
    ("every month of 2025, January to December", [("year", 2025), ("months", (1, 12))]),
    ("2023年第2四半期（4〜6月）", [("period", ("2023-04-01", "2023-07-01")), ("months", (4, 6))]),
    ("2021年の各月の売上を1月から順に", [("year", 2021), ("months", (1, None))]),
    ("revenue in March", [("months", (3, 3))]),
    ("3月の売上", [("months", (3, 3))]),
    ("from May to August 2023", [("period", ("2023-05-01", "2023-09-01"))]),
    ("2023年5月から8月まで", [("period", ("2023-05-01", "2023-09-01"))]),
    ("may I see the top 5?", [("number", 5)]),     # "may" is a month only with a year or in a span
    ("12か月の売上", [("number", 12)]),             # a duration, not December
])
def test_months_without_a_year(text, kinds):
    assert mentions(text) == kinds


def test_year_and_date_range_slots_give_their_parameters():
    year, = find_mentions(normalize("in 2023"))
    half, = find_mentions(normalize("first half of 2024"))
    assert accepts("year", year) and accepts("date_range", year) and accepts("date_range", half)
    assert not accepts("year", half)  # a half year is not a year: a year slot leaves it over
    assert parameters("y", "year", year) == {"y": 2023, "y_start": "2023-01-01", "y_end": "2024-01-01"}
    assert parameters("p", "date_range", half) == {"p_start": "2024-01-01", "p_end": "2024-07-01"}
    assert mentions("more than 2000 tracks") == [("number", 2000)]  # a quantity, not a year
    assert mentions("2000曲") == [("number", 2000)]


@pytest.mark.parametrize("text, column, value", [
    ("How many Jazz tracks are there?", "Genre.Name", "Jazz"),
    ("how many jazz tracks", "Genre.Name", "Jazz"),                      # any case (a weak mention)
    ("ジャズの曲は何曲？", "Genre.Name", "Jazz"),                           # an alias
    ("How many rock and roll tracks?", "Genre.Name", "Rock And Roll"),   # the longest value wins over "Rock"
    ("R&B/Soul tracks", "Genre.Name", "R&B/Soul"),
    ("sci fi & fantasy episodes", "Genre.Name", "Sci Fi & Fantasy"),
    ("customers in Sao Paulo", "Customer.City", "São Paulo"),            # accents folded
    ("customers in montreal", "Customer.City", "Montréal"),
    ("Total billed to the United States", "Customer.Country", "USA"),
    ("アメリカの顧客", "Customer.Country", "USA"),
    ("米国への請求", "Customer.Country", "USA"),
    ("Steve Johnson's customers", "Employee.FirstName+Employee.LastName", "Steve Johnson"),
    ("スティーブ・ジョンソンの担当顧客", "Employee.FirstName+Employee.LastName", "Steve Johnson"),
    ("Jane Peacockが担当する顧客", "Employee.FirstName+Employee.LastName", "Jane Peacock"),
])
def test_column_values_by_case_accents_and_aliases(text, column, value):
    (kind, got), = mentions(text)
    assert kind == "value" and got[column] == value


def test_value_strength_and_acronyms():
    strong, = find_mentions(normalize("How many Jazz tracks?"), VALUES)
    weak, = find_mentions(normalize("how many jazz tracks?"), VALUES)
    assert strong.strong and not weak.strong
    assert mentions("Show us the top 5") == [("number", 5)]   # "us" is not the alias "US" (acronyms as written)
    assert mentions("Revenue from the US") == [("value", {"Customer.Country": "USA"})]
    assert fold("  São  Paulo ") == "sao paulo"


@pytest.mark.parametrize("text, classes", [
    ("Which 5 countries have the most customers?", {"desc"}),
    ("顧客が多い国トップ3は？", {"desc"}),
    ("Which 3 countries have the fewest customers?", {"asc"}),
    ("顧客が少ない国は？", {"asc"}),
    ("revenue per country, highest first", {"order_desc"}),
    ("ジャンルごとの曲数を多い順に", {"order_desc", "count"}),
    ("Which playlists have more than 500 tracks?", {"gt"}),
    ("500曲より多いプレイリスト", {"gt"}),
    ("playlists with over 500 tracks", {"gt"}),
    ("at least 10 customers", {"ge"}),
    ("10人以上", {"ge"}),
    ("at most 3 invoices", {"le"}),
    ("fewer than 100 tracks", {"lt"}),
    ("100曲未満", {"lt"}),
    ("the average invoice total", {"avg", "sum"}),
    ("請求額の平均", {"avg"}),
    ("How much was billed in total?", {"sum"}),
    ("金額の合計はいくら？", {"sum"}),
    ("How many tracks are there?", {"count"}),
    ("曲は何曲？", {"count"}),
    ("customers who did not buy", {"neg"}),
    ("customers who haven't bought", {"neg"}),
    ("購入していない顧客", {"neg"}),
    ("monthly revenue", {"month"}),
    ("revenue by month", {"month"}),
    ("月別の売上", {"month"}),
    ("quarterly revenue", {"quarter"}),
    ("四半期ごとの売上", {"quarter"}),
    ("yearly revenue", {"year"}),
    ("年ごとの売上", {"year"}),
    ("Break down revenue by month", {"request", "month"}),
    ("Did revenue go down in 2023?", {"change"}),
    ("revenue growth compared to 2022", {"change"}),
    ("売上の前年比", {"change"}),
    ("What percentage of tracks are Jazz?", {"ratio"}),
    ("ジャズの曲の割合", {"ratio"}),
    ("running total of revenue by month", {"cumulative", "month"}),
    ("月別売上の累計", {"cumulative", "month"}),
    ("median invoice total", {"median", "sum"}),
])
def test_markers_english_and_japanese(text, classes):
    assert {m.cls for m in find_markers(normalize(text))} == classes


def test_content_words_leave_out_what_is_known_and_see_names():
    text = normalize("Which customers in Ruritania does Jane Peacock look after?")
    words = content_words(text)
    assert [w.text for w in words if w.capital] == ["Ruritania", "Jane", "Peacock"]
    assert not any(w.capital for w in content_words(normalize("Show the customers. List them.")))
    ja = content_words(normalize("ブラジルの顧客数を教えて"))
    assert [w.stem for w in ja] == ["ブラジル", "顧客数", "教"]
