"""POST /chat's app token behind Cloud Run: the header pair a caller sends.

Calling Cloud Run directly, the caller's Google ID token goes in `X-Serverless-Authorization` (Cloud Run checks
and strips it; https://cloud.google.com/run/docs/authenticating/service-to-service) and the app token in
`Authorization: Bearer`. Through `gcloud run services proxy` the proxy overwrites `Authorization` with the ID
token, so before `X-Relayrag-Token` every /chat through the proxy got 401."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from starlette.requests import Request  # noqa: E402

from relayrag.agent.http import authorized  # noqa: E402

TOKENS = ["app-token-1", "app-token-2"]
ID_TOKEN = "eyJhbGciOiJSUzI1NiJ9.id-token.sig"


def _request(headers: dict[str, str]) -> Request:
    return Request({"type": "http", "method": "POST", "path": "/chat",
                    "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]})


def test_direct_call_app_token_in_authorization_id_token_in_x_serverless_authorization():
    assert authorized(_request({"Authorization": "Bearer app-token-2",
                                "X-Serverless-Authorization": f"Bearer {ID_TOKEN}"}), TOKENS)


def test_through_the_proxy_authorization_holds_the_id_token_and_the_app_token_comes_in_its_own_header():
    assert authorized(_request({"Authorization": f"Bearer {ID_TOKEN}", "X-Relayrag-Token": "app-token-1"}), TOKENS)


@pytest.mark.parametrize("headers", [
    {"Authorization": f"Bearer {ID_TOKEN}"},
    {"Authorization": f"Bearer {ID_TOKEN}", "X-Relayrag-Token": "wrong"},
    {"Authorization": f"Bearer {ID_TOKEN}", "X-Relayrag-Token": " "},
    {"X-Serverless-Authorization": "Bearer app-token-1"},  # never read from the header Cloud Run consumes
    {},
])
def test_anything_else_is_refused(headers):
    assert not authorized(_request(headers), TOKENS)
