"""The MCP gateway as clients use it: `relayrag mcp --http` in a subprocess on 127.0.0.1 (bearer tokens),
`relayrag mcp` over stdio, and langchain-mcp-adapters' MultiServerMCPClient as a real third-party client."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import fastmcp  # noqa: E402,F401  (in the dev extra: a missing install fails, it does not skip)

from fastmcp import Client  # noqa: E402

RELAYRAG = Path(sys.executable).parent / "relayrag"
TOKENS = ("test-token-one", "test-token-two")
QUESTION = "How many worker bees live in a colony in summer?"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ingest", "arguments": {}}}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gateway(env: dict, *extra: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([str(RELAYRAG), "mcp", "--http", "--port", str(port), *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.time() + 60
    while True:
        if proc.poll() is not None:
            pytest.fail(f"relayrag mcp --http exited {proc.returncode}: {proc.stderr.read()}")
        try:
            httpx.get(url, timeout=1)
            return proc, url
        except httpx.HTTPError:
            if time.time() > deadline:
                proc.kill()
                pytest.fail("relayrag mcp --http did not start")
            time.sleep(0.1)


def stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """One `relayrag mcp --http` for the module: its own RELAYRAG_HOME, two static tokens, ingest allowed
    from pytest's temp folders (where the small_corpus fixture writes)."""
    home = tmp_path_factory.mktemp("mcp-home")
    env = {**os.environ, "RELAYRAG_HOME": str(home), "HF_HUB_OFFLINE": "1", "RELAYRAG_MCP_TOKENS": ",".join(TOKENS),
           "RELAYRAG_MCP_INGEST_ROOTS": str(tmp_path_factory.getbasetemp())}
    proc, url = start_gateway(env)
    yield {"url": url, "home": home}
    stop(proc)


def count_runs(home: Path) -> int:
    db = home / "relayrag.sqlite3"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as cx:
        return cx.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


def test_http_rejects_requests_without_a_valid_token(gateway, small_corpus):
    url = gateway["url"]
    runs_before = count_runs(gateway["home"])
    sneaky = {**CALL, "params": {"name": "ingest", "arguments": {"path": str(small_corpus), "collection": "sneaky"}}}
    for body in (INIT, sneaky):
        for headers in ({}, {"authorization": "Bearer wrong-token"}, {"authorization": f"Basic {TOKENS[0]}"},
                        {"authorization": f"Bearer {TOKENS[0]}x"}):
            r = httpx.post(url, json=body, headers={**MCP_HEADERS, **headers}, timeout=10)
            assert r.status_code == 401, (headers, r.status_code, r.text)
            assert r.headers["www-authenticate"].startswith("Bearer")
        for query in (f"token={TOKENS[0]}", f"access_token={TOKENS[0]}"):  # a token in the URL is not accepted
            r = httpx.post(f"{url}?{query}", json=body, headers=MCP_HEADERS, timeout=10)
            assert r.status_code == 401, (query, r.status_code, r.text)
    r = httpx.post(url, json=INIT, headers={**MCP_HEADERS, "authorization": f"Bearer {TOKENS[1]}"}, timeout=10)
    assert r.status_code == 200 and "relayrag" in r.text

    async def collections():
        async with Client(url, auth=TOKENS[0]) as c:
            return (await c.call_tool("list_collections", {})).data
    assert "sneaky" not in {c["name"] for c in asyncio.run(collections())["collections"]}  # no tool ran
    assert count_runs(gateway["home"]) == runs_before

    async def wrong():
        async with Client(url, auth="wrong-token") as c:
            await c.list_tools()
    with pytest.raises(Exception, match="401"):
        asyncio.run(wrong())


def test_http_with_a_token_ingests_with_progress_and_asks(gateway, small_corpus):
    progress = []

    async def on_progress(p, total, message):
        progress.append((p, total, message))

    async def go():
        async with Client(gateway["url"], auth=TOKENS[1]) as c:
            tools = {t.name for t in await c.list_tools()}
            summary = (await c.call_tool("ingest", {"path": str(small_corpus), "collection": "http"},
                                         progress_handler=on_progress)).data
            answer = (await c.call_tool("ask", {"question": QUESTION, "collection": "http"})).data
            return tools, summary, answer
    tools, summary, answer = asyncio.run(go())
    assert {"ask", "search", "ingest", "delete_document", "list_collections", "get_run", "rag"} <= tools
    assert summary["files"]["ingested"] == 4 and not summary["failed"]
    assert progress and progress[-1][0] == progress[-1][1] == 5  # 4 files + embedding/snapshot
    assert answer["grounded"] and "60,000" in answer["answer"] and answer["citations"][0]["doc"] == "bees.txt"


