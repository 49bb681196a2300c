"""The assistant (relayrag.agent) on Cloud Run, with the MCP gateway it calls and its thread store.

Enabled by `relayrag:assistant: true`; the services are created once `relayrag:assistantImage` names a
pushed image (infra/assistant/Dockerfile: one image, two commands) and the workflow is deployed:

- `<prefix>-mcp`: `relayrag mcp --http` on the cloud engine (ask runs the deployed workflow; search, sql_query,
  list_collections, get_run read the snapshots, BigQuery and Firestore). Its identity may start and read
  executions of the RAG workflow only (relayrag_infra.iam), read and write run records in relayrag's
  Firestore database, read the snapshots bucket, call Vertex predictions (the stages' predict-only custom
  role), run BigQuery jobs and read the
  warehouse dataset and, with `indexCollections`, the distributed index dataset (RELAYRAG_INDEX_* as retrieve
  gets them, so `search` on a distributed collection never loads its snapshot), and write spans to Cloud Trace.
  Ingest over HTTP stays disabled (no RELAYRAG_MCP_INGEST_ROOTS): documents arrive through the documents
  bucket. Only the assistant's identity holds roles/run.invoker on it (Cloud Run checks its ID token, sent as
  X-Serverless-Authorization), and the gateway itself checks the bearer token from the `mcp-tokens` secret
  (RELAYRAG_MCP_TOKENS).
- `<prefix>-assistant`: `relayrag chat-serve` (POST /chat, SSE). Its identity may call the gateway
  (run.invoker on that service only), call Gemini (predict-only role, RELAYRAG_LLM=vertex), read and write
  relayrag's Firestore database (its threads), write spans to Cloud Trace and read its secrets.
  `relayrag:assistantMembers` get roles/run.invoker on it; requests also need a token of
  `relayrag:assistantTokens` (RELAYRAG_AGENT_TOKENS).
- threads: by default in relayrag's Firestore database (RELAYRAG_AGENT_CHECKPOINT=firestore, collection
  `<firestorePrefix>_agent_threads`): nothing billed at rest, see docs/DESIGN.md ("The assistant").
  `relayrag:assistantThreads: postgres` creates the Cloud SQL for PostgreSQL option instead
  (relayrag_infra.threads_db: `<prefix>-threads`, tier `relayrag:assistantDbTier`, private IP only on a VPC
  the assistant reaches through Direct VPC egress, IAM database authentication for the assistant's identity,
  no password anywhere; RELAYRAG_AGENT_POSTGRES_URL and RELAYRAG_AGENT_POSTGRES_IAM_AUTH=true). Nothing of it
  exists unless chosen: the instance bills every hour it exists.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from relayrag_infra import threads_db
from relayrag_infra.catalog import TRACE_EXPORTER, TRACE_ROLE, memory_mib
from relayrag_infra.config import StackConfig
from relayrag_infra.iam import grant_workflow_invoker

PORT = 8080
ASSISTANT_APIS = ["secretmanager.googleapis.com", "aiplatform.googleapis.com", "cloudtrace.googleapis.com"]
POSTGRES_APIS = ["sqladmin.googleapis.com", "compute.googleapis.com", "servicenetworking.googleapis.com"]
"""Enabled only with `relayrag:assistantThreads: postgres` (the instance, its VPC, private services access)."""
THREAD_STORES = ("firestore", "postgres")
MCP_PROJECT_ROLES = ("roles/bigquery.jobUser", TRACE_ROLE)
ASSISTANT_PROJECT_ROLES = (TRACE_ROLE,)
"""Unconditioned project roles besides the stages' Vertex predict-only custom role (granted when the LLM or
embedder is Vertex). The gateway's roles/workflows.invoker is bound with a condition naming the RAG workflow
(relayrag_infra.iam); the Cloud SQL option's roles with one naming its instance (relayrag_infra.threads_db)."""
MCP_MEMORY = "4Gi"
ASSISTANT_MEMORY = "2Gi"


def image_hint(cfg: StackConfig) -> str:
    return f"{cfg.region}-docker.pkg.dev/{cfg.project}/{cfg.prefix}-images/assistant:TAG"


