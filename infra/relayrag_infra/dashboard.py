"""The dashboard as a Cloud Run service (`relayrag dashboard`'s app in the container built from
infra/dashboard/Dockerfile).

Enabled by `relayrag:dashboard: true`. Then the stack creates an Artifact Registry repository for the
image; once `relayrag:dashboardImage` names a pushed image (and the workflow is deployed), it also creates:
- a service account holding exactly: roles/workflows.invoker on the RAG workflow only (start and read its
  executions: the Ask page runs questions through the Executions API; a project binding with an IAM
  condition naming the workflow, relayrag_infra.iam), roles/datastore.viewer on relayrag's
  Firestore database (runs, traces, collections, bandit arms; IAM condition like the stages'),
  roles/storage.objectViewer on the snapshots bucket (evaluation history), roles/storage.objectUser on the
  documents bucket (uploads and deletes there; Eventarc's ingest_object does the indexing),
  roles/cloudtrace.agent (the per-stage spans, OTEL_TRACES_EXPORTER=gcp_trace), and secretAccessor on the
  dashboard-tokens secret only;
- a Secret Manager secret holding `relayrag:dashboardTokens` (RELAYRAG_DASHBOARD_TOKENS, mounted as env);
- the Cloud Run service (session affinity, so a page's SSE stream reaches the instance running its job; CPU
  always allocated, cpu_idle=False, because jobs run in threads after the POST that starts them has answered),
  env pointing at the workflow, Firestore, the snapshots and documents buckets;
- access at the edge, `relayrag:dashboardAccess`: `iam` (default: Cloud Run checks a Google ID token;
  `relayrag:dashboardMembers` get roles/run.invoker, nobody else can reach the app) or `iap` (IAP in
  front of the service: the members get roles/iap.httpsResourceAccessor, IAP's service agent gets
  run.invoker). allUsers is never granted.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from relayrag_infra.catalog import TRACE_EXPORTER, memory_mib
from relayrag_infra.config import StackConfig
from relayrag_infra.iam import grant_workflow_invoker

ACCESS_MODES = ("iam", "iap")
DASHBOARD_PROJECT_ROLES = ("roles/cloudtrace.agent",)
"""Unconditioned project roles; roles/workflows.invoker is granted on the workflow only (relayrag_infra.iam)."""
PORT = 8080
MEMORY = "2Gi"
PROXY_PORT = 8780
PROXY_ORIGINS = f"http://127.0.0.1:{PROXY_PORT},http://localhost:{PROXY_PORT}"
"""Origins of `gcloud run services proxy relayrag-dashboard --port 8780` (infra/README.md)."""


def repository(cfg: StackConfig, opts: pulumi.ResourceOptions) -> gcp.artifactregistry.Repository:
    return gcp.artifactregistry.Repository(
        "images", project=cfg.project, location=cfg.region, repository_id=f"{cfg.prefix}-images", format="DOCKER",
        description="relayrag container images (the dashboard)", labels={"app": "relayrag", **dict(cfg.labels)},
        opts=opts)


def image_hint(cfg: StackConfig) -> str:
    return f"{cfg.region}-docker.pkg.dev/{cfg.project}/{cfg.prefix}-images/dashboard:TAG"


def build_service(dep, cfg: StackConfig, *, firestore_condition, account, member, after_apis) -> gcp.cloudrunv2.Service:
    """Declare the dashboard's identity, secret, service and access bindings (see the module docstring)."""
    project, region = cfg.project, cfg.region
    sa = account("dashboard", "dashboard (Cloud Run)")
    dep.service_accounts["dashboard"] = sa
    who = member(sa)
    for role in DASHBOARD_PROJECT_ROLES:
        gcp.projects.IAMMember(f"dashboard-project-{role.split('/')[1].replace('.', '-')}", project=project,
                               role=role, member=who)
    grant_workflow_invoker("dashboard-workflow-invoker", project, dep.workflow, who)
    gcp.projects.IAMMember("dashboard-firestore-datastore-viewer", project=project, role="roles/datastore.viewer",
                           member=who, condition=firestore_condition,
                           opts=pulumi.ResourceOptions(depends_on=[dep.firestore]))
    gcp.storage.BucketIAMMember("dashboard-snapshots-objectViewer", bucket=dep.snapshots_bucket.name,
                                role="roles/storage.objectViewer", member=who)
    gcp.storage.BucketIAMMember("dashboard-documents-objectUser", bucket=dep.documents_bucket.name,
                                role="roles/storage.objectUser", member=who)

    secret = gcp.secretmanager.Secret(
        "dashboard-tokens", project=project, secret_id=f"{cfg.prefix}-dashboard-tokens",
        replication=gcp.secretmanager.SecretReplicationArgs(auto=gcp.secretmanager.SecretReplicationAutoArgs()),
        labels={"app": "relayrag", **dict(cfg.labels)}, opts=after_apis)
    version = gcp.secretmanager.SecretVersion("dashboard-tokens-v", secret=secret.id,
                                              secret_data=pulumi.Output.secret(cfg.dashboard_tokens))
    # Cloud Run checks that the revision's identity may read each secret when it creates the revision
    # (https://cloud.google.com/run/docs/configuring/services/secrets), so the service waits for this binding
    accessor = gcp.secretmanager.SecretIamMember("dashboard-tokens-accessor", project=project,
                                                 secret_id=secret.secret_id,
                                                 role="roles/secretmanager.secretAccessor", member=who)

    env = {
        "RELAYRAG_ENGINE": "cloud", "RELAYRAG_WORKFLOW": dep.workflow.id, "RELAYRAG_GCP_PROJECT": project,
        "RELAYRAG_GCP_LOCATION": region, "RELAYRAG_DOCSTORE": "firestore",
        "RELAYRAG_FIRESTORE_DATABASE": cfg.firestore_database, "RELAYRAG_FIRESTORE_PREFIX": cfg.firestore_prefix,
        "RELAYRAG_BLOBSTORE": "gcs", "RELAYRAG_GCS_BUCKET": dep.snapshots_bucket.name,
        "RELAYRAG_DOCUMENTS_BUCKET": dep.documents_bucket.name, "RELAYRAG_EMBEDDER": cfg.embedder,
        "RELAYRAG_VERTEX_EMBEDDING_MODEL": cfg.vertex_embedding_model, "OTEL_TRACES_EXPORTER": TRACE_EXPORTER,
        "RELAYRAG_HOME": "/tmp/relayrag", "RELAYRAG_MEMORY_LIMIT_MB": str(memory_mib(MEMORY)),
    }
    if cfg.dashboard_access == "iam":
        # `gcloud run services proxy --port 8780` (the way in with IAM access) rewrites Host to the run.app name
        # while the browser's Origin stays the proxy's: that exact origin may log in and post
        env["RELAYRAG_DASHBOARD_ORIGINS"] = PROXY_ORIGINS
    envs = [gcp.cloudrunv2.ServiceTemplateContainerEnvArgs(name=k, value=v) for k, v in env.items()]
    envs.append(gcp.cloudrunv2.ServiceTemplateContainerEnvArgs(
        name="RELAYRAG_DASHBOARD_TOKENS", value_source=gcp.cloudrunv2.ServiceTemplateContainerEnvValueSourceArgs(
            secret_key_ref=gcp.cloudrunv2.ServiceTemplateContainerEnvValueSourceSecretKeyRefArgs(
                secret=secret.secret_id, version=version.version))))
    service = gcp.cloudrunv2.Service(
        "dashboard", project=project, location=region, name=f"{cfg.prefix}-dashboard",
        description="relayrag dashboard", labels={"app": "relayrag", **dict(cfg.labels)},
        ingress="INGRESS_TRAFFIC_ALL", iap_enabled=cfg.dashboard_access == "iap", invoker_iam_disabled=False,
        deletion_protection=False,
        template=gcp.cloudrunv2.ServiceTemplateArgs(
            service_account=sa.email, session_affinity=True, timeout="900s",
            max_instance_request_concurrency=40,
            scaling=gcp.cloudrunv2.ServiceTemplateScalingArgs(min_instance_count=0, max_instance_count=3),
            containers=[gcp.cloudrunv2.ServiceTemplateContainerArgs(
                image=cfg.dashboard_image, envs=envs,
                ports=gcp.cloudrunv2.ServiceTemplateContainerPortsArgs(container_port=PORT),
                # jobs (ingest, evaluation) run in threads after the POST that starts them has answered: with
                # request-based billing Cloud Run throttles the CPU to almost nothing between requests
                # (https://cloud.google.com/run/docs/tips#background-activity), so the CPU stays allocated
                # (instance-based billing; min instances stay 0, so an idle dashboard still costs nothing)
                resources=gcp.cloudrunv2.ServiceTemplateContainerResourcesArgs(
                    limits={"cpu": "1", "memory": MEMORY}, cpu_idle=False),
                startup_probe=gcp.cloudrunv2.ServiceTemplateContainerStartupProbeArgs(
                    http_get=gcp.cloudrunv2.ServiceTemplateContainerStartupProbeHttpGetArgs(path="/healthz"),
                    period_seconds=3, failure_threshold=40))]),
        opts=pulumi.ResourceOptions(depends_on=[version, accessor, dep.workflow]))

    for i, m in enumerate(cfg.dashboard_members):
        if cfg.dashboard_access == "iap":
            gcp.iap.WebCloudRunServiceIamMember(f"dashboard-iap-user-{i}", project=project, location=region,
                                                cloud_run_service_name=service.name,
                                                role="roles/iap.httpsResourceAccessor", member=m)
        else:
            gcp.cloudrunv2.ServiceIamMember(f"dashboard-invoker-{i}", project=project, location=region,
                                            name=service.name, role="roles/run.invoker", member=m)
    if cfg.dashboard_access == "iap":
        # IAP's service agent (service-N@gcp-sa-iap) does not exist on a fresh project until something creates
        # it; binding it first fails like Eventarc's did (GoogleCloudPlatform/cloud-foundation-fabric#1381).
        # ServiceIdentity creates it (https://cloud.google.com/run/docs/securing/identity-aware-proxy-cloud-run).
        iap_agent = gcp.projects.ServiceIdentity("iap-agent", project=project, service="iap.googleapis.com",
                                                 opts=after_apis)
        gcp.cloudrunv2.ServiceIamMember(
            "dashboard-invoker-iap-agent", project=project, location=region, name=service.name,
            role="roles/run.invoker", member=iap_agent.member,
            opts=pulumi.ResourceOptions(depends_on=[iap_agent]))
    return service
