"""The cloud engine (relayrag.engine.cloud; `relayrag ask --engine cloud`) against a test double of the
Workflows ExecutionsClient. The double records every request and executes the requested workflow the way
Cloud Workflows would, with the embedded engine over the same rag.yaml and stages, in a background thread;
so results, traces and errors are real ones, only the Workflows service is replaced."""

from __future__ import annotations

import json
import sys
import threading
import uuid

import pytest
from google.cloud.workflows.executions_v1 import Execution
from typer.testing import CliRunner

from relayrag.engine import cloud
from relayrag.engine.expr import WorkflowsRuntimeError
from relayrag.engine.local import ask as local_ask
from relayrag.engine.local import local_urls, run_workflow
from relayrag.errors import ConfigError, WorkflowError
from relayrag.ingest.pipeline import ingest

WORKFLOW = "projects/p/locations/us-central1/workflows/relayrag-rag"
Q = "How many worker bees live in a colony in summer?"


class FakeExecutionsClient:
    """Stands in for google.cloud.workflows.executions_v1.ExecutionsClient (create_execution, get_execution).

    The execution runs workflows/<NAME>.yaml (NAME = the workflow id) in a thread with the stage URLs the
    deployment would inject; it stays ACTIVE for at least `min_active_polls` polls. A raised workflow
    error becomes FAILED with the payload Cloud Workflows reports (the error map as JSON)."""

    def __init__(self, *, min_active_polls: int = 2, gate: threading.Event | None = None):
        self.requests: list[tuple[str, dict]] = []
        self.executions: dict[str, dict] = {}
        self.min_active_polls = min_active_polls
        self.gate = gate

    def create_execution(self, *, parent: str, execution: Execution) -> Execution:
        argument = json.loads(execution.argument)
        self.requests.append(("create_execution", {"parent": parent, "argument": argument}))
        name = f"{parent}/executions/{uuid.uuid4()}"
        rec = {"polls": 0, "value": None, "error": None, "done": threading.Event()}
        self.executions[name] = rec
        workflow = parent.rsplit("/", 1)[-1].removeprefix("relayrag-")

        def execute():
            try:
                if self.gate:
                    self.gate.wait(10)
                rec["value"] = run_workflow(workflow, {**argument, "urls": local_urls()})
            except WorkflowsRuntimeError as exc:
                rec["error"] = exc.payload
            finally:
                rec["done"].set()
        threading.Thread(target=execute, daemon=True).start()
        return Execution(name=name, state=Execution.State.ACTIVE, argument=execution.argument)

    def get_execution(self, *, name: str) -> Execution:
        self.requests.append(("get_execution", {"name": name}))
        rec = self.executions[name]
        rec["polls"] += 1
        if rec["polls"] < self.min_active_polls or not rec["done"].is_set():
            return Execution(name=name, state=Execution.State.ACTIVE)
        if rec["error"] is not None:
            return Execution(name=name, state=Execution.State.FAILED,
                             error=Execution.Error(payload=json.dumps(rec["error"]),
                                                   context="RuntimeError: in step \"call_stage\""))
        return Execution(name=name, state=Execution.State.SUCCEEDED, result=json.dumps(rec["value"]))


@pytest.fixture
def ingested(ctx, small_corpus, embedder):
    ctx._embedder = embedder
    ingest(ctx, small_corpus, "docs")
    return ctx


def no_sleep(s: float) -> None:
    pass


