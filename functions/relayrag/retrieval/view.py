"""A run's rows of an embedded collection, read by row from the version's segments, never the whole version.

retrieve ranks over the whole version it pinned (it loads it); the stages after it (rerank, grade, generate,
hallucination_check) only read the rows the run record names — its `candidates` and `arm_lists` — plus, for
page headings and document openings, the other chunks of those rows' documents. `run_view` reads just those:
for each segment holding a wanted row, its source spans (`source_spans.npy`, 32 bytes per source; `sources.json`
with the paths, ~80 bytes per source, for segments written before it) and tombstones,
then for each wanted row's source one ranged read each of its chunks (chunks.jsonl bytes), chunk vectors
(dense.npy rows) and stored sentence vectors (the `offsets`/`spans`/`vectors` members of sentences.npz, which
np.savez stores uncompressed, so a row range is a byte range). The result is an `IndexSnapshot` whose rows
keep their **global row numbers** in the version (`snap.chunks[row]`, `snap.dense.rows(rows)`,
`snap.bm25.scores(q)[row]`, `snap.sentences.lookup(row, ...)`), so the stages read it exactly as they read the
whole version. BM25 statistics come from the run record (`bm25_stats`: N, avgdl and the df of the run's
query tokens, computed by retrieve over the whole version: `record_stats`), so scores and idf of those tokens
are the whole version's to the bit. A token outside them (none of those stages asks for one) gets its df
among the rows held, as on the distributed backend.

Deleted rows never answer: the rows held are the pinned version's live rows (its tombstones are applied), and
a wanted row whose chunk id differs from the run record's is a StageError. Cost: the wanted documents' bytes
plus each touched segment's source spans (and the version's page list, ~200 bytes per page, when it has page
images) — what the run reads, not the collection; measured in
benchmarks/RESULTS.md ("Scale"). Not used (the caller loads the whole version) for a run without
`bm25_stats` (retrieved by an older build), a run with page-image candidates (colpali_search finds pages
over the whole version), or a version written before segments (no byte offsets).
"""

from __future__ import annotations

import io
import json
import struct
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from relayrag import jsonl
from relayrag.errors import StageError
from relayrag.ingest.snapshot import (SENTENCES_FILE, SOURCE_SPANS, IndexSnapshot, get_range, index_text, read_manifest,
                                      read_tombstones, segment_prefix, version_segments)
from relayrag.retrieval.bm25 import BM25Index, CollectionStats, TermStats
from relayrag.retrieval.dense import DenseIndex
from relayrag.retrieval.sentences import SentenceVectors
from relayrag.retrieval.tokenize import tokenize

READ_THREADS = 8  # ranged reads in flight (GCS answers each in tens of ms; local files in microseconds)


# ---------------------------------------------------------------- what retrieve records

def record_stats(bm25: BM25Index, question: str, queries: list[dict]) -> dict:
    """The run record's `bm25_stats` for the whole version's `bm25`: {n, avgdl, df, matches} with df of every
    token of the question and the queries (and of each question token tokenized again, as reward.query_idf
    reads it) and `matches` (rows scoring > 0) for question tokens that tokenize again into several tokens."""
    qtok = list(dict.fromkeys(tokenize(question)))
    tokens = set(qtok)
    for q in queries:
        tokens.update(tokenize(q["text"]))
    matches: dict[str, int] = {}
    for t in qtok:
        again = tokenize(t)
        tokens.update(again)
        if len(again) != 1 and bm25.n_docs:
            matches[t] = int(np.count_nonzero(bm25.scores(t)))
    return {"n": int(bm25.n_total), "avgdl": float(bm25.avgdl),
            "df": {t: int(bm25.df(t)) for t in sorted(tokens)}, "matches": matches}


def wanted_rows(run: dict) -> list[int]:
    """The version rows a run's later stages index: its candidates' and its arm lists' rows."""
    rows = {int(c["row"]) for c in run.get("candidates") or []}
    for ranking in (run.get("arm_lists") or {}).values():
        rows.update(int(r) for r in ranking)
    return sorted(rows)


# ---------------------------------------------------------------- row-keyed views of the index parts

class HeldChunks:
    """Chunks by global row (`[row]`), iterated in row order; `len` is the number held."""

    def __init__(self, rows: np.ndarray, chunks: list[dict]):
        self.rows = rows
        self._by_row = dict(zip((int(r) for r in rows), chunks))
        self._chunks = chunks

    def __getitem__(self, row: int) -> dict:
        try:
            return self._by_row[int(row)]
        except KeyError:
            raise StageError(f"row {row} is not among the rows this run's view holds") from None

    def __iter__(self) -> Iterator[dict]:
        return iter(self._chunks)

    def __len__(self) -> int:
        return len(self._chunks)


