"""Dashboard feedback: the buttons fragment, the form and JSON API under the dashboard's auth and CSRF rules,
one verdict per token, the Feedback page's filters and 👎 shares, admins seeing everyone's."""

from __future__ import annotations

import pytest

from tests.unit.dashboard.conftest import TOKEN


@pytest.fixture
def run_id(ctx, small_corpus):
    from relayrag.service import Service
    svc = Service(ctx)
    assert not svc.ingest(small_corpus, "docs").failed
    return svc.ask("How many worker bees live in a colony in summer?", "docs").run_id


def test_api_feedback_is_per_token_and_validated(api, app, run_id):
    from starlette.testclient import TestClient
    r = api.post(f"/api/runs/{run_id}/feedback", json={"verdict": "up"})
    assert r.status_code == 200, r.text
    assert r.json()["verdict"] == "up" and r.json()["replaced"] is False and r.json()["identity"].startswith("dashboard:")
    assert TOKEN not in r.text
    r = api.post(f"/api/runs/{run_id}/feedback", json={"verdict": "down", "reason": "wrong", "answer": "60,000"})
    assert r.json()["replaced"] is True
    assert api.post(f"/api/runs/{run_id}/feedback", json={"verdict": "down", "reason": "rude"}).status_code == 400
    assert api.post(f"/api/runs/{run_id}/feedback", json={"verdict": "up", "page": "x"}).status_code == 400
    assert api.post("/api/runs/nope/feedback", json={"verdict": "up"}).status_code == 404
    with TestClient(app) as anon:
        assert anon.post(f"/api/runs/{run_id}/feedback", json={"verdict": "up"}).status_code == 401
    with TestClient(app, headers={"Authorization": "Bearer second-token"}) as other:
        assert other.post(f"/api/runs/{run_id}/feedback", json={"verdict": "up"}).json()["replaced"] is False
        mine = other.get("/api/feedback").json()
        assert [v["verdict"] for v in mine["verdicts"]] == ["up"] and mine["admin"] is False
    listing = api.get("/api/feedback").json()
    assert [v["verdict"] for v in listing["verdicts"]] == ["down"]  # the first token sees only its own
    assert listing["share"]["collection"] == [{"collection": "docs", "n": 1, "down": 1, "share": 1.0}]


def test_admin_token_sees_every_verdict_and_filters_apply(api, app, run_id, monkeypatch):
    from starlette.testclient import TestClient

    from relayrag.settings import load_settings
    api.post(f"/api/runs/{run_id}/feedback", json={"verdict": "down", "reason": "wrong_source"})
    with TestClient(app, headers={"Authorization": "Bearer second-token"}) as other:
        other.post(f"/api/runs/{run_id}/feedback", json={"verdict": "up"})
        monkeypatch.setenv("RELAYRAG_ADMIN_TOKENS", "second-token")
        load_settings.cache_clear()
        every = other.get("/api/feedback").json()
        assert every["admin"] is True and sorted(v["verdict"] for v in every["verdicts"]) == ["down", "up"]
        arm = every["verdicts"][0]["arm"]
        assert every["share"]["arm"] == [{"arm": arm, "n": 2, "down": 1, "share": 0.5}]
        assert [v["verdict"] for v in other.get("/api/feedback?verdict=down").json()["verdicts"]] == ["down"]
        assert other.get("/api/feedback?reason=outdated").json()["verdicts"] == []
        page = other.get("/feedback?collection=docs").text
        assert "How many worker bees live in a colony in summer?" in page and "wrong source" in page
        assert other.get("/api/feedback?collection=nosuch").status_code == 404


def test_form_needs_csrf_from_a_cookie_session_and_renders_the_buttons(browser_client, run_id):
    c = browser_client
    frag = c.get(f"/runs/{run_id}/feedback").text
    assert "Was this answer right?" in frag and "your verdict" not in frag
    assert c.post(f"/runs/{run_id}/feedback", data={"verdict": "up"}).status_code == 403  # no CSRF token
    assert c.post(f"/api/runs/{run_id}/feedback", json={"verdict": "up"}).status_code == 403
    r = c.post(f"/runs/{run_id}/feedback", data={"verdict": "up"}, headers={"X-CSRF-Token": c.csrf})
    assert r.status_code == 200 and "saved: 👍" in r.text
    r = c.post(f"/runs/{run_id}/feedback", data={"verdict": "down", "reason": "wrong", "page": "2"},
               headers={"X-CSRF-Token": c.csrf})
    assert "needs the document" in r.text and "your verdict: 👍" in r.text  # the error, the old verdict kept
    assert "your verdict: 👍" in c.get(f"/runs/{run_id}/feedback").text
    assert f'hx-get="/runs/{run_id}/feedback"' in c.get(f"/runs/{run_id}").text  # buttons on the run page


def test_a_token_is_told_how_many_verdicts_from_elsewhere_it_does_not_see(api, app, ctx, run_id):
    """Issue 28: verdicts given with `relayrag feedback` and `/good` in a chat left a token's Feedback page saying
    "no verdicts" with nothing but "(yours only)". The page counts the others per source, without showing them."""
    from relayrag import feedback as fb
    from relayrag.service import Service
    from starlette.testclient import TestClient
    svc = Service(ctx)
    fb.give(svc, run_id, "up", fb.local_identity())                    # relayrag feedback / /good in relayrag chat
    fb.give(svc, run_id, "down", fb.token_identity("chat", "c-token"), reason="wrong")   # chat-serve
    with TestClient(app, headers={"Authorization": "Bearer second-token"}) as other:
        other.post(f"/api/runs/{run_id}/feedback", json={"verdict": "down", "reason": "wrong"})
    listing = api.get("/api/feedback").json()
    assert listing["verdicts"] == [] and listing["hidden_total"] == 3
    assert {h["source"]: (h["n"], h["down"]) for h in listing["hidden"]} == \
        {"local": (1, 0), "chat": (1, 1), "dashboard": (1, 1)}
    assert api.get("/api/feedback?verdict=down").json()["hidden_total"] == 2  # the filters apply to the count
    page = api.get("/feedback").text
    assert "3 verdicts from elsewhere are not shown" in page and "the command line or a terminal chat" in page
    assert "other dashboard tokens" in page and "RELAYRAG_ADMIN_TOKENS" in page
    assert "none of yours yet" in page and "Share of 👎 thumbs-down verdicts" in page
    assert "c-token" not in page and fb.local_identity() not in page  # counts only: no identity is shown
    api.post(f"/api/runs/{run_id}/feedback", json={"verdict": "up"})
    assert api.get("/api/feedback").json()["hidden_total"] == 3  # its own verdict is listed, not counted
