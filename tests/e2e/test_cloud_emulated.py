"""The emulated cloud, end to end (issue 3 item 5; also `nox -s cloud_emulated`).

Upload a PDF to the emulated documents bucket with the real storage client → the finalize CloudEvent GCS
would emit reaches `ingest_object` over HTTP (functions-framework) → the index lands in GCS and Firestore
emulators → `relayrag.engine.cloud.ask` starts an execution through the real ExecutionsClient (gRPC) →
workflows-emulator runs workflows/rag.yaml, calling every stage over HTTP → the answer cites the PDF and
equals the embedded engine's (local folder + SQLite, in-process) for the same question → deleting the
object and sending the deleted event removes it; a corrupt PDF is dead-lettered in Firestore and published
once to the Pub/Sub emulator's dead-letter topic, a redelivery publishes nothing. The machinery is in
tests/e2e/emulated_cloud.py; the test skips, saying why, where gcloud, Java or the emulator packages are
missing.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from relayrag.backends.blobstore import LocalBlobStore
from relayrag.backends.docstore import SQLiteDocStore
from relayrag.context import StageContext
from relayrag.engine import cloud as cloud_engine
from relayrag.engine.local import ask as local_ask
from relayrag.ingest.events import DELETED, FINALIZED
from relayrag.ingest.pipeline import ingest
from relayrag.ingest.snapshot import read_chunks
from relayrag.settings import Settings
from tests.conftest import EXAMPLES
from tests.e2e.emulated_cloud import (DEAD_LETTER_SUBSCRIPTION, DEAD_LETTER_TOPIC, DOCS_BUCKET, Unavailable,
                                      emulated_cloud, post_event, storage_event)
from tests.emulators import pull_messages

PDF = "amt_handbook_sample.pdf"
QUESTION = "What are the two general types of self-locking nuts?"
ARM = "hybrid"  # forced: the bandit's draw is random, and both engines must take the same path


@pytest.fixture(scope="module")
def ecloud(tmp_path_factory):
    try:
        with emulated_cloud(tmp_path_factory.mktemp("emulated-cloud")) as c:
            yield c
    except Unavailable as exc:
        if os.environ.get("RELAYRAG_REQUIRE_EMULATED_CLOUD"):  # nox -s cloud_emulated: must run
            pytest.fail(f"emulated cloud unavailable: {exc}")
        pytest.skip(f"emulated cloud unavailable: {exc}")


def embedded_answer(tmp_path, embedder, question: str = QUESTION, collection: str = "kb") -> dict:
    """The embedded default: the same PDF ingested from a local folder into SQLite, asked in-process."""
    s = Settings(home=tmp_path / "embedded")
    ctx = StageContext(s, LocalBlobStore(s.home / "blobs"), SQLiteDocStore(s.home / "relayrag.sqlite3"),
                       embedder=embedder, llm_configured=False)
    folder = tmp_path / "pdf"
    folder.mkdir()
    shutil.copy(EXAMPLES / "pdfs" / PDF, folder / PDF)
    assert not ingest(ctx, folder, collection).failed
    from relayrag.context import set_default_context
    set_default_context(ctx)  # local:// stages use the process-wide context
    try:
        return local_ask(question, collection, arm=ARM, ctx=ctx)
    finally:
        set_default_context(None)


def comparable(res: dict) -> dict:
    """What must agree between engines (chunk ids embed the source key, gs://... vs a local path)."""
    return {"route": res["route"], "answer": res["answer"], "grounded": res["grounded"], "refused": res["refused"],
            "arm": res["arm"], "citations": [(c["doc"], c["page"], c["quote"]) for c in res["citations"]],
            "stages": [s["name"] for s in res["stages"]]}


def test_upload_ingest_ask_delete_through_the_emulated_cloud(ecloud, tmp_path, embedder):
    ctx = ecloud.context()
    bucket = ecloud.storage().bucket(DOCS_BUCKET)
    blob = bucket.blob(f"kb/manuals/{PDF}")
    blob.upload_from_filename(str(EXAMPLES / "pdfs" / PDF), content_type="application/pdf")
    blob.reload()
    key = f"gs://{DOCS_BUCKET}/kb/manuals/{PDF}"

    # upload -> finalize event -> ingest_object (HTTP)
    finalize = storage_event(FINALIZED, blob)
    r = post_event(ecloud.ingest_url, finalize)
    assert r.status_code == 200, ecloud.log_tail("ff-ingest_object")
    rec = ctx.docstore.get_file("kb", key)
    assert rec is not None and rec["generation"] == str(blob.generation) and rec["name"] == PDF
    version = ctx.docstore.get_collection("kb")["current_version"]
    assert {c["source"] for c in read_chunks(ctx.blobstore, "kb", version)} == {key}

    # the same event again changes nothing
    assert post_event(ecloud.ingest_url, finalize).status_code == 200
    assert ctx.docstore.get_collection("kb")["current_version"] == version

    # ask through the Executions API -> workflows-emulator -> every stage over HTTP
    events, states = [], []
    res = cloud_engine.ask(QUESTION, "kb", arm=ARM, ctx=ctx, client=ecloud.executions_client(),
                           workflow=ecloud.workflow, on_event=events.append,
                           on_state=lambda s, t: states.append(s), timeout_s=120)
    assert states[0] == "ACTIVE" and states[-1] == "SUCCEEDED", ecloud.log_tail("workflows-emulator")
    assert res["citations"] and res["citations"][0]["doc"] == PDF and "self-locking" in res["answer"]
    assert [e["step"] for e in events] == [s["name"] for s in res["stages"]]
    # ... and it equals the embedded engine's answer for the same question
    assert comparable(res) == comparable(embedded_answer(tmp_path, embedder))

    # delete the object -> deleted event -> the source is gone
    deleted = storage_event(DELETED, blob)
    blob.delete()
    assert post_event(ecloud.ingest_url, deleted).status_code == 200
    assert ctx.docstore.get_file("kb", key) is None
    version = ctx.docstore.get_collection("kb")["current_version"]
    assert read_chunks(ctx.blobstore, "kb", version) == []
    after = cloud_engine.ask(QUESTION, "kb", arm=ARM, ctx=ctx, client=ecloud.executions_client(),
                             workflow=ecloud.workflow, timeout_s=120)
    assert after["citations"] == []
    # a late redelivery of the finalize finds that generation gone: still nothing indexed
    assert post_event(ecloud.ingest_url, finalize).status_code == 200
    assert ctx.docstore.get_file("kb", key) is None


def test_visual_route_through_the_emulated_cloud_equals_the_embedded_engine(ecloud, tmp_path, embedder):
    """Issue 11: a visual question runs colpali_search through workflows-emulator and functions-framework; the
    cloud ingest renders page images into the emulated bucket but has no page vectors (no colpali stack in that
    function), so the stage answers `text` with the reason and both engines give the same answer, citing a page
    whose image is in the bucket."""
    ctx = ecloud.context()
    bucket = ecloud.storage().bucket(DOCS_BUCKET)
    blob = bucket.blob(f"vis/{PDF}")
    blob.upload_from_filename(str(EXAMPLES / "pdfs" / PDF), content_type="application/pdf")
    blob.reload()
    assert post_event(ecloud.ingest_url, storage_event(FINALIZED, blob)).status_code == 200
    question = "Which figure shows self-locking nuts?"
    res = cloud_engine.ask(question, "vis", arm=ARM, ctx=ctx, client=ecloud.executions_client(),
                           workflow=ecloud.workflow, timeout_s=120)
    assert res["route"] == "visual" and [s["name"] for s in res["stages"]][:3] == ["classify", "colpali_search", "hyde"]
    # no page-image model is configured in the cloud functions (issue 26: a real model or none), so the stage
    # reads nothing and says so; before issue 26 it loaded the snapshot and found no page vectors
    assert res["page_search"]["status"] == "off" and "no model configured" in res["page_search"]["reason"]
    assert res["citations"] and res["citations"][0]["image"].startswith("gs://")
    key = res["citations"][0]["image"].split("/", 3)[3]
    assert ctx.blobstore.get_bytes(key).startswith(b"\x89PNG")
    local = embedded_answer(tmp_path, embedder, question=question, collection="vis")
    assert comparable(res) == comparable(local) and res["page_search"] == local["page_search"]


CHINOOK = EXAMPLES / "chinook"
SQL_QUESTION = "Which three countries have the most customers?"


def test_sql_route_through_the_emulated_cloud_equals_the_embedded_engine(ecloud, tmp_path, embedder):
    """Issue 29: a warehouse question through rag.yaml on workflows-emulator: classify (no LLM) routes it to `sql`
    (the collection's only source is its warehouse), the sql function answers it with the verified query of the
    collection's SQL config, which it reads from the bucket as deployed (sql-config/, relayrag.sql.config), and
    the answer, rows and SQL equal the embedded engine's. The emulated cloud has no BigQuery: the warehouse is the
    embedded DuckDB one, loaded into the functions' RELAYRAG_HOME (one machine here; a deployed function's is the
    dataset RELAYRAG_BIGQUERY_DATASET names); the query still runs in the sql function's own process (its DuckDB
    worker, sqlglot's translation, the guard), from its own bundle under the deploy rehearsal."""
    from relayrag.context import set_default_context
    from relayrag.sql.warehouse import load_warehouse

    ctx = ecloud.context()
    load_warehouse(ecloud.functions_home(), "chinook", [CHINOOK / "chinook.sqlite"],
                   config=CHINOOK / "relayrag.sql.yaml", configs=ctx.sql_configs)
    assert ctx.sql_configs.exists("chinook")  # in the bucket, where the deployed functions read it
    res = cloud_engine.ask(SQL_QUESTION, "chinook", ctx=ctx, client=ecloud.executions_client(),
                           workflow=ecloud.workflow, timeout_s=120)
    assert res["route"] == "sql" and [s["name"] for s in res["stages"]] == ["classify", "sql"], \
        ecloud.log_tail("ff-sql")
    assert res["stages"][-1]["method"] == "verified" and "verified query" in res["answer"]
    assert res["rows"] == [["USA", 13], ["Canada", 8], ["Brazil", 5]]
    assert res["sql"].startswith("SELECT Country, COUNT(*) AS customers FROM Customer")

    s = Settings(home=tmp_path / "embedded")
    local = StageContext(s, LocalBlobStore(s.home / "blobs"), SQLiteDocStore(s.home / "relayrag.sqlite3"),
                         embedder=embedder, llm_configured=False)
    load_warehouse(s.home, "chinook", [CHINOOK / "chinook.sqlite"], config=CHINOOK / "relayrag.sql.yaml")
    set_default_context(local)
    try:
        emb = local_ask(SQL_QUESTION, "chinook", ctx=local)
    finally:
        set_default_context(None)
    assert comparable(res) == comparable(emb) and (res["rows"], res["sql"]) == (emb["rows"], emb["sql"])


def test_a_corrupt_upload_is_dead_lettered_and_answered_200(ecloud):
    ctx = ecloud.context()
    blob = ecloud.storage().bucket(DOCS_BUCKET).blob("kb/broken.pdf")
    blob.upload_from_string(b"%PDF-1.7\n1 0 obj << /Type /Catalog", content_type="application/pdf")
    blob.reload()
    finalize = storage_event(FINALIZED, blob)
    r = post_event(ecloud.ingest_url, finalize)
    assert r.status_code == 200, ecloud.log_tail("ff-ingest_object")  # no Eventarc retry for a poison object
    key = f"gs://{DOCS_BUCKET}/kb/broken.pdf"
    dl = ctx.docstore.get_dead_letter("kb", key)
    assert dl is not None and "corrupt" in dl["error"] and dl["generation"] == str(blob.generation)
    if ecloud.pubsub_missing:
        if os.environ.get("RELAYRAG_REQUIRE_EMULATED_CLOUD"):
            pytest.fail(f"Pub/Sub emulator unavailable: {ecloud.pubsub_missing}")
        pytest.skip(f"dead letter recorded; its Pub/Sub half needs the emulator: {ecloud.pubsub_missing}")

    # ... and published once to the dead-letter topic, by ingest_object's own PublisherClient
    assert dl["published"] is True and dl["topic"] == DEAD_LETTER_TOPIC
    got = pull_messages(DEAD_LETTER_SUBSCRIPTION, timeout_s=10)
    assert len(got) == 1, got
    body = json.loads(got[0]["data"])
    assert got[0]["attributes"] == {"collection": "kb", "source": key, "kind": "unreadable"}
    assert body["path"] == key and body["generation"] == str(blob.generation) and "corrupt" in body["error"]
    assert body["event"]["id"] == finalize["id"] and body["event"]["data"]["bucket"] == DOCS_BUCKET

    # Eventarc redelivers the same event: answered 200 again, nothing more published
    assert post_event(ecloud.ingest_url, finalize).status_code == 200
    assert pull_messages(DEAD_LETTER_SUBSCRIPTION, timeout_s=3) == []


def test_a_failing_stage_fails_the_execution_with_its_message(ecloud):
    ctx = ecloud.context()
    with pytest.raises(cloud_engine.WorkflowError, match=r"failed: classify: unknown collection 'nosuch'"):
        cloud_engine.ask(QUESTION, "nosuch", ctx=ctx, client=ecloud.executions_client(), workflow=ecloud.workflow,
                         timeout_s=60)


def test_dashboard_ask_runs_a_workflow_execution_and_shows_the_embedded_answer(ecloud, tmp_path, embedder,
                                                                                monkeypatch):
    """The dashboard with RELAYRAG_ENGINE=cloud: its Ask page starts an execution through the Executions API
    (workflows-emulator), streams the stages from the run's trace in Firestore, and shows the same answer
    and citations as the embedded engine."""
    import re

    from starlette.testclient import TestClient

    from relayrag.context import set_default_context
    from relayrag.dashboard.app import create_app
    from relayrag.settings import load_settings
    from tests.unit.dashboard.conftest import job_url, read_sse

    ctx = ecloud.context()
    blob = ecloud.storage().bucket(DOCS_BUCKET).blob(f"dash/{PDF}")
    blob.upload_from_filename(str(EXAMPLES / "pdfs" / PDF), content_type="application/pdf")
    blob.reload()
    assert post_event(ecloud.ingest_url, storage_event(FINALIZED, blob)).status_code == 200
    expected = embedded_answer(tmp_path, embedder)

    monkeypatch.setenv("RELAYRAG_ENGINE", "cloud")
    load_settings.cache_clear()
    monkeypatch.setattr(cloud_engine, "executions_client", ecloud.executions_client)
    set_default_context(ctx)
    try:
        with TestClient(create_app(tokens=["t"]), headers={"Authorization": "Bearer t"}) as api:
            assert "engine cloud" in api.get("/ask").text
            r = api.post("/ask", data={"question": QUESTION, "collection": "dash", "arm": ARM})
            events = read_sse(api, job_url(r.text))
            stages = [re.search(r'data-stage="([a-z_]+)"', d).group(1) for e, d in events if e == "stage"]
            result = events[-2][1]
            run_id = re.search(r'data-run="([0-9a-f]+)"', result).group(1)
            shown = api.get(f"/api/runs/{run_id}").json()["result"]
    finally:
        set_default_context(None)
        load_settings.cache_clear()
    assert stages == [s["name"] for s in expected["stages"]], ecloud.log_tail("workflows-emulator")
    assert comparable(shown) == comparable(expected)
    assert f"{PDF}, page {expected['citations'][0]['page']}" in result


def test_the_rendered_workflow_ignores_a_hostile_urls_argument(ecloud, tmp_path):
    """Issue 10 item 2, on the emulator: the YAML infra/ deploys (catalog.deployable_workflow_source; its OIDC
    `auth` blocks are dropped here only because workflows-emulator cannot mint identity tokens) is executed
    with an argument whose `urls` point every stage at a trap server. No request reaches the trap; classify at
    the deployment's URL answers (404 for the unknown collection), which fails the execution."""
    import http.server
    import sys
    import threading

    import yaml

    from tests.e2e.emulated_cloud import emulator_python, free_port, port_open, wait_for
    sys.path.insert(0, str(EXAMPLES.parent / "infra"))
    from relayrag_infra import catalog

    trapped = []

    class Trap(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            trapped.append((self.path, dict(self.headers)))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"route": "rag"}')

        def log_message(self, *a):
            pass

    trap = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trap)
    threading.Thread(target=trap.serve_forever, daemon=True).start()
    rendered = yaml.safe_load(catalog.deployable_workflow_source())
    for _, _, body in catalog.workflow_steps(rendered):
        (body.get("args") or {}).pop("auth", None)
    source = tmp_path / "rendered.yaml"
    source.write_text(yaml.safe_dump(rendered, sort_keys=False), encoding="utf-8")
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("RELAYRAG_", "PYTHON"))},
           "RELAYRAG_STAGE_URLS": json.dumps(ecloud.stage_urls)}
    proc, log = ecloud._spawn("workflows-emulator-rendered", [str(emulator_python()), str(EXAMPLES.parent / "tests" / "e2e" /
                              "workflows_emulator_server.py"), "--source", str(source), "--port", str(port)], env)
    wait_for(lambda: port_open(port), "workflows-emulator (rendered YAML)", 60, proc, log)
    import grpc
    from google.cloud.workflows.executions_v1 import ExecutionsClient
    from google.cloud.workflows.executions_v1.services.executions.transports import ExecutionsGrpcTransport
    client = ExecutionsClient(transport=ExecutionsGrpcTransport(channel=grpc.insecure_channel(f"127.0.0.1:{port}")))
    hostile = {s: f"http://127.0.0.1:{trap.server_address[1]}/{s}" for s in catalog.called_stages(rendered)}
    argument = {"question": QUESTION, "collection": "nosuch-hostile", "run_id": "hostile-1", "arm": "",
                "urls": hostile}
    try:
        with pytest.raises(cloud_engine.WorkflowError, match=r"classify: unknown collection 'nosuch-hostile'"):
            cloud_engine.run_execution(ecloud.workflow, argument, client=client, timeout_s=60)
    finally:
        trap.shutdown()
    assert trapped == []


