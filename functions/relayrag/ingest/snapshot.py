"""Immutable index snapshots: one version prefix per collection write, flipped in one docstore write.

Layout under the blob store (GCS bucket or local folder):
    snapshots/<collection>/<version>/chunks.jsonl   one chunk per line (relayrag.ingest.chunking.Chunk)
    snapshots/<collection>/<version>/dense.npy      float16 [n_chunks, dim], unit rows, same order
    snapshots/<collection>/<version>/bm25/...       bm25s index files
    snapshots/<collection>/<version>/sentences.npz  optional: per-chunk sentence vectors
                                                    (relayrag.retrieval.sentences; manifest "sentence_vectors")
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
from typing import Any

import numpy as np

from relayrag import jsonl
from relayrag.backends.blobstore import BlobStore
from relayrag.naming import validate_collection
from relayrag.retrieval.bm25 import BM25Index
from relayrag.retrieval.dense import DenseIndex
from relayrag.retrieval.sentences import SPAN_RULES, SentenceVectors


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
    sentences: SentenceVectors | None = None  # stored sentence vectors, when the snapshot has them and they are used
    embedder: Any = None  # the embedder that reads this snapshot (set by StageContext.snapshot from the manifest)

    def __post_init__(self) -> None:
        self.row_of = {c["chunk_id"]: i for i, c in enumerate(self.chunks)}

    def __len__(self) -> int:
        return len(self.chunks)


def write_snapshot(store: BlobStore, collection: str, version: str, chunks: list[dict], vectors: np.ndarray,
                   manifest: dict, sentences: SentenceVectors | None = None) -> None:
    """Write all files of one version; manifest.json last. vectors: float [n_chunks, dim] unit rows;
    sentences: per-chunk sentence vectors aligned with `chunks` (manifest "sentence_vectors" records them)."""
    if vectors.shape[0] != len(chunks):
        raise ValueError(f"{vectors.shape[0]} vectors for {len(chunks)} chunks")
    if sentences is not None and sentences.n_chunks != len(chunks):
        raise ValueError(f"sentence vectors for {sentences.n_chunks} chunks, snapshot has {len(chunks)}")
    p = prefix(collection, version)
    if sentences is not None:
        store.put_bytes(p + "sentences.npz", sentences.to_bytes())
        manifest = {**manifest, "sentence_vectors": {"n": len(sentences), "spans": SPAN_RULES}}
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


def read_sentences(store: BlobStore, collection: str, version: str, manifest: dict) -> SentenceVectors | None:
    """The version's sentence vectors, None if its manifest records none. ValueError if they do not match the
    version's chunks (a snapshot whose files disagree cannot be read)."""
    info = manifest.get("sentence_vectors")
    if not info:
        return None
    sv = SentenceVectors.from_bytes(store.get_bytes(prefix(collection, version) + "sentences.npz"))
    if manifest.get("n_chunks") is not None and sv.n_chunks != int(manifest["n_chunks"]):
        raise ValueError(f"sentences.npz has {sv.n_chunks} chunks, the manifest {manifest['n_chunks']}")
    return sv


# Resident bytes a loaded snapshot takes per chunk beyond its float16 vectors (chunk dicts + bm25s index),
# measured with benchmarks/bench_snapshot_memory.py (see infra/README.md, "Memory per function").
BYTES_PER_CHUNK = 5_800  # measured: 5,493 held, 5,788 at the loading peak (SciFact, 2,651 chunks)


def estimated_bytes(n_chunks: int, dim: int, n_sentences: int = 0) -> int:
    """Resident memory a snapshot of `n_chunks` chunks with `dim`-dimensional vectors (and `n_sentences` stored
    sentence vectors: float16 + a span) takes once loaded."""
    return n_chunks * (BYTES_PER_CHUNK + 2 * dim) + n_sentences * (2 * dim + 8)


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
    n_sent = int((manifest.get("sentence_vectors") or {}).get("n") or 0)
    need, have = estimated_bytes(n, dim, n_sent), _rss_bytes()
    if have + need > 0.9 * limit:
        from relayrag.errors import RelayragError
        raise RelayragError(
            f"collection {collection!r} (version {version}, {n:,} chunks, {dim}-d vectors) needs about "
            f"{need / 2**20:,.0f} MiB loaded, and this process holds {have / 2**20:,.0f} MiB of its "
            f"{limit / 2**20:,.0f} MiB: give the function at least "
            f"{(have + need) / 0.9 / 2**20:,.0f} MiB (relayrag:memory; formula in infra/README.md)")


def load_snapshot(store: BlobStore, collection: str, version: str, *, dim: int | None = None,
                  memory_limit: int | None = None, sentences: bool = True) -> IndexSnapshot:
    """Load one version. With `dim` and `memory_limit`, refuse first (check_fits) when it would not fit.
    sentences=False leaves stored sentence vectors unread (stages then embed sentences at query time)."""
    p = prefix(collection, version)
    manifest = json.loads(store.get_bytes(p + "manifest.json"))
    if not sentences:
        manifest = {k: v for k, v in manifest.items() if k != "sentence_vectors"}
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
    sent = read_sentences(store, collection, version, manifest)
    return IndexSnapshot(collection, version, chunks, dense, bm25, manifest, sent)


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
