"""The assistant through its real transports and front doors: the MCP gateway as a `relayrag mcp` child over
stdio and as `relayrag mcp --http` with bearer tokens; `relayrag chat-serve` streaming POST /chat as SSE (order
of events, 401); `relayrag chat` scripted on stdin, its thread resumed by a second process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from relayrag.agent.assistant import Assistant
from relayrag.errors import ConfigError
from tests.agent_double import ScriptedChatModel, call, say
from tests.e2e.test_mcp_http import free_port, start_gateway, stop
from tests.conftest import EXAMPLES
from tests.unit.agent.conftest import BEES_Q, TWO_HOP_Q, settings_for

RELAYRAG = Path(sys.executable).parent / "relayrag"


@pytest.fixture
def bees(home, ctx, small_corpus) -> str:
    from relayrag.service import Service
    assert not Service(ctx).ingest(small_corpus, "docs").failed
    return "docs"


def script() -> ScriptedChatModel:
    return ScriptedChatModel(script=[
        call("ask", question=BEES_Q, collection="docs"), say("Up to 60,000 worker bees."),
        call("AnalysisResult", summary="Up to 60,000 worker bees in summer.", insights=[], recommendations=[],
             citations=[{"document": "bees.txt", "page": 1}])])


def one_turn(assistant: Assistant) -> list[dict]:
    async def go():
        async with assistant as a:
            return [e async for e in a.turn(BEES_Q, thread_id="t")]
    return asyncio.run(go())


def check_answer(events: list[dict]) -> None:
    final = events[-1]
    assert final["event"] == "final", events
    assert final["mode"] == "analysis" and "60,000" in final["answer"]
    assert [(c["document"], c["page"]) for c in final["result"]["citations"]] == [("bees.txt", 1)]
    assert [e["name"] for e in events if e["event"] == "tool_result" and e["ok"]] == ["ask"]


def test_over_stdio_the_assistant_drives_a_relayrag_mcp_child(home, bees):
    # RELAYRAG_AGENT_MCP_URL empty: `relayrag mcp` is started as a child with this environment (home included)
    check_answer(one_turn(Assistant(collection="docs", model=script(), settings=settings_for(home))))


@pytest.fixture
def http_gateway(home, bees):
    env = {**os.environ, "RELAYRAG_HOME": str(home), "RELAYRAG_MCP_TOKENS": "agent-token"}
    proc, url = start_gateway(env)
    yield url
    stop(proc)


def test_over_http_with_a_bearer_token(home, http_gateway):
    settings = settings_for(home, agent_mcp_url=http_gateway, agent_mcp_token="agent-token")
    check_answer(one_turn(Assistant(collection="docs", model=script(), settings=settings)))
    wrong = settings_for(home, agent_mcp_url=http_gateway, agent_mcp_token="wrong-token")
    with pytest.raises(ConfigError, match="HTTP 401.*RELAYRAG_AGENT_MCP_TOKEN"):
        one_turn(Assistant(collection="docs", model=script(), settings=wrong))


# -- POST /chat ---------------------------------------------------------------------------------------------

def parse_sse(text: str) -> list[tuple[str, dict]]:
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line and not line.startswith(":"))
        if "event" in fields:
            out.append((fields["event"], json.loads(fields["data"])))
    return out


def test_sse_endpoint_in_process_streams_node_tool_and_final_events_in_order(home, bees):
    from starlette.testclient import TestClient

    from relayrag.agent.http import build_app
    from relayrag.mcp.server import build_server
    app = build_app(Assistant(collection="docs", model=script(), server=build_server(), settings=settings_for(home)),
                    tokens=["chat-token", "any-token|docs|nosuch"])
    with TestClient(app) as client:
        assert client.post("/chat", json={"message": BEES_Q}).status_code == 401
        r = client.post("/chat", json={"message": BEES_Q}, headers={"authorization": "Bearer chat-token"})
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = parse_sse(r.text)
        bad = client.post("/chat", json={"message": ""}, headers={"authorization": "Bearer chat-token"})
        assert bad.status_code == 400 and "message" in bad.json()["error"]
        other = client.post("/chat", json={"message": BEES_Q, "collection": "nosuch"},
                            headers={"authorization": "Bearer chat-token"})
        assert other.status_code == 403  # a token without a list may ask the server's --collection only
        assert "this token may ask only docs" in other.json()["error"]
        missing = client.post("/chat", json={"message": BEES_Q, "collection": "nosuch"},
                              headers={"authorization": "Bearer any-token"})
        assert missing.status_code == 404
        assert "unknown collection 'nosuch' (collections: docs)" in missing.json()["error"]
    names = [n if n != "node" else f"node:{d['node']}" for n, d in events]
    assert names == ["start", "node:preprocess", "tool_call", "node:agent", "tool_result", "node:tools",
                     "node:agent", "node:structure", "final"]
    made = events[0][1]["thread_id"]
    assert made == events[-1][1]["thread_id"] and len(made) >= 21  # the server's id: 128 random bits
    check_answer([d for _, d in events])


@pytest.fixture
def chat_server(home, bees):
    port = free_port()
    env = {**os.environ, "RELAYRAG_HOME": str(home), "RELAYRAG_AGENT_TOKENS": "tok-1,tok-2", "RELAYRAG_LLM": "none"}
    proc = subprocess.Popen([str(RELAYRAG), "chat-serve", "-c", "docs", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 240  # generous: the first start imports langgraph and loads the models
    while True:
        if proc.poll() is not None:
            pytest.fail(f"relayrag chat-serve exited {proc.returncode}: {proc.stderr.read()}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.time() > deadline:
            proc.kill()
            pytest.fail("relayrag chat-serve did not start within 240 s")
        time.sleep(0.2)
    yield base
    stop(proc)


def test_chat_serve_streams_the_router_turn_as_sse_and_rejects_wrong_tokens(chat_server):
    for headers in ({}, {"authorization": "Bearer nope"}, {"authorization": "Basic tok-1"}):
        r = httpx.post(f"{chat_server}/chat", json={"message": BEES_Q}, headers=headers, timeout=30)
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    with httpx.stream("POST", f"{chat_server}/chat", json={"message": BEES_Q},
                      headers={"authorization": "Bearer tok-2"}, timeout=120) as r:
        assert r.status_code == 200
        text = "".join(r.iter_text())
    events = parse_sse(text)
    names = [n if n != "node" else f"node:{d['node']}" for n, d in events]
    assert names == ["start", "node:preprocess", "tool_call", "tool_result", "node:router", "final"]
    final = events[-1][1]
    assert final["mode"] == "router" and "No LLM" in final["note"] and "60,000" in final["answer"]


def _turn(base: str, token: str, body: dict) -> tuple[int, list[tuple[str, dict]] | dict]:
    with httpx.stream("POST", f"{base}/chat", json=body, headers={"authorization": f"Bearer {token}"},
                      timeout=120) as r:
        text = "".join(r.iter_text())
        return r.status_code, (parse_sse(text) if r.status_code == 200 else json.loads(text))


def test_a_thread_belongs_to_the_token_that_started_it(chat_server):
    """Issue 24 row 3, over real HTTP: the second token gets 404 on the first one's thread, cannot name a new
    thread itself, and sees nothing of the first one's messages."""
    status, events = _turn(chat_server, "tok-1", {"message": "My secret project is BLUEHERON. " + BEES_Q})
    assert status == 200 and events[-1][0] == "final"
    thread = events[0][1]["thread_id"]
    assert len(thread) >= 21
    status, again = _turn(chat_server, "tok-1", {"message": BEES_Q, "thread_id": thread})
    assert status == 200 and again[-1][1]["thread_id"] == thread
    status, err = _turn(chat_server, "tok-2", {"message": "What is my secret project?", "thread_id": thread})
    assert status == 404 and "no thread" in err["error"] and "BLUEHERON" not in json.dumps(err)
    status, err = _turn(chat_server, "tok-1", {"message": BEES_Q, "thread_id": "t1"})  # ids are the server's
    assert status == 404
    status, err = _turn(chat_server, "tok-2", {"message": BEES_Q, "collection": "other"})
    assert status == 403 and "may ask only docs" in err["error"]


