"""`relayrag chat`: the assistant in the terminal (relayrag.agent; extra `agent`); `relayrag chat-serve`: the
same assistant as POST /chat (Server-Sent Events)."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Optional

import typer

from relayrag.cli.app import _say, _user_errors, app, err, out


def _read_line(prompt: str) -> "asyncio.Future[str]":
    """input(prompt) on a daemon thread, as a future of the running loop. asyncio.to_thread's executor thread
    would hold the process after Ctrl-C until Enter (asyncio.run waits for the default executor at shutdown); a
    daemon thread does not. EOFError (Ctrl-D) and other errors come back through the future."""
    import threading
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[str] = loop.create_future()

    def settle(setter, value) -> None:
        if not fut.done():
            setter(value)

    def work() -> None:
        try:
            line = input(prompt)
        except BaseException as exc:  # EOFError at end of input; delivered to the awaiting turn
            try:
                loop.call_soon_threadsafe(settle, fut.set_exception, exc)
            except RuntimeError:  # the loop is closed: the chat is over
                pass
            return
        try:
            loop.call_soon_threadsafe(settle, fut.set_result, line)
        except RuntimeError:
            pass
    threading.Thread(target=work, name="relayrag-chat-input", daemon=True).start()
    return fut

# a line that ends the chat instead of being asked (a thread must not keep "quit" as a turn)
QUIT_WORDS = frozenset({"/quit", "/exit", "quit", "exit", "bye", ":q", "/q", "終了", "やめる"})


def _args(args: dict) -> str:
    parts = []
    for k, v in args.items():
        text = json.dumps(v, ensure_ascii=False)
        parts.append(f"{k}={text if len(text) <= 80 else text[:79] + '…'}")
    return ", ".join(parts)


FEEDBACK_HELP = "/good rates the last answer 👍; /bad [wrong|not_answered|wrong_source|outdated|other] rates it 👎"


def _run_ids(event: dict) -> list[str]:
    """The runs a final event's answer came from (its citations' run_id), in order, once each."""
    cites = ((event.get("result") or {}).get("citations")) or []
    return list(dict.fromkeys(c["run_id"] for c in cites if isinstance(c, dict) and c.get("run_id")))


async def _feedback(toolset, line: str, runs: list[str]) -> None:
    """`/good` or `/bad [reason]`: the verdict on every run the last answer came from, through the gateway's
    `feedback` tool (the same identity as the questions)."""
    word, _, said = line.partition(" ")
    verdict = "up" if word.lower() == "/good" else "down"
    reason = said.strip() or None
    if verdict == "up" and reason:
        _say(err, ("feedback:", "yellow"), " /good takes no reason (" + FEEDBACK_HELP + ")")
        return
    if toolset.feedback is None:
        _say(err, ("feedback:", "yellow"), " this MCP gateway has no feedback tool")
        return
    if not runs:
        _say(err, ("feedback:", "yellow"), " the last answer came from no relayrag run: nothing to rate")
        return
    for run_id in runs:
        args = {"run_id": run_id, "verdict": verdict, **({"reason": reason} if reason else {})}
        try:
            await toolset.feedback.ainvoke(args)
        except Exception as exc:  # noqa: BLE001 - the tool's message is the user's (bad reason, unknown run)
            _say(err, ("feedback:", "red"), f" {exc}")
            return
    _say(err, ("feedback", "green"), f" {'👍' if verdict == 'up' else '👎'}" + (f" ({reason})" if reason else "")
         + f" on run {', '.join(runs)}")


def _show(event: dict, as_json: bool, seen_notes: set[str] | None = None) -> None:
    """Print one assistant event (tool calls and notes on stderr, the answer on stdout; --json: the final event
    as one JSON line). `seen_notes`: the chat's set of note kinds already shown; the no-LLM note (the same
    cause every turn) is printed the first time only."""
    kind = event["event"]
    if kind == "tool_call":
        _say(err, ("→", "cyan"), f" {event['name']}({_args(event.get('args') or {})})")
    elif kind == "tool_result":
        _say(err, ("←", "cyan"), f" {event['name']} ", ("ok", "green") if event.get("ok") else ("error", "red"),
             "" if event.get("ok") else f": {event.get('preview', '')}")
    elif kind == "hop":
        _say(err, ("supervisor", "magenta"), f" → {event['specialist']}: {event.get('task', '')}")
    elif kind == "repair":
        _say(err, ("repair", "yellow"), f" the structured result failed validation once: {event.get('error')}")
    elif kind == "summary":
        _say(err, ("summary", "yellow"), f" {event['messages']} older messages summarised (history budget)")
    elif kind == "error":
        _say(err, ("error:", "red"), f" {event['message']}")
    elif kind == "final":
        if as_json:
            sys.stdout.write(json.dumps(event, ensure_ascii=False) + "\n")
            sys.stdout.flush()
            return
        note = event.get("note") or ""
        from relayrag.agent.turn import NO_LLM
        kind = NO_LLM if note.startswith(NO_LLM) else note
        if note and (seen_notes is None or kind not in seen_notes):
            _say(err, ("note:", "yellow"), f" {note}")
            if seen_notes is not None:
                seen_notes.add(kind)
        out.print(event["answer"])
        out.print()


async def _chat(collection: str, thread: str | None, mode: str, as_json: bool) -> None:
    from relayrag.agent.assistant import Assistant
    interactive = sys.stdin.isatty()
    async with Assistant(collection=collection, mode=mode) as assistant:
        toolset = assistant.toolset
        assert toolset is not None
        await assistant.check_collection(collection)  # like `relayrag ask -c nosuch`: the message, exit code 2
        thread_id = thread
        if thread_id is None:
            import uuid
            thread_id = uuid.uuid4().hex[:12]
        _say(err, ("assistant", "bold"), f" thread {thread_id} (resume with --thread {thread_id}) · collection "
             f"{collection} · model {assistant.model_name} · tools {', '.join(toolset.offered) or 'none'}")
        seen_notes: set[str] = set()  # the no-LLM note once per chat, not on every turn
        if assistant.model is None:
            from relayrag.agent.turn import NO_LLM
            _say(err, ("note:", "yellow"), f" {NO_LLM}: the deterministic router answers each question with one "
                 "relayrag tool (one per part when its parts need different tools); the tool it calls shows as →")
            seen_notes.add(NO_LLM)
        _say(err, ("tip", "dim"), " " + FEEDBACK_HELP)
        runs: list[str] = []
        while True:
            try:
                line = await _read_line("you> ") if interactive else sys.stdin.readline()
            except EOFError:
                break
            if not interactive and line == "":
                break
            line = line.strip()
            if not line:
                continue
            if line.lower().rstrip(".!") in QUIT_WORDS:  # not a question: never sent to the assistant
                break
            if line.split(" ", 1)[0].lower() in ("/good", "/bad"):  # a verdict, not a question
                await _feedback(toolset, line, runs)
                continue
            async for event in assistant.turn(line, thread_id=thread_id):
                _show(event, as_json, seen_notes)
                if event["event"] == "final":
                    runs = _run_ids(event)


@app.command()
def chat(collection: str = typer.Option(..., "--collection", "-c", help="Collection the assistant answers from."),
         thread: Optional[str] = typer.Option(None, "--thread", "-t", help="Resume this thread (default: a new "
                                              "one; its id is printed on stderr)."),
         mode: str = typer.Option("auto", "--mode", help="auto (supervisor when the collection has documents and "
                                  "tables) | analysis | supervisor."),
         as_json: bool = typer.Option(False, "--json", help="Print each turn's final event as one JSON line.")):
    """Talk to the assistant (extra `agent`): a LangGraph agent that answers with relayrag's MCP tools, with
    citations, and remembers the thread (RELAYRAG_HOME/agent/threads.sqlite3). Tool calls stream to stderr,
    answers to stdout. Interactive on a terminal; otherwise one turn per stdin line; quit, exit, /quit or
    /exit (or end of input) ends the chat, and is not asked. /good and /bad [reason] rate the last answer
    (relayrag feedback on the runs it came from). Model: RELAYRAG_LLM
    (none: a deterministic router answers with one tool and says so; a question whose parts need different
    tools gets one tool per part from the deterministic supervisor). A follow-up ("And for Brazil?", "When was
    it published?") is first made a standalone question from the thread, by the model or by rules without
    one. An unknown collection exits 2 naming the collections there are. MCP: RELAYRAG_AGENT_MCP_URL (empty:
    `relayrag mcp` over stdio)."""
    with _user_errors(as_json):
        from relayrag.errors import RelayragError
        from relayrag.naming import validate_collection
        try:  # like `relayrag ask`: an impossible name is said as such, not as an unknown collection
            validate_collection(collection)
        except ValueError as exc:
            raise RelayragError(str(exc)) from None
        import relayrag.agent  # noqa: F401  (ConfigError naming the extra when it is missing)
        try:
            asyncio.run(_chat(collection, thread, mode, as_json))
        except KeyboardInterrupt:
            err.print()
            raise typer.Exit(130) from None


@app.command("chat-serve")
def chat_serve(collection: str = typer.Option("", "--collection", "-c", help="Default collection of requests "
                                              "that name none."),
               port: int = typer.Option(8790, "--port", help="HTTP port."),
               host: str = typer.Option("127.0.0.1", "--host", help="Bind address (loopback by default)."),
               mode: str = typer.Option("auto", "--mode", help="auto | analysis | supervisor."),
               no_auth: bool = typer.Option(False, "--no-auth", help="Serve WITHOUT tokens (loopback only)."),
               log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level.")):
    """Serve the assistant as POST /chat, streaming Server-Sent Events (start, node, tool_call, tool_result,
    final). Bearer tokens from RELAYRAG_AGENT_TOKENS (comma-separated); refuses to start without them unless
    --no-auth on a loopback host."""
    with _user_errors():
        from relayrag.agent.http import serve
        serve(host=host, port=port, collection=collection, no_auth=no_auth, mode=mode, log_level=log_level)
