"""What the dashboard's app (relayrag.dashboard.app) and its routes (relayrag.dashboard.views) share: the
template environment and renderer (`Dashboard`), the CSRF check of state-changing requests, the session
cookie header, the answer splitter and the SSE follower of a job."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlparse

from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup, escape
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response

from relayrag.dashboard import auth as authmod
from relayrag.dashboard import backend
from relayrag.dashboard.jobs import Job, Jobs
from relayrag.errors import ConfigError
from relayrag.naming import MAX_QUESTION_CHARS

log = logging.getLogger("relayrag.dashboard")
HERE = Path(__file__).resolve().parent
DEFAULT_MAX_UPLOAD_MB = 50
PUBLIC_PATHS = {"/login", "/healthz"}
CITE = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
RUN_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def describe_exception(exc: BaseException) -> str | None:
    """A message fit for the page, or None for a bug: a RelayragError's message; a Google API error (permission,
    not found, quota: google.api_core) as `Google API error CODE: message`; missing Google credentials with the
    fix. Matched by class name for google-auth, which is an optional extra."""
    from relayrag.errors import RelayragError
    if isinstance(exc, RelayragError):
        return str(exc)
    for cls in type(exc).__mro__:
        if cls.__name__ == "GoogleAPICallError" and cls.__module__.startswith("google.api_core"):
            grpc, http = getattr(exc, "grpc_status_code", None), getattr(exc, "code", None)
            name = getattr(grpc, "name", None) or getattr(http, "name", http)
            return f"Google API error {name} (HTTP {int(http) if http else '?'}): {getattr(exc, 'message', exc)}"
        if cls.__name__ == "DefaultCredentialsError" and cls.__module__.startswith("google.auth"):
            return ("Google credentials are missing: run `gcloud auth application-default login` or set "
                    "GOOGLE_APPLICATION_CREDENTIALS (the service account of the deployed dashboard has them)")
    return None


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


def _fmt_time(ts: Any) -> Markup:
    """Epoch seconds as local "YYYY-MM-DD HH:MM:SS" in a <span class="ts"> (which never wraps inside itself:
    a narrow column once showed "2026-12-/03/06:44:35"); "—" for a missing or non-numeric value."""
    try:
        text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(ts)))
    except (TypeError, ValueError, OverflowError, OSError):
        text = "—"
    return Markup('<span class="ts">{}</span>').format(text)


def clip(text: Any, limit: int = 160) -> str:
    """`text` with its whitespace runs collapsed, cut to at most `limit` characters at a word boundary where one
    is near, with "…" when cut: a list row shows a question's start, its run page (and the title attribute) all
    of it. "" for None."""
    s = " ".join(str(text or "").split())
    if len(s) <= limit:
        return s
    cut = s[:limit - 1]
    space = cut.rfind(" ")
    if space >= limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def path_breaks(path: Any, name: Any = None, limit: int = 48) -> Markup:
    """A document's source path (escaped) for a table cell beside its name: the folder when the path ends with
    `name` (the name column shows the rest), its middle replaced by "…" past `limit` characters (the cell's title
    attribute carries the whole path), with a line-break opportunity (<wbr>) after each "/" or "\\", so a narrow
    column wraps it at its separators instead of a few characters per line."""
    s = str(path or "")
    if name and s.endswith(str(name)) and len(s) > len(str(name)) and s[-len(str(name)) - 1] in "/\\":
        s = s[:-len(str(name))]
    if len(s) > limit:
        head = max(8, limit // 3)
        s = s[:head] + "…" + s[-(limit - head - 1):]
    return Markup("<wbr>").join(escape(part) for part in re.split(r"(?<=[/\\…])", s) if part)


def _fmt_num(v: Any, digits: int = 3, scale: float = 1.0, suffix: str = "") -> str:
    """A number with `digits` decimals (times `scale`, then `suffix`); "—" for a missing or non-numeric value, so
    a run record of any route renders (a small-talk run has no reward, an unfinished one no timings)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return "—"
    return f"{v * scale:.{digits}f}{suffix}"


def outcome(rec: Any) -> tuple[str, str]:
    """(label, css class) of a run's outcome, for a run record or result of any route: refused (a guard or the
    hallucination check refused), not found, small talk, grounded, not grounded, or unfinished."""
    get = rec.get if isinstance(rec, dict) else (lambda k, d=None: getattr(rec, k, d))
    if get("refused"):
        return "refused", "bad"
    if get("found") is False:
        return "not found", "muted"
    if get("route") == "chitchat":
        return "small talk", "muted"
    if get("grounded"):
        return "grounded", "good"
    if get("answer") is not None:
        return "not grounded", "bad"
    return "unfinished", "muted"


SQL_BLOCKS = re.compile(r"\n\n(?:Result \(\d+ rows?(?: \(capped\))?\):\n|Source: SQL over )")


def sql_lead(answer: str) -> str:
    """An sql-route answer without the rows table and the SQL it ends with (relayrag.stages.sql._answered writes
    them into the text for the CLI and MCP): the page shows both as a table and a code block below the answer,
    so the text keeps only its sentence (and "The query returned no rows."). Any other answer is returned whole."""
    m = SQL_BLOCKS.search(answer or "")
    return (answer[:m.start()] if m else answer or "").strip()


SOURCE_TYPES = {".pdf": "PDF", ".md": "Markdown", ".markdown": "Markdown", ".txt": "text", ".html": "HTML",
                ".htm": "HTML", ".png": "image", ".jpg": "image", ".jpeg": "image", ".tif": "image", ".tiff": "image",
                ".jsonl": "corpus record"}


