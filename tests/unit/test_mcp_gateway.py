"""The MCP gateway (relayrag.mcp) through fastmcp's in-memory Client: every tool, its error cases,
progress notifications, result limits, workflow tools picked up without restart, auth verifiers."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

import fastmcp  # noqa: E402,F401  (in the dev extra: a missing install fails, it does not skip)

from fastmcp import Client  # noqa: E402
from fastmcp.exceptions import ToolError  # noqa: E402

from relayrag.mcp.auth import build_auth  # noqa: E402
from relayrag.mcp.server import build_server  # noqa: E402
from relayrag.mcp.views import QUOTE_CHARS, bounded_summary, cap_json, clip  # noqa: E402
from relayrag.mcp.workflow_tools import BUILTIN_TOOLS, WorkflowSpecError, parse_tool_spec  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

ECHO_YAML = """\
# A test workflow without HTTP calls.
# mcp-tool: echo — Greet someone.
# mcp-description: Returns a greeting.
# mcp-param: name string required — Who to greet.
# mcp-param: times integer optional default=2 — How often.
# mcp-param: tone string optional enum=warm|dry — Tone.
main:
  params: [args]
  steps:
    - build:
        assign:
          - greeting: ${"hello " + args.name}
    - done:
        return:
          greeting: ${greeting}
          times: ${args.times}