def test_chat_serve_checks_the_body_before_streaming(chat_server):
    """Issue 24 row 8: a blank message, deep nesting and an oversized body are refused with a status, not a
    stream without an error event, a 500, or a body read whole."""
    h = {"authorization": "Bearer tok-1", "content-type": "application/json"}
    r = httpx.post(f"{chat_server}/chat", json={"message": "   \n\t "}, headers=h, timeout=30)
    assert r.status_code == 400 and r.json()["error"].startswith("message: ")
    deep = b'{"message": "hi", "mode": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"
    r = httpx.post(f"{chat_server}/chat", content=deep, headers=h, timeout=30)
    assert r.status_code == 400 and "nested deeper" in r.json()["error"]

    def body():  # no Content-Length: the server must stop reading on its own
        yield b'{"message": "'
        for _ in range(300):
            yield b"x" * 1024
        yield b'"}'
    r = httpx.post(f"{chat_server}/chat", content=body(), headers=h, timeout=30)
    assert r.status_code == 413 and "65,536" in r.json()["error"]
    r = httpx.post(f"{chat_server}/chat", json={"message": BEES_Q}, headers=h, timeout=120)
    assert r.status_code == 200  # still serving


# -- relayrag chat ------------------------------------------------------------------------------------------

def chat(home: Path, lines: list[str], *args: str, collection: str = "docs") -> subprocess.CompletedProcess:
    env = {**os.environ, "RELAYRAG_HOME": str(home), "RELAYRAG_LLM": "none"}
    return subprocess.run([str(RELAYRAG), "chat", "-c", collection, *args], input="\n".join(lines) + "\n", env=env,
                          capture_output=True, text=True, timeout=300)


