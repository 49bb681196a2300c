"""Immutable index snapshots: one version prefix per collection write, flipped in one docstore write.

Layout under the blob store (GCS bucket or local folder):
    snapshots/<collection>/<version>/chunks.jsonl   one chunk per line (relayrag.ingest.chunking.Chunk)
    snapshots/<collection>/<version>/dense.npy      float16 [n_chunks, dim], unit rows, same order
    snapshots/<collection>/<version>/bm25/...       bm25s index files
    snapshots/<collection>/<version>/pages.jsonl    page images the version holds (relayrag.ingest.pages)
    snapshots/<collection>/<version>/colpali/...    page-vector index (byaldi), with the colpali extra
    snapshots/<collection>/<version>/manifest.json  written last: a version without it is incomplete
Readers only ever open the version the docstore names as current, so a crash mid-write leaves the old
version serving; `gc_versions` later removes versions that are neither current nor the one before.
Concurrent writers without a shared lock commit with compare-and-set on the current version
(`DocStore.commit_ingest(expected_version=...)`); the loser retries from the new current version.
"""

from __future__ import annotations

import io
import json
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from relayrag import jsonl
from relayrag.backends.blobstore import BlobStore
from relayrag.naming import validate_collection
from relayrag.retrieval.bm25 import BM25Index
from relayrag.retrieval.dense import DenseIndex


RUN_PIN_TTL_S = 3600.0  # a run's lease on the version it retrieved from (ingest's GC spares it meanwhile)


def index_text(chunk: dict) -> str:
    """What BM25 and the dense arm index for a chunk: title line, table header if continued, text."""
    return "\n".join(p for p in (chunk.get("title"), chunk.get("context"), chunk["text"]) if p)


def new_version() -> str:
    """Sortable, unique: v<unix ms>-<6 hex>."""
    return f"v{int(time.time() * 1000):013d}-{uuid.uuid4().hex[:6]}"


def prefix(collection: str, version: str | None = None) -> str:
    validate_collection(collection)
    return f"snapshots/{collection}/" + (f"{version}/" if version else "")


@dataclass
class IndexSnapshot:
    collection: str
    version: str
    chunks: list[dict]
    dense: DenseIndex
    bm25: BM25Index
    manifest: dict = field(default_factory=dict)
    pages: list[dict] = field(default_factory=list)  # page images (pages.jsonl): source, doc, sha256, page, image...

    def __post_init__(self) -> None:
        self.row_of = {c["chunk_id"]: i for i, c in enumerate(self.chunks)}
        self.page_of = {(p["source"], p["page"]): p for p in self.pages}

    def page_image(self, source: str, page: int) -> dict | None:
        """The page-image entry of (source, 1-based page): image and thumbnail blob keys, size; None if none."""
        return self.page_of.get((source, page))

    def __len__(self) -> int:
        return len(self.chunks)


def write_snapshot(store: BlobStore, collection: str, version: str, chunks: list[dict], vectors: np.ndarray,
                   manifest: dict) -> None:
    """Write all files of one version; manifest.json last. vectors: float [n_chunks, dim] unit rows."""
    if vectors.shape[0] != len(chunks):
        raise ValueError(f"{vectors.shape[0]} vectors for {len(chunks)} chunks")
    p = prefix(collection, version)
    store.put_bytes(p + "chunks.jsonl", jsonl.dump_lines(chunks))
    buf = io.BytesIO()
    np.save(buf, np.asarray(vectors, dtype=np.float16), allow_pickle=False)
    store.put_bytes(p + "dense.npy", buf.getvalue())
    bm25 = BM25Index.build([index_text(c) for c in chunks])
    with tempfile.TemporaryDirectory() as tmp:
        bm25.save(Path(tmp))
        for f in sorted(Path(tmp).iterdir()):
            store.put_bytes(p + "bm25/" + f.name, f.read_bytes())
    store.put_bytes(p + "manifest.json", json.dumps({**manifest, "collection": collection, "version": version,
                                                      "n_chunks": len(chunks)}).encode("utf-8"))


def read_chunks(store: BlobStore, collection: str, version: str) -> list[dict]:
    """The chunks of one version, in row order (JSON Lines split on "\\n" only: see relayrag.jsonl)."""
    return jsonl.loads(store.get_bytes(prefix(collection, version) + "chunks.jsonl"))