def test_langchain_mcp_adapters_client_lists_tools_and_calls_ask(gateway, small_corpus):
    from langchain_mcp_adapters.client import MultiServerMCPClient

    async def go():
        client = MultiServerMCPClient({"relayrag": {
            "transport": "streamable_http", "url": gateway["url"],
            "headers": {"Authorization": f"Bearer {TOKENS[0]}"}}})
        tools = {t.name: t for t in await client.get_tools()}
        await tools["ingest"].ainvoke({"path": str(small_corpus), "collection": "lc"})
        return tools, await tools["ask"].ainvoke({"question": QUESTION, "collection": "lc"})
    tools, out = asyncio.run(go())
    assert {"ask", "search", "ingest", "delete_document", "list_collections", "get_run", "rag"} <= set(tools)
    assert "collection" in tools["ask"].args_schema["properties"]
    text = out if isinstance(out, str) else "".join(b["text"] for b in out if b.get("type") == "text")
    result = json.loads(text)
    assert result["grounded"] and "60,000" in result["answer"]


def test_stdio_subprocess_answers_ask(ctx, home, small_corpus):
    from fastmcp.client.transports import StdioTransport
    from relayrag.ingest.pipeline import ingest
    assert not ingest(ctx, small_corpus, "docs").failed
    transport = StdioTransport(command=str(RELAYRAG), args=["mcp"],
                               env={**os.environ, "RELAYRAG_HOME": str(home), "HF_HUB_OFFLINE": "1"})

    async def go():
        async with Client(transport) as c:
            tools = {t.name for t in await c.list_tools()}
            return tools, (await c.call_tool("ask", {"question": QUESTION, "collection": "docs"})).data
    tools, answer = asyncio.run(go())
    assert {"ask", "rag"} <= tools
    assert answer["grounded"] and "60,000" in answer["answer"] and answer["citations"][0]["doc"] == "bees.txt"

    # raw: every line on stdout is a JSON-RPC message, through model loading and a full pipeline run
    proc = subprocess.Popen([str(RELAYRAG), "mcp"], env=transport.env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ask = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "ask", "arguments": {"question": QUESTION, "collection": "docs"}}}
    lines = []
    for msg in (INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}, ask):
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()
        if "id" in msg:
            while True:  # notifications may precede the response
                line = proc.stdout.readline()
                lines.append(line)
                if json.loads(line).get("id") == msg["id"]:
                    break
    rest, _ = proc.communicate(timeout=30)  # closes stdin: the server exits
    lines += [x for x in rest.splitlines() if x.strip()]
    assert all(json.loads(x)["jsonrpc"] == "2.0" for x in lines)
    assert "60,000" in json.loads(lines[-1])["result"]["structuredContent"]["answer"]


