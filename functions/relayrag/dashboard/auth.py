"""Dashboard authentication: static tokens, a signed session cookie, and CSRF tokens.

- Tokens come from RELAYRAG_DASHBOARD_TOKENS (comma-separated, like RELAYRAG_MCP_TOKENS). A request is
  authenticated by `Authorization: Bearer <token>` (API clients) or by the session cookie that the login
  page sets after a valid token was posted (browsers). Token comparison is constant-time and visits every
  token (timing does not reveal which one matched).
- The session cookie is stateless, so any Cloud Run instance accepts it: `<issued>.<nonce>.<mac>` with
  mac = HMAC-SHA256(key, issued.nonce); a session opened with a token has nonce `<tid>~<random>`, tid = the
  first 16 hex digits of the token's SHA-256 (the identity its feedback verdicts are stored under, never
  the token), key derived from the configured tokens (rotating the tokens ends
  every session). HttpOnly, SameSite=Strict, Secure when served over HTTPS, Path=/, 12 hours.
- CSRF: every state-changing request (POST) from a cookie session must carry `X-CSRF-Token` (htmx sends it
  from `hx-headers` on <body>) or a `csrf_token` form field equal to HMAC(key, "csrf:" + nonce), and, when the
  browser sends an Origin header, that origin must be the dashboard's own. A bearer-token request needs no
  CSRF token: browsers never attach an Authorization header to a cross-site request by themselves.
- Logout revokes the session on the server (its nonce is refused until the cookie would have expired; held by
  the process, so with several Cloud Run instances a logged-out cookie is refused by the instance that logged it
  out). Login attempts are limited per client address: LOGIN_ATTEMPTS per LOGIN_WINDOW_S, reserved before the
  token is checked (parallel guesses count), then 429 with Retry-After.
- No tokens: the server refuses to start, unless `--no-auth` on a loopback host; then every request is
  authenticated, and a session cookie (random key per process) is still issued so CSRF checks still apply.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass

from relayrag.hosts import is_loopback  # noqa: F401  (re-exported: callers use this module's name)

COOKIE = "relayrag_session"
SESSION_TTL_S = 12 * 3600
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
LOGIN_ATTEMPTS = 5       # login attempts per client address ...
LOGIN_WINDOW_S = 60.0    # ... per this many seconds (429 with Retry-After past it)


def split_tokens(raw: str) -> list[str]:
    return [t.strip() for t in (raw or "").split(",") if t.strip()]




def token_id(token: str) -> str:
    """The first 16 hex digits of the token's SHA-256: who a session or bearer request is, without the token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]


@dataclass
class Session:
    nonce: str
    issued: int

    @property
    def token_id(self) -> str | None:
        """The id of the token this session was opened with (None: a --no-auth session)."""
        tid, sep, _ = self.nonce.partition("~")
        return tid if sep else None


class Authenticator:
    """Checks bearer tokens and session cookies; issues sessions and CSRF tokens."""

    def __init__(self, tokens: list[str], *, no_auth: bool = False, clock=time.time):
        if not tokens and not no_auth:
            raise ValueError("no dashboard tokens")
        self.no_auth = no_auth and not tokens
        self._tokens = [t.encode("utf-8") for t in tokens]
        seed = b"\0".join(sorted(self._tokens)) if self._tokens else secrets.token_bytes(32)
        self._key = hashlib.sha256(b"relayrag-dashboard-session\0" + seed).digest()
        self._clock = clock
        self._lock = threading.Lock()
        self._revoked: dict[str, int] = {}         # nonce -> issued, of sessions logged out
        self._attempts: dict[str, list[float]] = {}  # client address -> times of its recent login attempts

    # -- tokens ----------------------------------------------------------------------------------------
    def check_token(self, token: str | None) -> bool:
        given = (token or "").encode("utf-8")
        ok = False
        for t in self._tokens:  # no early exit
            ok |= hmac.compare_digest(given, t)
        return ok and bool(given)

    def bearer_ok(self, authorization: str | None) -> bool:
        if not authorization:
            return False
        scheme, _, value = authorization.partition(" ")
        return scheme.lower() == "bearer" and self.check_token(value.strip())

    # -- sessions --------------------------------------------------------------------------------------
    def _mac(self, msg: str) -> str:
        return hmac.new(self._key, msg.encode("utf-8"), hashlib.sha256).hexdigest()

    def new_session(self, token: str | None = None) -> str:
        """A session cookie value; with the `token` that logged in, the session carries its id (`token_id`)."""
        issued, nonce = int(self._clock()), secrets.token_urlsafe(18)
        if token:
            nonce = f"{token_id(token)}~{nonce}"
        return f"{issued}.{nonce}.{self._mac(f'{issued}.{nonce}')}"

    def read_session(self, cookie: str | None) -> Session | None:
        """The session a cookie value carries, or None when it is missing, forged, expired or logged out."""
        if not cookie or cookie.count(".") != 2:
            return None
        issued_s, nonce, mac = cookie.split(".")
        if not issued_s.isdigit() or not hmac.compare_digest(mac, self._mac(f"{issued_s}.{nonce}")):
            return None
        issued = int(issued_s)
        if not (0 <= self._clock() - issued <= SESSION_TTL_S):
            return None
        with self._lock:
            if nonce in self._revoked:
                return None
        return Session(nonce=nonce, issued=issued)

    def revoke(self, session: Session) -> None:
        """Log a session out on the server: its cookie is refused from now on, even if a copy of it was kept.
        Revocations are held by this process until the session would have expired anyway."""
        now = self._clock()
        with self._lock:
            self._revoked = {n: t for n, t in self._revoked.items() if now - t <= SESSION_TTL_S}
            self._revoked[session.nonce] = session.issued

    # -- login attempts ----------------------------------------------------------------------------------
    def login_attempt(self, client: str) -> float:
        """Reserve one login attempt for `client` (its address): 0.0 when it may try now, else the seconds
        until it may. Every attempt counts, whether it succeeds or not, and is reserved before the token is
        checked, so parallel guesses cannot pass the limit: at most LOGIN_ATTEMPTS per LOGIN_WINDOW_S."""
        now = self._clock()
        with self._lock:
            recent = [t for t in self._attempts.get(client, []) if now - t < LOGIN_WINDOW_S]
            if len(recent) >= LOGIN_ATTEMPTS:
                self._attempts[client] = recent
                return max(1.0, LOGIN_WINDOW_S - (now - recent[0]))
            recent.append(now)
            self._attempts[client] = recent
            if len(self._attempts) > 10_000:  # forget clients with no recent attempt
                self._attempts = {c: ts for c, ts in self._attempts.items() if ts and now - ts[-1] < LOGIN_WINDOW_S}
            return 0.0

    def login_succeeded(self, client: str) -> None:
        with self._lock:
            self._attempts.pop(client, None)

    def csrf_token(self, session: Session) -> str:
        return self._mac(f"csrf:{session.nonce}")

    def csrf_ok(self, session: Session, given: str | None) -> bool:
        if not given:
            return False
        return hmac.compare_digest(given, self.csrf_token(session))
