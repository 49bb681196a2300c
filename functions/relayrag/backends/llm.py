"""LLM backends: `none` (default: stages use their no-LLM methods), an OpenAI-compatible HTTP endpoint
(vLLM, llama.cpp server, Ollama, OpenAI...), Vertex AI Gemini through google-genai (extra `gcp`), and
llama.cpp in-process (`relayrag.backends.llamacpp`, extra `local-llm`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from relayrag.errors import ConfigError, RelayragError
from relayrag.settings import Settings

if TYPE_CHECKING:  # pragma: no cover - httpx is imported when an OpenAI-compatible client is built (cold start)
    import httpx


class LLMError(RelayragError):
    """The LLM endpoint failed or returned something unusable."""


@runtime_checkable
class LLM(Protocol):
    name: str

    def complete(
        self,
        messages: list[dict],
        *,
        temperature: float = 0.0,
        max_tokens: int = 512,
        json_schema: dict | None = None,
    ) -> str:
        """Chat completion. messages: [{"role": "system"|"user"|"assistant", "content": str}]; a user message may
        also carry "images": [PNG bytes] for a vision-capable model (see `accepts_images`). With `json_schema`,
        the reply is a JSON document valid for that schema (the backend's structured output mode). Raises
        LLMError on transport or protocol failure."""
        ...


class OpenAICompatibleLLM:
    """POST {base_url}/chat/completions (OpenAI Chat Completions API)."""

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout_s: float = 120.0,
                 transport: "httpx.BaseTransport | None" = None):
        import httpx
        self.name = f"openai:{model}"
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s,
                                    transport=transport)
        self._schema_style = "json_schema"  # or "json_object" once the endpoint refused json_schema

    def _response_format(self, json_schema: dict) -> dict:
        if self._schema_style == "json_object":  # llama-cpp-python's server: {"type": "json_object", "schema"}
            return {"type": "json_object", "schema": json_schema}
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": json_schema, "strict": True}}

    def complete(self, messages, *, temperature=0.0, max_tokens=512, json_schema=None) -> str:
        body: dict = {"model": self.model, "messages": [_openai_message(m) for m in messages],
                      "temperature": temperature, "max_tokens": max_tokens}
        if json_schema is not None:
            body["response_format"] = self._response_format(json_schema)
        import httpx
        try:
            resp = self._client.post("/chat/completions", json=body)
            # an endpoint that rejects OpenAI's `json_schema` response format (llama-cpp-python 0.3.36's
            # server accepts only "text" | "json_object" with a "schema" and answers HTTP 500 with the
            # validation error naming response_format): the same schema in that dialect, once, and for
            # this client's later calls
            if (json_schema is not None and self._schema_style == "json_schema"
                    and resp.status_code in (400, 422, 500) and "response_format" in resp.text):
                self._schema_style = "json_object"
                body["response_format"] = self._response_format(json_schema)
                resp = self._client.post("/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise LLMError(f"LLM endpoint unreachable ({self._client.base_url}): {exc}") from exc
        if resp.status_code != 200:
            raise LLMError(f"LLM endpoint returned HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            return resp.json()["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, ValueError) as exc:
            raise LLMError(f"LLM endpoint returned an unexpected body: {resp.text[:300]}") from exc


def _openai_message(m: dict) -> dict:
    """A message for the Chat Completions API: images become `image_url` content parts (PNG data URLs)."""
    if not m.get("images"):
        return {k: v for k, v in m.items() if k != "images"}
    import base64
    parts: list[dict] = [{"type": "text", "text": m["content"]}]
    parts += [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}}
              for png in m["images"]]
    return {"role": m["role"], "content": parts}


def accepts_images(settings: Settings, llm: LLM | None) -> bool:
    """Whether page images may be sent to the configured LLM: RELAYRAG_LLM_VISION yes | no | auto (auto: Gemini
    on Vertex yes, every Gemini model takes images; an OpenAI-compatible endpoint and llama.cpp no, unless said)."""
    if llm is None or settings.llm_vision == "no":
        return False
    if settings.llm_vision == "yes":
        return True
    return str(getattr(llm, "name", "")).startswith("vertex:")


THINKING_HEADROOM = 1024  # output tokens added to a call's cap for models whose thinking cannot be turned off


def thinking_plan(model: str, max_tokens: int) -> tuple[dict | None, int]:
    """(ThinkingConfig fields or None, max_output_tokens) for one Gemini call that wants `max_tokens` of reply.

    Gemini 2.5 and later think before answering by default, and thinking tokens count against
    `max_output_tokens`: with the stages' small caps (20 tokens for a yes/no) the model spends the whole cap
    thinking and returns no text (finish reason MAX_TOKENS; python-genai issue #811). So:
    - gemini-2.5-flash and gemini-2.5-flash-lite: thinking_budget 0 (thinking off; allowed on both);
    - gemini-2.5-pro (thinking cannot be turned off; budget 128..32768): thinking_budget 128 and the cap
      raised by THINKING_HEADROOM;
    - gemini-3 and later (thinking_level; Pro cannot turn it off): thinking_level LOW and the cap raised
      by THINKING_HEADROOM;
    - older models (gemini-2.0, 1.5): no thinking configuration, the cap as asked;
    - any other Gemini name, aliases included (`gemini-flash-latest`, `gemini-pro-latest`: the version behind an
      alias changes without notice, and a config for the wrong generation is refused): no thinking
      configuration but the cap raised by THINKING_HEADROOM, so thinking can never eat the whole reply.
    Source: Vertex AI "Thinking" (https://cloud.google.com/vertex-ai/generative-ai/docs/thinking), budget
    ranges per model; google-genai `types.ThinkingConfig` (thinking_budget, thinking_level)."""
    name = model.rsplit("/", 1)[-1].lower()
    if name.startswith("gemini-2.5-flash"):
        return {"thinking_budget": 0}, max_tokens
    if name.startswith("gemini-2.5"):
        return {"thinking_budget": 128}, max_tokens + THINKING_HEADROOM
    if name.startswith("gemini-") and name[7:8].isdigit() and int(name[7:].split(".")[0].split("-")[0]) >= 3:
        return {"thinking_level": "LOW"}, max_tokens + THINKING_HEADROOM
    if name.startswith(("gemini-1.", "gemini-2.0")) or not name.startswith("gemini-"):
        return None, max_tokens
    return None, max_tokens + THINKING_HEADROOM  # an alias or a name of unknown generation


class VertexLLM:
    """Gemini on Vertex AI via google-genai (`vertexai=True`); needs `pip install 'relayrag[gcp]'`.
    Every call sets the thinking configuration explicitly (see `thinking_plan`)."""

    def __init__(self, project: str, location: str, model: str):
        try:
            from google import genai  # type: ignore
        except ImportError as exc:
            raise ConfigError("RELAYRAG_LLM=vertex needs google-genai: pip install 'relayrag[gcp]'") from exc
        self.name = f"vertex:{model}"
        self.model = model
        self._genai = genai
        self._client = genai.Client(vertexai=True, project=project or None, location=location)

    def complete(self, messages, *, temperature=0.0, max_tokens=512, json_schema=None) -> str:
        types = self._genai.types
        system = "\n".join(m["content"] for m in messages if m["role"] == "system") or None
        contents = [types.Content(role="model" if m["role"] == "assistant" else "user",
                                  parts=[types.Part(text=m["content"])]
                                  + [types.Part.from_bytes(data=png, mime_type="image/png") for png in m.get("images") or []])
                    for m in messages if m["role"] != "system"]
        thinking, cap = thinking_plan(self.model, max_tokens)
        config = types.GenerateContentConfig(
            system_instruction=system, temperature=temperature, max_output_tokens=cap,
            thinking_config=types.ThinkingConfig(**thinking) if thinking else None,
            response_mime_type="application/json" if json_schema else None,
            response_schema=json_schema if json_schema else None)
        try:
            resp = self._client.models.generate_content(model=self.model, contents=contents, config=config)
        except Exception as exc:  # google-genai raises its own hierarchy; surface it as LLMError
            raise LLMError(f"Vertex AI call failed: {exc}") from exc
        text = resp.text or ""
        if not text.strip():
            raise LLMError(f"Vertex AI returned no text ({_empty_reason(resp, cap)})")
        return text


def _empty_reason(resp, cap: int) -> str:
    """Why a Gemini reply has no text: finish reason and thinking tokens, when the response says."""
    cands = getattr(resp, "candidates", None) or []
    finish = getattr(cands[0], "finish_reason", None) if cands else None
    finish = getattr(finish, "name", finish)
    usage = getattr(resp, "usage_metadata", None)
    thoughts = getattr(usage, "thoughts_token_count", None) if usage else None
    parts = [f"finish reason {finish}" if finish else "no candidates"]
    if thoughts:
        parts.append(f"{thoughts} thinking tokens of max_output_tokens {cap}")
    return ", ".join(parts)


def no_llm(settings: Settings) -> None:
    """The registry's `none` backend: every stage uses its no-LLM method."""
    return None


def openai_llm(settings: Settings) -> OpenAICompatibleLLM:
    """The registry's `openai` backend (RELAYRAG_LLM_BASE_URL, RELAYRAG_LLM_MODEL, RELAYRAG_LLM_API_KEY)."""
    return OpenAICompatibleLLM(settings.llm_base_url, settings.llm_model, settings.llm_api_key,
                               settings.llm_timeout_s)


def vertex_llm(settings: Settings) -> VertexLLM:
    """The registry's `vertex` backend (RELAYRAG_GCP_PROJECT, RELAYRAG_GCP_LOCATION, RELAYRAG_LLM_MODEL)."""
    return VertexLLM(settings.gcp_project, settings.gcp_location, settings.llm_model)


def build_llm(settings: Settings) -> LLM | None:
    """The configured LLM (relayrag.backends.registry, role `llm`), or None for `RELAYRAG_LLM=none`. Raises
    ConfigError when the backend's package or model is missing (`llamacpp` loads its model here)."""
    from relayrag.backends import registry
    return registry.build("llm", settings.llm, settings)


def complete_json(llm: LLM, messages: list[dict], schema: dict, **kw) -> dict:
    """`complete` with a JSON schema, parsed; raises LLMError if the reply is not a JSON object."""
    text = llm.complete(messages, json_schema=schema, **kw).strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise LLMError(f"LLM reply is not JSON: {text[:200]}") from exc
    if not isinstance(value, dict):
        raise LLMError(f"LLM reply is not a JSON object: {text[:200]}")
    return value