def test_chat_reads_turns_from_stdin_and_a_second_process_resumes_the_thread(home, bees):
    first = chat(home, ["hello", BEES_Q], "--thread", "resume-me")
    assert first.returncode == 0, first.stderr
    assert "60,000" in first.stdout and "bees.txt, page 1" in first.stdout
    assert "→ ask(" in first.stderr and "deterministic router" in first.stderr
    second = chat(home, ["what did I ask?"], "--thread", "resume-me", "--json")
    assert second.returncode == 0, second.stderr
    final = json.loads(second.stdout.strip().splitlines()[-1])
    assert final["thread_id"] == "resume-me" and final["mode"] == "direct"
    assert BEES_Q in final["answer"] and "hello" in final["answer"]
    assert (home / "agent" / "threads.sqlite3").is_file()


def test_chat_without_an_llm_answers_a_two_hop_question_citing_the_sql_and_a_document_page(home, chinook_shop):
    # as a user would: `relayrag chat -c shop` on a collection with the Chinook warehouse and the refund policy
    # PDF, its MCP gateway a `relayrag mcp` child over stdio, one scripted line on stdin
    out = chat(home, [TWO_HOP_Q], "--json", collection="shop")
    assert out.returncode == 0, out.stderr
    final = json.loads(out.stdout.strip().splitlines()[-1])
    assert final["event"] == "final" and final["mode"] == "supervisor"
    assert "deterministic supervisor" in final["answer"] and "no LLM was used" in final["answer"]
    assert "→ sql_query(" in out.stderr and '→ ask(question="refund policy Brazil"' in out.stderr
    cites = final["result"]["citations"]
    sql = next(c for c in cites if c["kind"] == "sql")
    page = next(c for c in cites if c["kind"] == "document")
    assert sql["run_id"] and sql["sql"].startswith("SELECT Country, COUNT(*) AS customers FROM Customer")
    assert (page["document"], page["page"]) == ("refund-policy.pdf", 2) and page["run_id"]
    assert "USA | 13" in final["answer"] and "30 days" in final["answer"]


