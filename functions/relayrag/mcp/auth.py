"""HTTP authentication of the gateway: static bearer tokens and an optional JWT verifier; loopback check."""

from __future__ import annotations

import hmac

from fastmcp.server.auth import AccessToken, TokenVerifier

from relayrag.hosts import is_loopback  # noqa: F401  (re-exported: callers use this module's name)


class GatewayTokenVerifier(TokenVerifier):
    """Static bearer tokens (constant-time comparison), then an optional JWT verifier."""

    def __init__(self, tokens: list[str], jwt: TokenVerifier | None = None):
        super().__init__()
        self._tokens = [t.encode("utf-8") for t in tokens if t]
        self._jwt = jwt

    async def verify_token(self, token: str) -> AccessToken | None:
        given = (token or "").encode("utf-8")
        match = None
        for i, t in enumerate(self._tokens):  # no early exit: timing does not reveal which token matched
            if hmac.compare_digest(given, t) and match is None:
                match = i
        if match is not None:
            return AccessToken(token=token, client_id=f"static-token-{match + 1}", scopes=[], expires_at=None)
        if self._jwt is not None:
            return await self._jwt.verify_token(token)
        return None


def split_list(value: str) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def build_auth(settings) -> GatewayTokenVerifier | None:
    """The HTTP auth from settings (RELAYRAG_MCP_TOKENS, RELAYRAG_MCP_JWT_*), or None if none is configured."""
    tokens = split_list(settings.mcp_tokens)
    jwt = None
    if settings.mcp_jwt_public_key:
        from fastmcp.server.auth.providers.jwt import JWTVerifier
        jwt = JWTVerifier(public_key=settings.mcp_jwt_public_key, issuer=settings.mcp_jwt_issuer or None,
                          audience=settings.mcp_jwt_audience or None, algorithm=settings.mcp_jwt_algorithm or None)
    if not tokens and jwt is None:
        return None
    return GatewayTokenVerifier(tokens, jwt)


