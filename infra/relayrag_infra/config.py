"""The stack's configuration: `StackConfig` (everything the Pulumi program reads from `relayrag:*` and
`gcp:project/region`, validated) and `config_from_pulumi`, which builds it from `pulumi.Config`.

No Pulumi import here either (a `pulumi.Config` is passed in): the tests build StackConfigs directly.
What the stages are, use and install lives in relayrag_infra.catalog.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from relayrag_infra.catalog import (ALL_STAGES, EMBEDDERS, LLM_BACKENDS, OPTIONAL_STAGES, STAGES, TRACE_EXPORTER,
                                    StageSpec, called_stages)


@dataclass(frozen=True)
class StackConfig:
    """Everything the Pulumi program reads from the stack config (`relayrag:*`, `gcp:project/region`).

    Raises ValueError on invalid values, naming the key and the valid choices."""

    project: str
    region: str
    stages: tuple[str, ...] = ALL_STAGES
    llm: str = "vertex"
    llm_model: str = "gemini-2.5-flash"
    embedder: str = "vertex"
    vertex_embedding_model: str = "text-multilingual-embedding-002"
    vertex_location: str = ""
    prefix: str = "relayrag"
    firestore_database: str = "relayrag"
    firestore_location: str = ""
    firestore_prefix: str = "relayrag"
    bigquery_dataset: str = "relayrag"
    bigquery_collections: str = ""
    bigquery_max_bytes_billed: int = 1_000_000_000
    bigquery_location: str = ""
    # the distributed retrieval backend (relayrag.retrieval.bigquery_index): collections searched in BigQuery
    index_dataset: str = "relayrag_index"
    index_collections: str = ""
    ingress: str = "all"
    # page-image search model of the colpali_search function (RELAYRAG_COLPALI_MODEL): a model id it downloads
    # at start, or a folder baked into the image; "off" = page-image search off (the visual route answers from text)
    colpali_model: str = "vidore/colqwen2-v1.0"
    memory: Mapping[str, str] = field(default_factory=dict)
    cpu: Mapping[str, str] = field(default_factory=dict)
    timeouts: Mapping[str, int] = field(default_factory=dict)
    max_instances: Mapping[str, int] = field(default_factory=dict)
    concurrency: Mapping[str, int] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    # the dashboard on Cloud Run (relayrag_infra.dashboard): off unless `relayrag:dashboard: true`
    dashboard: bool = False
    dashboard_image: str = ""
    dashboard_access: str = "iam"
    dashboard_members: tuple[str, ...] = ()
    dashboard_tokens: Any = ""  # secrets: a string, or the secret pulumi.Output of config.get_secret
    # the assistant + its MCP gateway on Cloud Run (relayrag_infra.assistant): off unless `relayrag:assistant: true`
    assistant: bool = False
    assistant_image: str = ""
    assistant_members: tuple[str, ...] = ()
    assistant_tokens: Any = ""
    mcp_tokens: Any = ""
    assistant_db_tier: str = "db-f1-micro"  # the postgres thread store's machine (no password: IAM login)
    # the functions' container images (relayrag_infra.stack._function_images): the newest N image versions of
    # each function are kept, other versions are deleted once older than the age (Artifact Registry cleanup)
    function_images_keep: int = 5
    function_images_max_age_days: int = 30
    # colpali_search as a Cloud Run service with one NVIDIA L4 GPU instead of a CPU-only function
    colpali_gpu: bool = False
    # where the assistant's threads live: firestore (default; nothing billed at rest) or postgres (a Cloud SQL
    # instance, billed while it exists; infra/README.md "First deploy: what it costs at rest")
    assistant_threads: str = "firestore"

    def __post_init__(self):
        if not self.project:
            raise ValueError("gcp:project is not set: `pulumi config set gcp:project YOUR_PROJECT`")
        if not self.region:
            raise ValueError("no region: `pulumi config set gcp:region us-central1` (or relayrag:region)")
        unknown = [s for s in self.stages if s not in STAGES]
        if unknown:
            raise ValueError(f"relayrag:stages: unknown stage(s) {unknown}; valid: {list(ALL_STAGES)}")
        if not self.stages:
            raise ValueError("relayrag:stages is empty; list at least one of " + ", ".join(ALL_STAGES))
        if self.llm not in LLM_BACKENDS:
            raise ValueError(f"relayrag:llm {self.llm!r} is not deployable; valid: {list(LLM_BACKENDS)}")
        if self.embedder not in EMBEDDERS:
            raise ValueError(f"relayrag:embedder {self.embedder!r}; valid: {list(EMBEDDERS)}")
        if self.ingress not in ("all", "internal"):
            raise ValueError(f"relayrag:ingress {self.ingress!r}; valid: all, internal")
        if not re.fullmatch(r"[a-z][a-z0-9-]{2,14}", self.prefix):
            raise ValueError(f"relayrag:prefix {self.prefix!r} must be 3-15 of a-z, 0-9, '-', starting with a "
                             "letter (it starts service account ids, which are 6-30 characters: "
                             "'<prefix>-sql' must reach 6)")
        for key, table in (("memory", self.memory), ("cpu", self.cpu), ("timeouts", self.timeouts),
                           ("maxInstances", self.max_instances), ("concurrency", self.concurrency)):
            bad = [s for s in table if s not in STAGES]
            if bad:
                raise ValueError(f"relayrag:{key}: unknown stage(s) {bad}; valid: {list(ALL_STAGES)}")
        for s in self.stages:
            self.spec(s)  # validates the overrides
        if self.dashboard_access not in ("iam", "iap"):
            raise ValueError(f"relayrag:dashboardAccess {self.dashboard_access!r}; valid: iam, iap")
        for m in self.dashboard_members:
            if not re.fullmatch(r"(user|group|serviceAccount|domain):\S+", m):
                raise ValueError(f"relayrag:dashboardMembers: {m!r} is not an IAM member (user:EMAIL, group:EMAIL, "
                                 "serviceAccount:EMAIL or domain:DOMAIN; allUsers is not allowed)")
        if self.dashboard and self.dashboard_image and _unset(self.dashboard_tokens):
            raise ValueError("relayrag:dashboardTokens is not set: the dashboard refuses requests without its tokens; "
                             "`pulumi config set --secret relayrag:dashboardTokens \"$(python -c 'import secrets; "
                             "print(secrets.token_urlsafe(32))')\"`")

        if not 1 <= int(self.function_images_keep) <= 100:
            raise ValueError(f"relayrag:functionImagesKeep {self.function_images_keep!r} must be 1..100 (the "
                             "newest image versions kept per function; the running one is the newest)")
        if not 1 <= int(self.function_images_max_age_days) <= 3650:
            raise ValueError(f"relayrag:functionImagesMaxAgeDays {self.function_images_max_age_days!r} must be "
                             "1..3650")
        if self.colpali_gpu and "colpali_search" not in self.stages:
            raise ValueError("relayrag:colpaliGpu is true but colpali_search is not in relayrag:stages")

        for m in self.assistant_members:
            if not re.fullmatch(r"(user|group|serviceAccount|domain):\S+", m):
                raise ValueError(f"relayrag:assistantMembers: {m!r} is not an IAM member (user:EMAIL, group:EMAIL, "
                                 "serviceAccount:EMAIL or domain:DOMAIN; allUsers is not allowed)")
        if self.assistant_threads not in ("firestore", "postgres"):
            raise ValueError(f"relayrag:assistantThreads {self.assistant_threads!r}; valid: firestore, postgres")
        if self.assistant and self.assistant_image:
            needed = [("assistantTokens", self.assistant_tokens), ("mcpTokens", self.mcp_tokens)]
            for key, value in needed:
                if _unset(value):
                    raise ValueError(f"relayrag:{key} is not set: `pulumi config set --secret relayrag:{key} "
                                     "\"$(python -c 'import secrets; print(secrets.token_urlsafe(32))')\"`")

    @property
    def backends(self) -> dict[str, str]:
        return {"llm": self.llm, "embedder": self.embedder,
                **({"index": "bigquery"} if self.index_collections else {}),
                **({"colpali": "gpu"} if self.colpali_gpu else {})}

    def spec(self, stage: str) -> StageSpec:
        """The stage's spec with this stack's overrides applied (validated)."""
        return STAGES[stage].with_overrides(
            memory=self.memory.get(stage),
            cpu=str(self.cpu[stage]) if self.cpu.get(stage) is not None else None,
            timeout_s=_int_or_none(self.timeouts.get(stage), f"timeouts.{stage}"),
            max_instances=_int_or_none(self.max_instances.get(stage), f"maxInstances.{stage}"),
            concurrency=_int_or_none(self.concurrency.get(stage), f"concurrency.{stage}"))

    @property
    def http_stages(self) -> list[str]:
        return [s for s in self.stages if STAGES[s].kind == "http"]

    def workflow_missing(self, doc: dict) -> list[str]:
        """Stages the workflow calls that this stack does not deploy (empty: the workflow can be created).
        OPTIONAL_STAGES never count: rag.yaml skips them when their URL is absent."""
        return [s for s in called_stages(doc) if s not in self.stages and s not in OPTIONAL_STAGES]

    def stage_env(self, stage: str, *, snapshots_bucket: Any, dead_letter_topic: Any = None,
                  bigquery_dataset: Any = None) -> dict[str, Any]:
        """RELAYRAG_* environment of one stage function (values may be Pulumi Outputs)."""
        env: dict[str, Any] = {
            "RELAYRAG_HOME": "/tmp/relayrag",  # the only writable path in a function; caches only
            "RELAYRAG_BLOBSTORE": "gcs",
            "RELAYRAG_GCS_BUCKET": snapshots_bucket,
            "RELAYRAG_DOCSTORE": "firestore",
            "RELAYRAG_FIRESTORE_DATABASE": self.firestore_database,
            "RELAYRAG_FIRESTORE_PREFIX": self.firestore_prefix,
            "RELAYRAG_GCP_PROJECT": self.project,
            "RELAYRAG_GCP_LOCATION": self.vertex_location or self.region,
            "RELAYRAG_EMBEDDER": self.embedder,
            "RELAYRAG_LLM": self.llm,
            "OTEL_TRACES_EXPORTER": TRACE_EXPORTER,  # the stage's span, in the run's trace (relayrag.tracing)
        }
        uses = STAGES[stage].uses
        if self.embedder == "vertex" and "embedder" in uses:
            env["RELAYRAG_VERTEX_EMBEDDING_MODEL"] = self.vertex_embedding_model
        if self.embedder == "minilm-int8" and "embedder" in uses:
            env["RELAYRAG_EMBED_THREADS"] = str(max(1, int(float(self.spec(stage).cpu))))
        if self.llm == "vertex" and "llm" in uses:
            env["RELAYRAG_LLM_MODEL"] = self.llm_model
        if "dead_letter" in uses and dead_letter_topic is not None:
            env["RELAYRAG_DEAD_LETTER_TOPIC"] = dead_letter_topic
        if ({"warehouse", "warehouse_routing"} & uses) and bigquery_dataset is not None:
            env["RELAYRAG_BIGQUERY_DATASET"] = bigquery_dataset
            env["RELAYRAG_BIGQUERY_COLLECTIONS"] = self.bigquery_collections
        if "warehouse" in uses:
            env["RELAYRAG_BIGQUERY_MAX_BYTES_BILLED"] = str(int(self.bigquery_max_bytes_billed))
        if "colpali" in uses:
            env["RELAYRAG_COLPALI_MODEL"] = self.colpali_model
        if self.index_collections and {"distributed_index", "distributed_index_write"} & uses:
            env["RELAYRAG_INDEX_DATASET"] = f"{self.project}.{self.index_dataset.replace('-', '_')}"
            env["RELAYRAG_INDEX_COLLECTIONS"] = self.index_collections
        return env


def _unset(value: Any) -> bool:
    """A secret setting that is missing: None or a string of nothing but commas (a secret pulumi.Output from
    `get_secret` exists, so it is set)."""
    return value is None or (isinstance(value, str) and not value.strip(","))


def _int_or_none(value: Any, key: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"relayrag:{key} must be an integer, got {value!r}") from None


def _secret_value(cfg: Any, key: str) -> Any:
    """Secret config `key` through `cfg.get_secret` (a secret pulumi.Output: encrypted in the state, masked in
    Pulumi's output; a plain `get` of a secret warns and hands back the plaintext), or None when unset. Objects
    without get_secret (plain test doubles) give `get`'s value."""
    return cfg.get_secret(key) if hasattr(cfg, "get_secret") else cfg.get(key)


def config_from_pulumi(cfg: Any, gcp_cfg: Any) -> StackConfig:
    """Build the StackConfig from `pulumi.Config("relayrag")` and `pulumi.Config("gcp")` (any object with
    get / get_object works)."""
    stages = cfg.get_object("stages")
    if stages is not None and (not isinstance(stages, list) or not all(isinstance(s, str) for s in stages)):
        raise ValueError(f"relayrag:stages must be a list of stage names, got {stages!r}")
    kw: dict[str, Any] = {}
    for key, attr in (("llm", "llm"), ("llmModel", "llm_model"), ("embedder", "embedder"),
                      ("vertexEmbeddingModel", "vertex_embedding_model"), ("vertexLocation", "vertex_location"),
                      ("prefix", "prefix"), ("firestoreDatabase", "firestore_database"),
                      ("firestoreLocation", "firestore_location"), ("firestorePrefix", "firestore_prefix"),
                      ("bigqueryDataset", "bigquery_dataset"), ("bigqueryLocation", "bigquery_location"),
                      ("bigqueryCollections", "bigquery_collections"),
                      ("bigqueryMaxBytesBilled", "bigquery_max_bytes_billed"),
                      ("indexDataset", "index_dataset"), ("indexCollections", "index_collections"),
                      ("ingress", "ingress"), ("colpaliModel", "colpali_model")):
        value = cfg.get(key)
        if value is not None:
            kw[attr] = value
    for key, attr in (("memory", "memory"), ("cpu", "cpu"), ("timeouts", "timeouts"),
                      ("maxInstances", "max_instances"),
                      ("concurrency", "concurrency"), ("labels", "labels")):
        value = cfg.get_object(key)
        if value is not None:
            if not isinstance(value, dict):
                raise ValueError(f"relayrag:{key} must be a map of stage -> value, got {value!r}")
            kw[attr] = value
    flag = cfg.get("dashboard")
    if flag is not None:
        if str(flag).strip().lower() not in ("true", "false"):
            raise ValueError(f"relayrag:dashboard must be true or false, got {flag!r}")
        kw["dashboard"] = str(flag).strip().lower() == "true"
    for key, attr in (("dashboardImage", "dashboard_image"), ("dashboardAccess", "dashboard_access")):
        value = cfg.get(key)
        if value is not None:
            kw[attr] = value
    for key, attr in (("functionImagesKeep", "function_images_keep"),
                      ("functionImagesMaxAgeDays", "function_images_max_age_days")):
        value = _int_or_none(cfg.get(key), key)
        if value is not None:
            kw[attr] = value
    flag = cfg.get("colpaliGpu")
    if flag is not None:
        if str(flag).strip().lower() not in ("true", "false"):
            raise ValueError(f"relayrag:colpaliGpu must be true or false, got {flag!r}")
        kw["colpali_gpu"] = str(flag).strip().lower() == "true"
    flag = cfg.get("assistant")
    if flag is not None:
        if str(flag).strip().lower() not in ("true", "false"):
            raise ValueError(f"relayrag:assistant must be true or false, got {flag!r}")
        kw["assistant"] = str(flag).strip().lower() == "true"
    for key, attr in (("assistantImage", "assistant_image"), ("assistantDbTier", "assistant_db_tier"),
                      ("assistantThreads", "assistant_threads")):
        value = cfg.get(key)
        if value is not None:
            kw[attr] = value
    # secrets: read with get_secret (secret Outputs; StackConfig checks a plain string is not empty, and a secret
    # Output is set by definition)
    for key, attr in (("dashboardTokens", "dashboard_tokens"), ("assistantTokens", "assistant_tokens"),
                      ("mcpTokens", "mcp_tokens")):
        value = _secret_value(cfg, key)
        if value is not None:
            kw[attr] = value
    if _secret_value(cfg, "assistantDbPassword") is not None:
        raise ValueError("relayrag:assistantDbPassword is no longer used: the postgres thread store has no password "
                         "(the assistant logs in with IAM database authentication); `pulumi config rm "
                         "relayrag:assistantDbPassword`")
    assistant_members = cfg.get_object("assistantMembers")
    if assistant_members is not None:
        if not isinstance(assistant_members, list) or not all(isinstance(m, str) for m in assistant_members):
            raise ValueError(f"relayrag:assistantMembers must be a list of IAM members, got {assistant_members!r}")
        kw["assistant_members"] = tuple(assistant_members)
    members = cfg.get_object("dashboardMembers")
    if members is not None:
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise ValueError(f"relayrag:dashboardMembers must be a list of IAM members, got {members!r}")
        kw["dashboard_members"] = tuple(members)
    return StackConfig(project=cfg.get("project") or gcp_cfg.get("project") or "",
                       region=cfg.get("region") or gcp_cfg.get("region") or "",
                       stages=tuple(stages) if stages is not None else ALL_STAGES, **kw)

