"""Incremental ingestion of a file or folder into a collection's next index snapshot.

A file whose sha256 is unchanged keeps its chunks from the current snapshot; embeddings are reused by
chunk content hash, so re-ingesting unchanged content embeds nothing. Files under PATH that are gone are
removed from every store. The new snapshot is written under a fresh version, then file records and the
version flip are committed in one docstore transaction: a crash before that leaves the old version serving.
A per-collection file lock serialises concurrent ingests of one collection in one machine; across machines
the version flip is a compare-and-set and the loser retries (see `ingest`).

`ingest_source` / `remove_source` change exactly one source under a key of the caller's choosing (the
GCS-triggered path: key `gs://bucket/object`, record fields such as the object's generation), with a
guard on the current record that is evaluated inside every compare-and-set attempt.
"""

from __future__ import annotations

import logging
import os
import random
import time
from typing import Any
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from relayrag.context import StageContext
from relayrag.errors import ConflictError, IngestError
from relayrag.ingest import loaders
from relayrag.ingest.limits import FileBudget
from relayrag.ingest.page_index import PageFile, PageReport, build_page_vectors, version_pages
from relayrag.ingest.pages import read_version_pages, write_version_pages
from relayrag.naming import validate_collection
from relayrag.metadata import (CollectionSchema, Manifest, MetadataError, check_coverage, load_manifest,
                               metadata_hash, normalise, parse_schema_bytes)
from relayrag.ingest.segments import gc_after_commit, merge_locked
from relayrag.retrieval.bm25 import TermStats
from relayrag.ingest.snapshot import (SegmentRef, index_text, new_version, prefix, read_chunks, read_manifest,
                                      read_source_rows, read_sources, read_tombstones,
                                      read_vectors, segment_prefix, segment_problem, sentences_bytes, tombstone_key,
                                      version_segments, write_segment, write_tombstones, write_version)
from relayrag.retrieval.sentences import SPAN_RULES
from relayrag.ingest.discover import (  # noqa: F401  (re-exported: callers import them from the pipeline)
    LinkPolicy,
    _link_refusal,
    _progress,
    collection_lock,
    discover,
    embed_text,
    file_sha256,
    load_chunks,
)
from relayrag.ingest.vectors import (  # noqa: F401  (_snapshot_embedder re-exported)
    _embed,
    _ingest_embedder,
    _old_sentences,
    _sentence_rules,
    _sentence_vectors,
    _snapshot_embedder,
)

log = logging.getLogger(__name__)
COMMIT_ATTEMPTS = 8  # compare-and-set rounds before giving up under heavy concurrent writes


@dataclass
class IngestSummary:
    collection: str
    version: str | None
    ingested: int = 0
    skipped: int = 0
    deleted: int = 0
    failed: list[dict] = field(default_factory=list)
    warnings: list[dict] = field(default_factory=list)
    chunks_embedded: int = 0
    sentences_embedded: int = 0  # sentence vectors computed (not reused) for this version
    chunks_total: int = 0
    seconds: float = 0.0
    pages: dict = field(default_factory=dict)  # page images: {indexed, rendered, embedded} (relayrag.ingest.page_index)
    page_search: str = ""  # one line: page-image search on (pages, model) or why it is off and how to turn it on
    metadata_updated: int = 0  # unchanged files whose metadata changed: chunks rewritten, nothing re-embedded
    not_applied: list[str] = field(default_factory=list)  # source keys whose `only_if` guard said no
    unsupported: list[str] = field(default_factory=list)  # files under a folder with no loader for their type
    deleted_keys: list[str] = field(default_factory=list)  # source keys this call removed (decided under the lock)
    embedder_note: str = ""  # first ingest of a CJK corpus: the multilingual embedder chosen, or how to get it

    def to_dict(self) -> dict:
        return {
            "collection": self.collection,
            "version": self.version,
            "files": {"ingested": self.ingested, "skipped": self.skipped, "deleted": self.deleted,
                      "failed": len(self.failed)},
            "failed": self.failed,
            "warnings": self.warnings,
            "chunks_embedded": self.chunks_embedded,
            "sentences_embedded": self.sentences_embedded,
            "chunks_total": self.chunks_total,
            "seconds": round(self.seconds, 3),
            **({"pages": self.pages} if self.pages else {}),
            **({"page_search": self.page_search} if self.page_search else {}),
            **({"metadata_updated": self.metadata_updated} if self.metadata_updated else {}),
            **({"not_applied": self.not_applied} if self.not_applied else {}),
            **({"unsupported": self.unsupported} if self.unsupported else {}),
            **({"embedder_note": self.embedder_note} if self.embedder_note else {}),
        }


