"""Dashboard auth: tokens, login, session cookie, CSRF, refusal to start without tokens."""

from __future__ import annotations

import pytest

from tests.unit.dashboard.conftest import TOKEN, page_csrf

PROTECTED_GET = ["/", "/ask", "/runs", "/runs/abc", "/runs/abc/waterfall.svg", "/runs/abc/citations/1",
                 "/api/runs/abc", "/api/metrics", "/collections", "/collections/docs", "/bandit",
                 "/bandit/docs/posterior.svg", "/bandit/docs/rewards.svg", "/eval", "/eval/history/x.svg",
                 "/warehouse", "/jobs/nope/events"]
PROTECTED_POST = ["/ask", "/collections", "/collections/docs/upload", "/collections/docs/delete", "/eval",
                  "/warehouse/docs/query", "/logout"]


@pytest.mark.parametrize("path", PROTECTED_GET)
def test_every_page_refuses_without_token(app, path):
    from starlette.testclient import TestClient
    c = TestClient(app)
    r = c.get(path, follow_redirects=False)
    assert r.status_code == 401
    assert "authentication required" in r.text and r.headers["www-authenticate"].startswith("Bearer")
    # a browser navigating to a page is sent to the login page instead, and comes back after logging in;
    # API, plot and event-stream URLs answer 401 to browsers too
    r = c.get(path, headers={"accept": "text/html"}, follow_redirects=False)
    if path.startswith(("/api/", "/jobs/")) or path.endswith(".svg"):
        assert r.status_code == 401
    else:
        assert r.status_code == 303 and r.headers["location"].startswith("/login?next=")
    # a wrong bearer token is no better
    assert c.get(path, headers={"authorization": "Bearer wrong"}).status_code == 401


@pytest.mark.parametrize("path", PROTECTED_POST)
def test_every_mutation_refuses_without_token(app, path):
    from starlette.testclient import TestClient
    r = TestClient(app).post(path, data={"question": "q", "collection": "docs"})
    assert r.status_code == 401


def test_public_paths(app):
    from starlette.testclient import TestClient
    c = TestClient(app)
    assert c.get("/healthz").text == "ok"
    assert c.get("/login").status_code == 200
    assert c.get("/static/htmx.min.js").status_code == 200


