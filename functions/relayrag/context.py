"""The stage context: backends chosen once per process from settings, models loaded lazily.

Stages receive a `StageContext` and never import a concrete backend. Cold starts matter on Cloud
Functions, so the embedder, the LLM client and index snapshots load on first use and stay cached.
"""

from __future__ import annotations

import threading

from relayrag.backends.blobstore import BlobStore, LocalBlobStore
from relayrag.backends.docstore import DocStore, SQLiteDocStore
from relayrag.backends.llm import LLM, build_llm
from relayrag.errors import ConfigError, StageError
from relayrag.ingest.snapshot import IndexSnapshot, load_snapshot
from relayrag.settings import Settings, load_settings


def build_blobstore(settings: Settings) -> BlobStore:
    if settings.blobstore == "local":
        return LocalBlobStore(settings.home / "blobs")
    raise ConfigError(f"unknown blob store {settings.blobstore!r}; valid: local")


def build_docstore(settings: Settings) -> DocStore:
    if settings.docstore == "sqlite":
        return SQLiteDocStore(settings.home / "relayrag.sqlite3")
    raise ConfigError(f"unknown docstore {settings.docstore!r}; valid: sqlite")


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
        self._snapshots: dict[str, IndexSnapshot] = {}

    @property
    def embedder(self):
        if self._embedder is None:
            from relayrag.backends.embedder import get_embedder
            self._embedder = get_embedder(self.settings.embedder, threads=self.settings.embed_threads)
        return self._embedder

    @property
    def llm(self) -> LLM | None:
        if not self._llm_built:
            self._llm = build_llm(self.settings)
            self._llm_built = True
        return self._llm

    def snapshot(self, collection: str) -> IndexSnapshot:
        """The collection's current index snapshot (cached per version). Raises StageError if none exists."""
        meta = self.docstore.get_collection(collection)
        if meta is None or not meta.get("current_version"):
            known = ", ".join(c["name"] for c in self.docstore.list_collections()) or "none"
            raise StageError(f"collection {collection!r} has no index; run `relayrag ingest PATH "
                             f"--collection {collection}` first (collections: {known})")
        version = meta["current_version"]
        with self._lock:
            snap = self._snapshots.get(collection)
            if snap is None or snap.version != version:
                snap = load_snapshot(self.blobstore, collection, version)
                self._snapshots[collection] = snap
        return snap


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
