"""The Pulumi program: every relayrag resource on GCP, built from a `StackConfig`.

`build(cfg)` creates, in one project and region:
- required service APIs;
- buckets: documents (uploads trigger ingestion), index snapshots (RELAYRAG_GCS_BUCKET), deploy (function
  source archives) — uniform bucket-level access, public access prevented, no object versioning;
- a Firestore database (native mode), a BigQuery dataset (when `sql` is deployed), the distributed retrieval
  index (dataset + chunks, postings, tombstones tables; when `indexCollections` is set), a Pub/Sub dead-letter
  topic and an inspection subscription (when `ingest` is deployed);
- one runtime service account per stage, holding exactly `catalog.stage_grants(stage)`; a build service
  account; a workflow service account (run.invoker on each stage function, nothing else); an ingest
  trigger service account (eventarc.eventReceiver + run.invoker on the ingest functions);
- one Cloud Function gen2 per stage, from its own source archive with its own requirements.txt;
  `ingest` is two functions (`ingest_object` for object finalized and for object deleted); their images go
  to an Artifact Registry repository with a cleanup policy (`_function_images`); with `colpali_gpu`,
  colpali_search is a Cloud Run service with one L4 built from the same source (`_colpali_gpu_service`);
- the Workflow from workflows/rag.yaml (OIDC auth added to every HTTP call; stage URLs in the env var
  RELAYRAG_STAGE_URLS), when every stage it calls is deployed.

The result (`Deployment`) keeps handles to what was built, and the same values are exported as stack
outputs (`pulumi stack output`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from relayrag_infra import bundle, catalog
from relayrag_infra.catalog import INGEST, INGEST_EVENTS
from relayrag_infra.config import StackConfig

GCS_SERVICE_AGENT_ROLE = "roles/pubsub.publisher"
"""Eventarc's Cloud Storage triggers publish through Pub/Sub as the project's GCS service agent."""

BUILD_ROLES = ("roles/logging.logWriter", "roles/artifactregistry.writer", "roles/storage.objectAdmin")
"""What the build identity needs: https://cloud.google.com/run/docs/configuring/services/build-service-account
("Logs Writer", "Artifact Registry Writer", "Storage Object Admin — for retrieving the function source from
the Cloud Storage bucket, and to store build images"). objectViewer alone failed builds on a fresh project."""

EVENTARC_AGENT_ROLE = "roles/eventarc.serviceAgent"
"""The role Google grants Eventarc's service agent; granted explicitly because the agent is created here."""

SERVICE_APIS = ["iam.googleapis.com", "storage.googleapis.com", "firestore.googleapis.com",
                "cloudfunctions.googleapis.com", "run.googleapis.com", "cloudbuild.googleapis.com",
                "artifactregistry.googleapis.com", "logging.googleapis.com", "pubsub.googleapis.com",
                "eventarc.googleapis.com", "workflows.googleapis.com", "workflowexecutions.googleapis.com",
                "bigquery.googleapis.com", "aiplatform.googleapis.com", "cloudtrace.googleapis.com"]

DASHBOARD_APIS = ["secretmanager.googleapis.com", "cloudtrace.googleapis.com", "iap.googleapis.com"]

SHORT_NAMES = {"hallucination_check": "halluc"}
"""Service account ids are at most 30 characters."""


@dataclass
class Deployment:
    """Handles to the resources `build` created (for tests and for callers composing stacks)."""

    cfg: StackConfig
    documents_bucket: gcp.storage.Bucket
    snapshots_bucket: gcp.storage.Bucket
    deploy_bucket: gcp.storage.Bucket
    firestore: gcp.firestore.Database
    service_accounts: dict[str, gcp.serviceaccount.Account] = field(default_factory=dict)
    functions: dict[str, gcp.cloudfunctionsv2.Function] = field(default_factory=dict)
    dataset: gcp.bigquery.Dataset | None = None
    index_dataset: gcp.bigquery.Dataset | None = None
    index_tables: dict[str, gcp.bigquery.Table] = field(default_factory=dict)
    dead_letter_topic: gcp.pubsub.Topic | None = None
    dead_letter_subscription: gcp.pubsub.Subscription | None = None
    workflow: gcp.workflows.Workflow | None = None
    workflow_skipped: str = ""
    trigger_prereqs: list = field(default_factory=list)  # what the Eventarc-triggered functions wait for
    images: gcp.artifactregistry.Repository | None = None
    dashboard: gcp.cloudrunv2.Service | None = None
    dashboard_skipped: str = ""
    mcp: gcp.cloudrunv2.Service | None = None
    assistant: gcp.cloudrunv2.Service | None = None
    threads_db: gcp.sql.DatabaseInstance | None = None
    assistant_skipped: str = ""
    build_service_account: gcp.serviceaccount.Account | None = None
    function_images: gcp.artifactregistry.Repository | None = None
    colpali_service: gcp.cloudrunv2.Service | None = None


def build_storage_condition(*data_buckets: str) -> gcp.projects.IAMMemberConditionArgs:
    """The IAM condition on the build identity's roles/storage.objectAdmin: every resource except the buckets
    named (and their objects). Cloud Storage evaluates resource.name in conditions
    (https://cloud.google.com/iam/docs/conditions-resource-attributes: projects/_/buckets/B, .../objects/O); the
    role's project-level permissions (resourcemanager.projects.get) name the project, so they stay granted."""
    parts = [f'resource.name != "projects/_/buckets/{b}" && !resource.name.startsWith("projects/_/buckets/{b}/")'
             for b in data_buckets]
    return gcp.projects.IAMMemberConditionArgs(
        title="not-relayrag-data", description="Builds never touch relayrag's documents or index snapshots",
        expression=" && ".join(parts))


def _sa_id(cfg: StackConfig, role: str) -> str:
    return f"{cfg.prefix}-{SHORT_NAMES.get(role, role).replace('_', '-')}"


def _fn_name(cfg: StackConfig, stage: str) -> str:
    return f"{cfg.prefix}-{stage.replace('_', '-')}"


def _member(sa: gcp.serviceaccount.Account) -> pulumi.Output[str]:
    return sa.email.apply(lambda e: f"serviceAccount:{e}")


def _function_images(cfg: StackConfig, build_sa: gcp.serviceaccount.Account, labels: dict,
                     opts: pulumi.ResourceOptions) -> tuple[gcp.artifactregistry.Repository, pulumi.Resource]:
    """The Docker repository the functions' builds push to, instead of the service's own `gcf-artifacts`
    (which has no cleanup policy, so every deploy's images pile up there; the `docker_repository` field of
    a 2nd gen function's build config: https://cloud.google.com/functions/docs/building#image_registry).

    Cleanup (https://cloud.google.com/artifact-registry/docs/repositories/cleanup-policy): KEEP the newest
    `function_images_keep` versions of each package (one package per function, so the running image is always
    kept; keep policies win over delete policies), DELETE any other version older than
    `function_images_max_age_days`. Returns the repository and the build identity's writer grant on it."""
    repo = gcp.artifactregistry.Repository(
        "function-images", project=cfg.project, location=cfg.region, repository_id=f"{cfg.prefix}-functions",
        format="DOCKER", labels=labels, cleanup_policy_dry_run=False,
        description="relayrag Cloud Functions images (cleanup: newest versions kept, older ones deleted)",
        cleanup_policies=[
            gcp.artifactregistry.RepositoryCleanupPolicyArgs(
                id="keep-newest", action="KEEP",
                most_recent_versions=gcp.artifactregistry.RepositoryCleanupPolicyMostRecentVersionsArgs(
                    keep_count=int(cfg.function_images_keep))),
            gcp.artifactregistry.RepositoryCleanupPolicyArgs(
                id="delete-old", action="DELETE",
                condition=gcp.artifactregistry.RepositoryCleanupPolicyConditionArgs(
                    tag_state="ANY", older_than=f"{int(cfg.function_images_max_age_days) * 86400}s")),
        ], opts=opts)
    grant = gcp.artifactregistry.RepositoryIamMember(
        "build-function-images-writer", project=cfg.project, location=cfg.region, repository=repo.repository_id,
        role="roles/artifactregistry.writer", member=_member(build_sa))
    return repo, grant


COLPALI = "colpali_search"
GPU_REGIONS = ("us-central1", "us-east4", "europe-west1", "europe-west4", "asia-southeast1", "asia-south1")
"""Regions with NVIDIA L4 GPUs for Cloud Run services (https://cloud.google.com/run/docs/configuring/services/gpu,
"Supported regions"; the list grows, so another region only gets a warning)."""
GPU_MIN_CPU, GPU_MIN_MEMORY = "4", "16Gi"
"""An L4 on Cloud Run needs at least 4 vCPU and 16 GiB of memory (same page)."""


def _invoke_url(target) -> pulumi.Output[str]:
    """The HTTPS URL the workflow calls: a gen2 function's service URI, or a Cloud Run service's URI."""
    if isinstance(target, gcp.cloudrunv2.Service):
        return target.uri
    return target.service_config.apply(lambda c: c.uri)


def _colpali_gpu_service(cfg: StackConfig, spec: catalog.StageSpec, env: dict, labels: dict, *,
                         source: gcp.storage.BucketObject, deploy: gcp.storage.Bucket,
                         build_sa: gcp.serviceaccount.Account, runtime_sa: gcp.serviceaccount.Account,
                         opts: pulumi.ResourceOptions) -> gcp.cloudrunv2.Service:
    """colpali_search as a Cloud Run service with one NVIDIA L4 (`relayrag:colpaliGpu: true`): Cloud Functions
    offer no GPU, a Cloud Run service built from the same function source does
    (https://cloud.google.com/run/docs/configuring/services/gpu). Built by Cloud Run's function build
    (`build_config`: the bundle's zip, the `colpali_search` target, Google's python312 base image) as the build
    identity, into the functions' image repository (its cleanup policy applies).

    At least 4 vCPU / 16 GiB (the GPU's minimum), instance-based billing (`cpu_idle=False`; GPU services need
    it), no zonal redundancy (cheaper, and it needs less GPU quota), minimum instances 0: at rest it costs
    nothing but its stored image. Scales to `spec.max_instances`, which must fit the project's L4 quota."""
    project, region = cfg.project, cfg.region
    if region not in GPU_REGIONS:
        pulumi.log.warn(f"relayrag:colpaliGpu: {region} was not among the regions offering NVIDIA L4 on Cloud Run "
                        f"({', '.join(GPU_REGIONS)}); the service may fail to deploy there")
    cpu = str(max(int(float(spec.cpu)), int(GPU_MIN_CPU)))
    memory = spec.memory if catalog.memory_mib(spec.memory) >= catalog.memory_mib(GPU_MIN_MEMORY) else GPU_MIN_MEMORY
    image = f"{region}-docker.pkg.dev/{project}/{cfg.prefix}-functions/colpali-search-gpu"
    base_image = f"{region}-docker.pkg.dev/serverless-runtimes/google-22-full/runtimes/{catalog.RUNTIME}"
    env = {**env, "RELAYRAG_MEMORY_LIMIT_MB": str(catalog.memory_mib(memory))}
    return gcp.cloudrunv2.Service(
        "colpali-gpu", project=project, location=region, name=f"{cfg.prefix}-colpali-search-gpu", labels=labels,
        description="relayrag stage colpali_search on an NVIDIA L4 (Cloud Run function build)",
        ingress="INGRESS_TRAFFIC_ALL" if cfg.ingress == "all" else "INGRESS_TRAFFIC_INTERNAL_ONLY",
        deletion_protection=False,
        build_config=gcp.cloudrunv2.ServiceBuildConfigArgs(
            source_location=pulumi.Output.concat("gs://", deploy.name, "/", source.name),
            function_target=spec.entry_point, base_image=base_image, image_uri=image,
            enable_automatic_updates=True, service_account=build_sa.id),
        scaling=gcp.cloudrunv2.ServiceScalingArgs(min_instance_count=0),
        template=gcp.cloudrunv2.ServiceTemplateArgs(
            service_account=runtime_sa.email, timeout=f"{spec.timeout_s}s",
            max_instance_request_concurrency=spec.concurrency,
            scaling=gcp.cloudrunv2.ServiceTemplateScalingArgs(min_instance_count=0,
                                                              max_instance_count=spec.max_instances),
            node_selector=gcp.cloudrunv2.ServiceTemplateNodeSelectorArgs(accelerator="nvidia-l4"),
            gpu_zonal_redundancy_disabled=True,
            containers=[gcp.cloudrunv2.ServiceTemplateContainerArgs(
                image=image, base_image_uri=base_image,
                envs=[gcp.cloudrunv2.ServiceTemplateContainerEnvArgs(name=k, value=v) for k, v in env.items()],
                resources=gcp.cloudrunv2.ServiceTemplateContainerResourcesArgs(
                    limits={"cpu": cpu, "memory": memory, "nvidia.com/gpu": "1"},
                    cpu_idle=False, startup_cpu_boost=True))]),
        opts=opts)


def build(cfg: StackConfig) -> Deployment:
    """Declare every resource for `cfg` (inside a Pulumi program or under `pulumi.runtime.set_mocks`)."""
    project, region = cfg.project, cfg.region
    provider_opts = pulumi.ResourceOptions()
    labels = {"app": "relayrag", **dict(cfg.labels)}
    stages = list(cfg.stages)
    needs_vertex = any(catalog.needs_vertex(s, cfg.backends) for s in stages) or (
        cfg.assistant and bool(cfg.assistant_image) and "vertex" in (cfg.llm, cfg.embedder))

    # --- APIs ---------------------------------------------------------------------------------------
    apis = [a for a in SERVICE_APIS
            if not (a == "aiplatform.googleapis.com" and not needs_vertex)
            and not (a == "bigquery.googleapis.com" and "sql" not in stages and not cfg.index_collections)]
    if cfg.dashboard:
        apis += [a for a in DASHBOARD_APIS if a not in apis and (a != "iap.googleapis.com" or cfg.dashboard_access == "iap")]
    if cfg.assistant:
        from relayrag_infra.assistant import ASSISTANT_APIS, POSTGRES_APIS
        apis += [a for a in ASSISTANT_APIS + (POSTGRES_APIS if cfg.assistant_threads == "postgres" else [])
                 if a not in apis]
    services = [gcp.projects.Service(f"api-{a.split('.')[0]}", project=project, service=a,
                                     disable_on_destroy=False, opts=provider_opts) for a in apis]
    after_apis = pulumi.ResourceOptions(depends_on=services)

    # --- storage ------------------------------------------------------------------------------------
    def bucket(logical: str, suffix: str, **kw) -> gcp.storage.Bucket:
        return gcp.storage.Bucket(logical, name=f"{project}-{cfg.prefix}-{suffix}", project=project,
                                  location=region.upper(), uniform_bucket_level_access=True,
                                  public_access_prevention="enforced", labels=labels,
                                  versioning=gcp.storage.BucketVersioningArgs(enabled=False), opts=after_apis, **kw)

    abort_uploads = gcp.storage.BucketLifecycleRuleArgs(
        action=gcp.storage.BucketLifecycleRuleActionArgs(type="AbortIncompleteMultipartUpload"),
        condition=gcp.storage.BucketLifecycleRuleConditionArgs(age=1))
    documents_name, snapshots_name = f"{project}-{cfg.prefix}-documents", f"{project}-{cfg.prefix}-snapshots"
    documents = bucket("documents", "documents", lifecycle_rules=[abort_uploads])
    # No age-based deletion on snapshots: a collection nobody re-ingests keeps serving its current version
    # forever; relayrag itself deletes all versions but the current and the previous one after each flip.
    # Soft delete is off because every snapshot can be rebuilt from the documents bucket.
    snapshots = bucket("snapshots", "snapshots", lifecycle_rules=[abort_uploads],
                       soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(retention_duration_seconds=0))
    deploy = bucket("deploy", "deploy", lifecycle_rules=[abort_uploads])

    firestore = gcp.firestore.Database(
        "firestore", project=project, name=cfg.firestore_database, type="FIRESTORE_NATIVE",
        location_id=cfg.firestore_location or region, delete_protection_state="DELETE_PROTECTION_ENABLED",
        deletion_policy="ABANDON", opts=after_apis)
    firestore_condition = gcp.projects.IAMMemberConditionArgs(
        title=f"{cfg.prefix}-firestore-{cfg.firestore_database}".replace("(", "").replace(")", ""),
        description="Only relayrag's Firestore database",
        expression=f'resource.name == "projects/{project}/databases/{cfg.firestore_database}"')

    dep = Deployment(cfg=cfg, documents_bucket=documents, snapshots_bucket=snapshots, deploy_bucket=deploy,
                     firestore=firestore)

    if "sql" in stages:
        dep.dataset = gcp.bigquery.Dataset(
            "warehouse", project=project, dataset_id=cfg.bigquery_dataset.replace("-", "_"),
            location=cfg.bigquery_location or region, description="relayrag SQL stage: tables it may query",
            labels=labels, delete_contents_on_destroy=False, opts=after_apis)

    if cfg.index_collections:
        _index_tables(dep, project, region, labels, after_apis)

    if INGEST in stages:
        dep.dead_letter_topic = gcp.pubsub.Topic(
            "ingest-dead-letter", project=project, name=f"{cfg.prefix}-ingest-dead-letter", labels=labels,
            message_retention_duration="604800s", opts=after_apis)
        # A pull subscription nobody consumes automatically: messages wait 7 days for inspection
        # (`gcloud pubsub subscriptions pull ... --auto-ack`), and the subscription itself never expires.
        dep.dead_letter_subscription = gcp.pubsub.Subscription(
            "ingest-dead-letter-inspect", project=project, name=f"{cfg.prefix}-ingest-dead-letter-inspect",
            topic=dep.dead_letter_topic.id, message_retention_duration="604800s", retain_acked_messages=False,
            ack_deadline_seconds=60, expiration_policy=gcp.pubsub.SubscriptionExpirationPolicyArgs(ttl=""),
            labels=labels, opts=after_apis)

    vertex_role = None
    if needs_vertex:
        vertex_role = gcp.projects.IAMCustomRole(
            "vertex-predict", project=project, role_id=f"{cfg.prefix.replace('-', '_')}_vertex_predict",
            title="relayrag Vertex AI predict", description="Call Gemini and embedding models, nothing else",
            permissions=catalog.VERTEX_PERMISSIONS, opts=after_apis)

    # --- identities -----------------------------------------------------------------------------------
    def account(role: str, what: str) -> gcp.serviceaccount.Account:
        return gcp.serviceaccount.Account(f"sa-{role}", project=project, account_id=_sa_id(cfg, role),
                                          display_name=f"relayrag {what}", opts=after_apis)

    build_sa = account("build", "function builds")
    # Cloud Build's needs for a functions build (BUILD_ROLES): logs, the gcf-artifacts image repository, and
    # the source the service copies into its own gcf-v2-sources-* bucket (created by the service, so no
    # bucket-level grant is possible up front).
    # Storage Object Admin cannot be granted on those buckets up front, but it can exclude relayrag's data (S2):
    # the condition keeps the documents and snapshots buckets out of the build identity's reach, and leaves every
    # bucket a build uses (deploy, gcf-v2-sources-*, <project>_cloudbuild) as Google documents it.
    build_grants = [gcp.projects.IAMMember(
        f"build-{r.split('/')[1].replace('.', '-')}", project=project, role=r, member=_member(build_sa),
        condition=(build_storage_condition(documents_name, snapshots_name)
                   if r == "roles/storage.objectAdmin" else None))
        for r in BUILD_ROLES]

    function_images, images_grant = _function_images(cfg, build_sa, labels, after_apis)
    dep.function_images = function_images
    build_grants = [*build_grants, images_grant]
    docker_repository = pulumi.Output.concat("projects/", project, "/locations/", region, "/repositories/",
                                             function_images.repository_id)

    for stage in stages:
        sa = account(stage, f"stage {stage}")
        dep.service_accounts[stage] = sa
        for grant in catalog.stage_grants(stage, cfg.backends):
            _grant(dep, stage, sa, grant, project, firestore, firestore_condition, vertex_role)

    # --- functions ------------------------------------------------------------------------------------
    pins = catalog.locked_pins()
    invokables: dict[str, gcp.cloudfunctionsv2.Function] = {}
    ingest_prereqs: list[pulumi.Resource] = []
    if INGEST in stages:
        trigger_sa = account("ingest-trigger", "Eventarc trigger of ingest_object")
        dep.service_accounts["ingest-trigger"] = trigger_sa
        gcs_agent = gcp.storage.get_project_service_account_output(project=project)
        # Eventarc's service agent does not exist until something creates it: a first `pulumi up` that
        # enables the API and creates GCS triggers in one run failed (terraform-provider-google #25294).
        # ServiceIdentity creates it (pulumi-gcp #1290), then it gets its role, and the triggers wait for both.
        eventarc_agent = gcp.projects.ServiceIdentity(
            "eventarc-agent", project=project, service="eventarc.googleapis.com",
            opts=pulumi.ResourceOptions(depends_on=services))
        ingest_prereqs = [
            eventarc_agent,
            gcp.projects.IAMMember("eventarc-agent-role", project=project, role=EVENTARC_AGENT_ROLE,
                                   member=eventarc_agent.member,
                                   opts=pulumi.ResourceOptions(depends_on=[eventarc_agent])),
            gcp.projects.IAMMember("gcs-agent-pubsub-publisher", project=project, role=GCS_SERVICE_AGENT_ROLE,
                                   member=gcs_agent.email_address.apply(lambda e: f"serviceAccount:{e}")),
            gcp.projects.IAMMember("ingest-trigger-event-receiver", project=project,
                                   role="roles/eventarc.eventReceiver", member=_member(trigger_sa)),
        ]

    dep.trigger_prereqs = list(ingest_prereqs)
    dep.build_service_account = build_sa
    for stage in stages:
        spec = cfg.spec(stage)
        # the stage's own bundle (relayrag_infra.bundle): its main.py and the code it loads, nothing of the
        # other stages, so a change to one stage's module rebuilds that function only
        files = bundle.bundle_files(stage)
        requirements = catalog.requirements_text(stage, cfg.backends, pins)
        archive = pulumi.AssetArchive({**{rel: pulumi.StringAsset(c) if isinstance(c, str) else pulumi.FileAsset(str(c))
                                          for rel, c in files.items()},
                                       "requirements.txt": pulumi.StringAsset(requirements)})
        source = gcp.storage.BucketObject(
            f"source-{stage}", bucket=deploy.name, name=f"{stage}-{bundle.bundle_digest(files, requirements)}.zip",
            source=archive)
        env = cfg.stage_env(stage, snapshots_bucket=snapshots.name,
                            dead_letter_topic=dep.dead_letter_topic.id if dep.dead_letter_topic else None,
                            bigquery_dataset=(pulumi.Output.concat(project, ".", dep.dataset.dataset_id)
                                              if dep.dataset is not None else None))
        # the function's size, so a stage refuses a snapshot that would not fit with a clear error (not an OOM kill)
        env = {**env, "RELAYRAG_MEMORY_LIMIT_MB": str(catalog.memory_mib(spec.memory))}
        build_config = gcp.cloudfunctionsv2.FunctionBuildConfigArgs(
            runtime=catalog.RUNTIME, entry_point=spec.entry_point, service_account=build_sa.id,
            docker_repository=docker_repository,
            source=gcp.cloudfunctionsv2.FunctionBuildConfigSourceArgs(
                storage_source=gcp.cloudfunctionsv2.FunctionBuildConfigSourceStorageSourceArgs(
                    bucket=deploy.name, object=source.name)))

        def service_config(ingress: str) -> gcp.cloudfunctionsv2.FunctionServiceConfigArgs:
            return gcp.cloudfunctionsv2.FunctionServiceConfigArgs(
                available_memory=spec.memory, available_cpu=spec.cpu, timeout_seconds=spec.timeout_s,
                max_instance_count=spec.max_instances, min_instance_count=0,
                max_instance_request_concurrency=spec.concurrency, environment_variables=env,
                ingress_settings=ingress, all_traffic_on_latest_revision=True,
                service_account_email=dep.service_accounts[stage].email)

        opts = pulumi.ResourceOptions(depends_on=[*services, *build_grants])
        if stage == COLPALI and cfg.colpali_gpu:
            dep.colpali_service = _colpali_gpu_service(cfg, spec, env, labels, source=source, deploy=deploy,
                                                       build_sa=build_sa, runtime_sa=dep.service_accounts[stage],
                                                       opts=opts)
            invokables[stage] = dep.colpali_service
            continue
        if spec.kind == "http":
            fn = gcp.cloudfunctionsv2.Function(
                f"fn-{stage}", project=project, location=region, name=_fn_name(cfg, stage), labels=labels,
                description=f"relayrag stage {stage}", build_config=build_config,
                service_config=service_config("ALLOW_ALL" if cfg.ingress == "all" else "ALLOW_INTERNAL_ONLY"),
                opts=opts)
            dep.functions[stage] = fn
            invokables[stage] = fn
            continue
        for suffix, event_type in INGEST_EVENTS.items():
            key = f"{stage}-{suffix}"
            fn = gcp.cloudfunctionsv2.Function(
                f"fn-{key}", project=project, location=region, name=_fn_name(cfg, key), labels=labels,
                description=f"relayrag ingestion on {event_type}", build_config=build_config,
                service_config=service_config("ALLOW_INTERNAL_ONLY"),  # Eventarc is an internal source
                event_trigger=gcp.cloudfunctionsv2.FunctionEventTriggerArgs(
                    trigger_region=region, event_type=event_type,
                    event_filters=[gcp.cloudfunctionsv2.FunctionEventTriggerEventFilterArgs(
                        attribute="bucket", value=documents.name)],
                    # retried with backoff by Eventarc until acknowledged; ingest_object acknowledges a poison
                    # object after recording it and publishing it to the dead-letter topic (no retry storm)
                    retry_policy="RETRY_POLICY_RETRY",
                    service_account_email=dep.service_accounts["ingest-trigger"].email),
                opts=pulumi.ResourceOptions(depends_on=[*services, *build_grants, *ingest_prereqs]))
            dep.functions[key] = fn
            gcp.cloudrunv2.ServiceIamMember(
                f"invoke-{key}-by-trigger", project=project, location=region, name=fn.name,
                role="roles/run.invoker", member=_member(dep.service_accounts["ingest-trigger"]))

    # --- workflow -------------------------------------------------------------------------------------
    doc = catalog.load_workflow_yaml()
    missing = cfg.workflow_missing(doc)
    if missing:
        dep.workflow_skipped = (f"workflow not deployed: {catalog.WORKFLOW_FILE.name} calls stages this stack "
                                f"does not deploy: {', '.join(missing)} (add them to relayrag:stages)")
        pulumi.log.info(dep.workflow_skipped)
    else:
        wf_sa = account("workflow", "workflow runner")
        dep.service_accounts["workflow"] = wf_sa
        called = [s for s in catalog.called_stages(doc) if s in invokables]  # optional stages may be absent
        invokers = [gcp.cloudrunv2.ServiceIamMember(
            f"invoke-{s}-by-workflow", project=project, location=region, name=invokables[s].name,
            role="roles/run.invoker", member=_member(wf_sa)) for s in called]
        urls = pulumi.Output.all(**{s: _invoke_url(invokables[s]) for s in called})
        dep.workflow = gcp.workflows.Workflow(
            "rag", project=project, region=region, name=f"{cfg.prefix}-rag", labels=labels,
            description="relayrag RAG workflow (workflows/rag.yaml)", service_account=wf_sa.email,
            source_contents=catalog.deployable_workflow_source(),
            user_env_vars={"RELAYRAG_STAGE_URLS": urls.apply(catalog.stage_urls_json)},
            deletion_protection=False, opts=pulumi.ResourceOptions(depends_on=[*services, *invokers]))

    # --- dashboard (Cloud Run) -------------------------------------------------------------------------
    if cfg.dashboard:
        from relayrag_infra import dashboard as dash
        dep.images = dash.repository(cfg, after_apis)
        if not cfg.dashboard_image:
            dep.dashboard_skipped = ("dashboard not deployed yet: build and push its image (infra/README.md, "
                                     f"`gcloud builds submit --config infra/dashboard/cloudbuild.yaml`), e.g. "
                                     f"{dash.image_hint(cfg)}, then `pulumi config set relayrag:dashboardImage IMAGE`")
        elif dep.workflow is None:
            dep.dashboard_skipped = "dashboard not deployed: it runs questions on the workflow, which is not deployed"
        else:
            dep.dashboard = dash.build_service(dep, cfg, firestore_condition=firestore_condition, account=account,
                                               member=_member, after_apis=after_apis)
        if dep.dashboard_skipped:
            pulumi.log.info(dep.dashboard_skipped)

    # --- the assistant and its MCP gateway (Cloud Run), threads in Firestore (or Cloud SQL) -------------------------------
    if cfg.assistant:
        from relayrag_infra import assistant as bot
        from relayrag_infra import dashboard as dash
        if dep.images is None:
            dep.images = dash.repository(cfg, after_apis)
        if not cfg.assistant_image:
            dep.assistant_skipped = ("assistant not deployed yet: build and push its image (infra/README.md, "
                                     "`gcloud builds submit --config infra/assistant/cloudbuild.yaml`), e.g. "
                                     f"{bot.image_hint(cfg)}, then `pulumi config set relayrag:assistantImage IMAGE`")
        elif dep.workflow is None:
            dep.assistant_skipped = "assistant not deployed: its gateway runs the workflow, which is not deployed"
        else:
            dep.mcp, dep.assistant, dep.threads_db = bot.build_services(
                dep, cfg, firestore_condition=firestore_condition, account=account, member=_member,
                after_apis=after_apis, vertex_role=vertex_role)
        if dep.assistant_skipped:
            pulumi.log.info(dep.assistant_skipped)

    _export(dep)
    return dep


# The distributed retrieval index (relayrag.retrieval.bigquery_index.table_ddl holds the same schema as SQL).
INDEX_SCHEMAS: dict[str, list[dict]] = {
    "chunks": [{"name": "collection", "type": "STRING", "mode": "REQUIRED"},
               {"name": "segment", "type": "STRING", "mode": "REQUIRED"},
               {"name": "row", "type": "INT64", "mode": "REQUIRED"},
               *({"name": n, "type": "STRING"} for n in ("chunk_id", "source", "doc", "title")),
               *({"name": n, "type": "INT64"} for n in ("page", "start", "end")),
               *({"name": n, "type": "STRING"} for n in ("text", "context", "content_hash")),
               {"name": "doc_len", "type": "INT64"},
               {"name": "embedding", "type": "FLOAT64", "mode": "REPEATED"}],
    "postings": [{"name": "collection", "type": "STRING", "mode": "REQUIRED"},
                 {"name": "segment", "type": "STRING", "mode": "REQUIRED"},
                 {"name": "row", "type": "INT64", "mode": "REQUIRED"},
                 {"name": "token", "type": "STRING", "mode": "REQUIRED"},
                 {"name": "tf", "type": "FLOAT64"}],
    "tombstones": [{"name": "collection", "type": "STRING", "mode": "REQUIRED"},
                   {"name": "segment", "type": "STRING", "mode": "REQUIRED"},
                   {"name": "version", "type": "STRING", "mode": "REQUIRED"},
                   {"name": "row", "type": "INT64", "mode": "REQUIRED"}],
}
INDEX_CLUSTERING = {"chunks": ["collection", "segment"], "postings": ["collection", "token"],
                    "tombstones": ["collection", "segment"]}


def _index_tables(dep: Deployment, project: str, region: str, labels: dict, opts) -> None:
    """The dataset and tables of the distributed retrieval index. The vector index on chunks.embedding is DDL
    only (no Pulumi resource): `CREATE VECTOR INDEX` from relayrag.retrieval.bigquery_index.table_ddl, once the
    table holds 5,000 rows (BigQuery's minimum for IVF; below it VECTOR_SEARCH scans, exactly)."""
    import json
    cfg = dep.cfg
    dep.index_dataset = gcp.bigquery.Dataset(
        "index", project=project, dataset_id=cfg.index_dataset.replace("-", "_"),
        location=cfg.bigquery_location or region,
        description="relayrag distributed retrieval index: segments' chunks, BM25 postings, tombstones",
        labels=labels, delete_contents_on_destroy=False, opts=opts)
    for name, schema in INDEX_SCHEMAS.items():
        dep.index_tables[name] = gcp.bigquery.Table(
            f"index-{name}", project=project, dataset_id=dep.index_dataset.dataset_id, table_id=name,
            schema=json.dumps(schema), clusterings=INDEX_CLUSTERING[name], labels=labels,
            deletion_protection=True, opts=pulumi.ResourceOptions(depends_on=[dep.index_dataset]))


def _grant(dep: Deployment, stage: str, sa: gcp.serviceaccount.Account, grant: catalog.Grant, project: str,
           firestore: gcp.firestore.Database, condition, vertex_role) -> None:
    name = f"{stage}-{grant.scope}-{grant.role.split('/')[-1].replace('.', '-').replace(':', '-')}"
    member = _member(sa)
    if grant.scope == "firestore":
        gcp.projects.IAMMember(name, project=project, role=grant.role, member=member, condition=condition,
                               opts=pulumi.ResourceOptions(depends_on=[firestore]))
    elif grant.scope in ("snapshots", "documents"):
        bucket = dep.snapshots_bucket if grant.scope == "snapshots" else dep.documents_bucket
        gcp.storage.BucketIAMMember(name, bucket=bucket.name, role=grant.role, member=member)
    elif grant.scope == "dataset":
        gcp.bigquery.DatasetIamMember(name, project=project, dataset_id=dep.dataset.dataset_id, role=grant.role,
                                      member=member)
    elif grant.scope == "index_dataset":
        gcp.bigquery.DatasetIamMember(name, project=project, dataset_id=dep.index_dataset.dataset_id,
                                      role=grant.role, member=member)
    elif grant.scope == "dead_letter":
        gcp.pubsub.TopicIAMMember(name, project=project, topic=dep.dead_letter_topic.name, role=grant.role,
                                  member=member)
    elif grant.scope == "project":
        role = vertex_role.name if grant.role == f"custom:{catalog.VERTEX_ROLE_ID}" else grant.role
        gcp.projects.IAMMember(name, project=project, role=role, member=member)
    else:  # pragma: no cover - catalog and stack disagree
        raise ValueError(f"unknown grant scope {grant.scope!r}")


def _export(dep: Deployment) -> None:
    cfg = dep.cfg
    pulumi.export("documents_bucket", dep.documents_bucket.name)
    pulumi.export("snapshots_bucket", dep.snapshots_bucket.name)
    pulumi.export("firestore_database", dep.firestore.name)
    pulumi.export("stages", list(cfg.stages))
    pulumi.export("function_urls", {k: fn.service_config.apply(lambda c: c.uri if c else None)
                                    for k, fn in dep.functions.items()})
    pulumi.export("service_accounts", {k: sa.email for k, sa in dep.service_accounts.items()})
    if dep.build_service_account is not None:
        # `gcloud builds submit --service-account` for the images (infra/*/cloudbuild.yaml): the same identity the
        # functions build with, holding BUILD_ROLES, instead of Cloud Build's default service account
        pulumi.export("build_service_account", dep.build_service_account.name)
    if dep.dataset is not None:
        pulumi.export("bigquery_dataset", pulumi.Output.concat(cfg.project, ".", dep.dataset.dataset_id))
    if dep.index_dataset is not None:
        pulumi.export("index_dataset", pulumi.Output.concat(cfg.project, ".", dep.index_dataset.dataset_id))
    if dep.dead_letter_topic is not None:
        pulumi.export("dead_letter_topic", dep.dead_letter_topic.id)
        pulumi.export("dead_letter_subscription", dep.dead_letter_subscription.id)
    if dep.workflow is not None:
        # the value for RELAYRAG_WORKFLOW (relayrag ask --engine cloud): projects/P/locations/L/workflows/NAME
        pulumi.export("workflow", dep.workflow.id)
        # what `relayrag ask --engine cloud` needs: the workflow, and the stores the run record lives in
        pulumi.export("cli_env", {
            "RELAYRAG_ENGINE": "cloud", "RELAYRAG_WORKFLOW": dep.workflow.id, "RELAYRAG_GCP_PROJECT": cfg.project,
            "RELAYRAG_GCP_LOCATION": cfg.region, "RELAYRAG_DOCSTORE": "firestore",
            "RELAYRAG_FIRESTORE_DATABASE": cfg.firestore_database, "RELAYRAG_FIRESTORE_PREFIX": cfg.firestore_prefix,
            "RELAYRAG_BLOBSTORE": "gcs", "RELAYRAG_GCS_BUCKET": dep.snapshots_bucket.name})
    else:
        pulumi.export("workflow_skipped", dep.workflow_skipped)
    if dep.colpali_service is not None:
        pulumi.export("colpali_gpu_url", dep.colpali_service.uri)
    if dep.images is not None:
        pulumi.export("image_repository", pulumi.Output.concat(cfg.region, "-docker.pkg.dev/", cfg.project, "/",
                                                               dep.images.repository_id))
    if dep.dashboard is not None:
        pulumi.export("dashboard_url", dep.dashboard.uri)
    elif dep.dashboard_skipped:
        pulumi.export("dashboard_skipped", dep.dashboard_skipped)
    if dep.assistant is not None and dep.mcp is not None:
        pulumi.export("assistant_url", dep.assistant.uri)
        pulumi.export("mcp_url", dep.mcp.uri)
    elif dep.assistant_skipped:
        pulumi.export("assistant_skipped", dep.assistant_skipped)
