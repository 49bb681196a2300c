"""Dashboard API tests: the real app (Starlette TestClient, in-process ASGI) over a real embedded home."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette", reason="the dashboard extra is not installed: pip install -e '.[dashboard]'")
pytest.importorskip("sse_starlette", reason="the dashboard extra is not installed: pip install -e '.[dashboard]'")
pytest.importorskip("matplotlib", reason="the dashboard extra is not installed: pip install -e '.[dashboard]'")

TOKEN = "test-token-" + "x" * 20


@pytest.fixture
def app(home):
    from relayrag.dashboard.app import create_app
    return create_app(tokens=[TOKEN, "second-token"], max_upload_mb=1)


@pytest.fixture
def api(app):
    """A client that authenticates with the bearer header (no CSRF token needed)."""
    from starlette.testclient import TestClient
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        yield c


@pytest.fixture
def browser_client(app):
    """A client logged in through the login form (cookie session); `.csrf` is the page's CSRF token."""
    from starlette.testclient import TestClient
    with TestClient(app, base_url="http://testserver") as c:
        r = c.post("/login", data={"token": TOKEN, "next": "/"}, follow_redirects=False)
        assert r.status_code == 303
        page = c.get("/ask").text
        c.csrf = page_csrf(page)
        yield c


def page_csrf(html: str) -> str:
    """The CSRF token a page hands htmx (<body hx-headers='{"X-CSRF-Token": ...}'>, HTML-escaped)."""
    m = re.search(r"X-CSRF-Token&#34;: &#34;([0-9a-f]{64})&#34;", html)
    assert m, "no CSRF token on the page"
    return m.group(1)


def read_sse(client, url: str, timeout_events: int = 500) -> list[tuple[str, str]]:
    """All events of a job stream until `done`: [(event, data)]."""
    events, name, data = [], None, []
    with client.stream("GET", url) as r:
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:][1:] if line[5:].startswith(" ") else line[5:])
            elif line == "" and name is not None:
                events.append((name, "\n".join(data)))
                if name == "done" or len(events) >= timeout_events:
                    break
                name, data = None, []
    return events


def job_url(html: str) -> str:
    m = re.search(r'sse-connect="(/jobs/[^"]+/events)"', html)
    assert m, html
    return m.group(1)