def test_cloud_ask_returns_what_the_embedded_engine_returns(ingested):
    client = FakeExecutionsClient()
    events, states = [], []
    res = cloud.ask(Q, "docs", arm="hybrid", client=client, workflow=WORKFLOW, on_event=events.append,
                    on_state=lambda s, t: states.append(s), ctx=ingested)
    kind, create = client.requests[0]
    assert kind == "create_execution" and create["parent"] == WORKFLOW
    assert create["argument"] == {"question": Q, "collection": "docs", "run_id": res["run_id"], "arm": "hybrid"}
    assert [k for k, _ in client.requests[1:]] == ["get_execution"] * (len(client.requests) - 1)
    assert len(client.requests) >= 3 and states == ["ACTIVE", "SUCCEEDED"]
    emb = local_ask(Q, "docs", arm="hybrid", ctx=ingested)
    same = ("question", "collection", "route", "answer", "citations", "arm", "grounded", "refused", "found")
    assert {k: res[k] for k in same} == {k: emb[k] for k in same}
    assert "60,000" in res["answer"] and res["citations"][0]["doc"] == "bees.txt"
    assert [s["name"] for s in res["stages"]] == [s["name"] for s in emb["stages"]]
    # stage events came from the run's trace in the docstore, one per stage, in order
    assert [e["step"] for e in events] == [s["name"] for s in res["stages"]]
    assert all(e["event"] == "step" and e["result"]["method"] for e in events)


def test_polling_backs_off_and_times_out_with_the_execution_name(ingested):
    gate = threading.Event()  # the execution never gets to run
    client = FakeExecutionsClient(gate=gate)
    slept: list[float] = []
    clock = [0.0]

    def fake_sleep(s):
        slept.append(s)
        clock[0] += s

    with pytest.raises(cloud.ExecutionTimeout, match=r"executions/.* still ACTIVE after 20 s; it keeps running"):
        cloud.ask(Q, "docs", client=client, workflow=WORKFLOW, ctx=ingested, timeout_s=20, sleep=fake_sleep,
                  clock=lambda: clock[0])
    gate.set()
    assert slept[:4] == [0.5, 0.75, 1.125, 1.6875] and max(slept) == 5.0 and sum(slept) == pytest.approx(20.0)


def test_failed_execution_is_a_clear_error_with_the_stage_message(ingested):
    client = FakeExecutionsClient()
    with pytest.raises(WorkflowError) as info:
        cloud.ask(Q, "nosuch", client=client, workflow=WORKFLOW, ctx=ingested, sleep=no_sleep)
    msg = str(info.value)
    assert "executions/" in msg and "failed" in msg and "classify:" in msg and "nosuch" in msg and "HTTP 404" in msg


def test_cancelled_and_unavailable_executions(ingested):
    class Cancelling(FakeExecutionsClient):
        def get_execution(self, *, name):
            self.requests.append(("get_execution", {"name": name}))
            return Execution(name=name, state=Execution.State.CANCELLED)

    with pytest.raises(WorkflowError, match=r"executions/.* was cancelled"):
        cloud.run_execution(WORKFLOW, {"question": Q}, client=Cancelling(), sleep=no_sleep)

    class Unavailable(FakeExecutionsClient):
        def get_execution(self, *, name):
            return Execution(name=name, state=Execution.State.UNAVAILABLE,
                             error=Execution.Error(payload='{"message": "execution data expired", "tags": ["X"]}'))

    with pytest.raises(WorkflowError, match=r"unavailable: execution data expired \[X\]"):
        cloud.run_execution(WORKFLOW, {"question": Q}, client=Unavailable(), sleep=no_sleep)


def test_a_run_missing_from_this_docstore_says_which_docstore_to_use(ingested, tmp_path):
    from relayrag.backends.docstore import SQLiteDocStore
    from relayrag.context import StageContext
    other = StageContext(ingested.settings, ingested.blobstore, SQLiteDocStore(tmp_path / "elsewhere.sqlite3"))
    with pytest.raises(WorkflowError, match="not in this docstore .*RELAYRAG_DOCSTORE=sqlite.*Firestore"):
        cloud.ask(Q, "docs", client=FakeExecutionsClient(), workflow=WORKFLOW, ctx=other, sleep=no_sleep)