def _secret(cfg: StackConfig, logical: str, value, who, after_apis) -> tuple[gcp.secretmanager.Secret,
                                                                           gcp.secretmanager.SecretVersion, list]:
    """The secret, its version and its accessor bindings (one per member of `who`): Cloud Run checks the
    revision identity's access to each secret when it creates the revision
    (https://cloud.google.com/run/docs/configuring/services/secrets), so a service depends on the bindings."""
    secret = gcp.secretmanager.Secret(
        logical, project=cfg.project, secret_id=f"{cfg.prefix}-{logical}",
        replication=gcp.secretmanager.SecretReplicationArgs(auto=gcp.secretmanager.SecretReplicationAutoArgs()),
        labels={"app": "relayrag", **dict(cfg.labels)}, opts=after_apis)
    version = gcp.secretmanager.SecretVersion(f"{logical}-v", secret=secret.id, secret_data=pulumi.Output.secret(value))
    accessors = [gcp.secretmanager.SecretIamMember(f"{logical}-accessor-{i}", project=cfg.project,
                                                   secret_id=secret.secret_id,
                                                   role="roles/secretmanager.secretAccessor", member=w)
                 for i, w in enumerate(who)]
    return secret, version, accessors


def _env(values: dict) -> list:
    return [gcp.cloudrunv2.ServiceTemplateContainerEnvArgs(name=k, value=v) for k, v in values.items()]


def _secret_env(name: str, secret, version) -> gcp.cloudrunv2.ServiceTemplateContainerEnvArgs:
    return gcp.cloudrunv2.ServiceTemplateContainerEnvArgs(
        name=name, value_source=gcp.cloudrunv2.ServiceTemplateContainerEnvValueSourceArgs(
            secret_key_ref=gcp.cloudrunv2.ServiceTemplateContainerEnvValueSourceSecretKeyRefArgs(
                secret=secret.secret_id, version=version.version)))


