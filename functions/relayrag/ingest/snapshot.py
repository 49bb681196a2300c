"""Index snapshots built from immutable segments: an ingest writes only what changed, a version lists the
segments it reads, and the docstore flips the collection's current version in one write.

Layout under the blob store (GCS bucket or local folder):
    snapshots/<collection>/segments/<sid>/chunks.jsonl    one chunk per line (relayrag.ingest.chunking.Chunk)
    snapshots/<collection>/segments/<sid>/dense.npy       float16 [n_rows, dim], unit rows, same order
    snapshots/<collection>/segments/<sid>/bm25.npz        BM25 postings (relayrag.retrieval.bm25.TermStats)
    snapshots/<collection>/segments/<sid>/sources.json    {source: [row0, row1, byte0, byte1]} (rows of each source
                                                          are contiguous; bytes locate them in chunks.jsonl)
    snapshots/<collection>/segments/<sid>/source_spans.npy
                                                          the same spans, int64 [n_sources, 4] in row order
                                                          (segments written before it have only sources.json)
    snapshots/<collection>/segments/<sid>/sentences.npz   optional: per-row sentence vectors (relayrag.retrieval.
                                                          sentences; version manifest "sentence_vectors"), a
                                                          row file (`ROW_FILES`) that merges carry
    snapshots/<collection>/segments/<sid>/tombstones/<version>.npy
                                                          int32, sorted: the segment's rows deleted as of <version>
    snapshots/<collection>/segments/<sid>/manifest.json   written last: a segment without it is incomplete
    snapshots/<collection>/<version>/manifest.json        the version: {segments: [{id, n_rows, tombstones,
                                                          n_deleted}], n_chunks (live), embedder, ...}
    snapshots/<collection>/<version>/pages.jsonl          page images the version holds (relayrag.ingest.pages)
    snapshots/<collection>/<version>/colpali/...          page-vector index (byaldi), with the colpali extra
A segment is written once, by one ingest (the chunks of the sources it added or changed, their vectors and
postings) and never modified; a later ingest that deletes or replaces some of its sources writes a new
tombstone file for it. A version is one small manifest, so adding a document writes one segment of that
document plus O(segments) bytes, whatever the collection's size. `merge_plan` / `relayrag.ingest.segments`
occasionally rewrite small segments (and ones mostly deleted) into one, keeping vectors (nothing re-embeds).

Readers compose the live rows of a version's segments in listed order: global row = the segment's offset + the
row's rank among its live rows; BM25 scores use N, df and avgdl over all live rows (exact, see retrieval.bm25).
Readers only ever open the version the docstore names as current (or one a run pinned), so a crash mid-write
leaves the old version serving; `gc_versions` later removes versions that are neither current nor the one
before nor pinned, and segments and tombstones no remaining version lists. Concurrent writers without a shared
lock commit with compare-and-set on the current version (`DocStore.commit_ingest(expected_version=...)`); the
loser retries from the new current version. A version written before segments existed (chunks.jsonl, dense.npy
directly under the version; no `segments` in its manifest) reads as one segment whose id is the version name.
A version's page files (pages.jsonl, colpali/) are keyed by (source, page), not by row: they are written before
the version's manifest (ingest) or copied from the version a merge starts from, and go with the version folder;
the page images and page vectors themselves are content-addressed under pages/<collection>/<sha256>/.
"""

from __future__ import annotations

import io
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from relayrag import jsonl
from relayrag.backends.blobstore import BlobStore
from relayrag.naming import validate_collection
from relayrag.retrieval.bm25 import BM25Index, TermStats
from relayrag.retrieval.dense import DenseIndex
from relayrag.retrieval.sentences import SentenceVectors


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


SEGMENTS = "segments"  # the folder of a collection's segments, next to its version folders


def new_segment_id() -> str:
    """Sortable, unique: s<unix ms>-<6 hex> (the time lets GC spare young segments of writers in flight)."""
    return f"s{int(time.time() * 1000):013d}-{uuid.uuid4().hex[:6]}"