"""


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def wf_dir(tmp_path, monkeypatch) -> Path:
    """A private copy of workflows/ the gateway scans (RELAYRAG_WORKFLOWS_DIR), so tests can drop files."""
    folder = tmp_path / "workflows"
    folder.mkdir()
    for f in (REPO / "workflows").glob("*.yaml"):
        shutil.copy(f, folder / f.name)
    monkeypatch.setenv("RELAYRAG_WORKFLOWS_DIR", str(folder))
    return folder


@pytest.fixture
def server(home, wf_dir):
    return build_server()


@pytest.fixture
def ingested(ctx, small_corpus):
    from relayrag.ingest.pipeline import ingest
    assert not ingest(ctx, small_corpus, "docs").failed
    return small_corpus


async def call_error(client, name, args) -> str:
    res = await client.call_tool(name, args, raise_on_error=False)
    assert res.is_error, f"{name}({args}) did not fail: {res.data}"
    return res.content[0].text


def test_tools_are_listed_with_typed_described_parameters(server):
    async def go():
        async with Client(server) as c:
            return {t.name: t for t in await c.list_tools()}
    tools = run(go())
    assert set(BUILTIN_TOOLS) | {"rag"} == set(tools)
    for name in BUILTIN_TOOLS:
        t = tools[name]
        assert t.description and len(t.description) > 40
        for pname, p in t.inputSchema.get("properties", {}).items():
            assert p.get("description"), f"{name}.{pname} has no description"
    ask = tools["ask"].inputSchema
    assert ask["required"] == ["question", "collection"]
    assert ask["properties"]["collection"]["pattern"]
    search = tools["search"].inputSchema["properties"]
    assert search["k"]["maximum"] == 20 and {"doc", "page", "arm"} <= set(search)
    rag = tools["rag"].inputSchema
    assert rag["required"] == ["question", "collection"] and rag["additionalProperties"] is False
    assert rag["properties"]["arm"]["enum"] == ["dense", "bm25", "hybrid"]


def test_every_tool_end_to_end(server, home, small_corpus):
    progress: list[tuple] = []

    async def on_progress(p, total, message):
        progress.append((p, total, message))

    async def go():
        async with Client(server, progress_handler=on_progress) as c:
            out = {}
            out["ingest"] = (await c.call_tool("ingest", {"path": str(small_corpus), "collection": "docs"})).data
            out["ingest_progress"] = list(progress)
            progress.clear()
            out["collections"] = (await c.call_tool("list_collections", {})).data
            out["ask"] = (await c.call_tool("ask", {"question": "How many worker bees live in a colony in summer?",
                                                    "collection": "docs"})).data
            out["ask_progress"] = list(progress)
            out["search"] = (await c.call_tool("search", {"query": "rail gauge millimetres", "collection": "docs",
                                                          "k": 3})).data
            out["search_doc"] = (await c.call_tool("search", {"query": "rail gauge", "collection": "docs",
                                                              "doc": "*.md", "page": 1})).data
            out["run"] = (await c.call_tool("get_run", {"run_id": out["ask"]["run_id"]})).data
            out["delete"] = (await c.call_tool("delete_document", {"collection": "docs",
                                                                   "documents": ["solar.md"]})).data
            out["collections2"] = (await c.call_tool("list_collections", {})).data
            return out
    out = run(go())

    s = out["ingest"]
    assert s["files"] == {"ingested": 4, "skipped": 0, "deleted": 0, "failed": 0} and s["version"]
    p = out["ingest_progress"]
    assert p[0][0] == 0 and p[-1][0] == p[-1][1] == 5 and "4 ingested" in p[-1][2]
    assert [m for _, _, m in p if m.startswith("loaded ")] and all(a <= b for (a, _, _), (b, _, _) in zip(p, p[1:]))
    assert [x[0] for x in p] == sorted(x[0] for x in p)  # progress never goes back

    (col,) = out["collections"]["collections"]
    assert col["name"] == "docs" and col["version"] == s["version"]
    assert (col["files"], col["documents"]) == (4, 4) and col["chunks"] >= 4

    a = out["ask"]
    assert a["route"] == "rag" and a["grounded"] and "60,000" in a["answer"]
    assert a["citations"][0]["doc"] == "bees.txt" and a["citations"][0]["page"] == 1
    assert all(len(c["quote"]) <= QUOTE_CHARS for c in a["citations"])
    assert a["arm"] in ("dense", "bm25", "hybrid") and a["run_id"]
    assert [m for _, _, m in out["ask_progress"]][0].startswith("classify")
    assert any(m.startswith("hallucination_check") for _, _, m in out["ask_progress"])

    r = out["search"]
    assert r["results"][0]["doc"] == "rail.html" and r["results"][0]["rank"] == 1
    assert len(r["results"]) <= 3 and r["results"][0]["score"] > 0 and r["version"] == s["version"]
    assert {"doc", "page", "chunk_id", "quote", "score"} <= set(r["results"][0])
    assert {x["doc"] for x in out["search_doc"]["results"]} == {"solar.md"}
    assert out["search_doc"]["filters"] == {"doc": "*.md", "page": 1}

    run_ = out["run"]
    # reward: None when nothing was judged relevant (no information; issue 28), never a made-up 0.0
    assert run_["run_id"] == a["run_id"] and run_["arm"] == a["arm"] and "reward" in run_
    names = [st["name"] for st in run_["stages"]]
    assert names[:3] == ["classify", "hyde", "retrieve"] and names[-1] == "hallucination_check"
    assert all(st["method"] and st["ms"] is not None for st in run_["stages"])
    assert run_["total_ms"] > 0 and "arm_draws" in run_

    assert out["delete"]["files"]["deleted"] == 1
    assert out["collections2"]["collections"][0]["files"] == 3


def test_errors_come_back_as_tool_errors_and_the_server_keeps_serving(server, ingested, tmp_path):
    async def go():
        async with Client(server) as c:
            errs = {
                "ask_unknown": await call_error(c, "ask", {"question": "q?", "collection": "nope"}),
                "search_unknown": await call_error(c, "search", {"query": "q", "collection": "nope"}),
                "delete_unknown": await call_error(c, "delete_document", {"collection": "nope", "documents": ["a"]}),
                "bad_name": await call_error(c, "ingest", {"path": str(ingested), "collection": "../escape"}),
                "empty_q": await call_error(c, "ask", {"question": "", "collection": "docs"}),
                "bad_arm": await call_error(c, "ask", {"question": "q?", "collection": "docs", "arm": "magic"}),
                "big_k": await call_error(c, "search", {"query": "q", "collection": "docs", "k": 500}),
                "run": await call_error(c, "get_run", {"run_id": "no-such-run"}),
                "missing": await call_error(c, "ingest", {"path": str(tmp_path / "nothing"), "collection": "docs"}),
                "relative": await call_error(c, "ingest", {"path": "docs/x.pdf", "collection": "docs"}),
                "uri": await call_error(c, "ingest", {"path": "gs://bucket/x.pdf", "collection": "docs"}),
                "no_match": await call_error(c, "delete_document", {"collection": "docs",
                                                                    "documents": ["never-ingested.pdf"]}),
                "no_docs": await call_error(c, "delete_document", {"collection": "docs", "documents": []}),
                "unknown_tool": await call_error(c, "no_such_tool", {}),
            }
            still = (await c.call_tool("list_collections", {})).data
            return errs, still
    errs, still = run(go())
    assert "unknown collection 'nope'" in errs["ask_unknown"] and "docs" in errs["ask_unknown"]
    assert "unknown collection 'nope'" in errs["search_unknown"]
    assert "unknown collection 'nope'" in errs["delete_unknown"]
    assert "collection" in errs["bad_name"] and "pattern" in errs["bad_name"]
    assert "question" in errs["empty_q"]
    assert "arm" in errs["bad_arm"]
    assert "k" in errs["big_k"] and "20" in errs["big_k"]
    assert "unknown run_id" in errs["run"]
    assert "does not exist" in errs["missing"]
    assert "absolute" in errs["relative"]
    assert "gs://" in errs["uri"] and "local path" in errs["uri"]
    assert "never-ingested.pdf" in errs["no_match"] and "bees.txt" in errs["no_match"]
    assert "documents" in errs["no_docs"]
    assert "no_such_tool" in errs["unknown_tool"]
    assert still["count"] == 1  # nothing crashed


def test_ingest_lists_per_file_errors_and_ingests_the_rest(server, home, tmp_path):
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.txt").write_text("The standard rail gauge is 1,435 millimetres.")
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "noise.pdf").write_bytes(b"%PDF-1.4 garbage" * 10)

    async def go():
        async with Client(server) as c:
            return (await c.call_tool("ingest", {"path": f"file://{folder}", "collection": "mixed"})).data
    s = run(go())
    assert s["files"]["ingested"] == 1 and s["files"]["failed"] == 2
    errors = {Path(f["path"]).name: f["error"] for f in s["failed"]}
    assert set(errors) == {"empty.pdf", "noise.pdf"} and all(errors.values())


def test_results_are_bounded(server, home, tmp_path):
    long_sentence = "The calibration procedure " + "requires careful measurement of every component " * 12 + "."
    folder = tmp_path / "long"
    folder.mkdir()
    (folder / "manual.txt").write_text("Intro text about nothing in particular. " + long_sentence +
                                       " The torque value for the main bolt is 42 newton metres.")

    async def go():
        async with Client(server) as c:
            await c.call_tool("ingest", {"path": str(folder), "collection": "long"})
            return (await c.call_tool("search", {"query": "torque value main bolt", "collection": "long"})).data
    r = run(go())
    quote = r["results"][0]["quote"]
    assert len(quote) <= QUOTE_CHARS
    assert "torque" in quote  # the quote starts at the best-matching sentence, not at the chunk start
    # helpers
    assert clip("x" * 1000, 300).endswith("…") and len(clip("x" * 1000, 300)) == 300
    assert cap_json({"a": "y" * 50}, 20)["truncated"] is True and cap_json([1, 2], 20) == [1, 2]
    big = bounded_summary({"failed": [{"path": f"f{i}", "error": "e" * 2000} for i in range(80)], "warnings": []})
    assert len(big["failed"]) == 50 and big["failed_omitted"] == 30 and len(big["failed"][0]["error"]) <= 500


def test_ingest_over_http_is_limited_to_configured_roots(home, wf_dir, small_corpus, tmp_path, monkeypatch):
    from relayrag.settings import load_settings

    async def ingest(srv, path):
        async with Client(srv) as c:
            return await c.call_tool("ingest", {"path": str(path), "collection": "docs"}, raise_on_error=False)

    r = run(ingest(build_server(http=True), small_corpus))
    assert r.is_error and "RELAYRAG_MCP_INGEST_ROOTS" in r.content[0].text
    monkeypatch.setenv("RELAYRAG_MCP_INGEST_ROOTS", str(small_corpus))
    load_settings.cache_clear()
    srv = build_server(http=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    r = run(ingest(srv, outside))
    assert r.is_error and "outside the folders" in r.content[0].text
    r = run(ingest(srv, small_corpus / ".." / "outside"))  # no escape through ..
    assert r.is_error and "outside the folders" in r.content[0].text
    r = run(ingest(srv, small_corpus))
    assert not r.is_error and r.data["files"]["ingested"] == 4


def test_cloud_engine_without_a_workflow_is_a_clear_error(home, wf_dir, ingested):
    """The cloud engine's ask/rag run on Cloud Workflows (tests/unit/engine/test_cloud.py runs them against
    a Workflows double); unconfigured, they say what to set, and other workflow tools say they are
    embedded-only."""
    (wf_dir / "echo.yaml").write_text("# mcp-tool: echo — Echo.\nmain:\n  steps:\n    - done:\n"
                                      "        return: 1\n", encoding="utf-8")
    srv = build_server(engine="cloud")

    async def go():
        async with Client(srv) as c:
            return (await call_error(c, "ask", {"question": "How many bees?", "collection": "docs"}),
                    await call_error(c, "rag", {"question": "How many bees?", "collection": "docs"}),
                    await call_error(c, "echo", {}),
                    (await c.call_tool("search", {"query": "bees", "collection": "docs"})).data)
    ask_err, rag_err, echo_err, search = run(go())
    for e in (ask_err, rag_err):
        assert "RELAYRAG_WORKFLOW is not set" in e
    assert "'echo' runs only on the embedded engine" in echo_err
    assert search["results"]  # retrieval does not need the workflow engine


# -- workflow tools ------------------------------------------------------------------------------------

def test_rag_workflow_tool_runs_the_yaml_and_validates_arguments(server, ingested):
    async def go():
        async with Client(server) as c:
            ok = (await c.call_tool("rag", {"question": "What is the standard rail gauge?", "collection": "docs",
                                            "arm": "bm25"})).data
            errs = [await call_error(c, "rag", {"question": "q"}),
                    await call_error(c, "rag", {"question": "q", "collection": "docs", "urls": {"x": "http://x"}}),
                    await call_error(c, "rag", {"question": 3, "collection": "docs"}),
                    await call_error(c, "rag", {"question": "q", "collection": "docs", "arm": "magic"})]
            return ok, errs
    ok, errs = run(go())
    assert ok["workflow"] == "rag.yaml" and ok["result"]["route"] == "rag" and ok["result"]["run_id"] == ok["run_id"]
    assert ok["run"]["arm"] == "bm25" and "1,435" in ok["run"]["answer"]
    assert ok["run"]["citations"][0]["doc"] == "rail.html"
    assert "missing required argument 'collection'" in errs[0]
    assert "unknown argument" in errs[1] and "urls" in errs[1]  # clients can never redirect stage calls
    assert "must be string" in errs[2]
    assert "must be one of" in errs[3]


def test_a_dropped_workflow_becomes_a_tool_without_restart(server, wf_dir, tmp_path):
    async def names(c):
        return {t.name: t for t in await c.list_tools()}

    async def go():
        async with Client(server) as c:
            before = await names(c)
            (wf_dir / "echo.yaml").write_text(ECHO_YAML)
            after = await names(c)
            called = (await c.call_tool("echo", {"name": "bees"})).data
            called2 = (await c.call_tool("echo", {"name": "ants", "times": 5, "tone": "dry"})).data
            # changed file: a new parameter appears (size changes, so the cache notices even within one mtime tick)
            (wf_dir / "echo.yaml").write_text(ECHO_YAML.replace(
                "# mcp-param: tone", "# mcp-param: loud boolean optional — Shout.\n# mcp-param: tone"))
            changed = await names(c)
            # malformed declarations and built-in names are not offered, and do not break listing
            (wf_dir / "broken.yaml").write_text(
                "# mcp-tool: broken\n# mcp-param: x strnig required\nmain: {steps: []}\n")
            (wf_dir / "shadow.yaml").write_text("# mcp-tool: ask\nmain:\n  steps:\n    - r:\n        return: 1\n")
            (wf_dir / "plain.yaml").write_text("main:\n  steps:\n    - r:\n        return: 1\n")
            # a workflow cannot run Python: expressions are whitelisted by the interpreter
            marker = tmp_path / "pwned"
            (wf_dir / "evil.yaml").write_text(
                "# mcp-tool: evil\nmain:\n  params: [args]\n  steps:\n    - x:\n        assign:\n"
                f"          - y: ${{__import__('os').system('touch {marker}')}}\n    - r:\n        return: ${{y}}\n")
            evil_err = await call_error(c, "evil", {})
            listed = await names(c)
            (wf_dir / "echo.yaml").unlink()
            gone = await names(c)
            return before, after, called, called2, changed, listed, evil_err, marker.exists(), gone
    before, after, called, called2, changed, listed, evil_err, pwned, gone = run(go())
    assert "echo" not in before and "echo" in after
    schema = after["echo"].inputSchema
    assert schema["required"] == ["name"] and schema["properties"]["times"] == {
        "type": "integer", "description": "How often.", "default": 2}
    assert after["echo"].description == "Greet someone. Returns a greeting."
    assert called["result"] == {"greeting": "hello bees", "times": 2} and "run" not in called
    assert called2["result"] == {"greeting": "hello ants", "times": 5}
    assert "loud" in changed["echo"].inputSchema["properties"]
    assert {"broken", "plain"}.isdisjoint(listed) and "evil" in listed
    assert listed["ask"].description.startswith("Answer a question")  # the built-in, not shadow.yaml
    assert not pwned and "__import__" in evil_err
    assert "echo" not in gone and "rag" in gone
    assert "broken.yaml" in server.gateway.catalog.errors()


def test_parse_tool_spec_grammar():
    spec = parse_tool_spec(ECHO_YAML, "echo")
    assert spec.name == "echo" and spec.workflow == "echo"
    assert [(p.name, p.type, p.required, p.default, p.enum) for p in spec.params] == [
        ("name", "string", True, None, None), ("times", "integer", False, 2, None),
        ("tone", "string", False, None, ("warm", "dry"))]
    assert parse_tool_spec("main: {}\n# Parameters: question\n", "x") is None
    dashes = parse_tool_spec("# mcp-tool: t -- Desc\n# mcp-param: ids array optional -- Ids\n", "t")
    assert dashes.description == "Desc" and dashes.params[0].type == "array" and dashes.params[0].description == "Ids"
    bad = {
        "# mcp-tool: 9bad\n": "invalid tool name",
        "# mcp-tool: a\n# mcp-tool: b\n": "second",
        "# mcp-param: x string\n": "without",
        "# mcp-tool: a\n# mcp-param: x\n": "expected",
        "# mcp-tool: a\n# mcp-param: x str\n": "unknown type",
        "# mcp-tool: a\n# mcp-param: urls object\n": "reserved",
        "# mcp-tool: a\n# mcp-param: run_id string\n": "reserved",
        "# mcp-tool: a\n# mcp-param: x string\n# mcp-param: x string\n": "twice",
        "# mcp-tool: a\n# mcp-param: n integer default=abc\n": "not a JSON integer",
        "# mcp-tool: a\n# mcp-param: n integer required default=1\n": "required and has a default",
        "# mcp-tool: a\n# mcp-param: n integer sometimes\n": "unknown option",
    }
    for text, msg in bad.items():
        with pytest.raises(WorkflowSpecError, match=msg):
            parse_tool_spec(text, "w")


def test_rag_yaml_declares_its_tool_and_stays_a_plain_workflow():
    import yaml
    from relayrag.mcp.workflow_tools import load_tool_spec
    text = (REPO / "workflows" / "rag.yaml").read_text()
    assert set(yaml.safe_load(text)) == {"main", "call_stage"}  # comments only: Cloud Workflows sees no change
    spec = load_tool_spec(REPO / "workflows" / "rag.yaml")
    assert spec.name == "rag" and [p.name for p in spec.params] == ["question", "collection", "arm", "filters"]


# -- auth ----------------------------------------------------------------------------------------------

def test_token_verifiers(home, monkeypatch):
    from fastmcp.server.auth.providers.jwt import RSAKeyPair
    from relayrag.settings import load_settings

    assert build_auth(load_settings()) is None  # nothing configured: `relayrag mcp --http` refuses to start
    keys = RSAKeyPair.generate()
    monkeypatch.setenv("RELAYRAG_MCP_TOKENS", "alpha, beta")
    monkeypatch.setenv("RELAYRAG_MCP_JWT_PUBLIC_KEY", keys.public_key)
    monkeypatch.setenv("RELAYRAG_MCP_JWT_ISSUER", "https://issuer.example")
    load_settings.cache_clear()
    v = build_auth(load_settings())

    async def go():
        return {
            "alpha": await v.verify_token("alpha"),
            "beta": await v.verify_token("beta"),
            "wrong": await v.verify_token("gamma"),
            "empty": await v.verify_token(""),
            "jwt": await v.verify_token(keys.create_token(issuer="https://issuer.example")),
            "jwt_other_issuer": await v.verify_token(keys.create_token(issuer="https://evil.example")),
            "jwt_expired": await v.verify_token(keys.create_token(issuer="https://issuer.example",
                                                                  expires_in_seconds=-60)),
        }
    r = run(go())
    assert r["alpha"].client_id == "static-token-1" and r["beta"].client_id == "static-token-2"
    assert r["wrong"] is None and r["empty"] is None
    assert r["jwt"] is not None and r["jwt_other_issuer"] is None and r["jwt_expired"] is None


def test_structured_results_are_plain_json(server, ingested):
    async def go():
        async with Client(server) as c:
            res = await c.call_tool_mcp("list_collections", {})
            return res
    res = run(go())
    text = res.content[0].text
    assert json.loads(text)["collections"][0]["name"] == "docs"
    assert res.structuredContent["count"] == 1


def test_tool_error_type_is_fastmcp_tool_error(server, ingested):
    async def go():
        async with Client(server) as c:
            await c.call_tool("get_run", {"run_id": "nope"})
    with pytest.raises(ToolError, match="unknown run_id"):
        run(go())


def test_an_unexpected_exception_is_a_tool_error_not_a_crash(server, small_corpus, monkeypatch):
    def broken(self, path, collection, on_progress=None):
        raise RuntimeError("disk on fire")
    monkeypatch.setattr(type(server.gateway), "ingest", broken)

    async def go():
        async with Client(server) as c:
            err = await call_error(c, "ingest", {"path": str(small_corpus), "collection": "docs"})
            return err, (await c.call_tool("list_collections", {})).data
    err, still = run(go())
    assert err == "internal error (RuntimeError): disk on fire" and still["count"] == 0


def test_symlinks_inside_ingest_roots_cannot_escape_them(home, wf_dir, small_corpus, tmp_path, monkeypatch):
    """Issue 10 item 11: a symlink inside RELAYRAG_MCP_INGEST_ROOTS pointing at /etc/passwd was ingested with its
    folder and `search` returned the passwd lines: the given path was resolved, the files under it were not."""
    from relayrag.settings import load_settings
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "passwd.txt").write_text("root:x:0:0:root:/root:/bin/bash\nsecretuser:x:1000\n", encoding="utf-8")
    (small_corpus / "passwd.txt").symlink_to(secret / "passwd.txt")
    (small_corpus / "etc").symlink_to(secret, target_is_directory=True)
    monkeypatch.setenv("RELAYRAG_MCP_INGEST_ROOTS", str(small_corpus))
    load_settings.cache_clear()
    (small_corpus / "bees-again.txt").symlink_to(small_corpus / "bees.txt")  # a link inside the root is fine

    async def go():
        async with Client(build_server(http=True)) as c:
            ing = await c.call_tool("ingest", {"path": str(small_corpus), "collection": "docs"})
            hits = await c.call_tool("search", {"query": "root secretuser bin bash", "collection": "docs"})
            direct = await c.call_tool("ingest", {"path": str(small_corpus / "passwd.txt"), "collection": "docs"},
                                       raise_on_error=False)
            return ing, hits, direct

    ing, hits, direct = run(go())
    assert ing.data["files"]["ingested"] == 5  # the four files and the in-root link
    refused = {Path(f["path"]).name: f["error"] for f in ing.data["failed"]}
    assert set(refused) == {"passwd.txt", "etc"} and all("outside the folders" in e for e in refused.values())
    assert not any("secretuser" in r["quote"] for r in hits.data["results"])
    assert direct.is_error and "outside the folders" in direct.content[0].text


def test_a_huge_argument_is_logged_as_a_size_and_a_prefix(caplog):
    """Issue 10 item 14: a rejected 1 MB argument was logged in full (~29k lines)."""
    import logging

    from relayrag.mcp.server import install_log_caps
    old = logging.getLogRecordFactory()
    try:
        install_log_caps()
        huge = ("y" * 30 + "\n") * 34000
        with caplog.at_level(logging.WARNING, logger="fastmcp.tools"):
            logging.getLogger("fastmcp.tools").warning("Error validating tool 'ask': %s", huge)
            try:
                raise ValueError(huge)
            except ValueError:
                logging.getLogger("relayrag.mcp").exception("unexpected")
            logging.getLogger("relayrag.mcp").warning("short message %s", "stays")
        texts = [r.getMessage() + (r.exc_text or "") for r in caplog.records]
        assert all(len(t) < 1000 and t.count("\n") == 0 for t in texts[:2]), [len(t) for t in texts]
        assert "1,054,029 characters in 34,001 lines; the rest not logged" in texts[0]
        assert texts[0].startswith("Error validating tool 'ask': yyyy")
        assert texts[2] == "short message stays"
    finally:
        logging.setLogRecordFactory(old)
        import relayrag.mcp.server as srv
        srv._capped_factory = False


def test_feedback_tool_records_one_verdict_per_run_and_user(server, ingested):
    from relayrag.context import default_context

    async def go():
        async with Client(server) as c:
            ans = (await c.call_tool("ask", {"question": "How many worker bees live in a colony?",
                                             "collection": "docs"})).data
            first = (await c.call_tool("feedback", {"run_id": ans["run_id"], "verdict": "up"})).data
            second = (await c.call_tool("feedback", {"run_id": ans["run_id"], "verdict": "down", "reason": "wrong",
                                                     "answer": "60,000", "doc": "bees.txt", "page": 1})).data
            errors = [await call_error(c, "feedback", {"run_id": "nope", "verdict": "up"}),
                      await call_error(c, "feedback", {"run_id": ans["run_id"], "verdict": "up", "reason": "wrong"}),
                      await call_error(c, "feedback", {"run_id": ans["run_id"], "verdict": "down", "page": 2})]
            return ans, first, second, errors
    ans, first, second, errors = run(go())
    assert first["replaced"] is False and second["replaced"] is True
    assert second["verdict"] == "down" and second["reason"] == "wrong" and second["collection"] == "docs"
    assert "no run 'nope'" in errors[0] and "goes with a 👎" in errors[1] and "needs the document" in errors[2]
    stored = default_context().docstore.list_feedback("docs")
    assert len(stored) == 1 and stored[0]["identity"].startswith("local:")  # stdio / in-process: the local user
