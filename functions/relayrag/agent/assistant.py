"""`Assistant`: the graph with its MCP session, chat model and thread store, streaming one turn at a time.

    async with Assistant(collection="docs") as a:
        async for event in a.turn("How many bees?", thread_id="t1"):
            ...

Events (dicts, in order): `{"event": "start", "thread_id", "model"}`; `{"event": "node", "node"}` when a graph
node finishes; `{"event": "tool_call", "name", "args", "id"}` and `{"event": "tool_result", "name", "id",
"ok", "preview"}` around each MCP tool call; `repair` (a structured result failed validation once),
`summary` (older turns were summarised), `hop` (the supervisor chose a specialist); last
`{"event": "final", ...TurnResult}`. An error ends the stream with `{"event": "error", "message"}`; a turn on a
collection the gateway does not have is only that error (naming the collections there are).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage

from relayrag.agent.graph import build_graph
from relayrag.agent.turn import MODES
from relayrag.agent.mcp_tools import Toolset, open_tools, select_tools, structured_output
from relayrag.agent.schema import TurnResult
from relayrag.agent.threads import open_checkpointer
from relayrag.errors import ConfigError, NotFoundError
from relayrag.naming import unknown_collection_message

_UNSET = object()


class Assistant:
    """One assistant: `collection` is the default for turns; `model` a LangChain chat model (default: from
    RELAYRAG_LLM; None: the deterministic router); `server` a FastMCP server object to call in-process
    (default: RELAYRAG_AGENT_MCP_URL); `checkpointer` overrides RELAYRAG_AGENT_CHECKPOINT."""

    def __init__(self, *, collection: str = "", settings=None, model=_UNSET, server=None, checkpointer=None,
                 mode: str = "auto"):
        if mode not in MODES:
            raise ConfigError(f"unknown assistant mode {mode!r}; valid: {', '.join(MODES)}")
        if settings is None:
            from relayrag.settings import load_settings
            settings = load_settings()
        self.settings = settings
        self.collection = collection
        self.mode = mode
        self._model = model
        self._server = server
        self._checkpointer = checkpointer
        self._stack: contextlib.AsyncExitStack | None = None
        self.toolset: Toolset | None = None
        self.graph: Any = None
        self.model: Any = None
        self._known: set[str] = set()  # collections the gateway listed (documents or tables)

    @property
    def model_name(self) -> str:
        if self.model is None:
            return "none (deterministic router)"
        return str(getattr(self.model, "model_name", None) or getattr(self.model, "model", None)
                   or type(self.model).__name__)

    async def __aenter__(self) -> "Assistant":
        stack = contextlib.AsyncExitStack()
        try:
            if self._model is _UNSET:
                from relayrag.agent.models import chat_model_from_settings
                self.model = chat_model_from_settings(self.settings)
            else:
                self.model = self._model
            tools = await stack.enter_async_context(open_tools(self.settings, server=self._server))
            self.toolset = select_tools(tools, allow_mutating=self.settings.agent_allow_mutating)
            checkpointer = self._checkpointer
            if checkpointer is None:
                checkpointer = await stack.enter_async_context(open_checkpointer(self.settings))
            self.graph = build_graph(self.model, self.toolset, settings=self.settings, checkpointer=checkpointer)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc) -> None:
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = None

    async def collection_error(self, name: str) -> str | None:
        """Why `name` cannot be asked (the gateway's list_collections has no collection of that name: neither
        documents nor tables), naming the collections there are; None when it exists or the gateway cannot
        list collections (then the tools report it). A name once found is not listed again."""
        if name in self._known:
            return None
        tool = self.toolset.offered.get("list_collections") if self.toolset is not None else None
        if tool is None:
            return None
        msg = await tool.ainvoke({"type": "tool_call", "id": "collections", "name": "list_collections", "args": {}})
        out = structured_output(msg) if isinstance(msg, ToolMessage) and msg.status != "error" else None
        if out is None:
            return None
        known = [str(c.get("name")) for c in out.get("collections") or [] if isinstance(c, dict)]
        self._known = set(known)
        if name in self._known:
            return None
        return unknown_collection_message(name, known)

    async def check_collection(self, name: str) -> None:
        """Raise NotFoundError (a RelayragError: the CLI exits 2 with its message) when `name` is unknown to the
        gateway (see collection_error)."""
        error = await self.collection_error(name)
        if error is not None:
            raise NotFoundError(error)

    @staticmethod
    def thread_key(thread_id: str, owner: str | None = None) -> str:
        """The checkpointer's key of `thread_id`: owned threads live under their owner's name (`owner/id`), so
        the same id given by another identity names another (empty) thread; None: the local user's (the CLI)."""
        return f"{owner}/{thread_id}" if owner else thread_id

    async def thread_exists(self, thread_id: str, owner: str | None = None) -> bool:
        """True when `owner` has a thread `thread_id` with at least one checkpoint."""
        assert self.graph is not None
        state = await self.graph.aget_state({"configurable": {"thread_id": self.thread_key(thread_id, owner)}})
        return bool(state.values) or state.created_at is not None

    async def turn(self, text: str, *, thread_id: str | None = None, collection: str | None = None,
                   mode: str | None = None, owner: str | None = None) -> AsyncIterator[dict]:
        """Run one turn of `thread_id` (new thread if None) and yield its events (see the module docstring).
        `owner`: the identity the thread belongs to (chat-serve's token identity); None for the local user."""
        if self.graph is None:
            raise RuntimeError("use `async with Assistant(...)` before calling turn()")
        text = (text or "").strip()
        if not text:
            raise ConfigError("empty message")
        thread_id = thread_id or uuid.uuid4().hex[:12]
        error = await self.collection_error(collection or self.collection)
        if error is not None:  # nothing runs and nothing is written to the thread
            yield {"event": "error", "thread_id": thread_id, "message": error}
            return
        config = {"configurable": {"thread_id": self.thread_key(thread_id, owner)}, "recursion_limit": 100}
        full = await self.thread_full(self.thread_key(thread_id, owner))
        if full is not None:  # nothing runs and nothing is written to the thread
            yield {"event": "error", "thread_id": thread_id, "message": full}
            return
        state_in = {"messages": [HumanMessage(text)], "collection": collection or self.collection,
                    "mode": mode or self.mode}
        yield {"event": "start", "thread_id": thread_id, "model": self.model_name}
        try:
            async for ns, kind, chunk in self.graph.astream(state_in, config, stream_mode=["updates", "custom"],
                                                            subgraphs=True):
                if kind == "custom":
                    yield chunk
                elif kind == "updates" and not ns:
                    for node in chunk:
                        yield {"event": "node", "node": node}
            values = (await self.graph.aget_state(config)).values
        except Exception as exc:
            yield {"event": "error", "thread_id": thread_id, "message": f"{type(exc).__name__}: {exc}"}
            return
        route = values.get("route") or "analysis"
        yield {"event": "final", **TurnResult(
            thread_id=thread_id, mode=route, answer=values.get("reply") or "", result=values.get("result"),
            hops=values.get("hops") or [], note=values.get("note")).model_dump(mode="json")}

    async def thread_full(self, key: str) -> str | None:
        """Why the thread `key` takes no more turns (its conversation is past RELAYRAG_AGENT_THREAD_MAX_MB), or None.
        Only thread stores that can tell a thread's size (the embedded sqlite store) are checked."""
        saver = getattr(self.graph, "checkpointer", None)
        measure = getattr(saver, "latest_bytes", None)
        if measure is None:
            return None
        size, cap = await measure(key), self.settings.agent_thread_max_mb * 1_000_000
        if size <= cap:
            return None
        return (f"this thread is full: it holds {size / 1e6:.1f} MB of conversation, more than "
                f"RELAYRAG_AGENT_THREAD_MAX_MB={self.settings.agent_thread_max_mb:g}; start a new thread "
                "(omit the thread id) to go on")

    async def ask(self, text: str, **kwargs) -> tuple[dict, list[dict]]:
        """One turn, collected: (final event, all events)."""
        events = [e async for e in self.turn(text, **kwargs)]
        return events[-1], events

    async def history(self, thread_id: str) -> list[dict]:
        """The thread's messages as {role, text} (empty for an unknown thread)."""
        assert self.graph is not None
        state = await self.graph.aget_state({"configurable": {"thread_id": thread_id}})
        out = []
        for m in (state.values or {}).get("messages", []):
            out.append({"role": m.type, "text": m.text, "name": getattr(m, "name", None)})
        return out
