"""Reading the model's SQL reply (relayrag.sql.generate.parse_sql_reply): a reply that is not valid JSON but
holds a recoverable "sql" string is repaired instead of losing the candidate, one with no SQL at all is asked
again once, and the recovered query still goes through the guard and the repair round. The LLM is a scripted
test double; the warehouse is the real Chinook copy."""

import json

import pytest

from relayrag.sql.generate import REASK, UnreadableReply, generate_and_run, parse_sql_reply
from tests.conftest import ScriptedLLM


@pytest.mark.parametrize("reply,sql", [
    ('{"sql": "SELECT Name FROM Genre", "tables": ["Genre"], "assumptions": []}', "SELECT Name FROM Genre"),
    ('```json\n{"sql": "SELECT Name FROM Genre", "tables": [], "assumptions": []}\n```', "SELECT Name FROM Genre"),
    ('Here is the query:\n{"sql": "SELECT Name FROM Genre", "tables": [], "assumptions": []}\nHope it helps.',
     "SELECT Name FROM Genre"),
])
def test_a_json_reply_is_read_as_json(reply, sql):
    out = parse_sql_reply(reply)
    assert out["sql"] == sql and out["recovered"] is False


@pytest.mark.parametrize("reply,sql", [
    # cut off at max_tokens inside the assumptions
    ('{"sql": "SELECT g.Name FROM Genre AS g WHERE g.Name LIKE \'%Rock%\'", "tables": ["Genre"], "assumptions": ["Th',
     "SELECT g.Name FROM Genre AS g WHERE g.Name LIKE '%Rock%'"),
    # an escaped quote and a newline inside the string, then a missing comma
    ('{"sql": "SELECT \\"Name\\"\\nFROM Genre" "tables": []}', 'SELECT "Name"\nFROM Genre'),
    # cut off inside the SQL itself: what there is comes back (the guard refuses it and the repair round sees why)
    ('{"sql": "SELECT Name, COUNT(*) FROM Genre GROUP', "SELECT Name, COUNT(*) FROM Genre GROUP"),
    # bare SQL, no JSON
    ("```sql\nSELECT Name FROM MediaType;\n```", "SELECT Name FROM MediaType"),
])
def test_a_malformed_reply_with_sql_in_it_is_recovered(reply, sql):
    out = parse_sql_reply(reply)
    assert out["sql"] == sql and out["recovered"] is True


def test_a_reply_without_sql_is_unreadable():
    for reply in ("", "I cannot help with that.", '{"query": broken'):
        with pytest.raises(UnreadableReply):
            parse_sql_reply(reply)


def test_a_truncated_candidate_is_repaired_not_lost(wh):
    q = "How many genres are there?"
    replies = ['{"sql": "SELECT COUNT(*) AS n FROM Genre", "tables": ["Genre"], "assumptions": ["All genres co']
    llm = ScriptedLLM(lambda messages, schema: replies.pop(0))
    llm.name = "llamacpp:test"
    result, attempts = generate_and_run(llm, wh, q, candidates=1)
    assert result.ok and result.rows == [[25]] and len(llm.calls) == 1
    assert attempts[0]["reply"] == "recovered"


def test_a_reply_without_sql_is_asked_again_once(wh):
    q = "How many media types are there?"
    replies = ["Sure! Let me think about the media types first.",
               json.dumps({"sql": "SELECT COUNT(*) FROM MediaType", "tables": [], "assumptions": []})]
    llm = ScriptedLLM(lambda messages, schema: replies.pop(0))
    llm.name = "llamacpp:test"
    result, attempts = generate_and_run(llm, wh, q, candidates=1)
    assert result.ok and result.rows == [[5]] and attempts[0]["reply"] == "reasked"
    assert len(llm.calls) == 2 and llm.calls[1]["messages"][-1]["content"] == REASK
    # twice unreadable: the candidate is lost with the reason, nothing runs
    replies[:] = ["no", "still no"]
    result, attempts = generate_and_run(llm, wh, q, candidates=1)
    assert result is None and "not JSON" in attempts[0]["error"]


def test_a_cut_off_query_goes_to_the_repair_round(wh):
    q = "How many tracks does each genre have?"
    replies = ['{"sql": "SELECT g.Name, COUNT(*) AS n FROM Track AS t JOIN Genre AS g ON g.GenreId = t.GenreId GROUP',
               json.dumps({"sql": "SELECT g.Name, COUNT(*) AS n FROM Track AS t JOIN Genre AS g ON g.GenreId = "
                                  "t.GenreId GROUP BY g.Name", "tables": [], "assumptions": []})]
    llm = ScriptedLLM(lambda messages, schema: replies.pop(0))
    llm.name = "llamacpp:test"
    result, attempts = generate_and_run(llm, wh, q, candidates=1)
    assert result.ok and len(result.rows) == 25 and attempts[0]["error"] and attempts[1]["repair"]