def finals(out: subprocess.CompletedProcess) -> list[dict]:
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def test_chat_on_the_examples_answers_follow_ups_with_citations_and_keeps_the_subject_across_a_restart(home, ctx):
    # as the README's quick start: examples/pdfs ingested as `examples`, `relayrag chat -c examples` without an
    # LLM, its MCP gateway a `relayrag mcp` child over stdio
    from relayrag.service import Service
    assert not Service(ctx).ingest(EXAMPLES / "pdfs", "examples").failed
    texas, pennsylvania = finals(chat(home, ["How many handgun checks were there in Texas?", "And in Pennsylvania?"],
                                      "--thread", "pdfs", "--json", collection="examples"))
    assert "56,941" in texas["answer"]
    assert "Pennsylvania — Handgun: 62,752" in pennsylvania["answer"] and "56,941" not in pennsylvania["answer"]
    assert "follow-up" in pennsylvania["note"]
    cite = pennsylvania["result"]["citations"][0]
    assert (cite["document"], cite["page"]) == ("nics-background-checks-2015-11.pdf", 1) and cite["run_id"]
    # a new process on the same thread (the sqlite checkpointer under RELAYRAG_HOME): the subject carries on
    out = chat(home, ["What about Florida?", "and long gun checks?", "What about the totals?", "And in Narnia?"],
               "--thread", "pdfs", "--json", collection="examples")
    florida, long_guns, totals, narnia = finals(out)
    assert '→ ask(question="How many handgun checks were there in Florida?"' in out.stderr
    assert "Florida — Handgun: 50,796" in florida["answer"] and florida["result"]["citations"][0]["run_id"]
    assert "Florida — Long Gun: 28,981" in long_guns["answer"] and "50,796" not in long_guns["answer"]
    # a new aspect: the rewrite got the long-gun answer again, so its new word was asked with the subject's name
    assert '→ ask(question="What about the totals for long gun checks in Florida?"' in out.stderr
    assert '→ ask(question="total Florida"' in out.stderr and "got an earlier answer again" in totals["note"]
    assert "Florida — Totals: 103,532" in totals["answer"] and "28,981" not in totals["answer"]
    # one the documents cannot answer: not found, not an earlier answer
    assert narnia["answer"].startswith("(Asked as: What about the totals for long gun checks in Narnia?)")
    assert "could not find an answer" in narnia["answer"] and "103,532" not in narnia["answer"]
    assert not narnia["result"]["citations"]


def test_chat_on_an_unknown_collection_fails_naming_the_collections_there_are(home, bees):
    out = chat(home, ["hello"], collection="nosuch")
    assert out.returncode == 2 and out.stdout == ""
    assert "error: unknown collection 'nosuch' (collections: docs)" in " ".join(out.stderr.split())
    assert "relayrag ingest PATH --collection nosuch" in out.stderr


def test_quit_ends_the_chat_and_is_never_asked(home, bees):
    # a new user types "quit", not "/quit": it ends the chat; it is neither asked nor kept as a turn
    out = chat(home, ["quit", "What do worker bees do?"], "--json")
    assert out.returncode == 0 and out.stdout == "", out.stdout
    assert 'ask(question="quit"' not in out.stderr


def test_chat_on_an_impossible_collection_name_says_it_is_invalid(home, bees):
    out = chat(home, ["hello"], collection="bad/name")
    assert out.returncode == 2 and "invalid collection name 'bad/name'" in " ".join(out.stderr.split())


def test_chat_serve_takes_feedback_with_the_same_auth_per_token(chat_server, home):
    with httpx.stream("POST", f"{chat_server}/chat", json={"message": BEES_Q},
                      headers={"authorization": "Bearer tok-1"}, timeout=120) as r:
        final = parse_sse("".join(r.iter_text()))[-1][1]
    run_id = next(c["run_id"] for c in final["result"]["citations"] if c.get("run_id"))
    url = f"{chat_server}/feedback"
    assert httpx.post(url, json={"run_id": run_id, "verdict": "up"}, timeout=30).status_code == 401
    assert httpx.post(url, json={"run_id": run_id, "verdict": "up"}, headers={"authorization": "Bearer nope"},
                      timeout=30).status_code == 401
    ok = httpx.post(url, json={"run_id": run_id, "verdict": "up"}, headers={"authorization": "Bearer tok-1"},
                    timeout=30)
    assert ok.status_code == 200 and ok.json()["verdict"] == "up" and ok.json()["replaced"] is False
    bad = httpx.post(url, json={"run_id": run_id, "verdict": "down", "reason": "rude"},
                     headers={"authorization": "Bearer tok-2"}, timeout=30)
    assert bad.status_code == 400 and "reason" in bad.json()["error"]
    missing = httpx.post(url, json={"run_id": "nope", "verdict": "up"}, headers={"authorization": "Bearer tok-2"},
                         timeout=30)
    assert missing.status_code == 404
    two = httpx.post(url, json={"run_id": run_id, "verdict": "down", "reason": "wrong"},
                     headers={"authorization": "Bearer tok-2"}, timeout=30)
    assert two.status_code == 200 and two.json()["replaced"] is False  # another token: its own verdict
    from relayrag.backends.docstore import SQLiteDocStore
    verdicts = SQLiteDocStore(home / "relayrag.sqlite3").list_feedback("docs", run_id=run_id)
    assert sorted(v["verdict"] for v in verdicts) == ["down", "up"]


