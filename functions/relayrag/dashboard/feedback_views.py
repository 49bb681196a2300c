"""The dashboard's feedback: 👍 / 👎 under every answer and on the run page, the Feedback page, and the JSON API.

Routes (all behind the dashboard's auth; POSTs CSRF-checked like every mutation):
- `GET /runs/{run_id}/feedback`: the buttons fragment with the caller's current verdict (htmx loads it).
- `POST /runs/{run_id}/feedback`: a form {verdict, reason, answer, doc, page} → the fragment again (htmx), or
  the stored verdict as JSON (Accept: application/json). Bad input or an unknown run is said in the fragment.
- `POST /api/runs/{run_id}/feedback`: a JSON body of the same fields → the stored verdict; 400 / 404 / 401.
- `GET /feedback`: recent verdicts with filters (collection, verdict, reason, arm, route) and the share of 👎 per
  collection, route, arm and day; for a caller who is not an admin, how many verdicts of other identities (the
  CLI and terminal chat, chat-serve, MCP, other tokens) it does not show, per source (counts only: "hidden");
  `GET /api/feedback`: the same as JSON.

Identity (relayrag.feedback): `dashboard:` + the token's id (a bearer request's token, or the one a session
logged in with: relayrag.dashboard.auth.token_id); the local user with --no-auth. A token in
RELAYRAG_ADMIN_TOKENS (and --no-auth) sees every identity's verdicts; others see their own.
"""

from __future__ import annotations

import asyncio
import json
import time

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from relayrag import feedback as fb
from relayrag.dashboard import auth as authmod
from relayrag.dashboard import backend
from relayrag.dashboard.core import RUN_ID, Dashboard, _field, mutation_form, same_origin
from relayrag.errors import BadRequestError, NotFoundError, RelayragError

RECENT = 200  # verdicts the Feedback page lists


def identity(dash: Dashboard, request: Request) -> tuple[str, bool]:
    """(identity, admin) of the request (module docstring)."""
    admins = [t.strip() for t in (backend.settings().admin_tokens or "").split(",") if t.strip()]
    if request.state.bearer:
        token = request.headers.get("authorization", "").partition(" ")[2].strip()
        return f"dashboard:{authmod.token_id(token)}", fb.is_admin_token(backend.settings(), token)
    session = request.state.session
    tid = session.token_id if session is not None else None
    if tid:
        return f"dashboard:{tid}", tid in {authmod.token_id(t) for t in admins}
    if dash.auth.no_auth:
        return fb.local_identity(), True
    raise HTTPException(401, "authentication required")


def _run_id(request: Request) -> str:
    run_id = request.path_params["run_id"]
    if not RUN_ID.match(run_id):
        raise RelayragError(f"unknown run_id {run_id!r}")
    return run_id


def _page(value) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BadRequestError(f"feedback page: {value!r} is not a whole number") from None


def _mine(run_id: str, ident: str) -> dict | None:
    run = backend.ctx().docstore.get_run(run_id) or {}
    got = backend.ctx().docstore.list_feedback(run.get("collection") or "", identity=ident, run_id=run_id, limit=1) \
        if run.get("collection") else []
    return got[0] if got else None


