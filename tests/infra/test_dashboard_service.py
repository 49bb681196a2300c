"""The dashboard's Cloud Run service under Pulumi mocks: its identity and exact grants, the tokens secret,
edge access (ID-token check via run.invoker, or IAP), the env that reaches the workflow and Firestore."""

from __future__ import annotations

import pytest

pytest.importorskip("pulumi", reason="pulumi is not installed: pip install -e '.[dev]'")
from tests.infra.harness import PROJECT, config, deploy  # noqa: E402
from tests.infra.test_stack import IAM_TYPES, SA, _grants_of  # noqa: E402

RUN = "gcp:cloudrunv2/service:Service"
IMAGE = f"us-central1-docker.pkg.dev/{PROJECT}/relayrag-images/dashboard:v1"
MEMBERS = ("user:alice@example.com", "group:rag-team@example.com")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_gcp")


@pytest.fixture(scope="module")
def stack():
    return deploy(config(dashboard=True, dashboard_image=IMAGE, dashboard_members=MEMBERS,
                         dashboard_tokens="tok-a,tok-b"))


def _email(rec, logical: str) -> str:
    return next(r.outputs["email"] for r in rec.of_type(SA) if r.name == f"sa-{logical}")


def test_cpu_stays_allocated_for_jobs_that_run_after_the_response(stack):
    """C9: ingest and evaluation jobs run in threads after the POST has answered; with request-based billing
    Cloud Run throttles the CPU outside requests (https://cloud.google.com/run/docs/tips#background-activity),
    so the container has cpu_idle=False (CPU always allocated) while min instances stay 0."""
    (svc,) = stack.of_type(RUN)
    resources = svc.inputs["template"]["containers"][0]["resources"]
    assert resources["cpuIdle"] is False
    assert svc.inputs["template"]["scaling"]["minInstanceCount"] == 0
    env = {e["name"]: e.get("value") for e in svc.inputs["template"]["containers"][0]["envs"]}
    assert env["RELAYRAG_MEMORY_LIMIT_MB"] == "2048" and resources["limits"]["memory"] == "2Gi"


