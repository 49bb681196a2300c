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

import logging
import os
import secrets
import sys
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from relayrag.dashboard import auth as authmod
from relayrag.dashboard import backend
from relayrag.dashboard.core import (DEFAULT_MAX_UPLOAD_MB, HERE, PUBLIC_PATHS, BodyTooLarge, Dashboard,
                                     _cookie_header, _too_large, describe_exception,
                                     trusted_origins_from_env)
from relayrag.errors import ConfigError, RelayragError

log = logging.getLogger("relayrag.dashboard")
# Defence in depth behind escaping: only the dashboard's own scripts run (no inline script, no eval), nothing
# is fetched from elsewhere, no page can frame it. Inline styles stay allowed (htmx's indicator style, a few
# style attributes). An SVG response sets its own stricter policy.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SECURITY_HEADERS = [(b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"same-origin"), (b"x-frame-options", b"DENY")]


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
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in SECURITY_HEADERS if k not in names]
                if new_cookie:
                    headers.append((b"set-cookie", _cookie_header(new_cookie, request).encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, limited_receive, send_with_cookie)  # BodyTooLarge: a 413 by its handler


# -- application ----------------------------------------------------------------------------------------
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "::1", "[::1]"]


def create_app(*, tokens: list[str] | None = None, no_auth: bool = False, max_upload_mb: float | None = None,
               allowed_hosts: list[str] | None = None) -> Starlette:
    """The dashboard app. Tokens default to RELAYRAG_DASHBOARD_TOKENS; ConfigError when there are none and
    `no_auth` is not set (the loopback check is `serve`'s, which knows the bind address). `allowed_hosts`:
    the Host header values served (others get 400), e.g. LOOPBACK_HOSTS against DNS rebinding; None = any."""
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
                     max_upload_bytes=int(max_upload_mb * 1024 * 1024),
                     trusted_origins=trusted_origins_from_env(os.environ.get("RELAYRAG_DASHBOARD_ORIGINS", "")))
    from relayrag.dashboard import views
    routes = views.routes(dash) + [Mount("/static", app=StaticFiles(directory=str(HERE / "static")), name="static")]

    async def relayrag_error(request: Request, exc: Exception) -> Response:
        from relayrag.errors import BadRequestError, NotFoundError
        status = 404 if isinstance(exc, NotFoundError) or (str(exc).startswith("unknown ") and
                                                            not isinstance(exc, BadRequestError)) else 400
        return _error(dash, request, status, str(exc))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return _error(dash, request, exc.status_code, str(exc.detail))

    async def internal_error(request: Request, exc: Exception) -> Response:
        known = describe_exception(exc)
        if known is not None:  # a Google API refusal or missing credentials: the user can act on it
            return _error(dash, request, 502, known)
        ref = secrets.token_hex(4)
        log.error("internal error %s on %s %s", ref, request.method, request.url.path, exc_info=exc)
        return _error(dash, request, 500, f"internal error (reference {ref}; the details are in the server log)")

    async def too_large(request: Request, exc: Exception) -> Response:
        return _too_large(dash.max_upload_bytes)

    app = Starlette(routes=routes, exception_handlers={RelayragError: relayrag_error, HTTPException: http_error,
                                                       BodyTooLarge: too_large, Exception: internal_error})
    app.state.dashboard = dash
    app.add_middleware(AuthMiddleware, dash=dash)
    if allowed_hosts:
        # added last = outermost: a page of another site that rebinds its name to 127.0.0.1 is same-origin to
        # the browser (it could read the CSRF token), but its requests carry its own Host name and stop here
        from starlette.middleware.trustedhost import TrustedHostMiddleware
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts, www_redirect=False)
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
    app = create_app(tokens=tokens, no_auth=no_auth and not tokens,
                     allowed_hosts=LOOPBACK_HOSTS if authmod.is_loopback(host) else None)
    import uvicorn
    logging.basicConfig(level=getattr(logging, log_level.upper(), logging.WARNING), stream=sys.stderr)
    where = f"http://{'[' + host + ']' if ':' in host else host}:{port}/"
    sys.stderr.write(f"relayrag dashboard on {where} ({'NO AUTH' if no_auth and not tokens else 'token auth'}; "
                     f"engine {backend.engine_name()})\n")
    if no_auth and not tokens:
        sys.stderr.write("!! --no-auth: anyone who can reach this port can ask, upload and delete documents\n")
    uvicorn.run(app, host=host, port=port, log_level=log_level.lower(), proxy_headers=True)
