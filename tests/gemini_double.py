"""A test double of `google.genai.Client` that models Gemini thinking (for RELAYRAG_LLM=vertex tests).

What it reproduces, from Google's "Thinking" page (https://cloud.google.com/vertex-ai/generative-ai/docs/thinking)
and python-genai issue #811 / langchain-google #1020:
- Gemini 2.5 and later think by default (dynamic budget); thinking tokens count against `max_output_tokens`.
  When thinking uses the whole cap the reply has no text: `response.text` is None, finish reason MAX_TOKENS,
  `usage_metadata.thoughts_token_count` = the cap.
- gemini-2.5-flash / flash-lite accept thinking_budget 0 (no thinking); gemini-2.5-pro rejects budgets below
  128 (400 INVALID_ARGUMENT), as the page's budget table says; gemini-3 takes thinking_level instead.
- Older models (gemini-2.0-*) do not think and reject a thinking configuration.
Responses are real `google.genai.types` objects, so `response.text` behaves as in the library.
"""

from __future__ import annotations

from typing import Callable

from google.genai import errors, types

DYNAMIC_THOUGHTS = 350  # tokens a 2.5 model "thinks" on these prompts when left to decide (dynamic budget)


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class _Models:
    def __init__(self, client: "GeminiDouble"):
        self.client = client

    def generate_content(self, *, model: str, contents, config: types.GenerateContentConfig):
        c = self.client
        c.calls.append({"model": model, "contents": contents, "config": config})
        name = model.rsplit("/", 1)[-1]
        tc = config.thinking_config
        thinks = name.startswith("gemini-2.5") or name.startswith("gemini-3")
        if not thinks:
            if tc is not None:
                raise errors.ClientError(400, {"error": {"message": "thinking is not supported by this model",
                                                         "status": "INVALID_ARGUMENT"}})
            thoughts = 0
        elif tc is None or (tc.thinking_budget is None and tc.thinking_level is None) or tc.thinking_budget == -1:
            thoughts = DYNAMIC_THOUGHTS
        elif tc.thinking_budget is not None:
            low = 128 if name.startswith("gemini-2.5-pro") else 0
            if tc.thinking_budget < low:
                raise errors.ClientError(400, {"error": {"message": f"thinking_budget must be >= {low} for {name}",
                                                         "status": "INVALID_ARGUMENT"}})
            thoughts = min(tc.thinking_budget, DYNAMIC_THOUGHTS)
        else:
            level = types.ThinkingLevel(tc.thinking_level).value
            thoughts = {"MINIMAL": 0, "LOW": 120, "MEDIUM": 250}.get(level, DYNAMIC_THOUGHTS)
        cap = config.max_output_tokens or 8192
        reply = c.answer(contents, config)
        if thoughts >= cap:
            c.empty_replies += 1
            return types.GenerateContentResponse(
                candidates=[types.Candidate(content=types.Content(role="model", parts=[]),
                                            finish_reason=types.FinishReason.MAX_TOKENS)],
                usage_metadata=types.GenerateContentResponseUsageMetadata(thoughts_token_count=cap,
                                                                          candidates_token_count=0))
        room = cap - thoughts
        finish = types.FinishReason.STOP
        if _tokens(reply) > room:  # cut mid-reply, as the service does
            reply, finish = reply[: room * 4], types.FinishReason.MAX_TOKENS
        return types.GenerateContentResponse(
            candidates=[types.Candidate(content=types.Content(role="model", parts=[types.Part(text=reply)]),
                                        finish_reason=finish)],
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                thoughts_token_count=thoughts or None, candidates_token_count=_tokens(reply)))


class GeminiDouble:
    """Stands in for `google.genai.Client(vertexai=True, ...)`. `answer(contents, config) -> str` gives the
    text the model would write; every call is recorded in `calls`; `empty_replies` counts thinking-exhausted
    replies. Install with `monkeypatch.setattr(genai, "Client", GeminiDouble.with_answer(fn))`."""

    answer: Callable = staticmethod(lambda contents, config: "")
    instances: list["GeminiDouble"] = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.calls: list[dict] = []
        self.empty_replies = 0
        self.models = _Models(self)
        type(self).instances.append(self)

    @classmethod
    def with_answer(cls, answer: Callable) -> type["GeminiDouble"]:
        return type("GeminiDoubleWithAnswer", (cls,), {"answer": staticmethod(answer), "instances": []})
