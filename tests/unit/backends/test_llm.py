import json

import httpx
import pytest

from relayrag.backends.llm import LLMError, OpenAICompatibleLLM, build_llm, complete_json
from relayrag.errors import ConfigError
from relayrag.settings import Settings


def endpoint(handler):
    return httpx.MockTransport(handler)


def test_openai_compatible_request_and_reply():
    seen = {}

    def handler(request: httpx.Request):
        seen["url"] = str(request.url)
        seen["auth"] = request.headers.get("authorization")
        seen["body"] = json.loads(request.content)
        return httpx.Response(200, json={"choices": [{"message": {"content": "{\"route\": \"rag\"}"}}]})

    llm = OpenAICompatibleLLM("http://127.0.0.1:9/v1/", "m", api_key="k", transport=endpoint(handler))
    out = complete_json(llm, [{"role": "user", "content": "hi"}], {"type": "object"})
    assert out == {"route": "rag"}
    assert seen["url"] == "http://127.0.0.1:9/v1/chat/completions" and seen["auth"] == "Bearer k"
    assert seen["body"]["response_format"]["type"] == "json_schema" and seen["body"]["temperature"] == 0.0


def test_an_endpoint_refusing_json_schema_gets_the_json_object_dialect_once():
    # llama-cpp-python 0.3.36's server validates response_format.type as "text" | "json_object" and answers
    # HTTP 500 with the validation error (the body below is the one it sent)
    bodies = []

    def handler(request: httpx.Request):
        body = json.loads(request.content)
        bodies.append(body)
        if body["response_format"]["type"] != "json_object":
            return httpx.Response(500, json={"error": {"message": "1 validation error:\n  {'type': 'literal_error', "
                                                                  "'loc': ('body', 'response_format', 'type'), 'msg': "
                                                                  "\"Input should be 'text' or 'json_object'\"}",
                                                       "type": "internal_server_error"}})
        return httpx.Response(200, json={"choices": [{"message": {"content": "{\"a\": 1}"}}]})

    llm = OpenAICompatibleLLM("http://127.0.0.1:9/v1", "m", transport=endpoint(handler))
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert complete_json(llm, [{"role": "user", "content": "x"}], schema) == {"a": 1}
    assert [b["response_format"]["type"] for b in bodies] == ["json_schema", "json_object"]
    assert bodies[1]["response_format"]["schema"] == schema
    assert complete_json(llm, [{"role": "user", "content": "y"}], schema) == {"a": 1}
    assert len(bodies) == 3 and bodies[2]["response_format"]["type"] == "json_object"  # remembered
    # another 4xx (not about the response format) is an error, not a retry
    other = OpenAICompatibleLLM("http://127.0.0.1:9/v1", "m", transport=endpoint(
        lambda r: httpx.Response(400, text="context length exceeded")))
    with pytest.raises(LLMError, match="HTTP 400"):
        other.complete([{"role": "user", "content": "x"}], json_schema=schema)


@pytest.mark.parametrize("response,needle", [
    (httpx.Response(500, text="boom"), "HTTP 500"),
    (httpx.Response(200, json={"nope": 1}), "unexpected body"),
])
def test_openai_compatible_errors(response, needle):
    llm = OpenAICompatibleLLM("http://127.0.0.1:9/v1", "m", transport=endpoint(lambda r: response))
    with pytest.raises(LLMError, match=needle):
        llm.complete([{"role": "user", "content": "x"}])


def test_unreachable_endpoint_is_llm_error():
    def handler(request):
        raise httpx.ConnectError("refused")
    llm = OpenAICompatibleLLM("http://127.0.0.1:9/v1", "m", transport=endpoint(handler))
    with pytest.raises(LLMError, match="unreachable"):
        llm.complete([{"role": "user", "content": "x"}])


def test_complete_json_rejects_non_objects():
    llm = OpenAICompatibleLLM("http://x/v1", "m", transport=endpoint(
        lambda r: httpx.Response(200, json={"choices": [{"message": {"content": "[1, 2]"}}]})))
    with pytest.raises(LLMError, match="not a JSON object"):
        complete_json(llm, [], {})


def test_build_llm_by_setting(monkeypatch):
    assert build_llm(Settings(llm="none")) is None
    assert build_llm(Settings(llm="openai")).name.startswith("openai:")
    try:
        import google.genai  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match=r"pip install 'relayrag\[gcp\]'"):
            build_llm(Settings(llm="vertex"))
    with pytest.raises(ValueError):
        Settings(llm="gpt")