def ingest(ctx: StageContext, path: Path | str, collection: str, *, progress: bool = False,
           remove_paths: list[str] | None = None,
           on_progress: Callable[[float, float, str], None] | None = None,
           links: LinkPolicy = LinkPolicy(), manifest: Path | str | None = None,
           schema: Path | str | None = None, embedder: Any = None) -> IngestSummary:
    """Sync `path` into `collection` (or, with `remove_paths`, only delete those sources).

    manifest: a JSONL file with one line of metadata per document under `path` (relayrag.metadata); schema:
    a relayrag.collection.yaml to validate it with and store with the collection (default: the stored one).
    Both are validated, and every document under `path` must have a manifest line, before anything is
    written (ManifestError / ConfigError otherwise). Without a manifest, documents keep the metadata their
    records hold. The skip decision compares the file's sha256 and its normalised metadata's hash: a
    metadata-only change rewrites the chunks' `meta` in a new version without re-embedding (same chunk ids).

    embedder: the collection's embedder, a name (relayrag.backends.embedder: minilm-int8, e5-small) or an
    instance; default: the one the collection's current version was built with when this process can build it,
    else ctx.embedder (RELAYRAG_EMBEDDER). Vectors are reused only from a version built by the same embedder.

    on_progress(done, total, message): called after each file and each embedding batch; total = files + 1
    (the last unit is embedding + writing the snapshot). links: how symbolic links are treated (LinkPolicy;
    default: links under a folder are skipped, each listed in `failed` with the reason). Returns the summary;
    never raises for a bad file (it is listed in `failed`). Raises RelayragError for an invalid collection
    name, IngestError if `path`
    does not exist or (delete) the collection is unknown, ConflictError if other writers kept winning the
    version compare-and-set for COMMIT_ATTEMPTS rounds.

    Concurrency: writers on one machine serialise on a file lock; writers that share no lock (Cloud
    Functions instances) each build a snapshot from the version they read and commit with compare-and-set
    on that version; a loser starts over from the winner's version (its unchanged files and embeddings are
    reused, so a retry costs little), so no update is lost."""
    schema_raw, schema_obj = None, None
    if schema is not None:
        try:
            schema_raw = Path(schema).read_bytes()
        except OSError as exc:
            raise IngestError(f"cannot read the schema {schema}: {exc.strerror or exc}") from None
        schema_obj = parse_schema_bytes(schema_raw, str(schema))
    elif remove_paths is None:
        validate_collection(collection)
        schema_obj = ctx.schemas.get(collection)
    loaded = load_manifest(Path(manifest), schema_obj) if manifest is not None else None
    return _with_commit_retries(lambda: _ingest_once(ctx, path, collection, progress=progress,
                                                      remove_paths=remove_paths, on_progress=on_progress,
                                                      links=links, manifest=loaded, schema=schema_obj,
                                                      schema_raw=schema_raw, embedder=embedder))


@dataclass(frozen=True)
class Source:
    """One local file to ingest under a key of the caller's choosing (e.g. `gs://bucket/object` for a GCS
    object fetched to a temp file), with extra fields stored in its ingestion record (e.g. `generation`).
    The file's name becomes the document name; its suffix selects the loader. `metadata`: the document's
    metadata, normalised (relayrag.metadata.normalise); None keeps what the record holds."""
    path: Path
    key: str
    fields: dict = field(default_factory=dict)
    metadata: dict | None = None


RecordGuard = Callable[[dict | None], bool]
"""only_if(record) -> apply? Called with the source's current ingestion record (None if it has none) in
every compare-and-set attempt, so the decision and the commit see the same version of the collection."""


