"""Schema linking (tables by name, value, glossary; foreign-key bridges), the no-LLM plan step (SQL shape
hints in the question's language) and example selection by SQL shape, on the real Chinook warehouse."""


import pytest

from relayrag.sql.config import Example, parse_config
from relayrag.sql.context import build_context, match_terms, pick_examples_by_shape, sql_shape
from relayrag.sql.linking import foreign_keys, link_schema, split_identifier
from relayrag.sql.plan import plan_question
from tests.unit.sql.conftest import CONFIG



@pytest.fixture(scope="module")
def cfg():
    return parse_config(CONFIG)


def link(wh, cfg, q):
    return link_schema(q, wh.schema(), match_terms(q, cfg), None, config=cfg, values=wh.distinct_values())


def test_the_schema_lists_only_the_warehouse_tables(wh):
    names = [t["name"] for t in wh.schema()["tables"]]
    assert set(names) == wh.tables() and len(names) == 11  # not DuckDB's duckdb_* / sqlite_* catalog views


def test_identifiers_split_and_foreign_keys_parse(wh):
    assert split_identifier("InvoiceLine") == "Invoice Line" and split_identifier("billing_country") == "billing country"
    fks = foreign_keys(wh.schema())
    assert ("Track", "GenreId", "Genre", "GenreId") in fks and ("InvoiceLine", "TrackId", "Track", "TrackId") in fks


def test_a_bridge_table_on_the_foreign_key_path_is_added(wh, cfg):
    got = link(wh, cfg, "Which genre sold the most units?")  # Genre (name) + InvoiceLine (glossary) → Track
    assert {"Genre", "InvoiceLine", "Track"} <= set(got.tables) and not got.whole
    assert "Track.GenreId = Genre.GenreId" in got.join_paths and "InvoiceLine.TrackId = Track.TrackId" in got.join_paths
    text = got.text()
    assert "Join paths" in text and "Other tables exist" in text and "Customer" in text


def test_a_self_join_is_spelled_with_two_aliases(wh, cfg):
    got = link(wh, cfg, "Which employees were hired before their own manager?")
    assert "Employee" in got.tables and not got.whole
    (path,) = [p for p in got.join_paths if p.startswith("Employee.ReportsTo = Employee.EmployeeId")]
    assert "self-join" in path and "ON e.ReportsTo = m.EmployeeId" in path and path in got.text()


def test_a_value_in_the_question_links_its_column(wh, cfg):
    got = link(wh, cfg, "Which albums did Led Zeppelin release?")
    assert {"Album", "Artist"} <= set(got.tables) and "Artist.Name (value 'Led Zeppelin')" in got.columns
    # lower-case words are not proper nouns: "rock" in prose does not link Genre by value
    assert "Genre" not in link(wh, cfg, "How many customers rock up every year?").tables


def test_japanese_questions_link_through_glossary_synonyms(wh, cfg):
    got = link(wh, cfg, "ジャンルごとの売上を教えて")
    assert {"Genre", "Invoice"} <= set(got.tables)


def test_a_column_name_many_tables_share_is_no_evidence(wh, cfg):
    # Name is a column of Artist, Genre, MediaType, Playlist and Track (no config: no glossary evidence)
    got = link_schema("Show the names, please", wh.schema(), values=wh.distinct_values())
    assert got.whole and len(got.tables) == 11  # nothing specific linked → the whole schema


def test_the_linked_subset_replaces_the_schema_in_the_prompt(wh, cfg):
    c = build_context("Which genre sold the most units?", wh, cfg, None, plan=True, linking=True)
    system = c.messages("SYS:")[0]["content"]
    assert '"name":"Genre"' in system and '"name":"Customer"' not in system and "Join paths" in system
    assert c.summary()["linking"]["tables"] == c.linking.tables
    whole = build_context("Which genre sold the most units?", wh, cfg, None, linking=False)
    assert '"name":"Customer"' in whole.messages("SYS:")[0]["content"] and whole.linking is None