def test_object_metadata_and_filters_through_the_emulated_cloud(ecloud, tmp_path, embedder):
    """Issue 14 on the emulated cloud: the collection schema stored in the index bucket, document metadata from
    each object's custom metadata (x-goog-meta-*), a re-upload with other metadata re-writes the chunks without
    embedding (same chunk ids), and filters given to the Executions API reach retrieve through rag.yaml on
    workflows-emulator with the same answers as the embedded engine's."""
    from relayrag.context import set_default_context

    policies = EXAMPLES / "policies"
    ctx = ecloud.context()
    ctx.schemas.put("pol", (policies / "relayrag.collection.yaml").read_bytes())
    bucket = ecloud.storage().bucket(DOCS_BUCKET)
    rows = {r["document_path"]: r for r in map(json.loads, (policies / "manifest.jsonl").read_text().splitlines())}

    def upload(name: str, meta: dict):
        blob = bucket.blob(f"pol/{name}")
        blob.metadata = {k: ",".join(v) if isinstance(v, list) else str(v).lower() if isinstance(v, bool) else str(v)
                         for k, v in meta.items() if k != "document_path"}
        blob.upload_from_filename(str(policies / name), content_type="text/markdown")
        blob.reload()
        r = post_event(ecloud.ingest_url, storage_event(FINALIZED, blob))
        assert r.status_code == 200, ecloud.log_tail("ff-ingest_object")
        return blob

    for name, meta in rows.items():
        upload(name, meta)
    key = f"gs://{DOCS_BUCKET}/pol/travel-policy-2019.md"
    rec = ctx.docstore.get_file("pol", key)
    assert rec["metadata"]["valid_until"] == "2021-12-31" and rec["metadata"]["tags"] == ["travel"]
    assert rec["metadata"]["review_cycle_months"] == 24

    # metadata that does not fit the schema: a dead letter, nothing indexed
    bad = upload("remote-work-policy.md", {**rows["remote-work-policy.md"], "department": "Legal"})
    dl = ctx.docstore.get_dead_letter("pol", f"gs://{DOCS_BUCKET}/pol/remote-work-policy.md")
    assert dl is not None and dl["kind"] == "metadata" and "'Legal' is not one of" in dl["error"]
    assert dl["generation"] == str(bad.generation)
    upload("remote-work-policy.md", rows["remote-work-policy.md"])  # the valid upload after it ingests

    # same bytes, other metadata: chunks re-written, nothing embedded, same chunk ids
    version = ctx.docstore.get_collection("pol")["current_version"]
    ids = [c["chunk_id"] for c in read_chunks(ctx.blobstore, "pol", version)]
    blob = upload("travel-policy-2019.md", {**rows["travel-policy-2019.md"], "department": "HR"})
    out = post_event(ecloud.ingest_url, storage_event(FINALIZED, blob))  # a redelivery changes nothing more
    assert out.status_code == 200
    after = ctx.docstore.get_collection("pol")["current_version"]
    chunks = read_chunks(ctx.blobstore, "pol", after)
    # same ids; under segments the updated document's rows move to the new segment, so compare them unordered
    assert after != version and sorted(c["chunk_id"] for c in chunks) == sorted(ids)
    assert {c["doc"]: c["meta"]["department"] for c in chunks}["travel-policy-2019.md"] == "HR"
    assert ctx.docstore.get_file("pol", key)["generation"] == str(blob.generation)
    upload("travel-policy-2019.md", rows["travel-policy-2019.md"])

    # filters through the Executions API -> workflows-emulator -> rag.yaml -> classify/retrieve over HTTP
    question = "What is the daily meal allowance for business travel?"

    def cloud(filters):
        return cloud_engine.ask(question, "pol", arm=ARM, ctx=ctx, client=ecloud.executions_client(),
                                workflow=ecloud.workflow, timeout_s=120, filters=filters)

    default, included = cloud(None), cloud(["include_expired=true", "department=Finance"])
    assert "travel-policy-2019.md" not in [c["doc"] for c in default["citations"]], ecloud.log_tail("workflows-emulator")
    assert [c["doc"] for c in included["citations"]] == ["travel-policy-2019.md"]
    assert included["citations"][0]["validity"] == "expired" and included["filters"] == ["include_expired=true",
                                                                                           "department=Finance"]
    with pytest.raises(cloud_engine.WorkflowError, match=r"classify: unknown filter field 'colour'"):
        cloud(["colour=red"])

    # ... the same as the embedded engine's with the manifest
    from relayrag.backends.blobstore import LocalBlobStore
    from relayrag.backends.docstore import SQLiteDocStore
    from relayrag.context import StageContext
    s = Settings(home=tmp_path / "embedded")
    local = StageContext(s, LocalBlobStore(s.home / "blobs"), SQLiteDocStore(s.home / "relayrag.sqlite3"),
                         embedder=embedder, llm_configured=False)
    assert not ingest(local, policies, "pol", manifest=policies / "manifest.jsonl",
                      schema=policies / "relayrag.collection.yaml").failed
    set_default_context(local)
    try:
        for filters, res in ((None, default), (["include_expired=true", "department=Finance"], included)):
            emb = local_ask(question, "pol", arm=ARM, ctx=local, filters=filters)
            assert comparable(res) == comparable(emb)
            assert [c.get("validity") for c in res["citations"]] == [c.get("validity") for c in emb["citations"]]
    finally:
        set_default_context(None)