def ingest_source(ctx: StageContext, source: Source, collection: str, *,
                  only_if: RecordGuard | None = None) -> IngestSummary:
    """Ingest exactly one source into `collection`, leaving every other source as it is.

    Content unchanged (same sha256 as the record under `source.key`): nothing is re-chunked or embedded;
    if `source.fields` differ from the record's, only the record is updated (same version, compare-and-set).
    `only_if` False: nothing happens and the key is listed in `summary.not_applied`. A file that cannot be
    loaded is listed in `summary.failed` (the caller decides what a poison file means); raises like `ingest`
    (RelayragError for a bad collection name, ConflictError after COMMIT_ATTEMPTS lost compare-and-set
    rounds, backend errors as they come)."""
    schema = ctx.schemas.get(collection)
    return _with_commit_retries(lambda: _ingest_once(ctx, None, collection, progress=False, remove_paths=None,
                                                      on_progress=None, sources=[source], only_if=only_if,
                                                      schema=schema))


def remove_source(ctx: StageContext, collection: str, key: str, *,
                  only_if: RecordGuard | None = None) -> IngestSummary:
    """Remove the source stored under exactly `key` (its chunks, vectors and record) from `collection`.

    A key with no record, an unknown collection, or `only_if` False change nothing (`summary.deleted` 0;
    the key is listed in `summary.not_applied`). Raises like `ingest_source`."""
    def once() -> IngestSummary:
        meta = ctx.docstore.get_collection(collection)
        if meta is None:
            validate_collection(collection)
            return IngestSummary(collection, None, not_applied=[key])
        return _ingest_once(ctx, None, collection, progress=False, remove_paths=[key], on_progress=None,
                            only_if=only_if, exact_keys=True)
    return _with_commit_retries(once)


def _with_commit_retries(attempt_once: Callable[[], IngestSummary]) -> IngestSummary:
    for attempt in range(COMMIT_ATTEMPTS):
        try:
            return attempt_once()
        except ConflictError:
            if attempt == COMMIT_ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0.05, 0.2) * (attempt + 1))
    raise AssertionError("unreachable")