def segment_prefix(collection: str, sid: str) -> str:
    """The folder of segment `sid`; a pre-segment version (id v...) is its own single segment."""
    if sid.startswith("v"):
        return prefix(collection, sid)
    return prefix(collection) + f"{SEGMENTS}/{sid}/"


@dataclass(frozen=True)
class SegmentRef:
    """One segment as a version lists it: `tombstones` names the version whose tombstone file holds the
    segment's deleted rows (None: none deleted)."""
    id: str
    n_rows: int
    tombstones: str | None = None
    n_deleted: int = 0

    @property
    def n_live(self) -> int:
        return self.n_rows - self.n_deleted

    def to_dict(self) -> dict:
        return {"id": self.id, "n_rows": self.n_rows, "tombstones": self.tombstones, "n_deleted": self.n_deleted}

    @classmethod
    def from_dict(cls, d: dict) -> "SegmentRef":
        return cls(str(d["id"]), int(d["n_rows"]), d.get("tombstones"), int(d.get("n_deleted") or 0))


@dataclass
class SegmentPart:
    """Where one segment's live rows sit in a loaded snapshot: snapshot row `offset + i` is the segment's
    local row `rows[i]` (for add-ons stored per segment and keyed by local row)."""
    id: str
    rows: np.ndarray
    offset: int


@dataclass
class IndexSnapshot:
    collection: str
    version: str
    chunks: list[dict]
    dense: DenseIndex
    bm25: BM25Index
    manifest: dict = field(default_factory=dict)
    parts: list[SegmentPart] = field(default_factory=list)
    sentences: SentenceVectors | None = None  # stored sentence vectors, when the snapshot has them and they are used
    embedder: Any = None  # the embedder that reads this snapshot (set by StageContext.snapshot from the manifest)
    pages: list[dict] = field(default_factory=list)  # page images (pages.jsonl): source, doc, sha256, page, image...

    def __post_init__(self) -> None:
        self.row_of = {c["chunk_id"]: i for i, c in enumerate(self.chunks)}
        self.page_of = {(p["source"], p["page"]): p for p in self.pages}

    def page_image(self, source: str, page: int) -> dict | None:
        """The page-image entry of (source, 1-based page): image and thumbnail blob keys, size; None if none."""
        return self.page_of.get((source, page))

    def __len__(self) -> int:
        return len(self.chunks)


@dataclass(frozen=True)
class RowFile:
    """A per-segment add-on file keyed by the segment's local rows (e.g. sentence vectors), which merges carry.

    select(raw bytes or None when a segment lacks the file, live local rows) -> a part; concat(parts in row
    order) -> the merged segment's bytes, or None to write no such file. Register with `register_row_file`."""
    name: str
    select: Callable[[bytes | None, np.ndarray], Any]
    concat: Callable[[list[Any]], bytes | None]


ROW_FILES: dict[str, RowFile] = {}


def register_row_file(row_file: RowFile) -> None:
    ROW_FILES[row_file.name] = row_file


def _npy(vectors: np.ndarray) -> tuple[bytes, int]:
    """(.npy bytes of float16 `vectors`, byte offset of row 0)."""
    arr = np.ascontiguousarray(vectors, dtype=np.float16)
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    raw = buf.getvalue()
    return raw, len(raw) - arr.nbytes


SOURCE_SPANS = "source_spans.npy"  # sources.json's spans without the paths (relayrag.retrieval.view reads them)