def test_feedback_on_a_cloud_run_is_stored_in_firestore_teaches_the_bandit_and_exports(ecloud, monkeypatch):
    """Issue 27 on the emulated cloud: a run asked through workflows-emulator (the bandit draws the arm) gets a 👎
    with a correct answer through the dashboard's API with RELAYRAG_ENGINE=cloud; the verdict is stored in the
    Firestore emulator, the arm's human share is in the collection's arms, and the verdict exports as a golden case.
    A second token sees none of it; withdrawing the 👎 takes its reward back out."""
    from starlette.testclient import TestClient

    from relayrag import feedback as fb
    from relayrag.backends.docstore import PRIOR
    from relayrag.context import set_default_context
    from relayrag.dashboard.app import create_app
    from relayrag.settings import load_settings

    ctx = ecloud.context()
    blob = ecloud.storage().bucket(DOCS_BUCKET).blob(f"fb/{PDF}")
    blob.upload_from_filename(str(EXAMPLES / "pdfs" / PDF), content_type="application/pdf")
    blob.reload()
    assert post_event(ecloud.ingest_url, storage_event(FINALIZED, blob)).status_code == 200
    res = cloud_engine.ask(QUESTION, "fb", ctx=ctx, client=ecloud.executions_client(), workflow=ecloud.workflow,
                           timeout_s=120)
    run = ctx.docstore.get_run(res["run_id"])
    assert run and run.get("arm_draws"), ecloud.log_tail("workflows-emulator")
    human = [k for k in fb.bandit_contribution(run, fb.parse_feedback(verdict="up"))]
    assert len(human) == 1 and human[0].endswith(f"/{run['arm']}/human")
    assert human[0] not in ctx.docstore.get_arms("fb")

    monkeypatch.setenv("RELAYRAG_ENGINE", "cloud")
    load_settings.cache_clear()
    set_default_context(ctx)
    try:
        with TestClient(create_app(tokens=["t", "u"]), headers={"Authorization": "Bearer t"}) as api:
            r = api.post(f"/api/runs/{res['run_id']}/feedback",
                         json={"verdict": "down", "reason": "wrong", "answer": "nylon-insert nuts"})
            assert r.status_code == 200, r.text
            with TestClient(api.app, headers={"Authorization": "Bearer u"}) as other:
                assert other.get("/api/feedback").json()["verdicts"] == []
            stored = ctx.docstore.list_feedback("fb", run_id=res["run_id"])
            assert [(e["verdict"], e["reason"], e["answer"]) for e in stored] == [("down", "wrong",
                                                                                   "nylon-insert nuts")]
            alpha, beta = ctx.docstore.get_arms("fb")[human[0]]
            assert alpha == PRIOR[0] and beta > PRIOR[1]  # a 0 reward (a loss) for the arm the run used
            (case,) = fb.golden_cases(ctx.docstore, "fb")
            assert case["question"] == QUESTION and case["answers"] == ["nylon-insert nuts"]
    finally:
        set_default_context(None)
        load_settings.cache_clear()
    assert fb.withdraw(ctx.docstore, res["run_id"], stored[0]["identity"], visible={"fb"}) is True
    assert ctx.docstore.list_feedback("fb", run_id=res["run_id"]) == []
    assert ctx.docstore.get_arms("fb").get(human[0], PRIOR) == PRIOR
