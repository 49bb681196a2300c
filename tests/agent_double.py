"""ScriptedChatModel: a real LangChain chat model (BaseChatModel, tool binding, structured output through tool
calls) whose replies come from a script, for driving relayrag's assistant without an LLM."""

from __future__ import annotations

import itertools
import json
from typing import Any, Callable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool

_ids = itertools.count(1)


def call(name: str, **args) -> AIMessage:
    """A reply that calls one tool."""
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{next(_ids)}",
                                             "type": "tool_call"}])


def say(text: str) -> AIMessage:
    return AIMessage(content=text)


def tool_results(messages: list[BaseMessage]) -> list[dict]:
    """The structured results of the tool messages the model sees, parsed from their JSON text."""
    out = []
    for m in messages:
        if isinstance(m, ToolMessage):
            try:
                out.append({"name": m.name, "result": json.loads(m.text)})
            except ValueError:
                out.append({"name": m.name, "result": m.text})
    return out


class ScriptedChatModel(BaseChatModel):
    """Each call takes the next step of `script`: an AIMessage, or a function (messages, tool names) →
    AIMessage. `calls` records (messages, bound tool names, tool_choice) for every call; an exhausted script
    fails the test with the messages it was given."""

    script: list[Any]
    calls: list[dict] = []

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, *, tool_choice: str | None = None, **kwargs):  # type: ignore[override]
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)

    def _generate(self, messages, stop=None, run_manager=None, *, tools=None, tool_choice=None, **kwargs: Any):
        names = [t["function"]["name"] for t in tools or []]
        self.calls.append({"messages": list(messages), "tools": names, "tool_choice": tool_choice})
        if not self.script:
            raise AssertionError(f"script exhausted; last messages: {[m.text[:200] for m in messages[-3:]]}")
        step = self.script.pop(0)
        msg = step(list(messages), names) if isinstance(step, Callable) else step  # type: ignore[arg-type]
        return ChatResult(generations=[ChatGeneration(message=msg.model_copy(deep=True))])
