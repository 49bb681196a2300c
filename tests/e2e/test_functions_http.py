"""Every stage served by functions-framework on 127.0.0.1, answering JSON POSTs; the workflow YAML run over
real HTTP hops gives the same answer as the embedded engine."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from relayrag.ingest.pipeline import ingest
from tests.emulators import wait_for_http

REPO = Path(__file__).resolve().parents[2]
FF = Path(sys.executable).parent / "functions-framework"
STAGES = ["classify", "hyde", "retrieve", "colpali_search", "rerank", "grade", "generate", "hallucination_check", "sql"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def servers(ctx, home, small_corpus):
    assert not ingest(ctx, small_corpus, "t").failed
    env = {**os.environ, "RELAYRAG_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    procs, urls = [], {}
    for stage in STAGES:
        port = free_port()
        procs.append(subprocess.Popen(
            [str(FF), "--source", str(REPO / "functions" / "main.py"), "--target", stage,
             "--host", "127.0.0.1", "--port", str(port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        urls[stage] = f"http://127.0.0.1:{port}"
    for (stage, url), proc in zip(urls.items(), procs):
        try:  # readiness per server, up to 60 s each (a loaded machine starts them slowly)
            wait_for_http(url, proc=proc, what=f"functions-framework for {stage}")
        except RuntimeError as exc:
            pytest.fail(str(exc))
    yield urls
    for p in procs:
        p.terminate()
    for p in procs:  # generous: a loaded machine takes a while to stop 8 Python servers; then kill
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=60)


def test_each_stage_answers_json_post(servers):
    out = httpx.post(servers["classify"], json={"run_id": "h1", "question": "How many eggs does the queen lay?",
                                                "collection": "t"}, timeout=60)
    assert out.status_code == 200 and out.json()["route"] == "rag"
    for stage in STAGES[1:]:
        r = httpx.post(servers[stage], json={"run_id": "h1"}, timeout=60)
        assert r.status_code == 200, (stage, r.text)
        assert r.headers["content-type"].startswith("application/json") and r.json()["run_id"] == "h1"
    bad = httpx.post(servers["retrieve"], content=b"not json", headers={"content-type": "application/json"})
    assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]
    assert httpx.get(servers["grade"]).status_code == 405


def test_workflow_over_http_equals_embedded(servers, ctx):
    from relayrag.engine.local import ask
    q = "How many eggs does the queen lay per day?"
    over_http = ask(q, "t", run_id="via-http", urls=servers, arm="hybrid", ctx=ctx)
    embedded = ask(q, "t", run_id="embedded", arm="hybrid", ctx=ctx)
    assert over_http["answer"] == embedded["answer"] and over_http["citations"] == embedded["citations"]
    assert [s["name"] for s in over_http["stages"]] == [s["name"] for s in embedded["stages"]]


def test_visual_route_over_http_equals_embedded(servers, ctx):
    """A visual question in a collection without page vectors: colpali_search answers route `text` with the
    reason, over a real HTTP hop as in-process, and both engines answer the same from text."""
    from relayrag.engine.local import ask
    q = "Which figure shows the waggle dance of honey bees?"
    over_http = ask(q, "t", run_id="visual-http", urls=servers, arm="hybrid", ctx=ctx)
    embedded = ask(q, "t", run_id="visual-embedded", arm="hybrid", ctx=ctx)
    assert over_http["route"] == embedded["route"] == "visual"
    names = [s["name"] for s in over_http["stages"]]
    assert names == [s["name"] for s in embedded["stages"]] and names[:3] == ["classify", "colpali_search", "hyde"]
    assert over_http["page_search"] == embedded["page_search"] and over_http["page_search"]["status"] == "off"
    assert over_http["answer"] == embedded["answer"] and over_http["citations"] == embedded["citations"]