def test_http_refuses_to_start_without_auth_unless_no_auth(home, monkeypatch):
    from typer.testing import CliRunner

    from relayrag.cli import app
    for var in ("RELAYRAG_MCP_TOKENS", "RELAYRAG_MCP_JWT_PUBLIC_KEY"):
        monkeypatch.delenv(var, raising=False)
    res = CliRunner().invoke(app, ["mcp", "--http", "--port", str(free_port())])
    assert res.exit_code == 2 and "refusing" in res.output and "RELAYRAG_MCP_TOKENS" in res.output

    env = {**os.environ, "RELAYRAG_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    proc, url = start_gateway(env, "--no-auth")
    try:
        r = httpx.post(url, json=INIT, headers=MCP_HEADERS, timeout=10)
        assert r.status_code == 200
    finally:
        err = stop(proc)
    assert "--no-auth" in err and "EVERY request" in err


def test_stdio_guard_sends_stray_output_to_stderr():
    code = """if True:
        import os, subprocess, sys
        from relayrag.mcp.server import stdout_reserved_for_protocol
        with stdout_reserved_for_protocol():
            print("python noise")
            os.write(1, b"c-level noise\\n")
            subprocess.run(["echo", "child noise"], check=True)
            sys.stdout.buffer.write(b'{"jsonrpc": "2.0"}\\n')
            sys.stdout.buffer.flush()
        print("after")
    """
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == '{"jsonrpc": "2.0"}\nafter\n'
    assert all(x in p.stderr for x in ("python noise", "c-level noise", "child noise"))


def test_concurrent_asks_over_http_all_answer(gateway, small_corpus):
    """Issue 10, held up well (kept as a regression test): 50 concurrent MCP asks, 0 errors (here 24)."""
    async def go():
        async with Client(gateway["url"], auth=TOKENS[0]) as c:
            await c.call_tool("ingest", {"path": str(small_corpus), "collection": "many"})
            return await asyncio.gather(*[c.call_tool("ask", {"question": QUESTION, "collection": "many"},
                                                      raise_on_error=False) for _ in range(24)])
    results = asyncio.run(go())
    errors = [r.content[0].text for r in results if r.is_error]
    assert errors == [] and all("60,000" in r.data["answer"] for r in results)


def test_the_assistant_survives_gateways_behind_a_round_robin_balancer(tmp_path, small_corpus, monkeypatch):
    """Issue 30 C2: Cloud Run runs the gateway on several instances with no affinity for Mcp-Session-Id, and
    replaces them on scale-to-zero. Two real `relayrag mcp --http` processes on one RELAYRAG_HOME behind a
    round-robin transport: the assistant's tools must keep answering. Before: the stateful gateway kept the
    session in one process, the next request landed on the other one → 404 "Session not found"."""
    from relayrag.agent import mcp_tools
    from relayrag.ingest.pipeline import ingest
    from relayrag.context import default_context

    monkeypatch.setenv("RELAYRAG_HOME", str(tmp_path / "home"))
    ingest(default_context(), small_corpus, "rr")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RELAYRAG_MCP_TOKENS": TOKENS[0]}
    (pa, url_a), (pb, url_b) = start_gateway(env), start_gateway(env)
    ports = [httpx.URL(url_a).port, httpx.URL(url_b).port]
    seen: list[int] = []

    class RoundRobin(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request):
            port = ports[len(seen) % 2]
            seen.append(port)
            request.url = request.url.copy_with(port=port)
            return await super().handle_async_request(request)

    def factory(headers=None, timeout=None, auth=None):
        return httpx.AsyncClient(headers=headers, timeout=timeout, auth=auth, transport=RoundRobin())

    real = mcp_tools.connection_for
    monkeypatch.setattr(mcp_tools, "connection_for", lambda s: {**real(s), "httpx_client_factory": factory})
    from relayrag.settings import load_settings
    settings = load_settings().model_copy(update={"agent_mcp_url": url_a, "agent_mcp_token": TOKENS[0]})

    async def go():
        async with mcp_tools.open_tools(settings) as tools:
            by_name = {t.name: t for t in tools}
            return [await by_name["ask"].ainvoke({"question": QUESTION, "collection": "rr"}) for _ in range(3)]
    try:
        outs = asyncio.run(go())
    finally:
        stop(pa), stop(pb)
    assert set(seen) == set(ports)  # both instances served requests
    for out in outs:
        text = out if isinstance(out, str) else "".join(b["text"] for b in out if b.get("type") == "text")
        assert "60,000" in json.loads(text)["answer"]


def test_feedback_over_http_is_per_token(gateway, small_corpus):
    """Two tokens rate the same run: two verdicts, each stored under its token's hash (never the token)."""
    async def go():
        async with Client(gateway["url"], auth=TOKENS[0]) as c:
            await c.call_tool("ingest", {"path": str(small_corpus), "collection": "fb"})
            run_id = (await c.call_tool("ask", {"question": QUESTION, "collection": "fb"})).data["run_id"]
            await c.call_tool("feedback", {"run_id": run_id, "verdict": "up"})
        async with Client(gateway["url"], auth=TOKENS[1]) as c:
            await c.call_tool("feedback", {"run_id": run_id, "verdict": "down", "reason": "wrong_source"})
            await c.call_tool("feedback", {"run_id": run_id, "verdict": "down", "reason": "wrong"})  # replaces
        return run_id
    run_id = asyncio.run(go())
    with sqlite3.connect(gateway["home"] / "relayrag.sqlite3") as cx:
        rows = cx.execute("SELECT identity, entry FROM feedback WHERE run_id=?", (run_id,)).fetchall()
    from relayrag.feedback import token_identity
    got = {ident: json.loads(entry)["verdict"] for ident, entry in rows}
    assert got == {token_identity("mcp", TOKENS[0]): "up", token_identity("mcp", TOKENS[1]): "down"}
    assert not any(t in entry for _, entry in rows for t in TOKENS)
