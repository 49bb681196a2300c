"""Issue 28 item 1: a run record of any route (rag, chitchat, sql, visual, not found, refused) renders on every
dashboard page: Overview, Runs, each run's page and waterfall, Bandit (with its plots), Collections, the
collection pages, Warehouse, Eval and the metrics API. One small-talk question used to make Runs a 500."""

from __future__ import annotations

import re

import pytest

from tests.conftest import EXAMPLES, sql_route_reply
from tests.unit.dashboard.conftest import job_url, read_sse


def _ask(api, question: str, collection: str) -> str:
    r = api.post("/ask", data={"question": question, "collection": collection, "arm": ""})
    assert r.status_code == 200, r.text
    events = read_sse(api, job_url(r.text))
    assert events[-2][0] == "result", events
    m = re.search(r'data-run="([0-9a-f]+)"', events[-2][1])
    assert m, events[-2][1]
    return m.group(1)


@pytest.fixture
def every_route(api, ctx, home, small_corpus, make_llm_ctx):
    from relayrag.ingest.pipeline import ingest
    from relayrag.sql.warehouse import load_warehouse
    ingest(ctx, small_corpus, "docs")
    runs = {
        "chitchat": _ask(api, "hello", "docs"),
        "rag": _ask(api, "How many eggs does the queen bee lay per day?", "docs"),
        "visual": _ask(api, "Which figure shows the bee's waggle dance?", "docs"),
        "not found": _ask(api, "What is the boiling point of tungsten on Venus?", "docs"),
        "japanese": _ask(api, "女王蜂は一日に何個の卵を産みますか？", "docs"),  # not in the corpus: no reward
        "japanese answered": _ask(api, "東京タワーの高さは何メートルですか？", "docs"),  # rewards ja/bm25
    }
    load_warehouse(home, "chinook", [EXAMPLES / "chinook" / "chinook.sqlite"])
    make_llm_ctx(sql_route_reply("SELECT COUNT(*) AS customers FROM Customer WHERE Country = 'Brazil'"))
    runs["sql"] = _ask(api, "How many customers do we have in Brazil?", "chinook")
    make_llm_ctx(sql_route_reply("DROP TABLE Customer"))
    runs["refused"] = _ask(api, "Delete every customer we have in Brazil", "chinook")
    return runs


def test_every_route_renders_on_every_page(api, every_route):
    records = {k: api.get(f"/api/runs/{rid}").json()["record"] for k, rid in every_route.items()}
    routes = {k: r.get("route") for k, r in records.items()}
    assert routes["chitchat"] == "chitchat" and routes["rag"] == "rag" and routes["sql"] == "sql"
    assert routes["visual"] == "visual" and routes["refused"] == "sql"
    assert records["not found"].get("found") is False and records["refused"].get("refused") is True
    assert "reward" not in records["chitchat"] or records["chitchat"]["reward"] is None

    pages = ["/", "/runs", "/bandit", "/collections", "/collections/docs", "/collections/chinook",
             "/warehouse?collection=chinook", "/eval", "/ask", "/api/metrics"]
    for rid in every_route.values():
        pages += [f"/runs/{rid}", f"/runs/{rid}/waterfall.svg"]
    for url in pages:
        r = api.get(url, headers={"accept": "text/html"})
        assert r.status_code == 200, (url, r.text[-2000:])
    contexts = set(re.findall(r'data-context="([a-z]+)"', api.get("/bandit").text))
    assert contexts
    for ctx_name in contexts:
        for plot in ("posterior", "rewards"):
            r = api.get(f"/bandit/docs/{plot}.svg?context={ctx_name}")
            assert r.status_code == 200, (plot, r.text[-500:])
    runs = api.get("/runs").text
    for kind, rid in every_route.items():
        assert f"/runs/{rid}" in runs, kind
    assert "small talk" in runs and "not found" in runs and "refused" in runs


def test_overview_and_bandit_say_what_each_number_measures(api, every_route):
    """Issue 28 item 4: not-found runs count as not answered; the Bandit page names its measures and shows no
    posterior for an arm the Japanese queries were never offered (the English embedder cannot read them)."""
    overview = api.get("/").text
    assert re.search(r'id="m-refusal">\d+\.\d %', overview)
    assert "not found + 1 refused of" in overview  # the DROP TABLE question
    bandit = api.get("/bandit").text
    assert "rewarded pulls" in bandit and "posterior mean" in bandit and "prior" in bandit
    ja = bandit[bandit.index('data-context="ja"'):]
    ja = ja.split('<h3 class="bandit-context"', 1)[0].split("</div>", 1)[0]  # the ja block only
    assert "<td>bm25</td>" in ja and "<td>dense</td>" not in ja and "Not offered to ja queries: dense" in ja
    svg = api.get("/bandit/docs/posterior.svg?context=ja").text
    assert "bm25" in svg and "dense" not in svg