def read_vectors(store: BlobStore, collection: str, version: str) -> np.ndarray:
    return np.load(io.BytesIO(store.get_bytes(prefix(collection, version) + "dense.npy")), allow_pickle=False)


# Resident bytes a loaded snapshot takes per chunk beyond its float16 vectors (chunk dicts + bm25s index),
# measured with benchmarks/bench_snapshot_memory.py (see infra/README.md, "Memory per function").
BYTES_PER_CHUNK = 5_800  # measured: 5,493 held, 5,788 at the loading peak (SciFact, 2,651 chunks)


def estimated_bytes(n_chunks: int, dim: int) -> int:
    """Resident memory a snapshot of `n_chunks` chunks with `dim`-dimensional vectors takes once loaded."""
    return n_chunks * (BYTES_PER_CHUNK + 2 * dim)


def memory_limit_bytes(setting_mb: int = 0) -> int | None:
    """This process's memory limit: `setting_mb` (RELAYRAG_MEMORY_LIMIT_MB) if set, else the cgroup v2/v1
    limit, else None (unknown)."""
    if setting_mb:
        return setting_mb * 2**20
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            raw = Path(path).read_text().strip()
        except OSError:
            continue
        if raw.isdigit() and int(raw) < 2**60:
            return int(raw)
    return None


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm", "rb") as fh:
            import os
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def check_fits(collection: str, version: str, manifest: dict, dim: int, limit: int | None) -> None:
    """MemoryError-like RelayragError, before anything is loaded, when the snapshot is estimated not to fit in
    `limit` bytes next to what the process already holds (a clear error instead of an out-of-memory kill)."""
    if not limit:
        return
    n = int(manifest.get("n_chunks") or 0)
    need, have = estimated_bytes(n, dim), _rss_bytes()
    if have + need > 0.9 * limit:
        from relayrag.errors import RelayragError
        raise RelayragError(
            f"collection {collection!r} (version {version}, {n:,} chunks, {dim}-d vectors) needs about "
            f"{need / 2**20:,.0f} MiB loaded, and this process holds {have / 2**20:,.0f} MiB of its "
            f"{limit / 2**20:,.0f} MiB: give the function at least "
            f"{(have + need) / 0.9 / 2**20:,.0f} MiB (relayrag:memory; formula in infra/README.md)")


def load_snapshot(store: BlobStore, collection: str, version: str, *, dim: int | None = None,
                  memory_limit: int | None = None) -> IndexSnapshot:
    """Load one version. With `dim` and `memory_limit`, refuse first (check_fits) when it would not fit."""
    p = prefix(collection, version)
    manifest = json.loads(store.get_bytes(p + "manifest.json"))
    if dim is not None:
        check_fits(collection, version, manifest, dim, memory_limit)
    chunks = read_chunks(store, collection, version)
    dense = DenseIndex(read_vectors(store, collection, version))
    local = store.local_path(p + "bm25")
    if local is not None and local.is_dir():
        bm25 = BM25Index.load(local)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            for key in store.list(p + "bm25/"):
                (Path(tmp) / key.rsplit("/", 1)[-1]).write_bytes(store.get_bytes(key))
            bm25 = BM25Index.load(Path(tmp))
    from relayrag.ingest.pages import read_version_pages
    pages = read_version_pages(store, collection, version) if manifest.get("pages") else []
    return IndexSnapshot(collection, version, chunks, dense, bm25, manifest, pages)


def version_time(version: str) -> float | None:
    """Unix seconds encoded in a version name (v<ms>-<hex>), None if the name is not one of ours."""
    try:
        return int(version[1:].split("-", 1)[0]) / 1000.0 if version.startswith("v") else None
    except ValueError:
        return None


def gc_versions(store: BlobStore, collection: str, keep: set[str], min_age_s: float = 0.0) -> list[str]:
    """Delete every version of `collection` not in `keep` (incomplete ones included) that is at least
    `min_age_s` seconds old by its name. Returns those removed.

    min_age_s > 0 is for writers that share no lock (Cloud Functions instances): a younger version may be
    another writer's snapshot still being written, which its compare-and-set commit may yet make current."""
    versions = {key[len(prefix(collection)):].split("/", 1)[0]
                for key in store.list(prefix(collection), include_partial=True)}
    cutoff = time.time() - min_age_s
    removed = sorted(v for v in versions
                     if v and v not in keep and (min_age_s <= 0 or (version_time(v) or 0.0) <= cutoff))
    for v in removed:
        store.delete_prefix(prefix(collection, v))
    return removed
