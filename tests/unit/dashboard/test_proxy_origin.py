"""The dashboard behind `gcloud run services proxy` (the README's way in with `dashboardAccess: iam`).

The proxy (GoogleCloudPlatform/cloud-run-proxy, what `gcloud run services proxy` runs) sets `Host` to the
service's run.app name and replaces `Authorization` with the caller's ID token; the browser's `Origin` stays
`http://127.0.0.1:8780`. Before RELAYRAG_DASHBOARD_ORIGINS, login and every POST answered 403 there. The
allow-list is exact (scheme, host and port): other origins, `null`, and lookalikes stay refused."""

from __future__ import annotations

import pytest

from tests.unit.dashboard.conftest import TOKEN, page_csrf

RUN_APP = "relayrag-dashboard-abc123-uc.a.run.app"
PROXY = "http://127.0.0.1:8780"


@pytest.fixture
def proxied_app(home, monkeypatch):
    from relayrag.dashboard.app import create_app
    monkeypatch.setenv("RELAYRAG_DASHBOARD_ORIGINS", f"{PROXY},http://localhost:8780")
    return create_app(tokens=[TOKEN])


def _client(app):
    from starlette.testclient import TestClient
    # what reaches Cloud Run through the proxy: Host = run.app, https, Origin = the proxy's
    return TestClient(app, base_url=f"https://{RUN_APP}", headers={"origin": PROXY})


def test_login_and_a_post_through_the_proxy(proxied_app):
    c = _client(proxied_app)
    r = c.post("/login", data={"token": TOKEN, "next": "/ask"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    assert "SameSite=Strict" in r.headers["set-cookie"]
    csrf = page_csrf(c.get("/ask").text)
    # a mutation with the session's CSRF token passes the origin check (logout is the smallest one)
    out = c.post("/logout", data={"csrf_token": csrf}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/login"


def test_the_proxy_origin_without_the_allow_list_is_refused(home, monkeypatch):
    from relayrag.dashboard.app import create_app
    monkeypatch.delenv("RELAYRAG_DASHBOARD_ORIGINS", raising=False)
    r = _client(create_app(tokens=[TOKEN])).post("/login", data={"token": TOKEN}, follow_redirects=False)
    assert r.status_code == 403 and "cross-origin login refused" in r.text


@pytest.mark.parametrize("origin", ["http://127.0.0.1:8781", "https://127.0.0.1:8780", "http://evil.example",
                                    "null", "http://127.0.0.1:8780.evil.example", "http://127.0.0.1"])
def test_other_origins_stay_refused(proxied_app, origin):
    from starlette.testclient import TestClient
    c = TestClient(proxied_app, base_url=f"https://{RUN_APP}")
    r = c.post("/login", data={"token": TOKEN}, headers={"origin": origin}, follow_redirects=False)
    assert r.status_code == 403, origin
    # a session obtained legitimately cannot be used from that origin either
    assert c.post("/login", data={"token": TOKEN}, headers={"origin": PROXY},
                  follow_redirects=False).status_code == 303
    csrf = page_csrf(c.get("/ask").text)
    r = c.post("/logout", data={"csrf_token": csrf}, headers={"origin": origin}, follow_redirects=False)
    assert r.status_code == 403, origin


def test_the_allow_list_does_not_replace_the_csrf_token(proxied_app):
    c = _client(proxied_app)
    assert c.post("/login", data={"token": TOKEN}, follow_redirects=False).status_code == 303
    assert c.post("/logout", data={"csrf_token": "forged"}, follow_redirects=False).status_code == 403


def test_a_bad_allow_list_is_a_config_error(home, monkeypatch):
    from relayrag.dashboard.app import create_app
    from relayrag.errors import ConfigError
    monkeypatch.setenv("RELAYRAG_DASHBOARD_ORIGINS", "127.0.0.1:8780")  # no scheme: not an origin
    with pytest.raises(ConfigError, match="RELAYRAG_DASHBOARD_ORIGINS"):
        create_app(tokens=[TOKEN])


def test_same_host_login_still_works_without_the_allow_list(app):
    from starlette.testclient import TestClient
    c = TestClient(app, base_url=f"https://{RUN_APP}", headers={"origin": f"https://{RUN_APP}"})
    assert c.post("/login", data={"token": TOKEN}, follow_redirects=False).status_code == 303