def _ingest_once(ctx: StageContext, path: Path | str | None, collection: str, *, progress: bool,
                 remove_paths: list[str] | None,
                 on_progress: Callable[[float, float, str], None] | None,
                 sources: list[Source] | None = None, only_if: RecordGuard | None = None,
                 exact_keys: bool = False, links: LinkPolicy = LinkPolicy(), manifest: Manifest | None = None,
                 schema: CollectionSchema | None = None, schema_raw: bytes | None = None,
                 embedder: Any = None) -> IngestSummary:
    t0 = time.perf_counter()
    s = ctx.settings
    store, docs = ctx.blobstore, ctx.docstore
    with collection_lock(ctx, collection):
        meta = docs.get_collection(collection)
        current = meta["current_version"] if meta else None
        emb = _ingest_embedder(ctx, collection, current, embedder)
        if emb is not ctx.embedder:
            ctx = ctx.with_embedder(emb)
        summary = IngestSummary(collection, current)
        refs, unreadable = _current_segments(store, collection, current)
        if unreadable:
            # The current snapshot cannot be read (corrupt, truncated, deleted by hand): nothing of it can be
            # reused, so every file is loaded again and sources this call does not load are dropped from the
            # collection, rather than leaving a collection that neither ingest nor delete can change.
            summary.warnings.append({"path": prefix(collection, current), "warning": unreadable})
            refs = []
        records = _records(docs, collection, path, sources, remove_paths, exact_keys, everything=bool(unreadable))
        records_for_skip = {} if unreadable else records  # nothing unchanged can keep chunks from it

        new_chunks: dict[str, list[dict]] = {}   # file key -> chunks
        paths: dict[str, Path] = {}              # file key -> readable path (files loaded or found unchanged)
        new_records: list[dict] = []
        record_updates: list[dict] = []          # unchanged content, changed record fields (sources only)
        meta_updates: dict[str, dict] = {}       # unchanged content, changed metadata: file key -> metadata
        deleted: list[str] = []
        total_units = 1.0

        if remove_paths is not None:
            if meta is None:
                known = ", ".join(c["name"] for c in docs.list_collections()) or "none"
                raise IngestError(f"unknown collection {collection!r} (collections: {known})")
            for p in remove_paths:
                if exact_keys:
                    if p not in records or (only_if is not None and not only_if(records[p])):
                        summary.not_applied.append(p)
                    else:
                        deleted.append(p)
                    continue
                key = p if "://" in p else _key(Path(p))
                matches = [k for k in records if k == key or k.startswith(key.rstrip("/") + "/")
                           or Path(k).name == p]
                if not matches:
                    summary.failed.append({"path": p, "error": f"not in collection {collection!r}"})
                deleted.extend(m for m in matches if m not in deleted)
        else:
            if sources is not None:
                root_key = None
                items = [(Path(src.path), src.key, dict(src.fields), src.metadata) for src in sources]
            else:
                root = Path(path)
                if not root.exists():
                    raise IngestError(f"path does not exist: {root}")
                root_key = _key(root)
                unsupported: list[Path] = []
                refused_links: list[dict] = []
                if root.is_file() and links.roots is not None:
                    reason = _link_refusal(root, root.resolve(), links, folder=False)
                    if reason:
                        raise IngestError(f"{root}: {reason}")
                files = discover(root, unsupported, links=links, refused=refused_links)
                if manifest is not None:  # the manifest (and a schema beside it) are not documents
                    files = [f for f in files if _key(f) != _key(manifest.path)]
                    unsupported = [f for f in unsupported if f.name != "relayrag.collection.yaml"
                                   and _key(f) != _key(manifest.path)]
                    check_coverage(manifest, files, root=root)  # raises before anything is written
                summary.unsupported = [str(p) for p in unsupported]
                summary.failed.extend(refused_links)
                if root.is_file() and not files:
                    files = [root]
                items = [(f, _key(f), {}, manifest.entries[_key(f)] if manifest is not None else None)
                         for f in files]
            total_units = float(len(items) + 1)
            seen = set()
            with _progress(progress) as bar:
                task = bar.add_task("loading", total=len(items)) if bar else None
                for f, key, fields, given_meta in items:
                    seen.add(key)
                    if only_if is not None and not only_if(records.get(key)):
                        summary.not_applied.append(key)
                        continue
                    if bar:
                        bar.update(task, description=f"loading {f.name}")
                    try:
                        if f.suffix.lower() not in loaders.SUPPORTED_SUFFIXES and not loaders.is_beir_corpus(f):
                            raise IngestError(f"unsupported file type {f.suffix!r}; supported: "
                                              f"{', '.join(sorted(loaders.SUPPORTED_SUFFIXES))}, BEIR corpus.jsonl")
                        real = f.resolve()  # read what was checked: a link swapped later is re-checked here
                        if links.roots is not None and links.outside(real):
                            raise IngestError(_link_refusal(f, real, links, folder=False))
                        stat = real.stat()
                        digest = file_sha256(real)
                        prev = records_for_skip.get(key)
                        paths[key] = real
                        doc_meta = _document_metadata(given_meta, records.get(key), schema)
                        mhash = metadata_hash(doc_meta)
                        if prev and prev.get("sha256") == digest:
                            if prev.get("metadata_hash") != mhash:  # same bytes, new metadata: no re-embedding
                                meta_updates[key] = doc_meta if doc_meta is not None else {}
                                record_updates.append({**prev, **fields, "metadata": doc_meta, "metadata_hash": mhash,
                                                       "metadata_updated_at": time.time()})
                                summary.metadata_updated += 1
                                continue
                            summary.skipped += 1
                            if any(prev.get(k) != v for k, v in fields.items()):
                                record_updates.append({**prev, **fields})
                            continue
                        chunks, extras = load_chunks(real, key, s.chunk_chars, s.chunk_overlap, name=f.name,
                                                     budget=FileBudget(f.name, s.ingest_file_budget_s))
                    except (IngestError, MetadataError) as exc:
                        summary.failed.append({"path": key if sources else str(f), "error": str(exc)})
                        continue
                    except Exception as exc:  # a loader bug must not take the other files down
                        summary.failed.append({"path": key if sources else str(f),
                                               "error": f"{type(exc).__name__}: {exc}"})
                        continue
                    finally:
                        if bar:
                            bar.advance(task)
                        if on_progress:
                            on_progress(float(len(seen)), total_units, f"loaded {f.name}")
                    new_chunks[key] = [c.to_dict() | ({"meta": doc_meta} if doc_meta is not None else {})
                                      for c in chunks]
                    for w in extras.pop("warnings", []):
                        summary.warnings.append({"path": key if sources else str(f), "warning": w})
                    new_records.append({"path": key, "name": f.name, "sha256": digest, "size": stat.st_size,
                                        "n_chunks": len(chunks), "ingested_at": time.time(), **extras,
                                        **fields, **({"metadata": doc_meta, "metadata_hash": mhash}
                                                     if doc_meta is not None else {})})
            # files that were under PATH before and are gone now (a list of sources deletes nothing)
            for k in records:
                if root_key is not None and k not in seen and (
                        k == root_key or k.startswith(root_key.rstrip("/") + "/")):
                    deleted.append(k)

        if unreadable:  # sources whose chunks were only in the unreadable snapshot are gone: say so
            kept = set(new_chunks) | set(deleted)
            lost = [k for k in records if k not in kept]
            deleted.extend(lost)
            for k in lost:
                summary.warnings.append({"path": k, "warning": "dropped from the collection with the unreadable "
                                                                "snapshot; ingest it again to restore it"})
        summary.ingested = len(new_records)
        summary.deleted = len(deleted)
        summary.deleted_keys = sorted(deleted)
        if current is None and embedder is None and new_chunks:  # a collection's first ingest, no --embedder
            from relayrag.ingest.embedder_choice import choose_embedder
            chosen, summary.embedder_note = choose_embedder(ctx, [c["text"] for cs in new_chunks.values() for c in cs])
            if chosen is not None:
                ctx = ctx.with_embedder(chosen)
        n_live = sum(r.n_live for r in refs)
        # a current version without today's sentence vectors (built before them, or with other span rules) is
        # rebuilt once with them into one new segment, its chunks and chunk vectors reused, when it was built by
        # this very embedder (another embedder: `rebuild` below re-embeds everything anyway)
        upgrade = bool(s.sentence_vectors and n_live and not unreadable
                       and _sentence_rules(store, collection, current) != SPAN_RULES
                       and _snapshot_embedder(store, collection, current) == getattr(ctx.embedder, "model_id", "unknown"))
        schema_changed = schema_raw is not None and schema_raw != ctx.schemas.read_bytes(collection)
        if not new_records and not deleted and not meta_updates and not schema_changed and not upgrade:
            if record_updates:  # same chunks, same version: only the records change (still compare-and-set)
                docs.commit_ingest(collection, current, meta["stats"] if meta else {}, record_updates, [],
                                   expected_version=current)
            summary.chunks_total = n_live
            summary.seconds = time.perf_counter() - t0
            return summary

        version = new_version()
        ours = getattr(ctx.embedder, "model_id", "unknown")
        # the rows this ingest replaces or deletes: located through the segments' source maps (small files),
        # read by ranged reads — never the segments' other rows
        # (a metadata-only change replaces its rows too: same chunks and ids, new metadata, vectors reused)
        replaced = ([k for k in new_chunks if k in records] + [k for k in deleted if k not in new_chunks]
                    + [k for k in meta_updates if k not in new_chunks])
        located = _locate(store, collection, refs, replaced) if replaced else {}
        old_rows = {k: read_source_rows(store, collection, loc[0].id, loc[1]) for k, loc in located.items()}
        writes = _Writes(store, collection, version, ctx.index_backend(collection))
        rebuild = bool(refs) and n_live > 0 and _snapshot_embedder(store, collection, current) != ours
        if rebuild or upgrade:
            # after RELAYRAG_EMBEDDER changed, old vectors are another model's (maybe another size): every
            # chunk re-embeds into one new segment (the one path that costs the whole collection); a sentence-
            # vector upgrade writes the same one segment, its chunk vectors reused (only sentences embed)
            drop = set(deleted) | set(new_chunks)
            current_chunks = read_chunks(store, collection, current)
            old = [c if c["source"] not in meta_updates else {**c, "meta": meta_updates[c["source"]]}
                   for c in current_chunks if c["source"] not in drop]
            chunks = old + [c for key in new_chunks for c in new_chunks[key]]
            reuse_all: dict[str, np.ndarray] = {}
            if upgrade:
                for c, v in zip(current_chunks, read_vectors(store, collection, current)):
                    reuse_all.setdefault(c["content_hash"], v)
            vectors = _embed(ctx, chunks, reuse_all, progress, on_progress, total_units, remove_paths)
            summary.chunks_embedded = sum(1 for c in chunks if c["content_hash"] not in reuse_all)
            new_refs: list[SegmentRef] = []
        else:
            for key, doc_meta in meta_updates.items():
                if key in old_rows and key not in new_chunks:
                    new_chunks[key] = [{**c, "meta": doc_meta} for c in old_rows[key][0]]
            chunks = [c for key in new_chunks for c in new_chunks[key]]
            reuse: dict[str, np.ndarray] = {}
            for old_chunks, old_vectors in old_rows.values():  # a changed file keeps its unchanged chunks' vectors
                for c, v in zip(old_chunks, old_vectors):
                    reuse.setdefault(c["content_hash"], v)
            vectors = _embed(ctx, chunks, reuse, progress, on_progress, total_units, remove_paths)
            summary.chunks_embedded = sum(1 for c in chunks if c["content_hash"] not in reuse)
            by_segment: dict[str, list[np.ndarray]] = {}
            for ref, span in located.values():
                by_segment.setdefault(ref.id, []).append(np.arange(span[0], span[1]))
            new_refs = []
            for ref in refs:
                if ref.id in by_segment:
                    dead = np.concatenate([read_tombstones(store, collection, ref), *by_segment[ref.id]])
                    ref = writes.tombstones(ref, dead)
                if ref.n_live:
                    new_refs.append(ref)
        seg_extras: dict[str, bytes] = {}
        if s.sentence_vectors and chunks:
            reuse_sent = {} if rebuild or upgrade or _sentence_rules(store, collection, current) != SPAN_RULES \
                else _old_sentences(store, collection, located)
            sent_vectors = _sentence_vectors(ctx, chunks, reuse_sent, summary, progress=progress,
                                          on_progress=on_progress if remove_paths is None else None,
                                          total_units=total_units if remove_paths is None else 0.0)
            seg_extras = sentences_bytes(sent_vectors, len(chunks))
        if chunks:
            new_refs.append(writes.segment(chunks, vectors, seg_extras))
        manifest = {"embedder": ours if new_refs else None, "created_at": time.time()}
        # segments' sentences.npz follow today's SPAN_RULES (a segment without one: lookups embed at query time)
        if new_refs and (s.sentence_vectors or _sentence_rules(store, collection, current) == SPAN_RULES):
            manifest["sentence_vectors"] = {"spans": SPAN_RULES}
        if schema is not None:  # stages read the schema of the version they serve (filters, shown fields)
            manifest["schema"] = schema.model_dump(mode="json")
        try:
            # the version's page images (pages.jsonl) and page-vector index: written under the version before
            # its manifest, removed with it (writes.undo) if it never becomes current
            page_report = _pages(ctx, collection, current, version, unreadable=bool(unreadable), records=records,
                                 new_records=new_records, paths=paths, deleted=deleted, replaced=set(new_chunks))
            summary.warnings.extend(page_report.warnings)
            summary.pages, summary.page_search = page_report.to_dict(), page_report.page_search
            manifest["pages"] = page_report.indexed
            if page_report.manifest:
                manifest["page_vectors"] = page_report.manifest
            write_version(store, collection, version, new_refs, manifest)
            stats = _stats(meta, records, new_records, deleted, old_rows, new_chunks, new_refs,
                           recount=rebuild or not refs, chunks=chunks)
            docs.commit_ingest(collection, version, stats, new_records + record_updates, deleted,
                               expected_version=current)
        except BaseException:
            writes.undo()  # never current: nobody reads it
            raise
        if schema_changed and schema_raw is not None:  # after the commit: a lost round stores nothing
            ctx.schemas.put(collection, schema_raw)
        gc_after_commit(ctx, collection, version, current)  # best effort: the commit succeeded
        summary.version = version
        summary.chunks_total = sum(r.n_live for r in new_refs)
        try:  # occasional merge (its own compare-and-set flip); a failure leaves this committed version serving
            merged = merge_locked(ctx, collection, version, new_refs, stats)
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: segment merge failed: %s: %s", collection, type(exc).__name__, exc)
            merged = None
        summary.version = merged or version
        summary.seconds = time.perf_counter() - t0
        return summary