class HeldDense(DenseIndex):
    """Chunk vectors of the rows held, addressed by global row; cannot rank the collection."""

    def __init__(self, rows: np.ndarray, vectors: np.ndarray, n_rows: int):
        super().__init__(vectors)
        self._pos = {int(r): i for i, r in enumerate(rows)}
        self._n_rows = n_rows

    @property
    def n_docs(self) -> int:
        return self._n_rows

    def rows(self, idx) -> np.ndarray:
        return self._vectors32[np.asarray([self._pos[int(r)] for r in idx], dtype=np.int64)]

    def scores(self, qvec: np.ndarray) -> np.ndarray:
        raise StageError("a run's view holds only the rows the run read; ranking the collection loads it whole")

    def scores_many(self, qvecs: np.ndarray) -> np.ndarray:
        return self.scores(qvecs)


class HeldSentences:
    """Stored sentence vectors of the rows held, by global row (SentenceVectors.lookup's contract)."""

    def __init__(self, rows: np.ndarray, sv: SentenceVectors):
        self._pos = {int(r): i for i, r in enumerate(rows)}
        self._sv = sv

    @property
    def dim(self) -> int:
        return self._sv.dim

    def __len__(self) -> int:
        return len(self._sv)

    def lookup(self, row: int, spans) -> list[np.ndarray | None]:
        i = self._pos.get(int(row))
        return [None] * len(spans) if i is None else self._sv.lookup(i, spans)


def held_bm25(stats: TermStats, rows: np.ndarray, n_rows: int, collection: CollectionStats) -> BM25Index:
    """A BM25Index over the postings of the rows held (local row i = global row rows[i]) whose scores(q) is
    float32 [n_rows] (zero where no row is held) with the collection's N, avgdl and df."""
    index = BM25Index([(stats, None)], stats=collection)
    index._parts = [(stats, np.asarray(rows, dtype=np.int64))]
    index.n_docs = n_rows
    return index


# ---------------------------------------------------------------- per-segment layout (immutable: cached)

@dataclass
class _Npy:
    start: int  # byte offset of element 0 in the blob
    shape: tuple
    dtype: np.dtype


@dataclass
class _SegmentLayout:
    row0: np.ndarray
    row1: np.ndarray
    byte0: np.ndarray
    byte1: np.ndarray
    dim: int
    dense_offset: int
    sentences: dict[str, _Npy] | None  # offsets / spans / vectors members of sentences.npz


class _RangedFile(io.RawIOBase):
    """A read-only seekable file over one blob, read by ranged reads (zipfile reads the central directory)."""

    def __init__(self, store, key: str, size: int):
        self.store, self.key, self.size, self.pos = store, key, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = offset if whence == 0 else self.pos + offset if whence == 1 else self.size + offset
        return self.pos

    def tell(self) -> int:
        return self.pos

    def readinto(self, b) -> int:
        end = min(self.size, self.pos + len(b))
        if end <= self.pos:
            return 0
        data = get_range(self.store, self.key, self.pos, end)
        b[:len(data)] = data
        self.pos += len(data)
        return len(data)


def _npz_layout(store, key: str, size: int) -> dict[str, _Npy]:
    """Where each member array of an uncompressed .npz starts, its shape and dtype (ranged reads only)."""
    out: dict[str, _Npy] = {}
    with zipfile.ZipFile(io.BufferedReader(_RangedFile(store, key, size), buffer_size=1 << 16)) as zf:
        for info in zf.infolist():
            if info.compress_type != zipfile.ZIP_STORED:
                raise ValueError(f"{key}: member {info.filename} is compressed")
            head = get_range(store, key, info.header_offset, info.header_offset + 30)
            name_len, extra_len = struct.unpack("<HH", head[26:30])
            data = info.header_offset + 30 + name_len + extra_len
            fh = io.BytesIO(get_range(store, key, data, data + 4096))
            major, _minor = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read(fh)
            if fortran:
                raise ValueError(f"{key}: member {info.filename} is Fortran-ordered")
            out[info.filename.removesuffix(".npy")] = _Npy(data + fh.tell(), tuple(shape), np.dtype(dtype))
    return out


_layouts: OrderedDict[tuple, _SegmentLayout] = OrderedDict()
_views: OrderedDict[tuple, IndexSnapshot | None] = OrderedDict()
_lock = threading.Lock()
CACHED_SEGMENTS = 32
CACHED_VIEWS = 16


def _cached(cache: OrderedDict, key: tuple, limit: int, build):
    with _lock:
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    value = build()
    with _lock:
        cache[key] = value
        while len(cache) > limit:
            cache.popitem(last=False)
    return value