def write_segment(store: BlobStore, collection: str, chunks: list[dict], vectors: np.ndarray, *,
                  stats: TermStats | None = None, extras: dict[str, bytes] | None = None,
                  sid: str | None = None) -> SegmentRef:
    """Write one immutable segment; its manifest.json last. vectors: float [n_chunks, dim] unit rows.

    stats: the chunks' BM25 postings when the caller has them (a merge), else built from `index_text`.
    extras: more files of this segment, {name: bytes}, keyed by the segment's rows by whoever writes them."""
    if vectors.shape[0] != len(chunks):
        raise ValueError(f"{vectors.shape[0]} vectors for {len(chunks)} chunks")
    sid = sid or new_segment_id()
    p = segment_prefix(collection, sid)
    lines = [(jsonl.dumps(c) + "\n").encode("utf-8") for c in chunks]
    sources: dict[str, list[int]] = {}
    pos = 0
    for row, (c, line) in enumerate(zip(chunks, lines)):
        span = sources.get(c["source"])
        if span is None:
            sources[c["source"]] = [row, row + 1, pos, pos + len(line)]
        elif span[1] == row:
            span[1], span[3] = row + 1, pos + len(line)
        else:
            raise ValueError(f"the chunks of {c['source']!r} are not contiguous in the segment")
        pos += len(line)
    store.put_bytes(p + "chunks.jsonl", b"".join(lines))
    raw, offset = _npy(vectors)
    store.put_bytes(p + "dense.npy", raw)
    stats = stats if stats is not None else TermStats.from_texts(index_text(c) for c in chunks)
    if stats.n_rows != len(chunks):
        raise ValueError(f"BM25 postings of {stats.n_rows} rows for {len(chunks)} chunks")
    bm25 = stats.to_bytes()
    store.put_bytes(p + "bm25.npz", bm25)
    src = json.dumps(sources).encode("utf-8")
    store.put_bytes(p + "sources.json", src)
    buf = io.BytesIO()  # the same spans as int64 [n_sources, 4] in row order: readers that need no paths
    np.save(buf, np.asarray(list(sources.values()), dtype=np.int64).reshape(-1, 4), allow_pickle=False)
    spans = buf.getvalue()
    store.put_bytes(p + SOURCE_SPANS, spans)
    for name, data in (extras or {}).items():
        store.put_bytes(p + name, data)
    sizes = {"chunks.jsonl": pos, "dense.npy": len(raw), "bm25.npz": len(bm25), "sources.json": len(src),
             SOURCE_SPANS: len(spans), **{name: len(data) for name, data in (extras or {}).items()}}
    store.put_bytes(p + "manifest.json", json.dumps({
        "collection": collection, "segment": sid, "n_rows": len(chunks),
        "dim": int(vectors.shape[1]) if vectors.ndim == 2 else 0, "dense_offset": offset, "files": sizes,
        "created_at": time.time()}).encode("utf-8"))
    return SegmentRef(sid, len(chunks))


def tombstone_key(collection: str, sid: str, version: str) -> str:
    return segment_prefix(collection, sid) + f"tombstones/{version}.npy"


def write_tombstones(store: BlobStore, collection: str, ref: SegmentRef, version: str,
                     deleted: np.ndarray) -> SegmentRef:
    """Record `deleted` (local rows, all of them as of `version`) for segment `ref`; the new ref to list."""
    rows = np.unique(np.asarray(deleted, dtype=np.int32))
    if rows.size == 0:
        return SegmentRef(ref.id, ref.n_rows)
    if rows[0] < 0 or rows[-1] >= ref.n_rows:
        raise ValueError(f"tombstone rows outside segment {ref.id} ({ref.n_rows} rows)")
    buf = io.BytesIO()
    np.save(buf, rows, allow_pickle=False)
    store.put_bytes(tombstone_key(collection, ref.id, version), buf.getvalue())
    return SegmentRef(ref.id, ref.n_rows, version, int(rows.size))


def read_tombstones(store: BlobStore, collection: str, ref: SegmentRef) -> np.ndarray:
    """The deleted local rows of `ref` (sorted int32; empty if none)."""
    if not ref.tombstones:
        return np.zeros(0, dtype=np.int32)
    rows = np.load(io.BytesIO(store.get_bytes(tombstone_key(collection, ref.id, ref.tombstones))),
                   allow_pickle=False)
    if rows.size != ref.n_deleted:
        raise ValueError(f"tombstones of segment {ref.id}: {rows.size} rows, the version lists {ref.n_deleted}")
    return rows