def test_configuration_errors(ingested, monkeypatch):
    with pytest.raises(ConfigError, match="RELAYRAG_WORKFLOW is not set.*projects/PROJECT/locations/REGION"):
        cloud.ask(Q, "docs", ctx=ingested, client=FakeExecutionsClient())
    with pytest.raises(ConfigError, match="not a workflow resource name"):
        cloud.ask(Q, "docs", ctx=ingested, workflow="relayrag-rag", client=FakeExecutionsClient())
    monkeypatch.setitem(sys.modules, "google.cloud.workflows", None)  # as if not installed
    with pytest.raises(ConfigError, match=r"pip install 'relayrag\[gcp\]'"):
        cloud.ask(Q, "docs", ctx=ingested, workflow=WORKFLOW)


# -- the CLI -------------------------------------------------------------------------------------------

@pytest.fixture
def cli_client(ingested, monkeypatch):
    client = FakeExecutionsClient()
    monkeypatch.setattr(cloud, "executions_client", lambda: client)
    monkeypatch.setenv("RELAYRAG_WORKFLOW", WORKFLOW)
    monkeypatch.setattr(cloud, "POLL_INITIAL_S", 0.01)
    monkeypatch.setattr(cloud, "POLL_MAX_S", 0.05)
    ingested.settings.workflow = WORKFLOW  # the process-wide context was built before the env was set
    return client


def test_cli_ask_engine_cloud(cli_client):
    from relayrag.cli import app
    r = CliRunner().invoke(app, ["ask", Q, "-c", "docs", "--engine", "cloud", "--json", "--arm", "bm25"])
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    assert res["route"] == "rag" and "60,000" in res["answer"] and res["arm"] == "bm25"
    assert "execution active" in r.stderr and "execution succeeded" in r.stderr and "classify done" in r.stderr
    assert cli_client.requests[0][1]["argument"]["arm"] == "bm25"


def test_cli_ask_engine_cloud_streams_stage_events(cli_client, monkeypatch):
    from relayrag.cli import app
    from relayrag.settings import load_settings
    monkeypatch.setenv("RELAYRAG_ENGINE", "cloud")  # the environment selects the engine too
    load_settings.cache_clear()
    r = CliRunner().invoke(app, ["ask", Q, "-c", "docs", "--stream"])
    assert r.exit_code == 0, r.output
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["name"] for e in events[:-1]] == ["classify", "hyde", "retrieve", "rerank", "grade", "generate",
                                               "hallucination_check"]
    assert events[-1]["event"] == "result" and "60,000" in events[-1]["answer"]
    assert cli_client.requests[0][0] == "create_execution"


def test_cli_cloud_failure_is_exit_2_with_the_error(cli_client):
    from relayrag.cli import app
    r = CliRunner().invoke(app, ["ask", Q, "-c", "nosuch", "--engine", "cloud"])
    assert r.exit_code == 2 and "error:" in r.stderr and "classify:" in r.stderr and "nosuch" in r.stderr


# -- the MCP gateway's cloud engine --------------------------------------------------------------------

def test_mcp_gateway_cloud_engine_runs_ask_and_rag_as_executions(cli_client):
    import asyncio

    from fastmcp import Client

    from relayrag.mcp.server import build_server
    srv = build_server(engine="cloud")
    progress: list[str] = []

    async def on_progress(done, total, message):
        progress.append(message)

    async def go():
        async with Client(srv, progress_handler=on_progress) as c:
            a = (await c.call_tool("ask", {"question": Q, "collection": "docs", "arm": "bm25"})).data
            r = (await c.call_tool("rag", {"question": Q, "collection": "docs", "arm": "bm25"})).data
            return a, r
    a, r = asyncio.run(go())
    assert "60,000" in a["answer"] and a["citations"][0]["doc"] == "bees.txt"
    assert r["result"] == {"run_id": r["run_id"], "route": "rag"} and "60,000" in r["run"]["answer"]
    creates = [req for kind, req in cli_client.requests if kind == "create_execution"]
    assert len(creates) == 2 and all(c["parent"] == WORKFLOW and "urls" not in c["argument"] for c in creates)
    assert creates[1]["argument"]["run_id"] == r["run_id"]
    assert sum(m.startswith("classify done") for m in progress) == 2  # stage progress from the trace, per run