def segment_layout(store, collection: str, sid: str, sentences: bool) -> _SegmentLayout:
    """A segment's source map as sorted arrays, its vector layout and (with `sentences`) its sentences.npz
    layout. Cached per (store, collection, segment): segments never change."""
    def build() -> _SegmentLayout:
        p = segment_prefix(collection, sid)
        seg = json.loads(store.get_bytes(p + "manifest.json"))
        if SOURCE_SPANS in (seg.get("files") or {}):  # 32 bytes per source, no paths to parse
            arr = np.load(io.BytesIO(store.get_bytes(p + SOURCE_SPANS)), allow_pickle=False)
        else:  # a segment written before source_spans.npy: the source map with its paths
            arr = np.asarray(list(json.loads(store.get_bytes(p + "sources.json")).values()), dtype=np.int64)
        arr = arr.reshape(-1, 4)
        arr = arr[np.argsort(arr[:, 0], kind="stable")]
        sent = None
        size = (seg.get("files") or {}).get(SENTENCES_FILE)
        if sentences and size:
            sent = _npz_layout(store, p + SENTENCES_FILE, int(size))
        return _SegmentLayout(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3], int(seg["dim"]), int(seg["dense_offset"]),
                              sent)
    # the store object is part of the key and held by the entry, so its id cannot be reused while cached
    return _cached(_layouts, (id(store), store, collection, sid, sentences), CACHED_SEGMENTS, build)


def _read_span(store, collection: str, sid: str, lay: _SegmentLayout, i: int, want_sentences: bool):
    """(chunks, float16 vectors, [(spans, vectors)] per row or None) of source span i of a segment."""
    p = segment_prefix(collection, sid)
    r0, r1, b0, b1 = int(lay.row0[i]), int(lay.row1[i]), int(lay.byte0[i]), int(lay.byte1[i])
    chunks = jsonl.loads(get_range(store, p + "chunks.jsonl", b0, b1))
    if len(chunks) != r1 - r0:
        raise ValueError(f"segment {sid}: rows {r0}:{r1} hold {len(chunks)} chunks")
    raw = get_range(store, p + "dense.npy", lay.dense_offset + r0 * lay.dim * 2, lay.dense_offset + r1 * lay.dim * 2)
    vectors = np.frombuffer(raw, dtype=np.float16).reshape(r1 - r0, lay.dim)
    sent = None
    if want_sentences and lay.sentences is not None:
        m = lay.sentences
        off, sp, vec = m["offsets"], m["spans"], m["vectors"]
        ow, sw = off.dtype.itemsize, sp.dtype.itemsize * 2
        dim = int(vec.shape[1])
        vw = vec.dtype.itemsize * dim
        o = np.frombuffer(get_range(store, p + SENTENCES_FILE, off.start + ow * r0, off.start + ow * (r1 + 1)),
                          dtype=off.dtype).astype(np.int64)
        a, b = int(o[0]), int(o[-1])
        spans = np.frombuffer(get_range(store, p + SENTENCES_FILE, sp.start + sw * a, sp.start + sw * b),
                              dtype=sp.dtype).reshape(-1, 2)
        vecs = np.frombuffer(get_range(store, p + SENTENCES_FILE, vec.start + vw * a, vec.start + vw * b),
                             dtype=vec.dtype).reshape(-1, dim)
        sent = [(spans[o[k] - a:o[k + 1] - a], vecs[o[k] - a:o[k + 1] - a]) for k in range(r1 - r0)]
    return chunks, vectors, sent


# ---------------------------------------------------------------- the view

def usable(run: dict) -> bool:
    """Can this run's later stages read a view instead of the whole version?"""
    return bool(run.get("snapshot_version") and run.get("bm25_stats") and run.get("candidate_ids") is None
                and not run.get("page_candidates") and run.get("candidates") is not None)


def run_view(ctx, run: dict) -> IndexSnapshot | None:
    """The rows of its pinned version a run's later stages read (see the module docstring), None when the
    run cannot use a view (`usable`, or a pre-segment version): the caller loads the whole version then.
    StageError when the pinned version is gone or a row's chunk is not the one the run recorded."""
    if not usable(run):
        return None
    collection, version = run["collection"], run["snapshot_version"]
    rows = wanted_rows(run)
    st = run["bm25_stats"]
    want_sentences = bool(ctx.settings.sentence_vectors)
    key = (id(ctx.blobstore), ctx.blobstore, collection, version, tuple(rows), want_sentences,
           json.dumps(st, sort_keys=True))
    snap = _cached(_views, key, CACHED_VIEWS, lambda: _build(ctx, collection, version, rows, st, want_sentences))
    if snap is None:
        return None
    for c in run.get("candidates") or []:
        if snap.chunks[c["row"]]["chunk_id"] != c["chunk_id"]:
            raise StageError(f"row {c['row']} of version {version} of collection {collection!r} is not chunk "
                             f"{c['chunk_id']} the run retrieved; ask again")
    return snap