@pytest.mark.parametrize("question, shapes", [
    ("What are the three best-selling albums?", ["top_n"]),
    ("Show the total number of orders per country.", ["group"]),
    ("For each playlist, list its name.", []),  # listing rows per playlist is not an aggregation
    ("Which artist has the most tracks in each genre? Include ties.", ["top_per_group"]),
    ("Which employees handled the fewest customers? Include everyone tied.", ["min_ties"]),
    ("Show monthly sales for 2024.", ["period"]),
    ("Which albums cost more than the average album?", ["compare_aggregate"]),
    ("What share of invoices were billed in Germany?", ["share"]),
    ("Which customers have never bought a video?", ["absence"]),
    ("年ごとの売上を出して。", ["period"]),
    ("国ごとに最も売れたジャンルは？同率の場合はすべて。", ["top_per_group"]),
    ("売上の割合は？", ["share"]),
    # a period adjective or phrase at any granularity; a weekday and "at least" are not a period or a rank
    ("Weekly invoice counts for January, please.", ["period"]),
    ("How did sales move quarter over quarter?", ["period"]),
    ("What are the daily sales totals in May?", ["period"]),
    ("四半期ごとの売上は？", ["period"]),
    ("週ごとの請求書の件数を出して", ["period"]),
    ("日別の売上合計を出して", ["period"]),
    ("曜日別の請求書の件数を出して", ["group"]),
    ("Which playlists hold at least one jazz track, and how many does each hold?", ["group"]),
])
def test_plan_detects_sql_shapes(question, shapes):
    assert plan_question(question).shapes == shapes


def test_plan_hints_are_in_the_question_language_and_list_requested_columns():
    en = plan_question("Who bought the most tracks? Show the name and the total.")
    assert en.language == "English" and en.outputs == ["name", "total"]
    assert en.text().startswith("SQL shape (plan):\n- Rank with ORDER BY") and "name, total" in en.text()
    ja = plan_question("各月の売上を出して")
    assert ja.language == "Japanese" and ja.text().startswith("SQLの形（計画）:") and "FORMAT_TIMESTAMP" in ja.text()
    assert plan_question("How many genres are there?").text() == ""


def test_sql_shape_features():
    sh = sql_shape("WITH r AS (SELECT g.Name, RANK() OVER (PARTITION BY g.GenreId ORDER BY t.Milliseconds DESC) AS k "
                   "FROM Track t JOIN Genre g ON g.GenreId = t.GenreId) SELECT * FROM r WHERE k = 1")
    assert sh["joins"] == 1 and {"join", "window", "subquery"} <= sh["features"]
    sh = sql_shape("SELECT Country, COUNT(*) AS n FROM Customer GROUP BY Country HAVING COUNT(*) > 1 ORDER BY n DESC LIMIT 3")
    assert {"aggregate", "group", "having", "order_limit"} <= sh["features"] and "join" not in sh["features"]
    assert sql_shape("not sql at all (")["features"] == set()


def test_examples_by_shape_prefer_the_shape_the_plan_asks_for():
    ex = [Example(question="How many tracks are there?", sql="SELECT COUNT(*) FROM Track"),
          Example(question="Top album per artist", sql="WITH r AS (SELECT a.Title, RANK() OVER (PARTITION BY "
                  "a.ArtistId ORDER BY a.AlbumId) AS k FROM Album a JOIN Artist ar ON ar.ArtistId = a.ArtistId) "
                  "SELECT * FROM r WHERE k = 1"),
          Example(question="Revenue per year", sql="SELECT EXTRACT(YEAR FROM InvoiceDate) AS y, SUM(Total) "
                  "FROM Invoice GROUP BY y")]
    assert pick_examples_by_shape(["top_per_group"], 2, ex, k=1)[0]["question"] == "Top album per artist"
    assert pick_examples_by_shape(["period"], 1, ex, k=1)[0]["question"] == "Revenue per year"
    assert all(e["by"] == "shape" for e in pick_examples_by_shape([], None, ex, k=3))


def test_example_modes(wh, cfg):
    q = "What's the best-selling genre?"
    similar = build_context(q, wh, cfg, None, examples="similar").examples
    shape = build_context(q, wh, cfg, None, examples="shape").examples
    both = build_context(q, wh, cfg, None, examples="both").examples
    assert len(similar) == 3 and all(e.get("by") is None for e in similar)
    assert len(shape) == 3 and all(e["by"] == "shape" for e in shape)
    assert both[:3] == similar and 3 < len(both) <= 5 and len({e["question"] for e in both}) == len(both)
    with pytest.raises(ValueError, match="examples mode"):
        build_context(q, wh, cfg, None, examples="random")