def live_rows(ref: SegmentRef, deleted: np.ndarray) -> np.ndarray | None:
    """Sorted live local rows of `ref`, or None when all rows are live."""
    if deleted.size == 0:
        return None
    return np.setdiff1d(np.arange(ref.n_rows, dtype=np.int64), deleted.astype(np.int64), assume_unique=True)


def write_version(store: BlobStore, collection: str, version: str, segments: list[SegmentRef],
                  manifest: dict) -> dict:
    """Write the version's manifest.json (its only file) listing `segments`. Returns what was written."""
    body = {**manifest, "format": 2, "collection": collection, "version": version,
            "segments": [r.to_dict() for r in segments], "n_chunks": sum(r.n_live for r in segments),
            "n_rows": sum(r.n_rows for r in segments)}
    store.put_bytes(prefix(collection, version) + "manifest.json", json.dumps(body).encode("utf-8"))
    return body


def read_manifest(store: BlobStore, collection: str, version: str) -> dict:
    return json.loads(store.get_bytes(prefix(collection, version) + "manifest.json"))


def version_segments(manifest: dict, version: str) -> list[SegmentRef]:
    """The segments a version manifest lists (a pre-segment version: itself, one segment)."""
    if "segments" not in manifest:
        return [SegmentRef(version, int(manifest.get("n_chunks") or 0))]
    return [SegmentRef.from_dict(d) for d in manifest["segments"]]


@dataclass
class LoadedSegment:
    id: str
    chunks: list[dict]
    vectors: np.ndarray
    stats: TermStats


def load_segment(store: BlobStore, collection: str, sid: str) -> LoadedSegment:
    """All rows of one segment. Raises OSError / ValueError / KeyError when its files cannot be read."""
    p = segment_prefix(collection, sid)
    chunks = jsonl.loads(store.get_bytes(p + "chunks.jsonl"))
    vectors = np.load(io.BytesIO(store.get_bytes(p + "dense.npy")), allow_pickle=False)
    if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
        raise ValueError(f"segment {sid}: {vectors.shape[0] if vectors.ndim else 0} vectors for {len(chunks)} chunks")
    if sid.startswith("v"):  # a pre-segment version: postings from the texts (once, until a merge rewrites it)
        stats = TermStats.from_texts(index_text(c) for c in chunks)
    else:
        stats = TermStats.from_bytes(store.get_bytes(p + "bm25.npz"))
        if stats.n_rows != len(chunks):
            raise ValueError(f"segment {sid}: BM25 postings of {stats.n_rows} rows for {len(chunks)} chunks")
    return LoadedSegment(sid, chunks, vectors, stats)


def get_range(store: BlobStore, key: str, start: int, end: int) -> bytes:
    """Bytes [start, end) of a blob: a ranged read where the store has one, else a whole read."""
    fn = getattr(store, "get_range", None)
    if fn is not None:
        return fn(key, start, end)
    return store.get_bytes(key)[start:end]


def read_sources(store: BlobStore, collection: str, sid: str) -> dict[str, list[int]]:
    """{source: [row0, row1, byte0, byte1]} of one segment (a pre-segment version: from its chunks)."""
    p = segment_prefix(collection, sid)
    if not sid.startswith("v"):
        return json.loads(store.get_bytes(p + "sources.json"))
    out: dict[str, list[int]] = {}
    for row, c in enumerate(jsonl.loads(store.get_bytes(p + "chunks.jsonl"))):
        span = out.setdefault(c["source"], [row, row + 1, -1, -1])
        span[1] = row + 1
    return out