def test_an_sql_answer_shows_its_rows_and_sql_once_and_the_warehouse_shows_sample_values(api, home, make_llm_ctx):
    """Issue 28, item 5: the sql answer's text repeated the rows table and the SQL that the page shows below it;
    the Warehouse page's sample values were empty for every column that is not low-cardinality text."""
    from relayrag.sql.warehouse import load_warehouse
    load_warehouse(home, "chinook", [EXAMPLES / "chinook" / "chinook.sqlite"])
    sql = "SELECT Country, COUNT(*) AS customers FROM Customer GROUP BY Country ORDER BY customers DESC LIMIT 3"
    make_llm_ctx(sql_route_reply(sql, "The USA has the most customers."))
    run_id = _ask(api, "Which three countries have the most customers?", "chinook")
    html = api.get(f"/runs/{run_id}").text
    answer = html.split('class="answer"', 1)[1].split("</p>", 1)[0]
    assert "The USA has the most customers." in answer
    assert "Result (" not in answer and "Source: SQL over" not in answer and "SELECT" not in answer
    assert html.count("<pre class=\"sql\">") == 1 and html.count('<table class="rows">') == 1
    assert "USA" in html.split('<table class="rows">', 1)[1]
    page = api.get("/warehouse?collection=chinook").text
    album = page.split("<b>Album</b>", 1)[1].split("</details>", 1)[0]
    title = album.split("<td>Title</td>", 1)[1].split("</tr>", 1)[0]
    assert "For Those About To Rock We Salute You" in title  # a first row's value for a high-cardinality column
    media = page.split("<b>MediaType</b>", 1)[1].split("</details>", 1)[0]
    assert "(commonest)" in media  # low-cardinality text keeps the commonest values


def test_a_refused_statement_is_shown_as_refused_not_as_a_query_that_ran(api, home, make_llm_ctx):
    """The Ask page's answer for a statement the guard refused labels its SQL "refused, not run", never with a
    row count, which read as if the DROP had run; a query that ran keeps its row count."""
    from relayrag.sql.warehouse import load_warehouse
    load_warehouse(home, "chinook", [EXAMPLES / "chinook" / "chinook.sqlite"])
    shown = {}
    for key, sql, question in (("refused", "DROP TABLE Customer", "Delete every customer we have in Brazil"),
                               ("ran", "SELECT COUNT(*) AS customers FROM Customer WHERE Country = 'Brazil'",
                                "How many customers do we have in Brazil?")):
        make_llm_ctx(sql_route_reply(sql))
        r = api.post("/ask", data={"question": question, "collection": "chinook", "arm": ""})
        shown[key] = read_sse(api, job_url(r.text))[-2][1]
    assert "(refused, not run)" in shown["refused"] and "0 rows" not in shown["refused"]
    assert "(1 row)" in shown["ran"] and "refused, not run" not in shown["ran"]


def test_a_refusal_or_not_found_is_marked_as_not_an_answer(api, every_route):
    """A new user's check: after the workflow ran, a "not found" and a refused statement (HTTP 200, rightly: an
    honest refusal is a result) were rendered in the same answer paragraph as an answer, their outcome only in
    the grey footer, and the related passages the CLI shows were missing. The answer block now says "Not
    answered (not found / refused)" above the reply, which says why in the question's language, and lists the
    related passages as not an answer; an answer and small talk get no such label."""
    def block(rid: str) -> str:
        html = api.get(f"/runs/{rid}").text
        return html[html.index('<div class="answer-block'):]

    n_related = 0
    for kind, outcome in (("not found", "not found"), ("japanese", "not found"), ("refused", "refused")):
        rid = every_route[kind]
        shown = block(every_route[kind])
        assert shown.startswith(f'<div class="answer-block declined {outcome.replace(" ", "-")}"'), (kind, shown[:300])
        assert f'id="declined-{rid}"><b>Not answered ({outcome})</b>' in shown, (kind, shown[:600])
        related = api.get(f"/api/runs/{rid}").json()["record"].get("related") or []
        assert (f'id="related-{rid}"' in shown) == bool(related), kind
        assert shown.count("<li><span class=\"muted\">") == len(related), kind
        n_related += len(related)
    assert n_related, "no run had related passages: the list was not checked"
    ja = block(every_route["japanese"])
    answer = ja.split('class="answer"', 1)[1].split("</p>", 1)[0]
    assert "見つかりませんでした" in answer  # the reason, in the question's language
    for kind in ("rag", "chitchat", "sql"):
        shown = block(every_route[kind])
        assert shown.startswith('<div class="answer-block" ') and "Not answered" not in shown, kind