def routes(dash: Dashboard) -> list[Route]:
    def buttons(request: Request, run_id: str, mine: dict | None, error: str | None = None, saved: bool = False):
        return dash.render(request, "_feedback.html", run_id=run_id, mine=mine, error=error, saved=saved,
                           reasons=[r.value for r in fb.Reason])

    async def get_buttons(request: Request):
        run_id = _run_id(request)
        ident, _ = identity(dash, request)
        return buttons(request, run_id, await asyncio.to_thread(_mine, run_id, ident))

    def _give(run_id: str, ident: str, fields: dict) -> dict:
        return fb.give(backend.service(), run_id, str(fields.get("verdict") or ""), ident,
                       reason=fields.get("reason") or None, answer=fields.get("answer") or None,
                       doc=fields.get("doc") or None, page=_page(fields.get("page")))

    async def post_form(request: Request):
        run_id = _run_id(request)
        form = await mutation_form(dash, request)
        ident, _ = identity(dash, request)
        fields = {k: _field(form, k) for k in ("verdict", "reason", "answer", "doc", "page")}
        want_json = "application/json" in request.headers.get("accept", "")
        try:
            entry = await asyncio.to_thread(_give, run_id, ident, fields)
        except (BadRequestError, NotFoundError) as exc:
            if want_json:
                raise
            return buttons(request, run_id, await asyncio.to_thread(_mine, run_id, ident), error=str(exc))
        if want_json:
            return JSONResponse(_public(entry))
        return buttons(request, run_id, entry, saved=True)

    async def post_api(request: Request):
        run_id = _run_id(request)
        if not request.state.bearer:  # a cookie session: the same CSRF rule as every mutation
            session = request.state.session
            if session is None:
                raise HTTPException(401, "authentication required")
            csrf = request.headers.get(authmod.CSRF_HEADER)
            if not same_origin(request, dash.trusted_origins) or not dash.auth.csrf_ok(session, csrf):
                raise HTTPException(403, "missing or invalid CSRF token")
        try:
            body = json.loads(await request.body() or b"null")
        except ValueError:
            raise BadRequestError("feedback: the body is not JSON") from None
        if not isinstance(body, dict):
            raise BadRequestError("feedback: the body must be a JSON object")
        ident, _ = identity(dash, request)
        return JSONResponse(_public(await asyncio.to_thread(_give, run_id, ident, body)))

    def _listing(request: Request) -> dict:
        ident, admin = identity(dash, request)
        q = request.query_params
        filters = {k: (q.get(k) or "").strip() or None for k in ("collection", "verdict", "reason", "arm", "route")}
        collection = filters.pop("collection")
        entries = fb.recent(backend.service(), ident, admin=admin, collection=collection, limit=RECENT, **filters)
        by_day = fb.down_share([{**e, "day": time.strftime("%Y-%m-%d", time.gmtime(e.get("updated_at") or 0))}
                                for e in entries], "day")
        hidden = [] if admin else fb.hidden(backend.service(), ident, collection=collection, **filters)
        return {"admin": admin, "identity": ident, "filters": {"collection": collection, **filters},
                "hidden": hidden, "hidden_total": sum(h["n"] for h in hidden),
                "verdicts": [_public(e) for e in entries],
                "share": {by: fb.down_share(entries, by) for by in ("collection", "route", "arm")},
                "by_day": sorted(by_day, key=lambda r: r["day"], reverse=True)}

    async def page(request: Request):
        data, cols = await asyncio.gather(asyncio.to_thread(_listing, request),
                                          asyncio.to_thread(backend.list_collections))
        questions = await asyncio.to_thread(_questions, [v["run_id"] for v in data["verdicts"]])
        return dash.render(request, "feedback.html", d=data, collections=cols, questions=questions,
                           reasons=[r.value for r in fb.Reason])

    async def api_list(request: Request):
        return JSONResponse(await asyncio.to_thread(_listing, request))

    return [Route("/runs/{run_id}/feedback", get_buttons, methods=["GET"]),
            Route("/runs/{run_id}/feedback", post_form, methods=["POST"]),
            Route("/api/runs/{run_id}/feedback", post_api, methods=["POST"]),
            Route("/feedback", page), Route("/api/feedback", api_list)]


def _public(entry: dict) -> dict:
    """A verdict as shown to clients: everything but the internal bandit context."""
    return {k: v for k, v in entry.items() if k not in ("bandit_context",)}


def _questions(run_ids: list[str]) -> dict[str, str]:
    ds = backend.ctx().docstore
    return {r: (ds.get_run(r) or {}).get("question", "") for r in dict.fromkeys(run_ids)}