def _pages(ctx: StageContext, collection: str, current: str | None, version: str, *, unreadable: bool,
           records: dict[str, dict], new_records: list[dict], paths: dict[str, Path], deleted: list[str],
           replaced: set[str]) -> PageReport:
    """Page images of the new version (written as its pages.jsonl) and, with the colpali extra and a model,
    its page-vector index (relayrag.ingest.page_index). The current version's entries of files this ingest
    neither deleted nor replaced are carried over as they are (page sets and vectors reused); new and changed
    files (`replaced`: the sources with new chunks) and unchanged files at hand that have no page images yet get
    theirs (from their content's page set when one exists, else rendered)."""
    report = PageReport()
    drop = set(deleted) | replaced
    old_pages = [] if unreadable else read_version_pages(ctx.blobstore, collection, current)
    kept = [e for e in old_pages if e["source"] not in drop]
    have = {e["source"] for e in kept}
    recs = {**records, **{r["path"]: r for r in new_records}}
    gone = set(deleted) - replaced
    keys = [k for k in dict.fromkeys([*replaced, *paths]) if k in recs and k not in have and k not in gone
            and recs[k].get("n_chunks") != 0]
    files = [PageFile(key=k, doc=recs[k].get("name") or Path(k).name, sha256=recs[k].get("sha256", ""),
                      kind=recs[k].get("kind", ""), path=paths.get(k)) for k in keys]
    entries = kept + version_pages(ctx, collection, old_pages, [f for f in files if len(f.sha256) == 64], report)
    report.indexed = len(entries)
    if entries:  # a version without page images writes no page file (read as none; a text-only ingest stays small)
        write_version_pages(ctx.blobstore, collection, version, entries)
    build_page_vectors(ctx, collection, version, entries, report)
    return report


