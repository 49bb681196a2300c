"""The assistant (relayrag.agent) on Cloud Run, with the MCP gateway it calls and its thread store.

Enabled by `relayrag:assistant: true`; the services are created once `relayrag:assistantImage` names a
pushed image (infra/assistant/Dockerfile: one image, two commands) and the workflow is deployed:

- `<prefix>-mcp`: `relayrag mcp --http` on the cloud engine (ask runs the deployed workflow; search, sql_query,
  list_collections, get_run read the snapshots, BigQuery and Firestore). Its identity may start and read
  workflow executions, read and write run records in relayrag's Firestore database, read the snapshots
  bucket, use Vertex AI and run BigQuery jobs on the dataset. Ingest over HTTP stays disabled (no
  RELAYRAG_MCP_INGEST_ROOTS): documents arrive through the documents bucket. Only the assistant's identity
  holds roles/run.invoker on it (Cloud Run checks its ID token, sent as X-Serverless-Authorization), and the
  gateway itself checks the bearer token from the `mcp-tokens` secret (RELAYRAG_MCP_TOKENS).
- `<prefix>-assistant`: `relayrag chat-serve` (POST /chat, SSE). Its identity may call the gateway
  (run.invoker on that service only), use Vertex AI (Gemini, RELAYRAG_LLM=vertex), read and write relayrag's
  Firestore database (its threads), connect to the Cloud SQL instance (roles/cloudsql.client) and read its
  three secrets. `relayrag:assistantMembers` get
  roles/run.invoker on it; requests also need a token of `relayrag:assistantTokens` (RELAYRAG_AGENT_TOKENS).
- threads: in relayrag's Firestore database (RELAYRAG_AGENT_CHECKPOINT=firestore, collection
  `<firestorePrefix>_agent_threads`): nothing billed at rest, see docs/DESIGN.md ("The assistant"). The Cloud
  SQL for PostgreSQL option (`<prefix>-threads`, POSTGRES_16, tier `relayrag:assistantDbTier`, database
  `relayrag_threads`, user `assistant` with the password `relayrag:assistantDbPassword`) is reached through
  the Cloud Run Cloud SQL volume (unix socket /cloudsql/CONNECTION); its connection URL is a secret
  (RELAYRAG_AGENT_POSTGRES_URL, used when RELAYRAG_AGENT_CHECKPOINT=postgres).
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from relayrag_infra.catalog import StackConfig

PORT = 8080
ASSISTANT_APIS = ["secretmanager.googleapis.com", "sqladmin.googleapis.com", "aiplatform.googleapis.com"]
MCP_PROJECT_ROLES = ("roles/workflows.invoker", "roles/aiplatform.user", "roles/bigquery.jobUser")
ASSISTANT_PROJECT_ROLES = ("roles/aiplatform.user", "roles/cloudsql.client")
DB_NAME = "relayrag_threads"
DB_USER = "assistant"


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


def build_services(dep, cfg: StackConfig, *, firestore_condition, account, member, after_apis):
    """Declare the gateway, the assistant, their identities and secrets, and the Cloud SQL thread store.
    Returns (mcp service, assistant service, Cloud SQL instance)."""
    project, region, labels = cfg.project, cfg.region, {"app": "relayrag", **dict(cfg.labels)}
    mcp_sa, bot_sa = account("mcp", "MCP gateway (Cloud Run)"), account("assistant", "assistant (Cloud Run)")
    dep.service_accounts.update(mcp=mcp_sa, assistant=bot_sa)
    mcp_who, bot_who = member(mcp_sa), member(bot_sa)

    for role in MCP_PROJECT_ROLES:
        gcp.projects.IAMMember(f"mcp-project-{role.split('/')[1].replace('.', '-')}", project=project, role=role,
                               member=mcp_who)
    gcp.projects.IAMMember("mcp-firestore-datastore-user", project=project, role="roles/datastore.user",
                           member=mcp_who, condition=firestore_condition,
                           opts=pulumi.ResourceOptions(depends_on=[dep.firestore]))
    gcp.storage.BucketIAMMember("mcp-snapshots-objectViewer", bucket=dep.snapshots_bucket.name,
                                role="roles/storage.objectViewer", member=mcp_who)
    if dep.dataset is not None:
        gcp.bigquery.DatasetIamMember("mcp-dataset-dataViewer", project=project, dataset_id=dep.dataset.dataset_id,
                                      role="roles/bigquery.dataViewer", member=mcp_who)
    gcp.projects.IAMMember("assistant-firestore-datastore-user", project=project, role="roles/datastore.user",
                           member=bot_who, condition=firestore_condition,   # its threads (FirestoreSaver)
                           opts=pulumi.ResourceOptions(depends_on=[dep.firestore]))
    bot_grants = [gcp.projects.IAMMember(f"assistant-project-{role.split('/')[1].replace('.', '-')}",
                                         project=project, role=role, member=bot_who)
                  for role in ASSISTANT_PROJECT_ROLES]

    # -- thread store: Cloud SQL for PostgreSQL ---------------------------------------------------------------
    instance = gcp.sql.DatabaseInstance(
        "threads", project=project, region=region, name=f"{cfg.prefix}-threads", database_version="POSTGRES_16",
        deletion_protection=False,
        settings=gcp.sql.DatabaseInstanceSettingsArgs(
            tier=cfg.assistant_db_tier, edition="ENTERPRISE", availability_type="ZONAL",
            user_labels=labels, ip_configuration=gcp.sql.DatabaseInstanceSettingsIpConfigurationArgs(
                ipv4_enabled=True, ssl_mode="ENCRYPTED_ONLY"),  # no authorized networks: only the connector
            backup_configuration=gcp.sql.DatabaseInstanceSettingsBackupConfigurationArgs(enabled=True)),
        opts=after_apis)
    database = gcp.sql.Database("threads-db", project=project, instance=instance.name, name=DB_NAME)
    db_user = gcp.sql.User("threads-user", project=project, instance=instance.name, name=DB_USER,
                           password=pulumi.Output.secret(cfg.assistant_db_password))
    url = pulumi.Output.all(instance.connection_name, pulumi.Output.secret(cfg.assistant_db_password)).apply(
        lambda a: f"postgresql://{DB_USER}:{a[1]}@/{DB_NAME}?host=/cloudsql/{a[0]}")

    mcp_tokens, mcp_tokens_v, mcp_access = _secret(cfg, "mcp-tokens", cfg.mcp_tokens, [mcp_who, bot_who],
                                                   after_apis)
    chat_tokens, chat_tokens_v, chat_access = _secret(cfg, "assistant-tokens", cfg.assistant_tokens, [bot_who],
                                                      after_apis)
    db_url, db_url_v, db_url_access = _secret(cfg, "assistant-db-url", url, [bot_who], after_apis)

    cloud = {"RELAYRAG_GCP_PROJECT": project, "RELAYRAG_GCP_LOCATION": region, "RELAYRAG_HOME": "/tmp/relayrag",
             "RELAYRAG_LLM": cfg.llm, "RELAYRAG_LLM_MODEL": cfg.llm_model}
    mcp_env = _env({**cloud, "RELAYRAG_ENGINE": "cloud", "RELAYRAG_WORKFLOW": dep.workflow.id,
                    "RELAYRAG_DOCSTORE": "firestore", "RELAYRAG_FIRESTORE_DATABASE": cfg.firestore_database,
                    "RELAYRAG_FIRESTORE_PREFIX": cfg.firestore_prefix, "RELAYRAG_BLOBSTORE": "gcs",
                    "RELAYRAG_GCS_BUCKET": dep.snapshots_bucket.name, "RELAYRAG_EMBEDDER": cfg.embedder,
                    "RELAYRAG_VERTEX_EMBEDDING_MODEL": cfg.vertex_embedding_model,
                    **({"RELAYRAG_BIGQUERY_DATASET": f"{project}.{cfg.bigquery_dataset}",
                        "RELAYRAG_BIGQUERY_COLLECTIONS": cfg.bigquery_collections or "*"}
                       if dep.dataset is not None else {})})
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
                                  mcp_env, "4Gi")]),
        opts=pulumi.ResourceOptions(depends_on=[mcp_tokens_v, mcp_access[0], dep.workflow]))
    gateway_invoker = gcp.cloudrunv2.ServiceIamMember("mcp-invoker-assistant", project=project, location=region,
                                                      name=gateway.name, role="roles/run.invoker", member=bot_who)

    bot_env = _env({**cloud, "RELAYRAG_AGENT_MCP_URL": gateway.uri.apply(lambda u: f"{u}/mcp"),
                    "RELAYRAG_AGENT_CHECKPOINT": "firestore", "RELAYRAG_FIRESTORE_DATABASE": cfg.firestore_database,
                    "RELAYRAG_FIRESTORE_PREFIX": cfg.firestore_prefix})
    bot_env += [_secret_env("RELAYRAG_AGENT_MCP_TOKEN", mcp_tokens, mcp_tokens_v),
                _secret_env("RELAYRAG_AGENT_TOKENS", chat_tokens, chat_tokens_v),
                _secret_env("RELAYRAG_AGENT_POSTGRES_URL", db_url, db_url_v)]
    assistant = gcp.cloudrunv2.Service(
        "assistant", project=project, location=region, name=f"{cfg.prefix}-assistant", labels=labels,
        description="relayrag assistant (POST /chat, SSE)", ingress="INGRESS_TRAFFIC_ALL",
        invoker_iam_disabled=False, deletion_protection=False,
        template=gcp.cloudrunv2.ServiceTemplateArgs(
            service_account=bot_sa.email, timeout="900s", max_instance_request_concurrency=20,
            scaling=gcp.cloudrunv2.ServiceTemplateScalingArgs(min_instance_count=0, max_instance_count=3),
            volumes=[gcp.cloudrunv2.ServiceTemplateVolumeArgs(
                name="cloudsql", cloud_sql_instance=gcp.cloudrunv2.ServiceTemplateVolumeCloudSqlInstanceArgs(
                    instances=[instance.connection_name]))],
            containers=[container(["relayrag", "chat-serve", "--host", "0.0.0.0", "--port", str(PORT)], bot_env,
                                  "2Gi", volume_mounts=[gcp.cloudrunv2.ServiceTemplateContainerVolumeMountArgs(
                                      name="cloudsql", mount_path="/cloudsql")],
                                  startup_probe=gcp.cloudrunv2.ServiceTemplateContainerStartupProbeArgs(
                                      http_get=gcp.cloudrunv2.ServiceTemplateContainerStartupProbeHttpGetArgs(
                                          path="/healthz"), period_seconds=3, failure_threshold=40))]),
        # the assistant's startup opens the MCP session (needs the invoker grant on the gateway) and the Postgres
        # checkpointer (needs the database, its user and cloudsql.client): a failed startup fails the revision
        opts=pulumi.ResourceOptions(depends_on=[chat_tokens_v, db_url_v, mcp_tokens_v, *mcp_access[1:],
                                                *chat_access, *db_url_access, gateway_invoker, database, db_user,
                                                *bot_grants]))
    for i, m in enumerate(cfg.assistant_members):
        gcp.cloudrunv2.ServiceIamMember(f"assistant-invoker-{i}", project=project, location=region,
                                        name=assistant.name, role="roles/run.invoker", member=m)
    return gateway, assistant, instance
