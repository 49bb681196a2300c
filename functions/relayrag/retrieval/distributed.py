"""Retrieval on the distributed backend: a run's candidates as a small snapshot, never the whole collection.

retrieve asks the backend (retrieval.bigquery_index) for each base arm's top-`depth` chunk ids per query, on
the version it pinned, fetches the union of those chunks (texts, vectors, postings) and the collection-wide
BM25 statistics of the run's query tokens, and builds an `IndexSnapshot` of just those rows (`candidates`).
Its rows are what the run record's `candidates` / `arm_lists` index; the record keeps `candidate_ids` (the
chunk id of each row) and `bm25_stats`, so rerank, grade, generate, hallucination_check and hyde's retry
rebuild the same snapshot with one fetch (`run_candidates`), whatever the collection's size. BM25 scores on
it use N, avgdl and df of the whole version (exact for the run's query tokens; other tokens, e.g. hyde's
pseudo-relevance-feedback terms, get their df among the candidates).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from relayrag.errors import StageError
from relayrag.ingest.snapshot import IndexSnapshot, read_manifest, version_segments
from relayrag.retrieval.bigquery_index import VersionFilter
from relayrag.retrieval.bm25 import BM25Index, CollectionStats
from relayrag.retrieval.dense import DenseIndex
from relayrag.retrieval.tokenize import tokenize


def version_filter(store, collection: str, version: str) -> tuple[VersionFilter, dict]:
    manifest = read_manifest(store, collection, version)
    return VersionFilter.of(version_segments(manifest, version)), manifest


def _snapshot(index, collection: str, version: str, vf: VersionFilter, manifest: dict, ids: list[str],
              stats: CollectionStats) -> IndexSnapshot:
    chunks, vectors, postings = index.fetch(collection, vf, ids)
    return IndexSnapshot(collection, version, chunks, DenseIndex(vectors), BM25Index([(postings, None)], stats=stats),
                         manifest)


def candidates(ctx, index, collection: str, version: str, queries: list[dict], need: set[str], depth: int
               ) -> tuple[IndexSnapshot, dict[str, list]]:
    """(snapshot of the candidates, {base arm: [(rows best first, query weight)]}) for the base arms in `need`."""
    vf, manifest = version_filter(ctx.blobstore, collection, version)
    lists: dict[str, list[tuple[list[str], float]]] = {}
    if "dense" in need:
        dense_q = [q for q in queries if q["kind"] != "keywords"]
        if dense_q:
            vecs = ctx.embedder.embed([q["text"] for q in dense_q], kind="query")
            lists["dense"] = [([cid for cid, _ in index.search(collection, vf, k=depth, qvec=v)], q["weight"])
                              for q, v in zip(dense_q, vecs)]
    if "bm25" in need:
        lists["bm25"] = [([cid for cid, s in index.search(collection, vf, k=depth, tokens=tokenize(q["text"]))
                           if s > 0], q["weight"]) for q in queries if q["kind"] != "hyde"]
    ids = list(dict.fromkeys(cid for parts in lists.values() for ranking, _ in parts for cid in ranking))
    tokens = sorted({t for q in queries for t in tokenize(q["text"])})
    stats = index.collection_stats(collection, vf, tokens)
    snap = _snapshot(index, collection, version, vf, manifest, ids, stats)
    base = {arm: [([snap.row_of[cid] for cid in ranking if cid in snap.row_of], w) for ranking, w in parts]
            for arm, parts in lists.items()}
    return snap, base


def record_fields(snap: IndexSnapshot) -> dict:
    """What the run record keeps so later stages rebuild `snap` (candidate_ids, bm25_stats)."""
    st = snap.bm25.stats
    return {"candidate_ids": [c["chunk_id"] for c in snap.chunks],
            "bm25_stats": {"n": st.n, "avgdl": st.avgdl, "df": st.df} if st is not None else None}


_cache: OrderedDict[str, IndexSnapshot] = OrderedDict()
_cache_lock = threading.Lock()
CACHED_RUNS = 16


def run_candidates(ctx, run_id: str, run: dict) -> IndexSnapshot:
    """The candidate snapshot retrieve built for this run, rebuilt from the backend with one fetch (cached per
    run in this process). StageError when rows it listed are gone (the pinned version was collected)."""
    with _cache_lock:
        if run_id in _cache and len(_cache[run_id]) == len(run["candidate_ids"]):
            _cache.move_to_end(run_id)
            return _cache[run_id]
    collection, version = run["collection"], run["snapshot_version"]
    index = ctx.index_backend(collection)
    if index is None:
        raise StageError(f"run {run_id} retrieved from the distributed index, but collection {collection!r} is not "
                         f"in RELAYRAG_INDEX_COLLECTIONS here")
    vf, manifest = version_filter(ctx.blobstore, collection, version)
    st = run.get("bm25_stats") or {}
    snap = _snapshot(index, collection, version, vf, manifest, list(run["candidate_ids"]),
                     CollectionStats(int(st.get("n", 0)), float(st.get("avgdl", 0.0)), dict(st.get("df") or {})))
    if [c["chunk_id"] for c in snap.chunks] != list(run["candidate_ids"]):
        raise StageError(f"index version {version} of collection {collection!r} no longer holds all candidates of "
                         f"run {run_id}; ask again")
    with _cache_lock:
        _cache[run_id] = snap
        while len(_cache) > CACHED_RUNS:
            _cache.popitem(last=False)
    return snap
