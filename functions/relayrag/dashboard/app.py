"""The dashboard's Starlette application and `serve()` (what `relayrag dashboard` runs).

Server-rendered pages (Jinja2, autoescape on for every template: document text, file names, answers and
errors are data), htmx for partial updates, Server-Sent Events for live progress (sse-starlette), plots
as SVG images drawn by matplotlib. Every asset ships in the package (static/: htmx 2 and its SSE extension
from npm, with their licences); pages load nothing from elsewhere. Auth, sessions and CSRF:
`relayrag.dashboard.auth`. All relayrag work: `relayrag.dashboard.backend`.

Errors: a RelayragError becomes its message with HTTP 400 (404 for unknown things); anything else is
logged with its traceback on the server and the page says only "internal error" with an id to find it
in the log. No stack trace reaches a page.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import secrets
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

from jinja2 import Environment, FileSystemLoader
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from relayrag.dashboard import auth as authmod
from relayrag.dashboard import backend
from relayrag.dashboard.jobs import Job, Jobs
from relayrag.errors import ConfigError, RelayragError

log = logging.getLogger("relayrag.dashboard")
HERE = Path(__file__).resolve().parent
DEFAULT_MAX_UPLOAD_MB = 50
PUBLIC_PATHS = {"/login", "/healthz"}
CITE = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
RUN_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


class BodyTooLarge(Exception):
    pass


def answer_parts(answer: str) -> list[tuple[str, Any]]:
    """The answer split into ("text", str) and ("cite", [n, ...]) parts, so citation markers become
    buttons while every text part is still escaped by the template."""
    parts: list[tuple[str, Any]] = []
    pos = 0
    for m in CITE.finditer(answer or ""):
        if m.start() > pos:
            parts.append(("text", answer[pos:m.start()]))
        parts.append(("cite", [int(x) for x in re.split(r"\s*[,;]\s*", m.group(1))]))
        pos = m.end()
    if pos < len(answer or ""):
        parts.append(("text", answer[pos:]))
    return parts


def _fmt_time(ts: Any) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(ts)))
    except (TypeError, ValueError):
        return "—"


def make_env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["time"] = _fmt_time
    env.filters["tojson_attr"] = lambda v: json.dumps(v, ensure_ascii=False)
    env.filters["urlq"] = lambda v: quote(str(v), safe="")
    env.globals["answer_parts"] = answer_parts
    return env


class Dashboard:
    """State shared by the handlers: templates, auth, jobs, limits."""

    def __init__(self, authenticator: authmod.Authenticator, *, max_upload_bytes: int):
        self.env = make_env()
        self.auth = authenticator
        self.jobs = Jobs()
        self.max_upload_bytes = max_upload_bytes

    def render(self, request: Request | None, template: str, status: int = 200, **ctx) -> HTMLResponse:
        return HTMLResponse(self.fragment(request, template, **ctx), status_code=status)

    def fragment(self, request: Request | None, template: str, **ctx) -> str:
        session = getattr(request.state, "session", None) if request is not None else None
        authed = bool(session) or bool(getattr(request.state, "bearer", False) if request is not None else False)
        base = {"request": request, "csrf": self.auth.csrf_token(session) if session else "", "authed": authed,
                "engine": backend.engine_name(), "no_auth": self.auth.no_auth,
                "path": request.url.path if request is not None else ""}
        return self.env.get_template(template).render(**base, **ctx)


# -- auth middleware ------------------------------------------------------------------------------------
class AuthMiddleware:
    """Authenticates every request but /login, /healthz and /static; enforces the body-size limit.

    Unauthenticated: a browser page (GET, Accept text/html, not htmx) is redirected to /login; anything
    else gets 401 with a one-line reason. Sets request.state.session (cookie sessions) and
    request.state.bearer (Authorization header). In --no-auth mode a session cookie is issued on the fly."""

    def __init__(self, app, dash: Dashboard):
        self.app, self.dash = app, dash

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = Request(scope)
        auth = self.dash.auth
        limit = self.dash.max_upload_bytes
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > limit:
            return await _too_large(limit)(scope, receive, send)
        seen = 0

        async def limited_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge()
            return message

        path = scope["path"]
        state = scope.setdefault("state", {})
        session = auth.read_session(request.cookies.get(authmod.COOKIE))
        bearer = auth.bearer_ok(request.headers.get("authorization"))
        new_cookie = None
        if auth.no_auth and session is None:
            new_cookie = auth.new_session()
            session = auth.read_session(new_cookie)
        state["session"], state["bearer"] = session, bearer
        public = path in PUBLIC_PATHS or path.startswith("/static/")
        if not public and not (session or bearer):
            html = ("text/html" in request.headers.get("accept", "") and request.method == "GET"
                    and "hx-request" not in request.headers and not path.startswith(("/api/", "/jobs/"))
                    and not path.endswith(".svg"))
            if html:
                target = path + (f"?{scope['query_string'].decode('latin-1')}" if scope.get("query_string") else "")
                resp: Response = RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
            else:
                resp = PlainTextResponse("authentication required: send `Authorization: Bearer <token>` (a token "
                                         "from RELAYRAG_DASHBOARD_TOKENS) or log in at /login", status_code=401,
                                         headers={"WWW-Authenticate": 'Bearer realm="relayrag-dashboard"'})
            return await resp(scope, receive, send)

        async def send_with_cookie(message):
            if new_cookie and message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"set-cookie", _cookie_header(new_cookie, request).encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, limited_receive, send_with_cookie)  # BodyTooLarge: a 413 by its handler


def _too_large(limit: int) -> Response:
    return PlainTextResponse(f"request body larger than the upload limit of {limit // (1024 * 1024)} MB "
                             "(RELAYRAG_DASHBOARD_MAX_UPLOAD_MB)", status_code=413)


def _cookie_header(value: str, request: Request) -> str:
    secure = "; Secure" if request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https" else ""
    return (f"{authmod.COOKIE}={value}; Path=/; Max-Age={authmod.SESSION_TTL_S}; HttpOnly; SameSite=Strict"
            f"{secure}")


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if not origin:  # not every browser sends Origin on same-origin requests; SameSite=Strict still holds
        return True
    host = request.headers.get("x-forwarded-host") or request.headers.get("host", "")
    return urlparse(origin).netloc == host


async def mutation_form(dash: Dashboard, request: Request) -> Any:
    """The POST's form after the CSRF check: a bearer request passes; a cookie session needs a same-origin
    request (when the browser says its Origin) and the session's CSRF token in X-CSRF-Token or the form's
    csrf_token field. 403 otherwise."""
    form = await request.form(max_files=20, max_fields=50)
    if request.state.bearer:
        return form
    session = request.state.session
    if session is None:
        raise HTTPException(401, "authentication required")
    if not _same_origin(request):
        raise HTTPException(403, "cross-origin request refused (Origin does not match this dashboard)")
    given = request.headers.get(authmod.CSRF_HEADER) or form.get(authmod.CSRF_FIELD)
    if not dash.auth.csrf_ok(session, given if isinstance(given, str) else None):
        raise HTTPException(403, "missing or invalid CSRF token: reload the page and try again")
    return form


def _field(form, name: str, default: str = "") -> str:
    v = form.get(name, default)
    return v if isinstance(v, str) else default


# -- application ----------------------------------------------------------------------------------------
def create_app(*, tokens: list[str] | None = None, no_auth: bool = False,
               max_upload_mb: float | None = None) -> Starlette:
    """The dashboard app. Tokens default to RELAYRAG_DASHBOARD_TOKENS; ConfigError when there are none and
    `no_auth` is not set (the loopback check is `serve`'s, which knows the bind address)."""
    if tokens is None:
        tokens = authmod.split_tokens(os.environ.get("RELAYRAG_DASHBOARD_TOKENS", ""))
    if not tokens and not no_auth:
        raise ConfigError("the dashboard needs RELAYRAG_DASHBOARD_TOKENS (comma-separated tokens), or --no-auth "
                          "on a loopback host")
    if max_upload_mb is None:
        raw = os.environ.get("RELAYRAG_DASHBOARD_MAX_UPLOAD_MB", "") or str(DEFAULT_MAX_UPLOAD_MB)
        try:
            max_upload_mb = float(raw)
        except ValueError:
            raise ConfigError(f"RELAYRAG_DASHBOARD_MAX_UPLOAD_MB={raw!r} is not a number") from None
    dash = Dashboard(authmod.Authenticator(tokens, no_auth=no_auth),
                     max_upload_bytes=int(max_upload_mb * 1024 * 1024))
    from relayrag.dashboard import views
    routes = views.routes(dash) + [Mount("/static", app=StaticFiles(directory=str(HERE / "static")), name="static")]

    async def relayrag_error(request: Request, exc: RelayragError):
        from relayrag.errors import NotFoundError
        status = 404 if isinstance(exc, NotFoundError) or str(exc).startswith("unknown ") else 400
        return _error(dash, request, status, str(exc))

    async def http_error(request: Request, exc: HTTPException):
        return _error(dash, request, exc.status_code, str(exc.detail))

    async def internal_error(request: Request, exc: Exception):
        ref = secrets.token_hex(4)
        log.error("internal error %s on %s %s", ref, request.method, request.url.path, exc_info=exc)
        return _error(dash, request, 500, f"internal error (reference {ref}; the details are in the server log)")

    async def too_large(request: Request, exc: BodyTooLarge):
        return _too_large(dash.max_upload_bytes)

    app = Starlette(routes=routes, exception_handlers={RelayragError: relayrag_error, HTTPException: http_error,
                                                       BodyTooLarge: too_large, Exception: internal_error})
    app.state.dashboard = dash
    app.add_middleware(AuthMiddleware, dash=dash)
    return app


def _error(dash: Dashboard, request: Request, status: int, message: str) -> Response:
    if request.url.path.startswith("/api/") or "application/json" in request.headers.get("accept", ""):
        return JSONResponse({"error": message}, status_code=status)
    if "hx-request" in request.headers:
        return dash.render(request, "_error.html", status=status, message=message)
    if not hasattr(request.state, "session"):
        return PlainTextResponse(message, status_code=status)
    return dash.render(request, "error.html", status=status, message=message, status_code=status)


def serve(*, host: str = "127.0.0.1", port: int = 8780, no_auth: bool = False, log_level: str = "warning") -> None:
    """Run the dashboard with uvicorn. Refuses to start without RELAYRAG_DASHBOARD_TOKENS unless `no_auth`,
    and refuses `no_auth` on a host that is not loopback (ConfigError)."""
    tokens = authmod.split_tokens(os.environ.get("RELAYRAG_DASHBOARD_TOKENS", ""))
    if no_auth and not authmod.is_loopback(host):
        raise ConfigError(f"refusing --no-auth on --host {host}, which is not a loopback address: anyone who can "
                          "reach it could ask, upload and delete documents; set RELAYRAG_DASHBOARD_TOKENS")
    if not tokens and not no_auth:
        raise ConfigError("no dashboard tokens: set RELAYRAG_DASHBOARD_TOKENS (comma-separated; e.g. "
                          "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`), or pass --no-auth "
                          "(loopback hosts only)")
    app = create_app(tokens=tokens, no_auth=no_auth and not tokens)
    import uvicorn
    logging.basicConfig(level=getattr(logging, log_level.upper(), logging.WARNING), stream=sys.stderr)
    where = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    sys.stderr.write(f"relayrag dashboard on {where} ({'NO AUTH' if no_auth and not tokens else 'token auth'}; "
                     f"engine {backend.engine_name()})\n")
    if no_auth and not tokens:
        sys.stderr.write("!! --no-auth: anyone who can reach this port can ask, upload and delete documents\n")
    uvicorn.run(app, host=host, port=port, log_level=log_level.lower(), proxy_headers=True)


async def sse_events(job: Job, request: Request, poll_s: float = 0.1):
    """Replay then follow a job's events as SSE messages (event name + HTML data). Waits on the event loop
    (a short sleep between looks at the job's log), never in a worker thread, so open streams cannot starve
    the thread pool the handlers' blocking work runs in."""
    from sse_starlette.sse import ServerSentEvent
    seen = 0
    while True:
        events = job.events[seen:]
        for name, html in events:
            yield ServerSentEvent(data=html, event=name)
        seen += len(events)
        if job.done and seen >= len(job.events):
            return
        if not events:
            if await request.is_disconnected():
                return
            await asyncio.sleep(poll_s)
