"""Grants on one resource where pulumi-gcp has no resource-level IAM member for it.

roles/workflows.invoker (start and read executions) is what the dashboard and the MCP gateway need to run
questions on the RAG workflow. pulumi-gcp has no workflow-level IAM resource (none in pulumi_gcp.workflows up
to 10.2; Terraform's request for one, hashicorp/terraform-provider-google#13125, is open) and Workflows
documents the project as the lowest level to grant it on (https://cloud.google.com/workflows/docs/access-control).
So the role is bound on the project with an IAM condition on `resource.name`
(https://cloud.google.com/iam/docs/conditions-attribute-reference#resource-name) that names the one workflow:
the workflow itself (executions.create is checked on projects/P/locations/L/workflows/W) and its executions
(executions.get on .../workflows/W/executions/E). Services differ in whether `resource.name` spells the
project by id or by number (the resource-attributes page lists both forms for different services), so both
spellings are listed.

Not verified against a project: Workflows is not in the list of services that document resource attributes
(https://cloud.google.com/iam/docs/conditions-resource-attributes). If it does not pass `resource.name`, the
condition is false and the callers get PERMISSION_DENIED on executions.create (the dashboard's and the
gateway's ask fail with it; nothing else is granted). infra/README.md ("What each identity may do") says how
to check the grant after `pulumi up` and what to do then.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_gcp as gcp

WORKFLOW_INVOKER_ROLE = "roles/workflows.invoker"


def workflow_resource_names(project_id: str, project_number: str, region: str, name: str) -> list[str]:
    """The resource names a workflow goes by in IAM checks: projects/{id or number}/locations/{region}/
    workflows/{name}, the project id first."""
    projects = [project_id] + ([project_number] if project_number and project_number != project_id else [])
    return [f"projects/{p}/locations/{region}/workflows/{name}" for p in projects]


def workflow_condition_expression(names: Sequence[str]) -> str:
    """A CEL expression true for each named workflow and for the executions under it, and for nothing else
    (another workflow whose name starts the same, like W-admin, is refused: the executions prefix ends in /)."""
    if not names:
        raise ValueError("workflow_condition_expression needs at least one workflow resource name")
    clauses = []
    for n in names:
        clauses += [f'resource.name == "{n}"', f'resource.name.startsWith("{n}/executions/")']
    return " || ".join(clauses)


def grant_workflow_invoker(logical: str, project: str, workflow: gcp.workflows.Workflow,
                           member: pulumi.Input[str]) -> gcp.projects.IAMMember:
    """roles/workflows.invoker for `member` on `workflow` only (the condition above), as a project IAM
    member named `logical`."""
    number = gcp.organizations.get_project_output(project_id=project).number
    expression = pulumi.Output.all(workflow.project, number, workflow.region, workflow.name).apply(
        lambda a: workflow_condition_expression(workflow_resource_names(a[0] or project, a[1], a[2], a[3])))
    return gcp.projects.IAMMember(
        logical, project=project, role=WORKFLOW_INVOKER_ROLE, member=member,
        condition=gcp.projects.IAMMemberConditionArgs(
            title="relayrag-workflow-only", expression=expression,
            description="Start and read executions of relayrag's RAG workflow only"),
        opts=pulumi.ResourceOptions(depends_on=[workflow]))