def _records(docs, collection: str, path, sources, remove_paths, exact_keys: bool, *, everything: bool
             ) -> dict[str, dict]:
    """The file records this call needs: only the named sources' (one read each) when it names them (one file,
    a list of sources, exact keys to remove), else all of the collection's (a folder: files gone from it are
    deleted; removal by name or folder)."""
    keys: list[str] | None = None
    if not everything:
        if sources is not None:
            keys = [src.key for src in sources]
        elif remove_paths is not None and exact_keys:
            keys = list(remove_paths)
        elif remove_paths is None and path is not None and Path(path).is_file():
            keys = [_key(Path(path))]
        elif remove_paths is not None:
            # removal by local path: a path that is itself a recorded file matches only itself (a folder, a bare
            # file name or a gs:// prefix needs the whole list), so deleting one file reads one record
            direct = {p: docs.get_file(collection, _key(Path(p))) if "://" not in p and "/" in p else None
                      for p in remove_paths}
            if all(r is not None for r in direct.values()):
                return {r["path"]: r for r in direct.values() if r is not None}
    if keys is None:
        return {r["path"]: r for r in docs.list_files(collection)}
    return {k: r for k in dict.fromkeys(keys) if (r := docs.get_file(collection, k)) is not None}


def _current_segments(store, collection: str, current: str | None) -> tuple[list[SegmentRef], str | None]:
    """(segments of the current version, None), or ([], reason) when some of them cannot be read."""
    if not current:
        return [], None
    try:
        refs = version_segments(read_manifest(store, collection, current), current)
        problem = segment_problem(store, collection, refs)
        if problem is None:
            for ref in refs:  # pre-segment versions carry no sizes: reading them is the check
                if ref.id.startswith("v"):
                    read_sources(store, collection, ref.id)
                    read_vectors(store, collection, current)
    except (OSError, ValueError, KeyError, EOFError) as exc:  # JSONLError and numpy's format errors are ValueErrors
        problem = f"{type(exc).__name__}: {exc}"
    if problem is None:
        return refs, None
    reason = (f"the current snapshot {current} could not be read ({problem}); "
              f"it is replaced by a new one built from the files loaded now")
    log.warning("%s: %s", collection, reason)
    return [], reason


