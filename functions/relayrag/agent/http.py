"""`POST /chat`: the assistant's turns as Server-Sent Events (Starlette + sse-starlette), for the dashboard
and other clients. `relayrag chat-serve` serves it locally; infra/ deploys it as a Cloud Run service.

Request: `Authorization: Bearer <token>` (RELAYRAG_AGENT_TOKENS; or `X-Relayrag-Token: <token>` where a proxy owns
Authorization, e.g. `gcloud run services proxy`) and a JSON body
`{"message": str, "thread_id": str | null, "collection": str | null, "mode": "auto"|"analysis"|"supervisor"}`.
A missing thread_id starts a new thread under a server-made, unguessable id (128 random bits), which comes back
in the first event; a given thread_id must be one the same token's identity started (else 404, the same answer
whether the thread belongs to someone else or does not exist). Threads are stored under the identity
(`token-<sha256 of the token, 12 hex>`, never the token itself).

Collections a token may ask: an entry of RELAYRAG_AGENT_TOKENS is `TOKEN` or `TOKEN|coll1|coll2` (`|` never
occurs in base64/hex tokens); a token without a list may ask the server's `--collection` only, or any collection
when the server has none. Another collection gets 403 naming the ones it may use.

Response: `text/event-stream`, one SSE event per assistant event (`start`, `node`, `tool_call`, `tool_result`,
`repair`, `summary`, `hop`, then `final` or `error`), each `data:` a JSON object. Everything is checked before the
stream starts: a missing or wrong token gets 401; a body over MAX_BODY_BYTES 413 (read incrementally: no more is
read than that); a body that is not JSON, nests deeper than MAX_JSON_DEPTH, or has a bad or blank field 400
naming the field; a collection the gateway does not have 404 naming the ones it has. `GET /healthz` answers 200
without a token.

`POST /feedback` (same auth): `{"run_id", "verdict": "up"|"down", "reason", "answer", "doc", "page"}`, a
person's verdict on a run an answer came from (relayrag.feedback; the final event's citations carry the run
ids). Stored in this process's docstore (RELAYRAG_DOCSTORE: in the cloud the Firestore the gateway writes runs
to) under the caller's identity, `chat:` + a hash of its bearer token (the local user without tokens). 200 with
the stored verdict; 400 on a bad body, 404 for a run the caller cannot see.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import re
import secrets
import sys
from dataclasses import dataclass

from pydantic import BaseModel, Field, ValidationError, field_validator
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from relayrag import jsonl
from relayrag.agent.assistant import Assistant
from relayrag.errors import ConfigError
from relayrag.hosts import is_loopback
from relayrag.naming import COLLECTION_PATTERN

log = logging.getLogger("relayrag.agent")


MAX_BODY_BYTES = 64 * 1024   # a message is at most 8,000 characters: 32 KB of UTF-8 plus the other fields
MAX_JSON_DEPTH = 20          # the body is one flat object; deeper nesting is refused before it is parsed


class ChatRequest(BaseModel):
    message: str = Field(..., min_length=1, max_length=8000)
    thread_id: str | None = Field(None, min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:-]+$")
    collection: str | None = Field(None, pattern=COLLECTION_PATTERN)
    mode: str | None = Field(None, pattern=r"^(auto|analysis|supervisor)$")

    @field_validator("message")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("blank (only whitespace)")
        return v


@dataclass(frozen=True)
class Identity:
    """Who a bearer token is: `name` owns threads (derived from the token, not the token); `collections` the
    collections the token may ask (None: as the server allows)."""
    name: str
    collections: frozenset[str] | None = None


def split_tokens(value: str) -> list[str]:
    return [t.strip() for t in (value or "").split(",") if t.strip()]


def parse_token(entry: str) -> tuple[str, Identity]:
    """`TOKEN` or `TOKEN|coll1|coll2` -> (token, its Identity). ConfigError for an empty token or a bad name."""
    token, *colls = [part.strip() for part in entry.split("|")]
    if not token:
        raise ConfigError("RELAYRAG_AGENT_TOKENS: an entry has no token before '|'")
    for c in colls:
        if not re.fullmatch(COLLECTION_PATTERN, c):
            raise ConfigError(f"RELAYRAG_AGENT_TOKENS: {c!r} is not a collection name (entry: TOKEN|coll1|coll2)")
    name = "token-" + hashlib.sha256(token.encode()).hexdigest()[:12]
    return token, Identity(name, frozenset(colls) if colls else None)


TOKEN_HEADER = "x-relayrag-token"
"""Where the app token may come instead of `Authorization`: `gcloud run services proxy` replaces Authorization
with the caller's Google ID token, so a client behind it sends the app token here. A client calling Cloud Run
directly sends its ID token in `X-Serverless-Authorization` (checked by Cloud Run, which strips it:
https://cloud.google.com/run/docs/authenticating/service-to-service) and the app token in `Authorization`."""


def matched_token(request: Request, identities: dict[str, Identity]) -> str | None:
    """The configured token the request presents — `Authorization: Bearer <token>`, or `X-Relayrag-Token` when
    Authorization holds something else (a proxy's Google ID token) — matched in constant time, or None."""
    scheme, _, bearer = request.headers.get("authorization", "").partition(" ")
    presented = [bearer.strip()] if scheme.lower() == "bearer" and bearer.strip() else []
    alt = request.headers.get(TOKEN_HEADER, "").strip()
    if alt:
        presented.append(alt)
    found = None
    for given in presented:
        for token in identities:  # no early exit: timing does not reveal which token matched
            if hmac.compare_digest(given.encode(), token.encode()):
                found = found or token
    return found


def identify(request: Request, identities: dict[str, Identity]) -> Identity | None:
    """The Identity of the token the request presents (matched_token), or None; with no configured tokens an
    anonymous identity that owns the local threads."""
    if not identities:
        return Identity("")
    token = matched_token(request, identities)
    return identities[token] if token is not None else None


def authorized(request: Request, tokens: list[str]) -> bool:
    """True when the request presents one of `tokens` (no tokens: open)."""
    return identify(request, dict(parse_token(t) for t in tokens)) is not None


class BodyError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The request body, read chunk by chunk and refused (BodyError 413) as soon as it passes `limit` bytes,
    or at once when Content-Length says so."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyError(413, f"body: {int(declared):,} bytes; at most {limit:,}")
    parts, n = [], 0
    async for chunk in request.stream():
        n += len(chunk)
        if n > limit:
            raise BodyError(413, f"body: more than {limit:,} bytes")
        parts.append(chunk)
    return b"".join(parts)


def parse_body(raw: bytes) -> ChatRequest:
    """The validated request; BodyError 400 naming the field (or the body) otherwise."""
    if jsonl.depth(raw, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise BodyError(400, f"body: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return ChatRequest.model_validate(jsonl.loads_strict(raw or b"null", MAX_JSON_DEPTH))
    except ValidationError as exc:
        detail = exc.errors()[0]
        where = ".".join(str(x) for x in detail.get("loc", ())) or "body"
        raise BodyError(400, f"{where}: {detail.get('msg')}") from None
    except (ValueError, RecursionError) as exc:
        raise BodyError(400, f"body: not JSON ({exc})") from None


def allowed_collections(who: Identity, default: str) -> frozenset[str] | None:
    """The collections `who` may ask: its own list, else the server's default collection, else any (None)."""
    if who.collections is not None:
        return who.collections
    return frozenset({default}) if default else None


def build_app(assistant: Assistant, *, tokens: list[str]) -> Starlette:
    """The Starlette app around an (unopened) Assistant; the app's lifespan opens and closes it. `tokens`:
    RELAYRAG_AGENT_TOKENS entries (`TOKEN` or `TOKEN|coll1|coll2`); none: every request is the local user."""
    identities = dict(parse_token(t) for t in tokens)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with assistant:
            yield

    async def chat(request: Request):
        who = identify(request, identities)
        if who is None:
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": 'Bearer realm="relayrag-chat"'})
        try:
            body = parse_body(await read_body(request))
        except BodyError as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        collection = body.collection or assistant.collection
        if not collection:
            return JSONResponse({"error": "collection: required (the server has no default collection)"},
                                status_code=400)
        allowed = allowed_collections(who, assistant.collection)
        if allowed is not None and collection not in allowed:
            return JSONResponse({"error": f"collection {collection!r}: this token may ask only "
                                          f"{', '.join(sorted(allowed))}"}, status_code=403)
        owner = who.name or None
        if body.thread_id is not None:
            if not await assistant.thread_exists(body.thread_id, owner):
                return JSONResponse({"error": f"thread_id: no thread {body.thread_id!r} of this token (threads "
                                              "belong to the token that started them; omit thread_id to start "
                                              "one)"}, status_code=404)
            thread_id = body.thread_id
        else:
            thread_id = secrets.token_urlsafe(16)
        missing = await assistant.collection_error(collection)
        if missing is not None:
            return JSONResponse({"error": missing}, status_code=404)

        async def events():
            async for e in assistant.turn(body.message, thread_id=thread_id, collection=collection,
                                          mode=body.mode, owner=owner):
                yield {"event": e["event"], "data": json.dumps(e, ensure_ascii=False, default=str)}
        return EventSourceResponse(events(), ping=15)

    async def feedback(request: Request):
        if not authorized(request, tokens):
            return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401,
                                headers={"WWW-Authenticate": 'Bearer realm="relayrag-chat"'})
        import anyio.to_thread

        from relayrag import feedback as fb
        from relayrag.errors import BadRequestError, NotFoundError
        from relayrag.service import Service
        try:
            body = json.loads(await read_body(request) or b"null")
        except BodyError as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        except (ValueError, RecursionError) as exc:
            return JSONResponse({"error": f"body: not JSON ({type(exc).__name__})"}, status_code=400)
        if not isinstance(body, dict) or not isinstance(body.get("run_id"), str):
            return JSONResponse({"error": "run_id: required (a string)"}, status_code=400)
        given = matched_token(request, identities) or ""
        identity = fb.token_identity("chat", given) if tokens else fb.local_identity()
        fields = {k: body.get(k) for k in ("reason", "answer", "doc", "page")}
        try:
            entry = await anyio.to_thread.run_sync(
                lambda: fb.give(Service(), body["run_id"], str(body.get("verdict") or ""), identity, **fields))
        except BadRequestError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except NotFoundError as exc:
            return JSONResponse({"error": str(exc)}, status_code=404)
        return JSONResponse({k: v for k, v in entry.items() if k != "identity"})

    async def healthz(request: Request):
        return JSONResponse({"ok": True, "collection": assistant.collection, "model": assistant.model_name})

    return Starlette(routes=[Route("/chat", chat, methods=["POST"]), Route("/feedback", feedback, methods=["POST"]),
                             Route("/healthz", healthz, methods=["GET"])],
                     lifespan=lifespan)


def serve(*, host: str = "127.0.0.1", port: int = 8790, collection: str = "", no_auth: bool = False,
          mode: str = "auto", log_level: str = "warning") -> None:
    """Run POST /chat with uvicorn. Refuses to start without RELAYRAG_AGENT_TOKENS unless --no-auth on a
    loopback host."""
    import uvicorn

    from relayrag.settings import load_settings
    s = load_settings()
    tokens = split_tokens(s.agent_tokens)
    for t in tokens:
        parse_token(t)  # a bad entry stops the server before it listens
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