def test_chat_good_and_bad_rate_the_last_answer(home, bees):
    out = chat(home, ["/good", BEES_Q, "/bad rude", "/bad wrong", "/good"])
    assert out.returncode == 0, out.stderr
    err = out.stderr
    assert "nothing to rate" in err  # /good before any answer
    assert "reason" in err and "rude" in err  # a bad reason is the tool's message, nothing stored
    assert "👎 (wrong) on run" in err and "👍 on run" in err
    from relayrag.backends.docstore import SQLiteDocStore
    (verdict,) = SQLiteDocStore(home / "relayrag.sqlite3").list_feedback("docs")
    assert verdict["verdict"] == "up" and verdict["identity"].startswith("local:")  # the last one replaced it


def test_ctrl_c_at_the_chat_prompt_ends_the_chat_at_once(home, small_corpus):
    """A new user's Ctrl-C at `you> ` echoed ^C and nothing happened until Enter: input() ran on asyncio's
    executor thread, which asyncio.run waits for at shutdown. On a real terminal (a pty) SIGINT must end the
    chat with exit 130 without any further key."""
    import os
    import pty
    import select
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from relayrag.context import default_context
    from relayrag.ingest.pipeline import ingest
    assert not ingest(default_context(), small_corpus, "docs").failed
    main, child = pty.openpty()
    proc = subprocess.Popen([str(Path(sys.executable).parent / "relayrag"), "chat", "-c", "docs"],
                            stdin=child, stdout=child, stderr=child, env={**os.environ, "RELAYRAG_HOME": str(home)},
                            start_new_session=True)
    os.close(child)
    seen, deadline = b"", time.time() + 240  # generous: the chat loads the gateway in-process first
    try:
        while b"you> " not in seen:
            assert time.time() < deadline and proc.poll() is None, seen.decode(errors="replace")[-2000:]
            if select.select([main], [], [], 1.0)[0]:
                seen += os.read(main, 4096)
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal sends on Ctrl-C
        assert proc.wait(timeout=60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)


def test_chat_starts_without_the_ps1_warning_and_says_the_no_llm_note_once(home, bees):
    """Issue 28, item 8: a shell prompt exported with `${debian_chroot:+...}` made langchain-mcp-adapters warn
    "env['PS1'] contains unexpanded variable reference" at every start, and the 2-4 line no-LLM note came with
    every turn. Three turns: the note once (at the start), each turn's tool call still shown."""
    env = {**os.environ, "RELAYRAG_HOME": str(home), "RELAYRAG_LLM": "none",
           "PS1": r"${debian_chroot:+($debian_chroot)}\u@\h:\w\$ ", "EXPORTED_TEMPLATE": "${NOT_SET_ANYWHERE}"}
    out = subprocess.run([str(RELAYRAG), "chat", "-c", "docs"], input=f"{BEES_Q}\nHow many eggs does the queen lay?\n"
                         "What is the standard rail gauge?\n", env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "unexpanded variable reference" not in out.stderr and "PS1" not in out.stderr
    assert out.stderr.count("No LLM is configured") == 1 and out.stderr.count("→ ask(") == 3
    assert "60,000" in out.stdout and "2,000" in out.stdout and "1,435" in out.stdout


def test_the_stdio_child_gets_no_value_the_adapter_would_expand():
    from relayrag.agent.mcp_tools import child_env
    env = child_env({"PATH": "/usr/bin", "PS1": "${debian_chroot:+x}$ ", "RELAYRAG_HOME": "/h", "PRICE": "$5"})
    assert env == {"PATH": "/usr/bin", "RELAYRAG_HOME": "/h", "PRICE": "$5"}