def test_login_sets_a_strict_httponly_cookie_and_rejects_bad_tokens(app):
    from starlette.testclient import TestClient
    c = TestClient(app)
    bad = c.post("/login", data={"token": "nope", "next": "/runs"}, follow_redirects=False)
    assert bad.status_code == 401 and "invalid token" in bad.text and "set-cookie" not in bad.headers
    ok = c.post("/login", data={"token": "second-token", "next": "/runs"}, follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"] == "/runs"
    cookie = ok.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert c.get("/runs").status_code == 200
    # an open redirect through `next` is not possible
    r = TestClient(app).post("/login", data={"token": TOKEN, "next": "//evil.example/x"}, follow_redirects=False)
    assert r.headers["location"] == "/"


def test_forged_and_expired_sessions_are_refused(app):
    from starlette.testclient import TestClient
    from relayrag.dashboard import auth
    a = auth.Authenticator([TOKEN])
    good = a.new_session()
    issued, nonce, mac = good.split(".")
    assert a.read_session(good) is not None
    assert a.read_session(f"{issued}.{nonce}.{'0' * 64}") is None
    assert a.read_session(f"{int(issued) - 10}.{nonce}.{mac}") is None
    old = auth.Authenticator([TOKEN], clock=lambda: 1_000_000).new_session()
    assert a.read_session(old) is None  # older than SESSION_TTL_S
    # rotating the tokens ends sessions signed with the old ones
    assert auth.Authenticator(["other"]).read_session(good) is None
    c = TestClient(app, cookies={auth.COOKIE: f"{issued}.{nonce}.{'0' * 64}"})
    assert c.get("/api/metrics").status_code == 401


def test_csrf_is_required_for_cookie_sessions(browser_client):
    c = browser_client
    r = c.post("/collections", data={"name": "docs"}, follow_redirects=False)
    assert r.status_code == 403 and "CSRF" in r.text
    r = c.post("/collections", data={"name": "docs"}, headers={"X-CSRF-Token": "0" * 64}, follow_redirects=False)
    assert r.status_code == 403
    r = c.post("/collections", data={"name": "docs", "csrf_token": c.csrf}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/collections/docs"
    r = c.post("/collections", data={"name": "docs"}, headers={"X-CSRF-Token": c.csrf}, follow_redirects=False)
    assert r.status_code == 303
    # a cross-site form post carries the browser's Origin: refused even with a valid token
    r = c.post("/collections", data={"name": "docs"}, follow_redirects=False,
               headers={"X-CSRF-Token": c.csrf, "Origin": "https://evil.example"})
    assert r.status_code == 403 and "cross-origin" in r.text


def test_bearer_requests_need_no_csrf(api):
    r = api.post("/collections", data={"name": "docs"}, follow_redirects=False)
    assert r.status_code == 303


def test_refuses_to_start_without_tokens(home, monkeypatch):
    from relayrag.dashboard.app import create_app, serve
    from relayrag.errors import ConfigError
    monkeypatch.delenv("RELAYRAG_DASHBOARD_TOKENS", raising=False)
    with pytest.raises(ConfigError, match="RELAYRAG_DASHBOARD_TOKENS"):
        create_app()
    with pytest.raises(ConfigError, match="RELAYRAG_DASHBOARD_TOKENS"):
        serve(port=1)
    with pytest.raises(ConfigError, match="not a loopback"):
        serve(host="0.0.0.0", port=1, no_auth=True)
    monkeypatch.setenv("RELAYRAG_DASHBOARD_TOKENS", " a , b ")
    assert create_app() is not None


def test_no_auth_mode_still_checks_csrf(home):
    from starlette.testclient import TestClient
    from relayrag.dashboard.app import create_app
    c = TestClient(create_app(tokens=[], no_auth=True))
    page = c.get("/ask")
    assert page.status_code == 200 and "no auth" in page.text
    assert c.post("/collections", data={"name": "docs"}, follow_redirects=False).status_code == 403
    token = page_csrf(page.text)
    assert c.post("/collections", data={"name": "docs", "csrf_token": token},
                  follow_redirects=False).status_code == 303


def test_loopback_detection():
    from relayrag.dashboard.auth import is_loopback
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("[::1]") and is_loopback("127.1.2.3")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("10.0.0.1")


def test_cli_dashboard_refuses_without_tokens_and_no_auth_off_loopback(home, monkeypatch):
    from typer.testing import CliRunner
    from relayrag.cli import app
    monkeypatch.delenv("RELAYRAG_DASHBOARD_TOKENS", raising=False)
    r = CliRunner().invoke(app, ["dashboard", "--port", "1"])
    assert r.exit_code == 2 and "RELAYRAG_DASHBOARD_TOKENS" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(app, ["dashboard", "--host", "0.0.0.0", "--no-auth", "--port", "1"])
    assert r.exit_code == 2 and "not a loopback address" in r.output


def test_logout_needs_csrf_and_ends_the_browser_session(browser_client):
    c = browser_client
    assert c.post("/logout", follow_redirects=False).status_code == 403
    r = c.post("/logout", data={"csrf_token": c.csrf}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/login"
    assert "Max-Age=0" in r.headers["set-cookie"]
    c.cookies.clear()
    assert c.get("/runs", follow_redirects=False).status_code == 401


def test_pages_carry_a_strict_content_security_policy(api):
    r = api.get("/ask")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src", 1)[1].split(";")[0]
    assert "frame-ancestors 'none'" in csp and r.headers["x-content-type-options"] == "nosniff"
    assert api.get("/login").headers["x-frame-options"] == "DENY"


def test_loopback_serving_refuses_foreign_host_names(home):
    """DNS rebinding: evil.example resolved to 127.0.0.1 is same-origin to the browser, but its Host header
    is not one of the loopback names, so nothing is served to it."""
    from starlette.testclient import TestClient
    from relayrag.dashboard.app import LOOPBACK_HOSTS, create_app
    app = create_app(tokens=[], no_auth=True, allowed_hosts=LOOPBACK_HOSTS)
    assert TestClient(app, base_url="http://127.0.0.1:8780").get("/ask").status_code == 200
    assert TestClient(app, base_url="http://localhost:8780").get("/ask").status_code == 200
    r = TestClient(app, base_url="http://evil.example:8780").get("/ask")
    assert r.status_code == 400 and "csrf" not in r.text.lower()


def test_logout_revokes_the_session_on_the_server(browser_client):
    """Issue 24 row 11: a copy of the cookie kept after logout used to keep working for 12 hours."""
    c = browser_client
    kept = c.cookies.get("relayrag_session")
    assert kept and c.get("/runs", follow_redirects=False).status_code == 200
    assert c.post("/logout", data={"csrf_token": c.csrf}, follow_redirects=False).status_code == 303
    c.cookies.clear()
    c.cookies.set("relayrag_session", kept)
    assert c.get("/runs", follow_redirects=False).status_code == 401


def test_login_attempts_are_limited_per_client_even_in_parallel(app):
    """Issue 24 row 11: 60 parallel wrong guesses all got checked (a 0.5 s sleep each is no limit)."""
    from concurrent.futures import ThreadPoolExecutor

    from starlette.testclient import TestClient

    from relayrag.dashboard import auth
    with TestClient(app) as c:
        def guess(i: int) -> int:
            return c.post("/login", data={"token": f"guess-{i}", "next": "/"}, follow_redirects=False).status_code
        with ThreadPoolExecutor(12) as pool:
            codes = list(pool.map(guess, range(24)))
        assert codes.count(401) == auth.LOGIN_ATTEMPTS and codes.count(429) == 24 - auth.LOGIN_ATTEMPTS
        r = c.post("/login", data={"token": TOKEN, "next": "/"}, follow_redirects=False)
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1 and "too many login attempts" in r.text


def test_open_it_from_htmx_redirects_the_browser_not_the_fragment(browser_client):
    """Issue 28, item 2: htmx follows a 303 inside its request and swapped the whole collection page (navigation
    included) into the form's card; an htmx request gets HX-Redirect on a 200 with no body instead."""
    c = browser_client
    r = c.post("/collections", data={"name": "fresh"}, follow_redirects=False,
               headers={"X-CSRF-Token": c.csrf, "HX-Request": "true"})
    assert r.status_code == 200 and r.headers["HX-Redirect"] == "/collections/fresh" and r.content == b""
    page = c.get("/collections")
    assert 'hx-post="/collections"' in page.text and '<script src="/static/app.js">' in page.text
    js = c.get("/static/app.js")
    assert js.status_code == 200 and "htmx:xhr:progress" in js.text
    assert 'id="upload-bytes"' in c.get("/collections/fresh").text