def source_type(doc: Any) -> str:
    """What kind of source a cited document is, from its name's suffix ("PDF", "Markdown", "text", "HTML",
    "image", "corpus record"; "document" otherwise): shown where a citation has no page thumbnail."""
    suffix = Path(str(doc or "")).suffix.lower()
    return SOURCE_TYPES.get(suffix, "document")


def make_env() -> Environment:
    env = Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=True,
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["time"] = _fmt_time
    env.filters["num"] = _fmt_num
    env.filters["clip"] = clip
    env.filters["path_breaks"] = path_breaks
    env.filters["tojson_attr"] = lambda v: json.dumps(v, ensure_ascii=False)
    env.filters["urlq"] = lambda v: quote(str(v), safe="")
    env.globals["answer_parts"] = answer_parts
    env.globals["outcome"] = outcome
    env.globals["source_type"] = source_type
    env.globals["sql_lead"] = sql_lead
    env.globals["max_question"] = MAX_QUESTION_CHARS  # the question box's maxlength: the API's own limit
    return env


class Dashboard:
    """State shared by the handlers: templates, auth, jobs, limits."""

    def __init__(self, authenticator: authmod.Authenticator, *, max_upload_bytes: int,
                 trusted_origins: frozenset[str] = frozenset()):
        self.env = make_env()
        self.auth = authenticator
        self.jobs = Jobs()
        self.max_upload_bytes = max_upload_bytes
        self.trusted_origins = trusted_origins

    def render(self, request: Request | None, template: str, status: int = 200, **ctx) -> HTMLResponse:
        return HTMLResponse(self.fragment(request, template, **ctx), status_code=status)

    def fragment(self, request: Request | None, template: str, **ctx) -> str:
        session = getattr(request.state, "session", None) if request is not None else None
        authed = bool(session) or bool(getattr(request.state, "bearer", False) if request is not None else False)
        base = {"request": request, "csrf": self.auth.csrf_token(session) if session else "", "authed": authed,
                "engine": backend.engine_name(), "no_auth": self.auth.no_auth,
                "path": request.url.path if request is not None else ""}
        return self.env.get_template(template).render(**base, **ctx)


def _too_large(limit: int) -> Response:
    return PlainTextResponse(f"request body larger than the upload limit of {limit // (1024 * 1024)} MB "
                             "(RELAYRAG_DASHBOARD_MAX_UPLOAD_MB)", status_code=413)


def _cookie_header(value: str, request: Request) -> str:
    secure = "; Secure" if request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https" else ""
    return (f"{authmod.COOKIE}={value}; Path=/; Max-Age={authmod.SESSION_TTL_S}; HttpOnly; SameSite=Strict"
            f"{secure}")


def normalise_origin(origin: str) -> str:
    """`scheme://host[:port]` in lower case, default ports dropped ("HTTP://LocalHost:80" -> "http://localhost");
    "" for anything that is not an http(s) origin."""
    u = urlparse(origin.strip())
    if u.scheme not in ("http", "https") or not u.hostname or u.path not in ("", "/") or u.username:
        return ""
    try:
        port = u.port
    except ValueError:  # "127.0.0.1:8780.evil.example"
        return ""
    default = {"http": 80, "https": 443}[u.scheme]
    return f"{u.scheme}://{u.hostname.lower()}" + (f":{port}" if port and port != default else "")


def trusted_origins_from_env(raw: str) -> frozenset[str]:
    """RELAYRAG_DASHBOARD_ORIGINS: comma-separated origins a browser may post from besides the Host the request
    names, e.g. `http://127.0.0.1:8780` for `gcloud run services proxy --port 8780`, which rewrites Host to the
    run.app name while the browser's Origin stays the proxy's. ConfigError for a value that is not an origin."""
    out = set()
    for part in (p.strip() for p in raw.split(",")):
        if not part:
            continue
        norm = normalise_origin(part)
        if not norm:
            raise ConfigError(f"RELAYRAG_DASHBOARD_ORIGINS: {part!r} is not an origin (scheme://host[:port])")
        out.add(norm)
    return frozenset(out)


def same_origin(request: Request, trusted: frozenset[str] = frozenset()) -> bool:
    """Whether a browser request comes from this dashboard's own pages (the CSRF check beside SameSite=Strict
    cookies and the CSRF token). True when the request has no Origin (not every browser sends it on
    same-origin requests), when Origin's host:port is the Host the request was sent to (X-Forwarded-Host when a
    proxy in front says so: a cross-site page cannot set that header without a CORS preflight, which this app
    never grants), or when Origin is one of `trusted` (RELAYRAG_DASHBOARD_ORIGINS: the local proxy's origin,
    exactly, scheme and port included). Any other Origin, `null` included, is refused."""
    origin = request.headers.get("origin")
    if not origin:
        return True
    host = request.headers.get("x-forwarded-host") or request.headers.get("host", "")
    if urlparse(origin).netloc == host and host:
        return True
    norm = normalise_origin(origin)
    return bool(norm) and norm in trusted


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
    if not same_origin(request, dash.trusted_origins):
        raise HTTPException(403, "cross-origin request refused (Origin does not match this dashboard)")
    given = request.headers.get(authmod.CSRF_HEADER) or form.get(authmod.CSRF_FIELD)
    if not dash.auth.csrf_ok(session, given if isinstance(given, str) else None):
        raise HTTPException(403, "missing or invalid CSRF token: reload the page and try again")
    return form


def _field(form, name: str, default: str = "") -> str:
    v = form.get(name, default)
    return v if isinstance(v, str) else default


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
