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