def read_source_rows(store: BlobStore, collection: str, sid: str, span: list[int], dim_hint: int | None = None
                     ) -> tuple[list[dict], np.ndarray]:
    """The chunks and vectors of rows span[0]:span[1] of a segment, by ranged reads (span from read_sources)."""
    row0, row1, byte0, byte1 = span
    p = segment_prefix(collection, sid)
    if byte0 < 0:  # a pre-segment version has no byte offsets: read it whole
        chunks = jsonl.loads(store.get_bytes(p + "chunks.jsonl"))[row0:row1]
        vectors = np.load(io.BytesIO(store.get_bytes(p + "dense.npy")), allow_pickle=False)[row0:row1]
        return chunks, vectors
    seg = json.loads(store.get_bytes(p + "manifest.json"))
    dim, offset = int(seg["dim"]), int(seg["dense_offset"])
    chunks = jsonl.loads(get_range(store, p + "chunks.jsonl", byte0, byte1))
    raw = get_range(store, p + "dense.npy", offset + row0 * dim * 2, offset + row1 * dim * 2)
    vectors = np.frombuffer(raw, dtype=np.float16).reshape(row1 - row0, dim)
    if len(chunks) != row1 - row0:
        raise ValueError(f"segment {sid}: rows {row0}:{row1} hold {len(chunks)} chunks")
    return chunks, vectors


def segment_problem(store: BlobStore, collection: str, refs: list[SegmentRef]) -> str | None:
    """Why some segment of `refs` cannot be read (a file missing or of another size than its manifest says),
    None if all look whole. Costs one listing and one small read per segment, never the segments' data."""
    for ref in refs:
        p = segment_prefix(collection, ref.id)
        if ref.id.startswith("v"):
            continue  # pre-segment versions carry no sizes; reading them is the check
        try:
            seg = json.loads(store.get_bytes(p + "manifest.json"))
            sizes = blob_sizes(store, p)
            for name, size in seg.get("files", {}).items():
                if sizes.get(p + name) != size:
                    return (f"segment {ref.id}: {name} is {sizes.get(p + name, 'missing')} bytes, "
                            f"its manifest says {size}")
            if int(seg["n_rows"]) != ref.n_rows:
                return f"segment {ref.id}: {seg['n_rows']} rows, the version lists {ref.n_rows}"
            if ref.tombstones and not store.exists(tombstone_key(collection, ref.id, ref.tombstones)):
                return f"segment {ref.id}: tombstones of {ref.tombstones} missing"
        except (OSError, ValueError, KeyError) as exc:
            return f"segment {ref.id}: {type(exc).__name__}: {exc}"
    return None


def blob_sizes(store: BlobStore, folder: str) -> dict[str, int]:
    """{key: bytes} of the blobs under `folder` (the store's `sizes` when it has one)."""
    fn = getattr(store, "sizes", None)
    if fn is not None:
        return fn(folder)
    return {k: len(store.get_bytes(k)) for k in store.list(folder)}


def write_snapshot(store: BlobStore, collection: str, version: str, chunks: list[dict], vectors: np.ndarray,
                   manifest: dict) -> dict:
    """A version of one new segment holding `chunks` (a full rewrite; tests and benchmarks seed with it)."""
    ref = write_segment(store, collection, chunks, vectors)
    return write_version(store, collection, version, [ref], manifest)


def read_chunks(store: BlobStore, collection: str, version: str) -> list[dict]:
    """The live chunks of one version, in row order (JSON Lines split on "\\n" only: see relayrag.jsonl)."""
    out: list[dict] = []
    for ref in version_segments(read_manifest(store, collection, version), version):
        chunks = jsonl.loads(store.get_bytes(segment_prefix(collection, ref.id) + "chunks.jsonl"))
        live = live_rows(ref, read_tombstones(store, collection, ref))
        out.extend(chunks if live is None else [chunks[i] for i in live])
    return out


def read_vectors(store: BlobStore, collection: str, version: str) -> np.ndarray:
    """float16 [live chunks, dim] of one version, rows as read_chunks."""
    parts = []
    for ref in version_segments(read_manifest(store, collection, version), version):
        v = np.load(io.BytesIO(store.get_bytes(segment_prefix(collection, ref.id) + "dense.npy")),
                    allow_pickle=False)
        live = live_rows(ref, read_tombstones(store, collection, ref))
        parts.append(v if live is None else v[live])
    if not parts:
        return np.zeros((0, 0), np.float16)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