def _locate(store, collection: str, refs: list[SegmentRef], keys: list[str]) -> dict[str, tuple[SegmentRef, list[int]]]:
    """{source: (segment, [row0, row1, byte0, byte1])} of the live rows of each of `keys` in `refs`."""
    want = set(keys)
    out: dict[str, tuple[SegmentRef, list[int]]] = {}
    for ref in reversed(refs):  # newest first: a source re-ingested lives in a newer segment
        srcs = read_sources(store, collection, ref.id)
        hits = [k for k in want if k in srcs]
        if not hits:
            continue
        dead = read_tombstones(store, collection, ref)
        for k in hits:
            span = srcs[k]
            if not (dead.size and np.isin(span[0], dead)):
                out[k] = (ref, span)
                want.discard(k)
        if not want:
            break
    return out


class _Writes:
    """What one ingest attempt wrote (its segment, tombstones, version), removable if it never becomes current.
    With a distributed index (`index`), the segment and tombstones are mirrored there too, before the flip
    (rows of a segment no version lists are invisible to its queries)."""

    def __init__(self, store, collection: str, version: str, index=None):
        self.store, self.collection, self.version, self.index = store, collection, version, index
        self.keys: list[str] = []
        self.segments: list[str] = []

    def segment(self, chunks: list[dict], vectors: np.ndarray, extras: dict[str, bytes] | None = None) -> SegmentRef:
        stats = TermStats.from_texts(index_text(c) for c in chunks)
        ref = write_segment(self.store, self.collection, chunks, vectors, stats=stats, extras=extras)
        self.keys.append(segment_prefix(self.collection, ref.id))
        self.segments.append(ref.id)
        if self.index is not None:
            self.index.add_segment(self.collection, ref.id, chunks, vectors, stats)
        return ref

    def tombstones(self, ref: SegmentRef, dead: np.ndarray) -> SegmentRef:
        self.keys.append(tombstone_key(self.collection, ref.id, self.version))
        new = write_tombstones(self.store, self.collection, ref, self.version, dead)
        if self.index is not None and new.tombstones:
            self.index.add_tombstones(self.collection, new, read_tombstones(self.store, self.collection, new))
        return new

    def undo(self) -> None:
        for key in [prefix(self.collection, self.version), *self.keys]:
            _best_effort(self.store.delete_prefix, key)
        if self.index is not None and self.segments:
            _best_effort(self.index.drop_segments, self.collection, self.segments)