def build_services(dep, cfg: StackConfig, *, firestore_condition, account, member, after_apis, vertex_role=None):
    """Declare the gateway, the assistant, their identities and secrets, and the Cloud SQL thread store when
    `relayrag:assistantThreads` is `postgres` (relayrag_infra.threads_db). Returns (mcp service, assistant
    service, Cloud SQL instance or None)."""
    project, region, labels = cfg.project, cfg.region, {"app": "relayrag", **dict(cfg.labels)}
    mcp_sa, bot_sa = account("mcp", "MCP gateway (Cloud Run)"), account("assistant", "assistant (Cloud Run)")
    dep.service_accounts.update(mcp=mcp_sa, assistant=bot_sa)
    mcp_who, bot_who = member(mcp_sa), member(bot_sa)
    postgres = cfg.assistant_threads == "postgres"

    def project_role(prefix: str, role: str, who):
        return gcp.projects.IAMMember(f"{prefix}-project-{role.split('/')[1].replace('.', '-')}", project=project,
                                      role=role, member=who)

    for role in MCP_PROJECT_ROLES:
        project_role("mcp", role, mcp_who)
    grant_workflow_invoker("mcp-workflow-invoker", project, dep.workflow, mcp_who)  # ask runs the workflow
    gcp.projects.IAMMember("mcp-firestore-datastore-user", project=project, role="roles/datastore.user",
                           member=mcp_who, condition=firestore_condition,
                           opts=pulumi.ResourceOptions(depends_on=[dep.firestore]))
    gcp.storage.BucketIAMMember("mcp-snapshots-objectViewer", bucket=dep.snapshots_bucket.name,
                                role="roles/storage.objectViewer", member=mcp_who)
    if dep.dataset is not None:
        gcp.bigquery.DatasetIamMember("mcp-dataset-dataViewer", project=project, dataset_id=dep.dataset.dataset_id,
                                      role="roles/bigquery.dataViewer", member=mcp_who)
    if dep.index_dataset is not None:  # `search` on a distributed collection reads the index like retrieve does
        gcp.bigquery.DatasetIamMember("mcp-index-dataViewer", project=project,
                                      dataset_id=dep.index_dataset.dataset_id, role="roles/bigquery.dataViewer",
                                      member=mcp_who)
    gcp.projects.IAMMember("assistant-firestore-datastore-user", project=project, role="roles/datastore.user",
                           member=bot_who, condition=firestore_condition,   # its threads (FirestoreSaver)
                           opts=pulumi.ResourceOptions(depends_on=[dep.firestore]))
    bot_grants = [project_role("assistant", role, bot_who) for role in ASSISTANT_PROJECT_ROLES]
    if vertex_role is not None:
        # Gemini and the embedding models need only aiplatform.endpoints.predict: the stages' custom role, not
        # roles/aiplatform.user (which may also create endpoints, jobs and datasets)
        if cfg.llm == "vertex" or cfg.embedder == "vertex":  # ask runs the workflow; search embeds the query
            gcp.projects.IAMMember("mcp-project-vertex-predict", project=project, role=vertex_role.name,
                                   member=mcp_who)
        if cfg.llm == "vertex":
            bot_grants.append(gcp.projects.IAMMember("assistant-project-vertex-predict", project=project,
                                                     role=vertex_role.name, member=bot_who))

    # -- optional thread store: Cloud SQL for PostgreSQL (billed at rest: only when chosen) --------------------
    threads: threads_db.ThreadsDb | None = None
    if postgres:
        threads = threads_db.build(cfg, bot_sa, bot_who, labels, after_apis)

    mcp_tokens, mcp_tokens_v, mcp_access = _secret(cfg, "mcp-tokens", cfg.mcp_tokens, [mcp_who, bot_who],
                                                   after_apis)
    chat_tokens, chat_tokens_v, chat_access = _secret(cfg, "assistant-tokens", cfg.assistant_tokens, [bot_who],
                                                      after_apis)
    cloud = {"RELAYRAG_GCP_PROJECT": project, "RELAYRAG_GCP_LOCATION": region, "RELAYRAG_HOME": "/tmp/relayrag",
             "RELAYRAG_LLM": cfg.llm, "RELAYRAG_LLM_MODEL": cfg.llm_model,
             "OTEL_TRACES_EXPORTER": TRACE_EXPORTER}  # their spans in Cloud Trace (relayrag.tracing)
    warehouse = {}
    if dep.dataset is not None:  # sql_query: the same dataset, collections and byte cap as the sql stage
        warehouse = {"RELAYRAG_BIGQUERY_DATASET": pulumi.Output.concat(project, ".", dep.dataset.dataset_id),
                     "RELAYRAG_BIGQUERY_COLLECTIONS": cfg.bigquery_collections,
                     "RELAYRAG_BIGQUERY_MAX_BYTES_BILLED": str(int(cfg.bigquery_max_bytes_billed))}
    if dep.index_dataset is not None:  # search: distributed collections from the index, like retrieve
        warehouse.update({"RELAYRAG_INDEX_DATASET": pulumi.Output.concat(project, ".", dep.index_dataset.dataset_id),
                          "RELAYRAG_INDEX_COLLECTIONS": cfg.index_collections})
    mcp_env = _env({**cloud, "RELAYRAG_ENGINE": "cloud", "RELAYRAG_WORKFLOW": dep.workflow.id,
                    "RELAYRAG_DOCSTORE": "firestore", "RELAYRAG_FIRESTORE_DATABASE": cfg.firestore_database,
                    "RELAYRAG_FIRESTORE_PREFIX": cfg.firestore_prefix, "RELAYRAG_BLOBSTORE": "gcs",
                    "RELAYRAG_GCS_BUCKET": dep.snapshots_bucket.name, "RELAYRAG_EMBEDDER": cfg.embedder,
                    "RELAYRAG_VERTEX_EMBEDDING_MODEL": cfg.vertex_embedding_model,
                    "RELAYRAG_MEMORY_LIMIT_MB": str(memory_mib(MCP_MEMORY)), **warehouse})
    mcp_env.append(_secret_env("RELAYRAG_MCP_TOKENS", mcp_tokens, mcp_tokens_v))

    def container(args: list[str], envs: list, memory: str, **kw):
        return gcp.cloudrunv2.ServiceTemplateContainerArgs(
            image=cfg.assistant_image, args=args, envs=envs,
            ports=gcp.cloudrunv2.ServiceTemplateContainerPortsArgs(container_port=PORT),
            resources=gcp.cloudrunv2.ServiceTemplateContainerResourcesArgs(limits={"cpu": "1", "memory": memory}), **kw)

    gateway = gcp.cloudrunv2.Service(
        "mcp", project=project, location=region, name=f"{cfg.prefix}-mcp", labels=labels,
        description="relayrag MCP gateway (streamable HTTP)", ingress="INGRESS_TRAFFIC_ALL",
        invoker_iam_disabled=False, deletion_protection=False,
        template=gcp.cloudrunv2.ServiceTemplateArgs(
            service_account=mcp_sa.email, timeout="900s", max_instance_request_concurrency=20,
            scaling=gcp.cloudrunv2.ServiceTemplateScalingArgs(min_instance_count=0, max_instance_count=3),
            containers=[container(["relayrag", "mcp", "--http", "--host", "0.0.0.0", "--port", str(PORT)],
                                  mcp_env, MCP_MEMORY)]),
        opts=pulumi.ResourceOptions(depends_on=[mcp_tokens_v, mcp_access[0], dep.workflow]))
    gateway_invoker = gcp.cloudrunv2.ServiceIamMember("mcp-invoker-assistant", project=project, location=region,
                                                      name=gateway.name, role="roles/run.invoker", member=bot_who)

    bot_env = _env({**cloud, "RELAYRAG_AGENT_MCP_URL": gateway.uri.apply(lambda u: f"{u}/mcp"),
                    "RELAYRAG_AGENT_CHECKPOINT": cfg.assistant_threads,
                    "RELAYRAG_FIRESTORE_DATABASE": cfg.firestore_database,
                    "RELAYRAG_FIRESTORE_PREFIX": cfg.firestore_prefix,
                    "RELAYRAG_MEMORY_LIMIT_MB": str(memory_mib(ASSISTANT_MEMORY))})
    bot_env += [_secret_env("RELAYRAG_AGENT_MCP_TOKEN", mcp_tokens, mcp_tokens_v),
                _secret_env("RELAYRAG_AGENT_TOKENS", chat_tokens, chat_tokens_v)]
    network: dict = {}
    if threads is not None:  # private IP, IAM login: the URL names the IAM user and holds no password
        bot_env += _env({"RELAYRAG_AGENT_POSTGRES_URL": threads.url, "RELAYRAG_AGENT_POSTGRES_IAM_AUTH": "true"})
        network = {"vpc_access": threads.vpc_access}
    assistant = gcp.cloudrunv2.Service(
        "assistant", project=project, location=region, name=f"{cfg.prefix}-assistant", labels=labels,
        description="relayrag assistant (POST /chat, SSE)", ingress="INGRESS_TRAFFIC_ALL",
        invoker_iam_disabled=False, deletion_protection=False,
        template=gcp.cloudrunv2.ServiceTemplateArgs(
            service_account=bot_sa.email, timeout="900s", max_instance_request_concurrency=20,
            scaling=gcp.cloudrunv2.ServiceTemplateScalingArgs(min_instance_count=0, max_instance_count=3),
            **network,
            containers=[container(["relayrag", "chat-serve", "--host", "0.0.0.0", "--port", str(PORT)], bot_env,
                                  ASSISTANT_MEMORY,
                                  startup_probe=gcp.cloudrunv2.ServiceTemplateContainerStartupProbeArgs(
                                      http_get=gcp.cloudrunv2.ServiceTemplateContainerStartupProbeHttpGetArgs(
                                          path="/healthz"), period_seconds=3, failure_threshold=40))]),
        # the assistant's startup opens the MCP session (needs the invoker grant on the gateway) and its
        # checkpointer (Firestore: datastore.user; Postgres: the database, its IAM user and the login grants):
        # a failed startup fails the revision
        opts=pulumi.ResourceOptions(depends_on=[
            chat_tokens_v, mcp_tokens_v, *mcp_access[1:], *chat_access, gateway_invoker, *bot_grants,
            *(threads.ready if threads is not None else [])]))
    for i, m in enumerate(cfg.assistant_members):
        gcp.cloudrunv2.ServiceIamMember(f"assistant-invoker-{i}", project=project, location=region,
                                        name=assistant.name, role="roles/run.invoker", member=m)
    return gateway, assistant, threads.instance if threads is not None else None