def _build(ctx, collection: str, version: str, rows: list[int], st: dict, want_sentences: bool
           ) -> IndexSnapshot | None:
    from relayrag.context import snapshot_embedder
    store = ctx.blobstore
    try:
        manifest = read_manifest(store, collection, version)
    except FileNotFoundError:
        raise StageError(f"index version {version} of collection {collection!r} no longer exists; ask again") from None
    refs = version_segments(manifest, version)
    if any(r.id.startswith("v") for r in refs):
        return None  # a pre-segment version has no byte offsets: read it whole
    if not manifest.get("sentence_vectors"):
        want_sentences = False
    live = np.asarray([r.n_live for r in refs], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(live)])
    n_rows = int(starts[-1])
    wanted = np.asarray(rows, dtype=np.int64)
    if wanted.size and (wanted.min() < 0 or wanted.max() >= n_rows):
        raise StageError(f"the run names rows outside version {version} of collection {collection!r}; ask again")
    jobs: list[tuple[int, int, np.ndarray, _SegmentLayout, int]] = []  # (segment, offset, deleted, layout, span)
    for s in np.unique(np.searchsorted(starts, wanted, side="right") - 1):
        ref = refs[int(s)]
        deleted = np.sort(read_tombstones(store, collection, ref).astype(np.int64))
        k = wanted[(wanted >= starts[s]) & (wanted < starts[s + 1])] - starts[s]  # rank among live rows
        local = k + np.searchsorted(deleted - np.arange(deleted.size), k, side="right")
        lay = segment_layout(store, collection, ref.id, want_sentences)
        spans = np.unique(np.searchsorted(lay.row0, local, side="right") - 1)
        jobs.extend((int(s), int(starts[s]), deleted, lay, int(i)) for i in spans)
    with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
        parts = list(pool.map(lambda j: _read_span(store, collection, refs[j[0]].id, j[3], j[4], want_sentences),
                              jobs))
    held_rows: list[int] = []
    chunks: list[dict] = []
    vectors: list[np.ndarray] = []
    sentences: list[tuple[np.ndarray, np.ndarray]] = []
    dim = 0
    empty_sent = None
    for (_s, offset, deleted, lay, i), (ch, vec, sent) in zip(jobs, parts):
        r0 = int(lay.row0[i])
        dim = lay.dim
        empty_sent = empty_sent or (np.zeros((0, 2), np.int32), np.zeros((0, dim), np.float16))
        for j, chunk in enumerate(ch):
            local = r0 + j
            d = int(np.searchsorted(deleted, local))
            if d < deleted.size and deleted[d] == local:
                continue  # a deleted row of this source never answers
            held_rows.append(offset + local - d)
            chunks.append(chunk)
            vectors.append(vec[j])
            # as read_sentences: a segment without them, or with another size, has none stored
            same_dim = lay.sentences is not None and int(lay.sentences["vectors"].shape[1]) == dim
            sentences.append(sent[j] if sent is not None and same_dim else empty_sent)
    order = np.argsort(np.asarray(held_rows, dtype=np.int64), kind="stable")
    grow = np.asarray(held_rows, dtype=np.int64)[order]
    chunks = [chunks[i] for i in order]
    matrix = (np.stack([vectors[i] for i in order]) if vectors else np.zeros((0, dim or 384), np.float16))
    stats = CollectionStats(int(st.get("n", 0)), float(st.get("avgdl", 0.0)), dict(st.get("df") or {}),
                            dict(st.get("matches") or {}))
    postings = TermStats.from_texts(index_text(c) for c in chunks)
    sv = None
    if want_sentences:
        sv = HeldSentences(grow, SentenceVectors.from_parts([sentences[i] for i in order], dim))
    pages: list[dict] = []
    if manifest.get("pages"):  # page images of the documents held (citations name them)
        from relayrag.ingest.pages import read_version_pages
        held_sources = {c["source"] for c in chunks}
        pages = [p for p in read_version_pages(store, collection, version) if p.get("source") in held_sources]
    snap = IndexSnapshot(collection, version, [], HeldDense(grow, matrix, n_rows),
                         held_bm25(postings, grow, n_rows, stats), manifest, pages=pages)
    snap.chunks = HeldChunks(grow, chunks)  # type: ignore[assignment]
    snap.row_of = {c["chunk_id"]: int(r) for r, c in zip(grow, chunks)}
    snap.sentences = sv  # type: ignore[assignment]
    snap.embedder = snapshot_embedder(snap, ctx.embedder, ctx.settings.embed_threads)
    return snap
