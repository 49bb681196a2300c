"""S3 (issue 30): roles/workflows.invoker only on the RAG workflow, for the identities that run questions on it.

pulumi-gcp has no workflow-level IAM member, so the role is a project binding with an IAM condition naming the
workflow and its executions (relayrag_infra.iam). These tests fail if any declaration grants the role without
such a condition, if the condition lets a caller start another workflow, or if an identity that does not run
questions holds it."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pulumi", reason="pulumi is not installed: pip install -e '.[dev]'")
from tests.infra.harness import PROJECT, PROJECT_NUMBER, config, deploy  # noqa: E402
from tests.infra.test_stack import _cel_to_python  # noqa: E402

ROLE = "roles/workflows.invoker"
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_gcp")


@pytest.fixture(scope="module")
def callers():
    """Every identity that runs questions on the workflow: the dashboard and the assistant's MCP gateway."""
    return deploy(config(dashboard=True, dashboard_image="img:1", dashboard_members=("user:a@example.com",),
                         dashboard_tokens="t", assistant=True, assistant_image="img:2", assistant_tokens="a",
                         mcp_tokens="m"))


def _invoker_declarations(rec) -> list:
    """Every declared resource whose inputs mention the role, whatever its type (a binding, a policy, a member)."""
    return [r for r in rec.resources if ROLE in json.dumps(r.inputs, default=str)]


def _workflow_name(rec) -> str:
    wf = rec.one("gcp:workflows/workflow:Workflow", "rag").inputs
    return f"locations/{wf['region']}/workflows/{wf['name']}"


@pytest.mark.parametrize("stack", ["default", "callers"])
def test_no_workflows_invoker_binding_is_project_wide(stack, full, callers):
    rec = {"default": full, "callers": callers}[stack]
    wf = _workflow_name(rec)
    for r in _invoker_declarations(rec):
        assert r.typ == "gcp:projects/iAMMember:IAMMember", f"{r.name}: {ROLE} through {r.typ}"
        assert r.inputs["role"] == ROLE
        expr = (r.inputs.get("condition") or {}).get("expression")
        assert expr, f"{r.name}: {ROLE} on the whole project, without a condition"
        for project in (PROJECT, PROJECT_NUMBER):  # resource.name may spell the project either way
            assert _cel_to_python(expr, f"projects/{project}/{wf}"), (r.name, "executions.create refused")
            assert _cel_to_python(expr, f"projects/{project}/{wf}/executions/0b1c-2d3e"), (r.name, "get refused")
        region = wf.split("/")[1]
        for other in (f"projects/{PROJECT}", f"projects/{PROJECT}/{wf}-admin",
                      f"projects/{PROJECT}/{wf}-admin/executions/x",
                      f"projects/{PROJECT}/locations/{region}/workflows/other",
                      f"projects/{PROJECT}/locations/europe-west1/workflows/{wf.rsplit('/', 1)[1]}",
                      f"projects/other-project/{wf}", f"projects/{PROJECT}/{wf}/executionsX"):
            assert not _cel_to_python(expr, other), (r.name, other)


def test_exactly_the_callers_hold_it_each_on_the_workflow(full, callers):
    """The dashboard (Ask page) and the gateway (`ask`) start executions; nobody else does: not the
    workflow's own runner, the stages, the ingest trigger or the assistant (it goes through the gateway)."""
    assert not _invoker_declarations(full)  # no dashboard, no assistant: nobody may start executions
    members = {r.inputs["member"] for r in _invoker_declarations(callers)}
    assert members == {f"serviceAccount:relayrag-dashboard@{PROJECT}.iam.gserviceaccount.com",
                       f"serviceAccount:relayrag-mcp@{PROJECT}.iam.gserviceaccount.com"}
    for r in _invoker_declarations(callers):
        assert "rag" in callers.deps(r.typ, r.name)  # the workflow exists before its grant names it


def test_the_condition_names_the_workflow_the_callers_are_configured_with(callers):
    """RELAYRAG_WORKFLOW (what the cloud engine passes to executions.create) is one of the names granted."""
    wf = _workflow_name(callers)
    grants = {r.inputs["member"].split(":")[1].split("@")[0]: r.inputs["condition"]["expression"]
              for r in _invoker_declarations(callers)}
    services = {s.name: s for s in callers.of_type("gcp:cloudrunv2/service:Service")}
    for svc, identity in (("dashboard", "relayrag-dashboard"), ("mcp", "relayrag-mcp")):
        env = {e["name"]: e.get("value") for e in services[svc].inputs["template"]["containers"][0]["envs"]}
        assert env["RELAYRAG_WORKFLOW"] == f"projects/{PROJECT}/{wf}"
        assert _cel_to_python(grants[identity], env["RELAYRAG_WORKFLOW"])


def test_the_expression_refuses_an_empty_list():
    from relayrag_infra.iam import workflow_condition_expression, workflow_resource_names

    with pytest.raises(ValueError, match="at least one"):
        workflow_condition_expression([])
    assert workflow_resource_names("p", "p", "r", "w") == ["projects/p/locations/r/workflows/w"]
