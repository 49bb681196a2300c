"""`POST /chat`: the assistant's turns as Server-Sent Events (Starlette + sse-starlette), for the dashboard
and other clients. `relayrag chat-serve` serves it locally; infra/ deploys it as a Cloud Run service.

Request: `Authorization: Bearer <one of RELAYRAG_AGENT_TOKENS>` (or `X-Relayrag-Token: <token>` where a proxy
owns Authorization, e.g. `gcloud run services proxy`) and a JSON body
`{"message": str, "thread_id": str | null, "collection": str | null, "mode": "auto"|"analysis"|"supervisor"}`
(a missing thread_id starts a new thread; its id comes back in the first event). Response: `text/event-stream`,
one SSE event per assistant event (`start`, `node`, `tool_call`, `tool_result`, `repair`, `summary`, `hop`,
then `final` or `error`), each `data:` a JSON object. A missing or wrong token gets 401 before anything runs;
a bad body gets 400 naming the field, a collection the gateway does not have 404 naming the ones it has.
`GET /healthz` answers 200 without a token.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import sys

from pydantic import BaseModel, Field, ValidationError
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from relayrag.agent.assistant import Assistant
from relayrag.errors import ConfigError
from relayrag.hosts import is_loopback
from relayrag.naming import COLLECTION_PATTERN

log = logging.getLogger("relayrag.agent")


class ChatRequest(BaseModel):
    message: str = Field(..., min_length=1, max_length=8000)
    thread_id: str | None = Field(None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:-]+$")
    collection: str | None = Field(None, pattern=COLLECTION_PATTERN)
    mode: str | None = Field(None, pattern=r"^(auto|analysis|supervisor)$")


def split_tokens(value: str) -> list[str]:
    return [t.strip() for t in (value or "").split(",") if t.strip()]


TOKEN_HEADER = "x-relayrag-token"
"""Where the app token may come instead of `Authorization`: `gcloud run services proxy` replaces Authorization
with the caller's Google ID token, so a client behind it sends the app token here. A client calling Cloud Run
directly sends its ID token in `X-Serverless-Authorization` (checked by Cloud Run, which strips it:
https://cloud.google.com/run/docs/authenticating/service-to-service) and the app token in `Authorization`."""


def _matches(given: str, tokens: list[str]) -> bool:
    ok = False
    for t in tokens:  # no early exit: timing does not reveal which token matched
        ok = hmac.compare_digest(given.strip().encode(), t.encode()) or ok
    return ok


def authorized(request: Request, tokens: list[str]) -> bool:
    """Constant-time match of the request's app token against `tokens` (no tokens: open): `Authorization:
    Bearer <token>`, or, when that header holds something else (a Google ID token put there by a proxy),
    `X-Relayrag-Token: <token>`."""
    if not tokens:
        return True
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and given and _matches(given, tokens):
        return True
    alt = request.headers.get(TOKEN_HEADER, "")
    return bool(alt.strip()) and _matches(alt, tokens)


def build_app(assistant: Assistant, *, tokens: list[str]) -> Starlette:
    """The Starlette app around an (unopened) Assistant; the app's lifespan opens and closes it."""

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with assistant:
            yield

    async def chat(request: Request):
        if not authorized(request, tokens):
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": 'Bearer realm="relayrag-chat"'})
        try:
            body = ChatRequest.model_validate(json.loads(await request.body() or b"null"))
        except (ValueError, ValidationError) as exc:
            detail = exc.errors()[0] if isinstance(exc, ValidationError) else {"msg": str(exc)}
            where = ".".join(str(x) for x in detail.get("loc", ())) or "body"
            return JSONResponse({"error": f"{where}: {detail.get('msg')}"}, status_code=400)
        if not (body.collection or assistant.collection):
            return JSONResponse({"error": "collection: required (the server has no default collection)"},
                                status_code=400)

        missing = await assistant.collection_error(body.collection or assistant.collection)
        if missing is not None:
            return JSONResponse({"error": missing}, status_code=404)

        async def events():
            async for e in assistant.turn(body.message, thread_id=body.thread_id, collection=body.collection,
                                          mode=body.mode):
                yield {"event": e["event"], "data": json.dumps(e, ensure_ascii=False, default=str)}
        return EventSourceResponse(events(), ping=15)

    async def healthz(request: Request):
        return JSONResponse({"ok": True, "collection": assistant.collection, "model": assistant.model_name})

    return Starlette(routes=[Route("/chat", chat, methods=["POST"]), Route("/healthz", healthz, methods=["GET"])],
                     lifespan=lifespan)


def serve(*, host: str = "127.0.0.1", port: int = 8790, collection: str = "", no_auth: bool = False,
          mode: str = "auto", log_level: str = "warning") -> None:
    """Run POST /chat with uvicorn. Refuses to start without RELAYRAG_AGENT_TOKENS unless --no-auth on a
    loopback host."""
    import uvicorn

    from relayrag.settings import load_settings
    s = load_settings()
    tokens = split_tokens(s.agent_tokens)
    if not tokens and not no_auth:
        raise ConfigError("refusing to serve /chat without authentication: set RELAYRAG_AGENT_TOKENS "
                          "(comma-separated bearer tokens), or pass --no-auth on a loopback host")
    if no_auth:
        if not is_loopback(host):
            raise ConfigError(f"refusing --no-auth on --host {host}: only a loopback address may serve /chat "
                              "without tokens")
        tokens = []
        sys.stderr.write("relayrag chat-serve --no-auth: /chat accepts every request on this loopback address\n")
    sys.stderr.write(f"relayrag assistant on http://{host}:{port}/chat "
                     f"({'NO AUTH' if not tokens else 'bearer-token auth'})\n")
    app = build_app(Assistant(collection=collection, settings=s, mode=mode), tokens=tokens)
    uvicorn.run(app, host=host, port=port, log_level=log_level)
