"""The stage context: backends chosen once per process from settings, models loaded lazily.

Stages receive a `StageContext` and never import a concrete backend. Cold starts matter on Cloud
Functions, so the embedder, the LLM client and index snapshots load on first use and stay cached.
"""

from __future__ import annotations

import threading
from typing import Any

from relayrag.backends import registry
from relayrag.backends.blobstore import BlobStore
from relayrag.backends.docstore import DocStore
from relayrag.backends.llm import LLM, build_llm
from relayrag.errors import ConfigError, RelayragError, StageError
from relayrag.ingest.snapshot import IndexSnapshot, load_snapshot, memory_limit_bytes
from relayrag.settings import Settings, load_settings


def build_blobstore(settings: Settings) -> BlobStore:
    """RELAYRAG_BLOBSTORE: local (folder under RELAYRAG_HOME) | gcs (RELAYRAG_GCS_BUCKET; extra `gcp`)."""
    if settings.blobstore == "gcs" and not settings.gcs_bucket:  # before importing the extra
        raise ConfigError("RELAYRAG_BLOBSTORE=gcs needs RELAYRAG_GCS_BUCKET (the bucket that holds index "
                          "snapshots, without gs://)")
    return registry.build("blobstore", settings.blobstore, settings)


def build_docstore(settings: Settings) -> DocStore:
    """RELAYRAG_DOCSTORE: sqlite (file under RELAYRAG_HOME) | firestore (RELAYRAG_FIRESTORE_DATABASE,
    RELAYRAG_FIRESTORE_PREFIX, RELAYRAG_GCP_PROJECT; extra `gcp`)."""
    if settings.docstore == "firestore" and (not settings.firestore_prefix or "/" in settings.firestore_prefix):
        raise ConfigError(f"RELAYRAG_FIRESTORE_PREFIX must be non-empty without '/'; "
                          f"got {settings.firestore_prefix!r}")
    return registry.build("docstore", settings.docstore, settings)


_vertex_embedders: dict[tuple, object] = {}
_vertex_lock = threading.Lock()


def build_embedder(settings: Settings):
    """RELAYRAG_EMBEDDER: minilm-int8 (ONNX, embedded) | vertex (Vertex AI, extra `gcp`); one per process."""
    if settings.embedder == "vertex":
        key = (settings.vertex_embedding_model, settings.gcp_project, settings.gcp_location)
        with _vertex_lock:
            if key not in _vertex_embedders:
                _vertex_embedders[key] = registry.build("embedder", "vertex", settings)
            return _vertex_embedders[key]
    return registry.build("embedder", settings.embedder, settings)


def snapshot_embedder(snapshot: IndexSnapshot, default, threads: int = 0):
    """The embedder that reads `snapshot`: `default` (this process's) when the manifest names it or none, else the
    named one when this process can build it itself (relayrag.backends.embedder.MODEL_IDS: a collection ingested
    with `--embedder e5-small` is queried with e5 whatever RELAYRAG_EMBEDDER says). StageError otherwise."""
    built_with = snapshot.manifest.get("embedder")
    if not built_with or built_with == getattr(default, "model_id", "unknown"):
        return default
    from relayrag.backends.embedder import MODEL_IDS, get_embedder
    if built_with in MODEL_IDS:
        return get_embedder(MODEL_IDS[built_with], threads=threads)
    check_snapshot_embedder(snapshot, default)  # raises, naming both
    return default


def check_snapshot_embedder(snapshot: IndexSnapshot, embedder) -> None:
    """StageError unless `embedder` is the one that built the snapshot's vectors (manifest "embedder"):
    query vectors from another model (or size) are not comparable with them."""
    built_with = snapshot.manifest.get("embedder")
    if not built_with:  # an empty collection, or a snapshot from before manifests named their embedder
        return
    ours = getattr(embedder, "model_id", "unknown")  # the pipeline records "unknown" for such embedders
    if ours != built_with:
        raise StageError(f"collection {snapshot.collection!r} (version {snapshot.version}) was indexed with "
                         f"embedder {built_with!r}, but this process embeds with {ours!r}; set RELAYRAG_EMBEDDER "
                         f"(and RELAYRAG_VERTEX_EMBEDDING_MODEL) to the indexing embedder, or re-ingest the "
                         f"collection into a new one with this embedder")