def _stats(meta, records, new_records, deleted, old_rows, new_chunks, refs, *, recount: bool,
           chunks: list[dict]) -> dict:
    """The collection's {n_chunks, n_documents, n_files} after this ingest. recount: `chunks` are all of the
    collection's (a rebuild, or no previous rows); else from the change alone: the previous stats, minus the
    replaced and deleted sources' documents, plus the new ones."""
    n_chunks = sum(r.n_live for r in refs)
    if recount:
        return {"n_chunks": n_chunks, "n_documents": len({(c["source"], c["doc"]) for c in chunks}),
                "n_files": len({c["source"] for c in chunks})}
    prev = (meta or {}).get("stats") or {}
    old_docs = sum(len({c["doc"] for c in rows}) for rows, _ in old_rows.values())
    new_docs = sum(len({c["doc"] for c in cs}) for cs in new_chunks.values())
    gone = set(deleted) - set(new_chunks)
    added = {r["path"] for r in new_records} - set(records)
    return {"n_chunks": n_chunks, "n_documents": int(prev.get("n_documents", 0)) - old_docs + new_docs,
            "n_files": int(prev.get("n_files", 0)) + len(added) - len(gone & set(records))}


def merge(ctx: StageContext, collection: str, *, everything: bool = False) -> str | None:
    """Run the segment merge policy (relayrag.ingest.segments) on the collection's current version now;
    everything=True rewrites it into one segment. Takes the collection's lock. Returns the new version, or None
    when nothing needed merging or another writer committed first."""
    with collection_lock(ctx, collection):
        meta = ctx.docstore.get_collection(collection)
        if not meta or not meta.get("current_version"):
            return None
        version = meta["current_version"]
        refs = version_segments(read_manifest(ctx.blobstore, collection, version), version)
        return merge_locked(ctx, collection, version, refs, meta.get("stats") or {}, everything=everything)


def _best_effort(fn, *args, **kw) -> None:
    """Run a clean-up step; log and swallow its failure (e.g. another writer deleted the same files)."""
    try:
        fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - clean-up must not turn a committed ingest into an error
        log.warning("snapshot clean-up %s failed: %s: %s", getattr(fn, "__name__", fn), type(exc).__name__, exc)


def _document_metadata(given: dict | None, record: dict | None, schema: CollectionSchema | None) -> dict | None:
    """A document's metadata: as given (manifest, object metadata), else what its record holds, else — in a
    collection with a schema — empty metadata checked against the schema (MetadataError if it requires
    fields: such a document needs a manifest line), else None (no metadata: ingest as without a schema)."""
    if given is not None:
        return given
    if record is not None and record.get("metadata") is not None:
        return record["metadata"]
    if schema is not None:
        try:
            return normalise({}, schema)
        except MetadataError as exc:
            raise MetadataError(f"no metadata ({exc}); pass a manifest line for it (relayrag ingest --manifest)")
    return None


def _key(path: Path) -> str:
    return str(Path(os.path.abspath(path)))
