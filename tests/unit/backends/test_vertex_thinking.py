"""Gemini 2.5 thinking vs the stages' small output caps (issue 10 item 1).

The default model is gemini-2.5-flash; classify, grade and rerank ask for at most 20 output tokens. Gemini 2.5
thinks by default and counts thinking tokens against max_output_tokens, so with no thinking configuration the
reply is empty (python-genai #811, langchain-google #1020) and each stage silently used its no-LLM method.
The double (tests/gemini_double.py) models that; the shipped configuration must get real answers from it.
Thinking budgets per model: https://cloud.google.com/vertex-ai/generative-ai/docs/thinking
"""

from __future__ import annotations

import json
import logging

import pytest
from google import genai  # dev extra

from relayrag.backends.llm import LLMError, VertexLLM, thinking_plan
from relayrag.engine.local import ask
from relayrag.ingest.pipeline import ingest
from tests.gemini_double import GeminiDouble


def _by_schema(contents, config) -> str:
    """What a cooperative model writes, by the JSON schema the stage asks for."""
    props = (config.response_schema or {}).get("properties", {}) if isinstance(config.response_schema, dict) else {}
    if "route" in props:
        return json.dumps({"route": "rag"})
    if "relevant" in props:
        return json.dumps({"relevant": True})
    if "relevance" in props:
        return json.dumps({"relevance": 3})
    if "hypothetical_passage" in props:
        return json.dumps({"hypothetical_passage": "Honey bee colonies hold tens of thousands of workers.",
                           "keywords": "honey bee colony workers"})
    if "unsupported" in props:  # the verdict schema (hallucination_check.VERDICT) requires both keys
        return json.dumps({"unsupported": [], "answers_question": True})
    return "A colony can contain up to 60,000 worker bees in summer [1]."


@pytest.fixture
def vertex_env(home, monkeypatch):
    from relayrag.context import set_default_context
    from relayrag.settings import load_settings

    def install(model: str, answer=_by_schema):
        cls = GeminiDouble.with_answer(answer)
        monkeypatch.setattr(genai, "Client", cls)
        monkeypatch.setenv("RELAYRAG_LLM", "vertex")
        monkeypatch.setenv("RELAYRAG_GCP_PROJECT", "demo-project")
        monkeypatch.setenv("RELAYRAG_LLM_MODEL", model)
        load_settings.cache_clear()
        set_default_context(None)
        return cls
    yield install
    load_settings.cache_clear()
    set_default_context(None)


def test_the_double_reproduces_the_thinking_empty_reply():
    """Without a thinking configuration (the old VertexLLM), gemini-2.5-flash spends a 20-token cap thinking."""
    client = GeminiDouble.with_answer(lambda c, cfg: '{"relevant": true}')()
    resp = client.models.generate_content(model="gemini-2.5-flash", contents=[],
                                          config=genai.types.GenerateContentConfig(max_output_tokens=20))
    assert resp.text is None and resp.candidates[0].finish_reason == genai.types.FinishReason.MAX_TOKENS
    assert resp.usage_metadata.thoughts_token_count == 20 and client.empty_replies == 1


@pytest.mark.parametrize("model, thinking, cap", [
    ("gemini-2.5-flash", {"thinking_budget": 0}, 20),
    ("gemini-2.5-flash-lite", {"thinking_budget": 0}, 20),
    ("gemini-2.5-pro", {"thinking_budget": 128}, 20 + 1024),
    ("gemini-3-pro-preview", {"thinking_level": "LOW"}, 20 + 1024),
    ("gemini-2.0-flash", None, 20),
    ("gemini-1.5-pro-002", None, 20),
    # aliases name no generation (issue 30 M2): never the bare cap a thinking model can spend whole
    ("gemini-flash-latest", None, 20 + 1024),
    ("gemini-flash-lite-latest", None, 20 + 1024),
    ("gemini-pro-latest", None, 20 + 1024),
    ("publishers/google/models/gemini-flash-latest", None, 20 + 1024),
])
def test_thinking_plan_per_model(model, thinking, cap):
    assert thinking_plan(model, 20) == (thinking, cap)


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-2.5-pro",
                                   "gemini-3-pro-preview", "gemini-2.0-flash"])
def test_small_caps_get_a_real_reply_for_every_model(vertex_env, model):
    cls = vertex_env(model, lambda c, cfg: '{"relevant": true}')
    llm = VertexLLM("demo-project", "europe-west4", model)
    assert json.loads(llm.complete([{"role": "user", "content": "q"}], max_tokens=20,
                                   json_schema={"type": "object"})) == {"relevant": True}
    assert cls.instances[-1].empty_replies == 0


def test_an_empty_reply_is_an_llm_error_naming_thinking(vertex_env, monkeypatch):
    import relayrag.backends.llm as llm_mod
    cls = vertex_env("gemini-2.5-flash", lambda c, cfg: '{"relevant": true}')
    monkeypatch.setattr(llm_mod, "thinking_plan", lambda model, n: (None, n))  # the old behaviour
    llm = VertexLLM("demo-project", "europe-west4", "gemini-2.5-flash")
    with pytest.raises(LLMError, match=r"no text \(finish reason MAX_TOKENS, 20 thinking tokens"):
        llm.complete([{"role": "user", "content": "q"}], max_tokens=20)
    assert cls.instances[-1].empty_replies == 1


def test_stages_use_gemini_25_flash_with_the_shipped_configuration(vertex_env, small_corpus):
    from relayrag.context import default_context
    cls = vertex_env("gemini-2.5-flash")
    ingest(default_context(), small_corpus, "docs")
    result = ask("How many worker bees can a colony contain?", "docs", arm="hybrid")
    methods = {s["name"]: s["method"] for s in result["stages"]}
    assert methods["classify"] == "llm" and methods["grade"] == "llm" and methods["rerank"] == "llm-pointwise"
    assert not [s for s in result["stages"] if s.get("llm_error")] and result.get("llm_fallbacks", 0) == 0
    assert sum(i.empty_replies for i in cls.instances) == 0
    configs = [c["config"] for i in cls.instances for c in i.calls]
    assert configs and all(c.thinking_config.thinking_budget == 0 for c in configs)


def test_a_stage_that_always_falls_back_is_visible(vertex_env, small_corpus, monkeypatch, caplog):
    """With the LLM path dead (here: the old, thinking-unaware configuration), every ask falls back: the trace
    counts the fallbacks in a row, and a warning is logged once the streak reaches FallbackCounter.WARN_AT."""
    import relayrag.backends.llm as llm_mod
    from relayrag.context import default_context
    from relayrag.stages import base
    monkeypatch.setattr(base, "FALLBACKS", base.FallbackCounter())
    monkeypatch.setattr(llm_mod, "thinking_plan", lambda model, n: (None, n))
    vertex_env("gemini-2.5-flash")
    ingest(default_context(), small_corpus, "docs")
    streaks = []
    with caplog.at_level(logging.WARNING, logger="relayrag.stages.base"):
        for _ in range(3):
            result = ask("How many worker bees can a colony contain?", "docs", arm="hybrid")
            grade = next(s for s in result["stages"] if s["name"] == "grade")
            assert "finish reason MAX_TOKENS" in grade["llm_error"]
            streaks.append(grade["llm_fallbacks"])
            assert result["llm_fallbacks"] >= 3  # classify, rerank, grade at least
    assert streaks == [1, 2, 3]
    assert any("stage grade: the LLM failed on each of its last 3 calls" in r.getMessage() for r in caplog.records)