SENTENCES_FILE = "sentences.npz"  # per segment, keyed by its local rows (SentenceVectors.to_bytes)


def _sentences_select(raw: bytes | None, rows: np.ndarray) -> SentenceVectors | None:
    return None if raw is None else SentenceVectors.from_bytes(raw).select(rows)


def _sentences_concat(parts: list[SentenceVectors | None]) -> bytes | None:
    """A merged segment stores sentence vectors only when every merged segment had them (a lookup that misses
    embeds at query time, so a segment without them is slower, never wrong)."""
    if not parts or any(p is None for p in parts):
        return None
    return SentenceVectors.concat([p for p in parts if p is not None], parts[0].dim).to_bytes()  # type: ignore[union-attr]


register_row_file(RowFile(SENTENCES_FILE, select=_sentences_select, concat=_sentences_concat))


def sentences_bytes(sentences: SentenceVectors, n_rows: int) -> dict[str, bytes]:
    """write_segment extras for a segment of `n_rows` rows whose sentence vectors are `sentences`."""
    if sentences.n_chunks != n_rows:
        raise ValueError(f"sentence vectors for {sentences.n_chunks} chunks, the segment has {n_rows}")
    return {SENTENCES_FILE: sentences.to_bytes()}


def read_segment_sentences(store: BlobStore, collection: str, sid: str) -> SentenceVectors | None:
    """All rows' sentence vectors of one segment, None if it stores none."""
    key = segment_prefix(collection, sid) + SENTENCES_FILE
    if not store.exists(key):
        return None
    return SentenceVectors.from_bytes(store.get_bytes(key))


def read_sentences(store: BlobStore, collection: str, manifest: dict, parts: list[SegmentPart], dim: int
                   ) -> SentenceVectors | None:
    """The sentence vectors of a loaded version, aligned with its rows (segments' live rows in `parts` order):
    None if its manifest records none. A segment without them (written with RELAYRAG_SENTENCE_VECTORS off, or
    merged from one) contributes chunks with no stored sentences: lookups there embed at query time. ValueError
    if a segment's file does not match its rows (a snapshot whose files disagree cannot be read)."""
    if not manifest.get("sentence_vectors"):
        return None
    out: list[SentenceVectors] = []
    empty = (np.zeros((0, 2), np.int32), np.zeros((0, dim), np.float16))
    for part in parts:
        sv = read_segment_sentences(store, collection, part.id)
        if sv is None or sv.dim != dim:
            out.append(SentenceVectors.from_parts([empty] * len(part.rows), dim))
            continue
        if part.rows.size and int(part.rows.max()) >= sv.n_chunks:
            raise ValueError(f"segment {part.id}: {SENTENCES_FILE} has {sv.n_chunks} rows, fewer than its chunks")
        out.append(sv.select(part.rows))
    return SentenceVectors.concat(out, dim)


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
    """Load one version: the live rows of its segments, composed in listed order. With `dim` and
    `memory_limit`, refuse first (check_fits) when it would not fit. sentences=False leaves stored sentence
    vectors unread (stages then embed sentences at query time)."""
    manifest = read_manifest(store, collection, version)
    refs = version_segments(manifest, version)
    if dim is not None:
        check_fits(collection, version, {**manifest, "n_chunks": sum(r.n_rows for r in refs)}, dim, memory_limit)
    chunks: list[dict] = []
    vectors: list[np.ndarray] = []
    stats: list[tuple[TermStats, np.ndarray | None]] = []
    parts: list[SegmentPart] = []
    for ref in refs:
        seg = load_segment(store, collection, ref.id)
        if len(seg.chunks) != ref.n_rows:
            raise ValueError(f"segment {ref.id}: {len(seg.chunks)} rows, the version lists {ref.n_rows}")
        live = live_rows(ref, read_tombstones(store, collection, ref))
        parts.append(SegmentPart(ref.id, np.arange(ref.n_rows) if live is None else live, len(chunks)))
        chunks.extend(seg.chunks if live is None else [seg.chunks[i] for i in live])
        vectors.append(seg.vectors if live is None else seg.vectors[live])
        stats.append((seg.stats, live))
        del seg
    dims = {v.shape[1] for v in vectors if v.shape[0]}
    if len(dims) > 1:
        raise ValueError(f"segments of version {version} hold vectors of different sizes {sorted(dims)}")
    matrix = np.concatenate(vectors) if len(vectors) > 1 else (vectors[0] if vectors else
                                                                np.zeros((0, dim or 384), np.float16))
    del vectors
    if not sentences:
        manifest = {k: v for k, v in manifest.items() if k != "sentence_vectors"}
    sent = read_sentences(store, collection, manifest, parts, int(matrix.shape[1])) if chunks else None
    if sent is not None:
        manifest = {**manifest, "sentence_vectors": {**manifest["sentence_vectors"], "n": len(sent)}}
    from relayrag.ingest.pages import read_version_pages
    pages = read_version_pages(store, collection, version) if manifest.get("pages") else []
    return IndexSnapshot(collection, version, chunks, DenseIndex(matrix), BM25Index(stats), manifest, parts=parts,
                         sentences=sent, pages=pages)


