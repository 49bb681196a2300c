"""The Warehouse page's "save as verified": after a guarded query ran, the form posts the question, the SQL (with
@name slots) and the slots; the template is stored after its slots fill from the question, the guard accepts it
and it runs, and then answers other wordings without an LLM. Cookie sessions need the CSRF token; a refused or
unusable template stores nothing."""

from __future__ import annotations

import re

from tests.conftest import EXAMPLES
from tests.unit.dashboard.conftest import page_csrf

TOP_N = ("SELECT g.Name AS genre, COUNT(*) AS tracks FROM Track AS t JOIN Genre AS g ON g.GenreId = t.GenreId "
         "GROUP BY g.Name ORDER BY tracks DESC LIMIT @n")


def _load(home):
    from relayrag.sql.warehouse import load_warehouse
    load_warehouse(home, "chinook", [EXAMPLES / "chinook" / "chinook.sqlite"],
                   config=EXAMPLES / "chinook" / "relayrag.sql.yaml")


def test_a_successful_query_offers_save_as_verified_and_saving_makes_a_template(api, home, ctx):
    _load(home)
    ran = api.post("/warehouse/chinook/query", data={"sql": TOP_N.replace("@n", "3")})
    assert 'id="verdict">allowed' in ran.text and 'id="save-verified"' in ran.text
    assert 'hx-post="/warehouse/chinook/verify"' in ran.text and "LIMIT 3" in ran.text
    refused = api.post("/warehouse/chinook/query", data={"sql": "DROP TABLE Customer"})
    assert 'id="save-verified"' not in refused.text  # only a query that ran can be saved

    saved = api.post("/warehouse/chinook/verify", data={"question": "Which 3 genres have the most tracks?",
                                                         "sql": TOP_N, "slots": "n=count"})
    assert saved.status_code == 200 and 'id="verify-result">Saved as verified' in saved.text
    assert "n = 3" in saved.text and "returned 3 rows" in saved.text
    stored = (home / "warehouses" / "chinook.sql.yaml").read_text(encoding="utf-8")
    assert "Which 3 genres have the most tracks?" in stored and "# Other names of stored values" in stored

    from relayrag.engine.local import ask
    res = ask("What are the top 5 genres by number of tracks?", "chinook", ctx=ctx)
    assert res["stages"][-1]["method"] == "verified" and len(res["rows"]) == 5 and res["rows"][0] == ["Rock", 1297]


def test_refused_or_unfillable_templates_are_not_saved(api, home):
    _load(home)
    before = (home / "warehouses" / "chinook.sql.yaml").read_bytes()
    bad = api.post("/warehouse/chinook/verify", data={"question": "Drop the customers", "sql": "DROP TABLE Customer",
                                                      "slots": ""})
    assert 'id="verify-result">Not saved' in bad.text and "guard" in bad.text
    unfilled = api.post("/warehouse/chinook/verify", data={"question": "Which genres have the most tracks?",
                                                           "sql": TOP_N, "slots": "n=count"})
    assert "Not saved" in unfilled.text and "names no value for slot" in unfilled.text
    typo = api.post("/warehouse/chinook/verify", data={"question": "Which 3 genres?", "sql": TOP_N, "slots": "n"})
    assert "Not saved" in typo.text and "NAME=TYPE" in typo.text
    assert (home / "warehouses" / "chinook.sql.yaml").read_bytes() == before


def test_a_cookie_session_needs_the_csrf_token(browser_client, home):
    _load(home)
    form = {"question": "Which 3 genres have the most tracks?", "sql": TOP_N, "slots": "n=count"}
    assert browser_client.post("/warehouse/chinook/verify", data=form).status_code == 403
    page = browser_client.get("/warehouse?collection=chinook").text
    ok = browser_client.post("/warehouse/chinook/verify", data=form, headers={"X-CSRF-Token": page_csrf(page)})
    assert ok.status_code == 200 and "Saved as verified" in ok.text
    assert re.search(r"Which 3 genres have the most tracks\?", (home / "warehouses" / "chinook.sql.yaml").read_text())