class StageContext:
    def __init__(self, settings: Settings, blobstore: BlobStore, docstore: DocStore,
                 embedder=None, llm: LLM | None = None, llm_configured: bool | None = None):
        self.settings = settings
        self.blobstore = blobstore
        self.docstore = docstore
        self._embedder = embedder
        self._llm = llm
        self._llm_built = llm is not None or llm_configured is False
        self._lock = threading.Lock()
        self._snapshots: dict[str, dict[str, IndexSnapshot]] = {}
        self._sql_configs = None
        self._page_encoder = None
        self._page_scorers: dict[str, tuple[str, object]] = {}  # collection -> (version, scorer)
        self.page_scorer_factory = None  # tests: (collection, version, snapshot folder) -> PageScorer
        self.page_model_id: str | None = None  # tests: the model id of a page encoder / scorer double
        self._schemas = None
        self._index: Any = None  # the distributed retrieval backend (retrieval.bigquery_index), built on first use
        self._candidates: dict[str, IndexSnapshot] = {}

    def distributed(self, collection: str) -> bool:
        """Whether `collection` is searched on the distributed backend (RELAYRAG_INDEX_COLLECTIONS)."""
        names = {n.strip() for n in self.settings.index_collections.split(",") if n.strip()}
        return collection in names or "*" in names

    def index_backend(self, collection: str):
        """The distributed index (relayrag.retrieval.bigquery_index.BigQueryIndex) when `collection` is configured
        for it, else None. ConfigError when it is but RELAYRAG_INDEX_DATASET is not set."""
        if not self.distributed(collection):
            return None
        with self._lock:
            if self._index is None:
                if not self.settings.index_dataset:
                    raise ConfigError(f"collection {collection!r} is in RELAYRAG_INDEX_COLLECTIONS but "
                                      f"RELAYRAG_INDEX_DATASET (PROJECT.DATASET) is not set")
                from relayrag.retrieval.bigquery_index import BigQueryIndex
                self._index = BigQueryIndex(self.settings.index_dataset,
                                            max_bytes_billed=self.settings.index_max_bytes_billed)
            return self._index

    @property
    def embedder(self):
        if self._embedder is None:
            self._embedder = build_embedder(self.settings)
        return self._embedder

    @property
    def llm(self) -> LLM | None:
        if not self._llm_built:
            self._llm = build_llm(self.settings)
            self._llm_built = True
        return self._llm

    def with_embedder(self, embedder) -> "StageContext":
        """A context like this one (same settings, stores and LLM) whose embedder is `embedder`."""
        other = StageContext(self.settings, self.blobstore, self.docstore, embedder=embedder, llm=self._llm,
                             llm_configured=None if not self._llm_built else self._llm is not None)
        return other

    @property
    def sql_configs(self):
        """Where collections' SQL configs are stored (relayrag.sql.config.SqlConfigStore): embedded (local blob
        store) RELAYRAG_HOME/warehouses/; otherwise the shared blob store under `sql-config/`, so deployed
        functions read what `relayrag warehouse config` stored."""
        if self._sql_configs is None:
            from relayrag.sql import config as sqlconfig
            if self.settings.blobstore == "local":
                self._sql_configs = sqlconfig.local_config_store(self.settings.home)
            else:
                self._sql_configs = sqlconfig.SqlConfigStore(self.blobstore, sqlconfig.SHARED_PREFIX,
                                                             location=f"gs://{self.settings.gcs_bucket}/")
        return self._sql_configs

    @property
    def schemas(self):
        """Where collections' metadata schemas (relayrag.collection.yaml) are stored: the blob store that holds
        the snapshots (relayrag.metadata.SchemaStore), so deployed functions read what ingest stored."""
        if self._schemas is None:
            from relayrag.metadata import SchemaStore
            location = f"gs://{self.settings.gcs_bucket}/" if self.settings.blobstore == "gcs" else ""
            self._schemas = SchemaStore(self.blobstore, location=location)
        return self._schemas

    def sql_config(self, collection: str):
        """The collection's stored SQL config (relayrag.sql.config.SqlConfig) or None. Raises ConfigError if
        the stored file no longer validates."""
        return self.sql_configs.get(collection)

    def warehouse(self, collection: str, *, timeout_s: float = 10.0, max_rows: int = 1000,
                  apply_config: bool = True):
        """The collection's warehouse (relayrag.sql.warehouse: DuckDB under RELAYRAG_HOME, or the BigQuery
        dataset settings map it to), restricted to its SQL config's table allow-list; None without one."""
        from relayrag.sql.warehouse import open_warehouse
        return open_warehouse(self.settings.home, collection, timeout_s=timeout_s, max_rows=max_rows,
                              apply_config=apply_config, configs=self.sql_configs)

    def warehouse_record(self, collection: str) -> dict | None:
        """The collection's warehouse record (engine, tables...), or None when it has no warehouse."""
        from relayrag.sql.registry import warehouse_record
        return warehouse_record(self.settings.home, collection)

    def page_model(self) -> str:
        """The page-image model this process serves with: RELAYRAG_COLPALI_MODEL ("" = none), or a test
        double's id."""
        return self.page_model_id or self.settings.colpali_model

    def page_search_off(self) -> str | None:
        """Why page-image search does not run in this process (no model configured, the `colpali` extra missing,
        a tiny test model outside the test suite: relayrag.retrieval.colpali.off_reason), or None when it may.
        Loads nothing: a text question in a process without a model pays only this check."""
        if self.page_model_id:
            return None
        from relayrag.retrieval.colpali import off_reason
        return off_reason(self.settings.colpali_model)

    def page_encoder(self):
        """The page-image encoder of ingestion (relayrag.retrieval.colpali.PageEncoder), built once; its model is
        the process's one copy (relayrag.retrieval.colpali.load_rag). Raises PageSearchUnavailable with the reason
        (extra missing, RELAYRAG_COLPALI_MODEL empty or not loadable)."""
        if self._page_encoder is None:
            from relayrag.retrieval.colpali import ByaldiEncoder
            self._page_encoder = ByaldiEncoder(self.settings.colpali_model, self.settings.colpali_device)
        return self._page_encoder

    def page_scorer(self, collection: str, version: str):
        """The page-image search index of one snapshot version (relayrag.retrieval.colpali.PageScorer), loaded
        from the snapshot's `colpali/` folder once per (collection, version); the last one per collection is
        kept. The model behind it is loaded once per process and shared by every collection. Raises
        PageSearchUnavailable with the reason when it cannot be loaded here."""
        with self._lock:
            have = self._page_scorers.get(collection)
            if have and have[0] == version:
                return have[1]
        from relayrag.retrieval.colpali import INDEX_DIR, ByaldiIndex
        from relayrag.ingest.snapshot import prefix
        base = prefix(collection, version) + INDEX_DIR
        folder = self.blobstore.local_path(base)
        if folder is None:  # a remote store: copy the index into this instance's cache (one version per collection)
            cache = self.settings.home / "cache" / "colpali" / collection
            folder = cache / version / INDEX_DIR
            if not (folder / "index_config.json.gz").exists():
                import shutil
                for old in (cache.iterdir() if cache.is_dir() else []):
                    if old.name != version:
                        shutil.rmtree(old, ignore_errors=True)
                for key in self.blobstore.list(base + "/"):
                    dest = folder / key[len(base) + 1:]
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(self.blobstore.get_bytes(key))
        if self.page_scorer_factory is not None:
            scorer = self.page_scorer_factory(collection, version, folder)
        else:
            scorer = ByaldiIndex(folder, self.settings.colpali_model, self.settings.colpali_device)
        with self._lock:
            self._page_scorers[collection] = (version, scorer)
        return scorer

    def current_version(self, collection: str) -> str:
        """The collection's current snapshot version. StageError if it has none."""
        meta = self.docstore.get_collection(collection)
        if meta is None or not meta.get("current_version"):
            from relayrag.sql.registry import warehouse_collections
            known = ", ".join(sorted({c["name"] for c in self.docstore.list_collections()}
                                     | set(warehouse_collections(self.settings.home)))) or "none"
            raise StageError(f"collection {collection!r} has no index; run `relayrag ingest PATH "
                             f"--collection {collection}` first (collections: {known})")
        return meta["current_version"]

    def snapshot(self, collection: str, version: str | None = None) -> IndexSnapshot:
        """An index snapshot of `collection`: `version` (the one a run pinned at retrieve, so every stage of one
        run reads the same rows), else the current one. Cached per (collection, version), the last
        SNAPSHOTS_PER_COLLECTION of each collection. Raises StageError if the collection has no index, if the
        pinned version is gone, or if it was built by another embedder than this context's (its vectors would
        not be comparable); RelayragError if its files cannot be read (the message says how to recover)."""
        if version is None:
            version = self.current_version(collection)
        with self._lock:
            cached = self._snapshots.setdefault(collection, {})
            snap = cached.get(version)
            if snap is None:
                snap = _load(self.blobstore, collection, version, dim=getattr(self.embedder, "dim", None),
                             memory_limit=memory_limit_bytes(self.settings.memory_limit_mb),
                             sentences=self.settings.sentence_vectors)
                snap.embedder = snapshot_embedder(snap, self.embedder, self.settings.embed_threads)
                cached[version] = snap
                while len(cached) > SNAPSHOTS_PER_COLLECTION:
                    cached.pop(next(iter(cached)))
            else:
                cached[version] = cached.pop(version)  # most recently used last
        return snap


    def loaded_snapshot(self, collection: str, version: str) -> IndexSnapshot | None:
        """The whole `version` if this process already holds it (loaded by `snapshot`), else None; loads nothing."""
        with self._lock:
            return self._snapshots.get(collection, {}).get(version)