def version_time(version: str) -> float | None:
    """Unix seconds encoded in a version or segment name (v<ms>-<hex>, s<ms>-<hex>), None if the name is not
    one of ours."""
    try:
        return int(version[1:].split("-", 1)[0]) / 1000.0 if version[:1] in ("v", "s") else None
    except ValueError:
        return None


def gc_versions(store: BlobStore, collection: str, keep: set[str], min_age_s: float = 0.0, *,
                drop_segments: Callable[[list[str]], None] | None = None) -> list[str]:
    """Delete every version of `collection` not in `keep` (incomplete ones included) that is at least
    `min_age_s` seconds old by its name, then every segment and tombstone file no remaining version lists
    (as old). Returns the versions removed.

    min_age_s > 0 is for writers that share no lock (Cloud Functions instances): a younger version or segment
    may be another writer's still being written, which its compare-and-set commit may yet make current.
    drop_segments(ids): called with the segments removed, before their files go (the distributed index's
    copies are removed first, so a failure there leaves the files for the next GC to retry)."""
    base = prefix(collection)
    keys = store.list(base, include_partial=True)
    names = {key[len(base):].split("/", 1)[0] for key in keys}
    versions = {n for n in names if n and n != SEGMENTS}
    cutoff = time.time() - min_age_s

    def old(name: str) -> bool:
        return min_age_s <= 0 or (version_time(name) or 0.0) <= cutoff

    removed = sorted(v for v in versions if v not in keep and old(v))
    listed: set[tuple[str, str | None]] = set()  # (segment, tombstones version) of the versions that remain
    for v in versions - set(removed):
        try:
            refs = version_segments(read_manifest(store, collection, v), v)
        except (OSError, ValueError, KeyError):
            continue  # incomplete: a writer in flight (young, spared above) or garbage of a dead one
        listed.update((r.id, r.tombstones) for r in refs)
    segments_listed = {sid for sid, _ in listed}
    removed = [v for v in removed if v not in segments_listed]  # a pre-segment version still read as a segment
    for v in removed:
        store.delete_prefix(prefix(collection, v))
    seg_base = base + SEGMENTS + "/"
    unlisted: set[str] = set()
    for key in keys:
        if not key.startswith(seg_base):
            continue
        sid, _, rest = key[len(seg_base):].partition("/")
        if sid not in segments_listed:
            if old(sid):
                unlisted.add(sid)
        elif rest.startswith("tombstones/") and rest.endswith(".npy"):
            tv = rest[len("tombstones/"):-len(".npy")]
            if (sid, tv) not in listed and old(tv):
                store.delete_prefix(key)
    if unlisted and drop_segments is not None:
        drop_segments(sorted(unlisted))
    for sid in sorted(unlisted):
        store.delete_prefix(segment_prefix(collection, sid))
    return removed
