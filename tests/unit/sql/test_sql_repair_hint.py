"""The repair round names the columns of the tables the failed query used (a small local model's commonest
Text-to-SQL error is a column taken from the wrong table)."""

from pathlib import Path

from relayrag.sql.warehouse import load_warehouse, open_warehouse
from relayrag.stages.sql import _columns_hint, generate_and_run
from tests.conftest import ScriptedLLM

CHINOOK = Path(__file__).resolve().parents[3] / "examples" / "chinook" / "chinook.sqlite"


def test_columns_hint_lists_only_the_tables_the_query_names():
    schema = {"tables": [
        {"name": "Album", "columns": {"AlbumId": "BIGINT", "Title": "VARCHAR", "ArtistId": "BIGINT"},
         "foreign_keys": ["ArtistId -> Artist(ArtistId)"]},
        {"name": "Track", "columns": {"TrackId": "BIGINT", "AlbumId": "BIGINT"}},
        {"name": "Genre", "columns": {"GenreId": "BIGINT", "Name": "VARCHAR"}}]}
    hint = _columns_hint(schema, "SELECT T1.Title FROM album AS T1 JOIN Track AS T2 ON T2.ArtistId = 1")
    assert "- Album: AlbumId, Title, ArtistId; foreign keys: ArtistId -> Artist(ArtistId)" in hint
    assert "- Track: TrackId, AlbumId\n" in hint and "Genre" not in hint
    assert _columns_hint(schema, "SELECT 1") == ""


def test_repair_message_carries_the_columns(home):
    load_warehouse(home, "chinook", [CHINOOK])
    wh = open_warehouse(home, "chinook")
    queue = ["SELECT Album.Title FROM Album JOIN Track ON Track.ArtistId = Album.ArtistId",
             "SELECT COUNT(*) AS n FROM Album"]
    llm = ScriptedLLM(lambda messages, schema: {"sql": queue.pop(0), "tables": [], "assumptions": []})
    result, attempts = generate_and_run(llm, wh, "How many albums?")
    assert result.ok and result.rows == [[347]] and len(attempts) == 2 and attempts[0]["error"]
    repair = llm.calls[1]["messages"][-1]["content"]
    assert "That query failed" in repair and "- Track: TrackId, Name, AlbumId" in repair and "- Album:" in repair
