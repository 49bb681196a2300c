"""Segment merges: keep the number of segments a version lists logarithmic in the collection's size, and drop
deleted rows from storage, without re-embedding anything.

Policy (`merge_plan`, in the spirit of Lucene's log merge policy): a segment's level is
floor(log_MERGE_FACTOR(live rows)); when MERGE_FACTOR segments share a level they are merged into one (one
level up), so a chunk is rewritten about log_10(N) times over its life and a version lists at most
(MERGE_FACTOR - 1) segments per level. A segment whose rows are mostly deleted (> EXPUNGE_SHARE) is rewritten
with its live rows, and a pre-segment version (read as one segment without postings) is rewritten once.

A merge is its own version: the merged segment replaces its inputs in the list, and the flip is the same
compare-and-set on the version the merge started from; losing it abandons the merge (the winner's version serves; a
later ingest plans again). The version's page files (pages.jsonl, colpali/: keyed by source and page, not by row)
are copied to the merge's version unchanged. Vectors and postings are carried over (`TermStats.select/concat`), so
a merge reads and writes the inputs once and embeds nothing. Ingest runs `merge_locked` after its commit while it
still holds the collection's lock; `pipeline.merge(ctx, collection, everything=True)` rewrites the whole collection
into one segment (what every ingest cost before segments; benchmarks/bench_scale.py times it).
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from relayrag.backends.blobstore import LocalBlobStore
from relayrag.context import StageContext
from relayrag.errors import ConflictError
from relayrag.ingest.pages import copy_version_pages, gc_page_sets
from relayrag.ingest.snapshot import (ROW_FILES, SegmentRef, gc_versions, load_segment, new_version, prefix, read_manifest,
                                      read_tombstones, segment_prefix, write_segment,
                                      write_version)
from relayrag.retrieval.bm25 import TermStats

log = logging.getLogger(__name__)

MERGE_FACTOR = 10
EXPUNGE_SHARE = 0.5


GC_MIN_AGE_S = 900.0  # remote stores: versions younger than this may be another instance's write in flight


def gc_after_commit(ctx: StageContext, collection: str, version: str, previous: str | None) -> None:
    """After `version` became current: remove versions but it, `previous` and those pinned by runs in flight
    (docstore.pinned_versions), and segments no remaining version lists; then the page sets (page images and
    page vectors, relayrag.ingest.pages) that `version` does not reference: a deleted or replaced file's page
    images go with this flip, even if a run's lease (1 h, not released when the run ends) still names an older
    version — such a run's image reference then answers "no longer exists" (Service.page_image). Best effort: a
    failure is logged (a later commit's GC retries it). Without a shared lock (a remote blob store), versions,
    segments and page sets younger than GC_MIN_AGE_S are spared: they may be another writer's, still being
    written."""
    keep = {version} | ({previous} if previous else set())
    min_age_s = 0.0 if isinstance(ctx.blobstore, LocalBlobStore) else GC_MIN_AGE_S
    try:
        index = ctx.index_backend(collection)
        gc_versions(ctx.blobstore, collection, keep | ctx.docstore.pinned_versions(collection), min_age_s=min_age_s,
                    drop_segments=(lambda sids: index.drop_segments(collection, sids)) if index is not None else None)
    except Exception as exc:  # noqa: BLE001 - clean-up must not turn a committed write into an error
        log.warning("snapshot clean-up of %s failed: %s: %s", collection, type(exc).__name__, exc)
    try:
        gc_page_sets(ctx.blobstore, collection, {version}, min_age_s=min_age_s)
    except Exception as exc:  # noqa: BLE001
        log.warning("page image clean-up of %s failed: %s: %s", collection, type(exc).__name__, exc)


def level(n_live: int) -> int:
    return int(math.log(max(n_live, 1), MERGE_FACTOR))


def merge_plan(refs: list[SegmentRef], *, everything: bool = False) -> list[int]:
    """Indexes (into `refs`) of the segments to merge into one; [] when nothing needs merging."""
    if everything:
        return list(range(len(refs))) if len(refs) > 1 or any(r.n_deleted or r.id.startswith("v") for r in refs) \
            else []
    by_level: dict[int, list[int]] = {}
    for i, r in enumerate(refs):
        by_level.setdefault(level(r.n_live), []).append(i)
    for lv in sorted(by_level):
        if len(by_level[lv]) >= MERGE_FACTOR:
            return by_level[lv]
    return [i for i, r in enumerate(refs) if r.id.startswith("v") or r.n_rows and r.n_deleted > EXPUNGE_SHARE * r.n_rows]


def merge_segments(store, collection: str, refs: list[SegmentRef], index=None) -> SegmentRef:
    """Write one segment holding the live rows of `refs` in order (vectors and postings carried over); with a
    distributed `index`, mirror it there too."""
    chunks: list[dict] = []
    vectors: list[np.ndarray] = []
    stats: list[TermStats] = []
    row_parts: dict[str, list] = {name: [] for name in ROW_FILES}
    for ref in refs:
        seg = load_segment(store, collection, ref.id)
        dead = read_tombstones(store, collection, ref)
        live = np.setdiff1d(np.arange(ref.n_rows), dead) if dead.size else np.arange(ref.n_rows)
        if dead.size:
            chunks.extend(seg.chunks[i] for i in live)
            vectors.append(seg.vectors[live])
            stats.append(seg.stats.select(live))
        else:
            chunks.extend(seg.chunks)
            vectors.append(seg.vectors)
            stats.append(seg.stats)
        for name, rf in ROW_FILES.items():  # add-ons keyed by local row (e.g. sentence vectors) follow their rows
            key = segment_prefix(collection, ref.id) + name
            row_parts[name].append(rf.select(store.get_bytes(key) if store.exists(key) else None, live))
    dims = {v.shape[1] for v in vectors if v.shape[0]}
    matrix = np.concatenate([v for v in vectors if v.shape[0]]) if dims else np.zeros((0, 384), np.float16)
    extras = {name: raw for name, rf in ROW_FILES.items() if (raw := rf.concat(row_parts[name])) is not None}
    merged = TermStats.concat(stats)
    ref = write_segment(store, collection, chunks, matrix, stats=merged, extras=extras)
    if index is not None:
        index.add_segment(collection, ref.id, chunks, matrix, merged)
    return ref


def merge_locked(ctx: StageContext, collection: str, version: str, refs: list[SegmentRef], stats: dict, *,
                 everything: bool = False) -> str | None:
    """Merge what `merge_plan` picks in `version` (the current one, whose segments are `refs`) and flip to the
    result with compare-and-set on `version`. The caller holds the collection's lock (ingest does). Returns the
    new version, or None when nothing needed merging or another writer won the flip (the merge is dropped)."""
    plan = merge_plan(refs, everything=everything)
    if not plan:
        return None
    t0 = time.perf_counter()
    store = ctx.blobstore
    index = ctx.index_backend(collection)
    merged = merge_segments(store, collection, [refs[i] for i in plan], index)
    out = [r for i, r in enumerate(refs) if i not in set(plan)]
    if merged.n_rows:
        out.insert(plan[0], merged)
    new = new_version()
    kept = {k: v for k, v in read_manifest(store, collection, version).items()  # e.g. embedder, schema
            if k not in ("segments", "n_chunks", "n_rows", "version", "collection", "format", "merged")}
    copy_version_pages(store, collection, version, new)  # before the manifest: a version is complete with it
    write_version(store, collection, new, out, {**kept, "created_at": time.time(),
                                                "merged": [refs[i].id for i in plan]})
    try:
        ctx.docstore.commit_ingest(collection, new, {**stats, "n_chunks": sum(r.n_live for r in out)}, [], [],
                                   expected_version=version)
    except ConflictError:
        for key in (prefix(collection, new), segment_prefix(collection, merged.id)):
            store.delete_prefix(key)
        if index is not None:
            index.drop_segments(collection, [merged.id])
        log.info("%s: merge of %d segments dropped: another writer committed first", collection, len(plan))
        return None
    gc_after_commit(ctx, collection, new, version)
    log.info("%s: merged %d segments (%d rows) into %s in %.1f s", collection, len(plan), merged.n_rows,
             merged.id, time.perf_counter() - t0)
    return new