SNAPSHOTS_PER_COLLECTION = 2  # the current version and the one runs in flight may still have pinned


def _load(store: BlobStore, collection: str, version: str, **kw) -> IndexSnapshot:
    try:
        return load_snapshot(store, collection, version, **kw)
    except FileNotFoundError as exc:
        if not store.exists(f"snapshots/{collection}/{version}/manifest.json"):
            raise StageError(f"index version {version} of collection {collection!r} no longer exists ({exc}); "
                             f"ask again") from None
        raise _unreadable(collection, version, exc) from None
    except (OSError, ValueError, KeyError, EOFError) as exc:
        raise _unreadable(collection, version, exc) from None


def _unreadable(collection: str, version: str, exc: Exception) -> RelayragError:
    return RelayragError(f"the index of collection {collection!r} (version {version}) cannot be read "
                         f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); rebuild it with `relayrag "
                         f"ingest PATH --collection {collection}` (or `relayrag delete PATH --collection {collection}`)")


_default: StageContext | None = None
_default_lock = threading.Lock()


def default_context() -> StageContext:
    """The process-wide context built from settings once (what the stage entry points use)."""
    global _default
    with _default_lock:
        if _default is None:
            s = load_settings()
            _default = StageContext(s, build_blobstore(s), build_docstore(s))
        return _default


def set_default_context(ctx: StageContext | None) -> None:
    """Replace the process-wide context (tests: temp home, LLM test doubles); None rebuilds from settings."""
    global _default
    with _default_lock:
        _default = ctx
