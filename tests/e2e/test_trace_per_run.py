"""One run, one trace (issue 30 item 2): the caller's `rag` span is the parent of one span per stage call,
across real process boundaries — every stage served by its own functions-framework process on 127.0.0.1,
the workflow YAML sending `traceparent` with each call, each process exporting its spans to stderr
(OTEL_TRACES_EXPORTER=console)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="opentelemetry-sdk is in the dev extra")

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from relayrag import tracing  # noqa: E402
from relayrag.ingest.pipeline import ingest  # noqa: E402
from tests.e2e.test_functions_http import FF, REPO, STAGES, free_port  # noqa: E402
from tests.emulators import wait_for_http  # noqa: E402


@pytest.fixture
def traced_servers(ctx, home, small_corpus, tmp_path):
    assert not ingest(ctx, small_corpus, "t").failed
    env = {**os.environ, "RELAYRAG_HOME": str(home), "HF_HUB_OFFLINE": "1", "OTEL_TRACES_EXPORTER": "console"}
    procs, urls, logs = [], {}, {}
    for stage in STAGES:
        port = free_port()
        logs[stage] = open(tmp_path / f"{stage}.stderr", "w+")
        procs.append(subprocess.Popen(
            [str(FF), "--source", str(REPO / "functions" / "main.py"), "--target", stage,
             "--host", "127.0.0.1", "--port", str(port)],
            env=env, stdout=subprocess.DEVNULL, stderr=logs[stage]))
        urls[stage] = f"http://127.0.0.1:{port}"
    for (stage, url), proc in zip(urls.items(), procs):
        try:
            wait_for_http(url, proc=proc, what=f"functions-framework for {stage}")
        except RuntimeError as exc:
            pytest.fail(str(exc))
    yield urls, logs
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=60)
    for f in logs.values():
        f.close()


def _spans(logs) -> list[dict]:
    out = []
    for f in logs.values():
        f.flush()
        for line in Path(f.name).read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("{") and '"trace_id"' in line:
                out.append(json.loads(line))
    return out


def test_one_run_yields_one_trace_with_a_span_per_stage(traced_servers, ctx, monkeypatch):
    from relayrag.engine.local import ask
    urls, logs = traced_servers
    exporter = InMemorySpanExporter()
    monkeypatch.setattr(tracing, "_provider", None)
    tracing.provider(exporter)
    try:
        result = ask("How many eggs does the queen lay per day?", "t", run_id="traced", urls=urls, ctx=ctx)
    finally:
        monkeypatch.setattr(tracing, "_provider", None)
    (root,) = [s for s in exporter.get_finished_spans() if s.name == "rag"]
    trace_id = f"0x{root.context.trace_id:032x}"
    root_id = f"0x{root.context.span_id:016x}"
    assert root.attributes["relayrag.run_id"] == "traced" and root.attributes["relayrag.collection"] == "t"
    stage_spans = [s for s in _spans(logs) if s["attributes"].get("relayrag.run_id") == "traced"]
    called = [s["name"] for s in result["stages"]]
    assert sorted(s["name"] for s in stage_spans) == sorted(called), (called, [s["name"] for s in stage_spans])
    assert {s["context"]["trace_id"] for s in stage_spans} == {trace_id}  # one trace
    assert {s["parent_id"] for s in stage_spans} == {root_id}               # each a child of the run's span
    by_name = {s["name"]: s["attributes"] for s in stage_spans}
    assert by_name["retrieve"]["relayrag.arm"] == result["arm"]
    assert by_name["classify"]["relayrag.route"] == "rag"
    assert all(a["http.response.status_code"] == 200 for a in by_name.values())


def test_tracing_off_sends_no_header_and_records_nothing(monkeypatch, ctx, small_corpus):
    """The default (OTEL_TRACES_EXPORTER unset): no provider, no traceparent in the workflow's calls."""
    from relayrag.engine.local import ask, local_transport
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    monkeypatch.setattr(tracing, "_provider", None)
    assert not ingest(ctx, small_corpus, "t").failed
    seen = []

    def transport(method, url, body, timeout, headers=None):
        seen.append(headers)
        return local_transport(method, url, body, timeout, headers=headers)
    ask("How many eggs does the queen lay per day?", "t", ctx=ctx, transport=transport)
    assert seen and all(h is None for h in seen) and tracing.provider() is None and tracing.traceparent() == ""