def test_service_runs_the_image_as_its_own_identity_with_session_affinity(stack):
    (svc,) = stack.of_type(RUN)
    tpl = svc.inputs["template"]
    assert svc.inputs["name"] == "relayrag-dashboard" and svc.inputs["location"] == "us-central1"
    assert tpl["serviceAccount"] == _email(stack, "dashboard")
    assert tpl["sessionAffinity"] is True  # the SSE stream must reach the instance running its job
    (container,) = tpl["containers"]
    assert container["image"] == IMAGE and container["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert not svc.inputs.get("invokerIamDisabled")


def test_env_reaches_the_workflow_and_firestore_and_tokens_come_from_secret_manager(stack):
    (svc,) = stack.of_type(RUN)
    envs = {e["name"]: e for e in svc.inputs["template"]["containers"][0]["envs"]}
    wf = stack.one("gcp:workflows/workflow:Workflow", "rag")
    assert envs["RELAYRAG_ENGINE"]["value"] == "cloud"
    assert envs["RELAYRAG_WORKFLOW"]["value"] == f"projects/{PROJECT}/locations/us-central1/workflows/{wf.inputs['name']}"
    assert envs["RELAYRAG_DOCSTORE"]["value"] == "firestore"
    assert envs["RELAYRAG_FIRESTORE_DATABASE"]["value"] == "relayrag"
    assert envs["RELAYRAG_GCS_BUCKET"]["value"] == f"{PROJECT}-relayrag-snapshots"
    assert envs["RELAYRAG_DOCUMENTS_BUCKET"]["value"] == f"{PROJECT}-relayrag-documents"
    assert envs["OTEL_TRACES_EXPORTER"]["value"] == "gcp_trace"
    tokens = envs["RELAYRAG_DASHBOARD_TOKENS"]
    assert "value" not in tokens or not tokens.get("value")
    secret = stack.one("gcp:secretmanager/secret:Secret", "dashboard-tokens")
    assert tokens["valueSource"]["secretKeyRef"]["secret"] == secret.inputs["secretId"]
    version = stack.one("gcp:secretmanager/secretVersion:SecretVersion", "dashboard-tokens-v")
    data = version.inputs["secretData"]  # a Pulumi secret: kept encrypted in the stack's state
    assert data["value"] == "tok-a,tok-b" and data["4dabf18193072939515e22adb298388d"] == "1b47061264138c4ac30d75fd1eb44270"


def test_dashboard_identity_holds_exactly_its_grants(stack):
    email = _email(stack, "dashboard")
    assert _grants_of(stack, email) == {
        ("workflow", "roles/workflows.invoker"),   # the RAG workflow only (test_workflow_invoker.py)
        ("project", "roles/cloudtrace.agent"),
        ("firestore", "roles/datastore.viewer"),
        ("snapshots", "roles/storage.objectViewer"),
        ("documents", "roles/storage.objectUser"),
    }
    (acc,) = [r for r in stack.of_type("gcp:secretmanager/secretIamMember:SecretIamMember")
              if r.inputs["member"] == f"serviceAccount:{email}"]
    assert acc.inputs["role"] == "roles/secretmanager.secretAccessor" and acc.inputs["secretId"] == "relayrag-dashboard-tokens"


def test_only_the_listed_members_may_invoke_it(stack):
    invokers = [r for r in stack.of_type("gcp:cloudrunv2/serviceIamMember:ServiceIamMember")
                if r.inputs["name"] == "relayrag-dashboard"]
    assert sorted(r.inputs["member"] for r in invokers) == sorted(MEMBERS)
    assert {r.inputs["role"] for r in invokers} == {"roles/run.invoker"}
    everyone = [r for r in stack.resources
                if r.typ in IAM_TYPES and r.inputs.get("member") in ("allUsers", "allAuthenticatedUsers")]
    assert everyone == []


def test_iap_mode_puts_iap_in_front():
    rec = deploy(config(dashboard=True, dashboard_image=IMAGE, dashboard_members=MEMBERS[:1], dashboard_access="iap",
                        dashboard_tokens="t"))
    (svc,) = rec.of_type(RUN)
    assert svc.inputs["iapEnabled"] is True
    (iap,) = rec.of_type("gcp:iap/webCloudRunServiceIamMember:WebCloudRunServiceIamMember")
    assert (iap.inputs["member"], iap.inputs["role"]) == (MEMBERS[0], "roles/iap.httpsResourceAccessor")
    invokers = [r for r in rec.of_type("gcp:cloudrunv2/serviceIamMember:ServiceIamMember")
                if r.inputs["name"] == "relayrag-dashboard"]
    assert len(invokers) == 1 and invokers[0].inputs["member"].endswith("@gcp-sa-iap.iam.gserviceaccount.com")
    apis = {r.inputs["service"] for r in rec.of_type("gcp:projects/service:Service")}
    assert {"iap.googleapis.com", "secretmanager.googleapis.com", "cloudtrace.googleapis.com"} <= apis


def test_without_an_image_only_the_repository_is_made():
    rec = deploy(config(dashboard=True))
    repos = {r.name for r in rec.of_type("gcp:artifactregistry/repository:Repository")}
    assert rec.of_type(RUN) == [] and repos == {"images", "function-images"}  # function-images: every stack
    assert rec.deployment.dashboard_skipped.startswith("dashboard not deployed yet")
    off = deploy(config())
    repos = {r.name for r in off.of_type("gcp:artifactregistry/repository:Repository")}
    assert off.of_type(RUN) == [] and repos == {"function-images"}


def test_dashboard_config_is_validated():
    with pytest.raises(ValueError, match="dashboardTokens"):
        config(dashboard=True, dashboard_image=IMAGE)
    with pytest.raises(ValueError, match="allUsers is not allowed"):
        config(dashboard=True, dashboard_members=("allUsers",))
    with pytest.raises(ValueError, match="dashboardAccess"):
        config(dashboard_access="public")
