"""The supervisor's specialists: which the gateway's tools allow (`available_specialists`) and each one's
ReAct subgraph, model ⇄ ToolNode bounded by max_steps (`build_react`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
)
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from relayrag.agent.mcp_tools import Toolset

from relayrag.agent.turn import SPECIALISTS, emit_tool_calls, run_tool_node


def available_specialists(toolset: Toolset) -> dict[str, dict[str, Any]]:
    """The specialists whose tools the gateway offers (pages only with a page-image tool)."""
    out = {}
    for name, spec in SPECIALISTS.items():
        tools = toolset.page_tools if name == "pages" else spec["tools"]
        if name != "smalltalk" and not toolset.pick(tools):
            continue
        out[name] = {**spec, "tools": tools}
    return out


class HopState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: int


def build_react(model: BaseChatModel, tools: list, max_steps: int):
    """A specialist: a ReAct subgraph (model ⇄ ToolNode) over `tools`, at most `max_steps` tool calls."""
    bound = model.bind_tools(tools) if tools else model
    node = ToolNode(tools, handle_tool_errors=True) if tools else None

    async def call_model(state: HopState) -> dict:
        msgs = state["messages"]
        if node is None or state.get("steps", 0) >= max_steps:
            extra = [HumanMessage("Answer now from the results above, without tools.")] if node is not None else []
            reply = await model.ainvoke([*msgs, *extra])
            return {"messages": [AIMessage(reply.text)]}
        reply = await bound.ainvoke(msgs)
        emit_tool_calls(reply)
        return {"messages": [reply]}

    async def call_tools(state: HopState) -> dict:
        assert node is not None
        return await run_tool_node(node, state)

    def route(state: HopState) -> Literal["tools", "__end__"]:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls and node is not None else "__end__"

    g = StateGraph(HopState)
    g.add_node("model", call_model)
    g.add_edge(START, "model")
    if node is not None:
        g.add_node("tools", call_tools)
        g.add_edge("tools", "model")
        g.add_conditional_edges("model", route, ["tools", END])
    else:
        g.add_edge("model", END)
    return g.compile()
