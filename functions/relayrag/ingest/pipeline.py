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

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from relayrag.context import StageContext
from relayrag.backends.blobstore import LocalBlobStore
from relayrag.errors import ConflictError, IngestError
from relayrag.ingest import loaders
from relayrag.ingest.chunking import Chunk, make_chunks
from relayrag.ingest.limits import FileBudget
from relayrag.ingest.page_index import PageFile, PageReport, build_page_vectors, version_pages
from relayrag.ingest.pages import gc_page_sets, read_version_pages, write_version_pages
from relayrag.naming import validate_collection
from relayrag.ingest.snapshot import (gc_versions, index_text, new_version, prefix, read_chunks, read_vectors,
                                      write_snapshot)

log = logging.getLogger(__name__)
GC_MIN_AGE_S = 900.0  # remote stores: versions younger than this may be another instance's write in flight


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
    chunks_total: int = 0
    seconds: float = 0.0
    pages: dict = field(default_factory=dict)  # page images: {indexed, rendered, embedded} (relayrag.ingest.page_index)
    page_search: str = ""  # one line: page-image search on (pages, model) or why it is off and how to turn it on
    not_applied: list[str] = field(default_factory=list)  # source keys whose `only_if` guard said no
    unsupported: list[str] = field(default_factory=list)  # files under a folder with no loader for their type

    def to_dict(self) -> dict:
        return {
            "collection": self.collection,
            "version": self.version,
            "files": {"ingested": self.ingested, "skipped": self.skipped, "deleted": self.deleted,
                      "failed": len(self.failed)},
            "failed": self.failed,
            "warnings": self.warnings,
            "chunks_embedded": self.chunks_embedded,
            "chunks_total": self.chunks_total,
            "seconds": round(self.seconds, 3),
            **({"pages": self.pages} if self.pages else {}),
            **({"page_search": self.page_search} if self.page_search else {}),
            **({"not_applied": self.not_applied} if self.not_applied else {}),
            **({"unsupported": self.unsupported} if self.unsupported else {}),
        }


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def collection_lock(ctx: StageContext, collection: str) -> Iterator[None]:
    validate_collection(collection)
    lock_dir = ctx.settings.home / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f"{collection}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass(frozen=True)
class LinkPolicy:
    """How ingest treats symbolic links under a folder (and a link given as PATH itself when `roots` is set).

    follow: read what links point at (folders too, each real folder once); otherwise every link under the
    folder is skipped with a reason. roots: when given, every file is resolved before it is read and one
    whose real path lies outside all of `roots` is refused (the MCP server's RELAYRAG_MCP_INGEST_ROOTS)."""
    follow: bool = False
    roots: tuple[Path, ...] | None = None

    def outside(self, real: Path) -> bool:
        return self.roots is not None and not any(real == r or r in real.parents for r in self.roots)


def discover(path: Path, unsupported: list[Path] | None = None, *, links: LinkPolicy = LinkPolicy(),
             refused: list[dict] | None = None) -> list[Path]:
    """Files to ingest under `path` (a file, or a folder walked recursively; hidden files skipped). Files of
    a type no loader reads (.csv, .docx ...) are left out and, when `unsupported` is given, appended to it.
    Symbolic links follow `links`; each one skipped or refused is appended to `refused` as {path, error}."""
    if path.is_file():
        return [path]
    out: list[Path] = []
    seen_dirs = {os.path.realpath(path)}
    for dirpath, dirs, files in os.walk(path, followlinks=links.follow):
        here = Path(dirpath)
        keep = []
        for d in sorted(dirs):
            p = here / d
            if d.startswith("."):
                continue
            if p.is_symlink():
                real = Path(os.path.realpath(p))
                reason = _link_refusal(p, real, links, folder=True)
                if reason or str(real) in seen_dirs:
                    if reason and refused is not None:
                        refused.append({"path": str(p), "error": reason})
                    continue
            real_dir = os.path.realpath(p)
            if real_dir in seen_dirs:
                continue
            seen_dirs.add(real_dir)
            keep.append(d)
        dirs[:] = keep
        for f in sorted(files):
            p = here / f
            if f.startswith(".") or not p.is_file() and not p.is_symlink():
                continue
            if p.is_symlink() or links.roots is not None:
                reason = _link_refusal(p, Path(os.path.realpath(p)), links, folder=False)
                if reason:
                    if refused is not None:
                        refused.append({"path": str(p), "error": reason})
                    continue
            if not p.is_file():
                continue
            if p.suffix.lower() in loaders.SUPPORTED_SUFFIXES or loaders.is_beir_corpus(p):
                out.append(p)
            elif unsupported is not None:
                unsupported.append(p)
    return sorted(out)


def _link_refusal(p: Path, real: Path, links: LinkPolicy, *, folder: bool) -> str | None:
    """Why the file or folder `p` (real path `real`) must not be read, or None."""
    kind = "folder" if folder else "file"
    if links.outside(real):
        roots = ", ".join(str(r) for r in links.roots or ())
        return f"refused: resolves to {real}, outside the folders this server may ingest from ({roots})"
    if p.is_symlink() and not links.follow:
        return (f"skipped: symbolic link to the {kind} {real} (not followed; `relayrag ingest --follow-symlinks` "
                f"reads link targets)")
    if p.is_symlink() and not real.exists():
        return f"skipped: broken symbolic link (to {real})"
    return None


def load_chunks(path: Path, key: str, chunk_chars: int, overlap: int, name: str | None = None,
                budget: FileBudget | None = None) -> tuple[list[Chunk], dict]:
    """Load one file into chunks; `name` (default: the file's) names the document; `budget` its time budget.
    Returns (chunks, record extras). Raises IngestError."""
    if loaders.is_beir_corpus(path):
        docs = list(loaders.iter_beir_corpus(path))
        chunks: list[Chunk] = []
        for d in docs:
            doc_id = d.source.rsplit("#", 1)[-1]
            chunks.extend(make_chunks(doc=doc_id, source=key, title=d.title,
                                      pages=[(p.number, p.text) for p in d.pages],
                                      max_chars=chunk_chars, overlap=overlap))
        extras = {"kind": "beir", "documents": len(docs), "warnings": []}
    else:
        d = loaders.load_document(path, budget)
        chunks = make_chunks(doc=name or path.name, source=key, title=d.title,
                             pages=[(p.number, p.text) for p in d.pages if p.text.strip()],
                             max_chars=chunk_chars, overlap=overlap)
        extras = {"kind": d.mime, "pages": len(d.pages),
                  "ocr_pages": [p.number for p in d.pages if p.method == "ocr"], "warnings": d.warnings}
    if not chunks:
        raise IngestError("no extractable text (nothing to index)")
    return chunks, extras


embed_text = index_text  # the dense arm embeds what BM25 indexes


def _progress(enabled: bool):
    if not enabled:
        return contextlib.nullcontext(None)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    return Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                    TimeRemainingColumn(), console=Console(stderr=True), transient=True)


COMMIT_ATTEMPTS = 8  # compare-and-set rounds before giving up under heavy concurrent writes


def ingest(ctx: StageContext, path: Path | str, collection: str, *, progress: bool = False,
           remove_paths: list[str] | None = None,
           on_progress: Callable[[float, float, str], None] | None = None,
           links: LinkPolicy = LinkPolicy()) -> IngestSummary:
    """Sync `path` into `collection` (or, with `remove_paths`, only delete those sources).

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
    return _with_commit_retries(lambda: _ingest_once(ctx, path, collection, progress=progress,
                                                      remove_paths=remove_paths, on_progress=on_progress,
                                                      links=links))


@dataclass(frozen=True)
class Source:
    """One local file to ingest under a key of the caller's choosing (e.g. `gs://bucket/object` for a GCS
    object fetched to a temp file), with extra fields stored in its ingestion record (e.g. `generation`).
    The file's name becomes the document name; its suffix selects the loader."""
    path: Path
    key: str
    fields: dict = field(default_factory=dict)


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
    return _with_commit_retries(lambda: _ingest_once(ctx, None, collection, progress=False, remove_paths=None,
                                                      on_progress=None, sources=[source], only_if=only_if))


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
                 exact_keys: bool = False, links: LinkPolicy = LinkPolicy()) -> IngestSummary:
    t0 = time.perf_counter()
    s = ctx.settings
    store, docs = ctx.blobstore, ctx.docstore
    with collection_lock(ctx, collection):
        meta = docs.get_collection(collection)
        current = meta["current_version"] if meta else None
        summary = IngestSummary(collection, current)
        records = {r["path"]: r for r in docs.list_files(collection)}
        old_chunks, old_vectors, unreadable = _read_current(store, collection, current)
        if unreadable:
            # The current snapshot cannot be read (corrupt, truncated, deleted by hand): nothing of it can be
            # reused, so every file is loaded again and sources this call does not load are dropped from the
            # collection, rather than leaving a collection that neither ingest nor delete can change.
            summary.warnings.append({"path": prefix(collection, current), "warning": unreadable})
        records_for_skip = {} if unreadable else records  # nothing unchanged can keep chunks from it
        vec_by_hash = {c["content_hash"]: i for i, c in enumerate(old_chunks)}

        new_chunks: dict[str, list[dict]] = {}   # file key -> chunks
        paths: dict[str, Path] = {}              # file key -> readable path (files loaded or found unchanged)
        new_records: list[dict] = []
        record_updates: list[dict] = []          # unchanged content, changed record fields (sources only)
        deleted: list[str] = []

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
                items = [(Path(src.path), src.key, dict(src.fields)) for src in sources]
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
                summary.unsupported = [str(p) for p in unsupported]
                summary.failed.extend(refused_links)
                if root.is_file() and not files:
                    files = [root]
                items = [(f, _key(f), {}) for f in files]
            total_units = float(len(items) + 1)
            seen = set()
            with _progress(progress) as bar:
                task = bar.add_task("loading", total=len(items)) if bar else None
                for f, key, fields in items:
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
                        if prev and prev.get("sha256") == digest:
                            summary.skipped += 1
                            if any(prev.get(k) != v for k, v in fields.items()):
                                record_updates.append({**prev, **fields})
                            continue
                        chunks, extras = load_chunks(real, key, s.chunk_chars, s.chunk_overlap, name=f.name,
                                                     budget=FileBudget(f.name, s.ingest_file_budget_s))
                    except IngestError as exc:
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
                    new_chunks[key] = [c.to_dict() for c in chunks]
                    for w in extras.pop("warnings", []):
                        summary.warnings.append({"path": key if sources else str(f), "warning": w})
                    new_records.append({"path": key, "name": f.name, "sha256": digest, "size": stat.st_size,
                                        "n_chunks": len(chunks), "ingested_at": time.time(), **extras,
                                        **fields})
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
        if not new_records and not deleted:
            if record_updates:  # same chunks, same version: only the records change (still compare-and-set)
                docs.commit_ingest(collection, current, meta["stats"] if meta else {}, record_updates, [],
                                   expected_version=current)
            summary.chunks_total = len(old_chunks)
            summary.seconds = time.perf_counter() - t0
            return summary

        drop = set(deleted) | set(new_chunks)
        chunks = [c for c in old_chunks if c["source"] not in drop]
        for key in new_chunks:
            chunks.extend(new_chunks[key])
        # embeddings: reuse by content hash, embed the rest — only vectors of this very embedder: after
        # RELAYRAG_EMBEDDER changed, old vectors are another model's (maybe another size) and all re-embed
        if current and old_chunks and _snapshot_embedder(store, collection, current) != \
                getattr(ctx.embedder, "model_id", "unknown"):
            vec_by_hash = {}
            old_vectors = np.zeros((0, ctx.embedder.dim), np.float16)
        dim = old_vectors.shape[1] if old_vectors.shape[0] else None
        vectors: list[np.ndarray | None] = []
        todo = []
        for i, c in enumerate(chunks):
            j = vec_by_hash.get(c["content_hash"])
            vectors.append(old_vectors[j] if j is not None else None)
            if j is None:
                todo.append(i)
        if todo:
            emb = ctx.embedder
            dim = emb.dim
            with _progress(progress and len(todo) > 64) as bar:
                task = bar.add_task("embedding chunks", total=len(todo)) if bar else None
                step = 256
                for b in range(0, len(todo), step):
                    idx = todo[b:b + step]
                    out = emb.embed([embed_text(chunks[i]) for i in idx], kind="document")
                    for i, v in zip(idx, out):
                        vectors[i] = v
                    if bar:
                        bar.advance(task, len(idx))
                    if on_progress and remove_paths is None:
                        done = min(len(todo), b + step)
                        on_progress(total_units - 1 + done / len(todo) * 0.9, total_units,
                                    f"embedded {done}/{len(todo)} chunks")
        summary.chunks_embedded = len(todo)
        matrix = np.stack(vectors).astype(np.float16) if vectors else np.zeros((0, dim or 384), np.float16)

        version = new_version()
        manifest = {"embedder": getattr(ctx.embedder, "model_id", "unknown") if todo or chunks else None,
                    "created_at": time.time()}
        page_report = _pages(ctx, collection, current, version, chunks, records, new_records, paths,
                             unreadable=bool(unreadable))
        summary.warnings.extend(page_report.warnings)
        summary.pages, summary.page_search = page_report.to_dict(), page_report.page_search
        manifest["pages"] = page_report.indexed
        if page_report.manifest:
            manifest["page_vectors"] = page_report.manifest
        write_snapshot(store, collection, version, chunks, matrix, manifest)
        n_docs = len({(c["source"], c["doc"]) for c in chunks})
        stats = {"n_chunks": len(chunks), "n_documents": n_docs,
                 "n_files": len(set(records) - set(deleted) | {r["path"] for r in new_records})}
        try:
            docs.commit_ingest(collection, version, stats, new_records + record_updates, deleted,
                               expected_version=current)
        except ConflictError:
            _best_effort(store.delete_prefix, prefix(collection, version))  # never current: nobody reads it
            raise
        # Without a shared lock (a remote blob store), a younger version may be another writer's in flight.
        # The commit succeeded: cleaning up is best effort (a later ingest's GC retries it), never an error.
        shared_lock = isinstance(store, LocalBlobStore)
        _best_effort(_gc, ctx, collection, version, keep={version} | ({current} if current else set()),
                     min_age_s=0.0 if shared_lock else GC_MIN_AGE_S)
        summary.version = version
        summary.chunks_total = len(chunks)
        summary.seconds = time.perf_counter() - t0
        return summary


def _gc(ctx: StageContext, collection: str, new: str, keep: set[str], min_age_s: float) -> list[str]:
    """gc_versions sparing also every version a run in flight has pinned (docstore.pinned_versions), then the page
    sets (page images and page vectors) that the new version does not reference: a deleted or replaced file's page
    images go with this flip, even if a run's lease (1 h, not released when the run ends) still names an older
    version — such a run's image reference then answers "no longer exists" (Service.page_image), nothing breaks."""
    pinned = ctx.docstore.pinned_versions(collection)
    removed = gc_versions(ctx.blobstore, collection, keep | pinned, min_age_s=min_age_s)
    gc_page_sets(ctx.blobstore, collection, {new}, min_age_s=min_age_s)
    return removed


def _pages(ctx: StageContext, collection: str, current: str | None, version: str, chunks: list[dict],
           records: dict[str, dict], new_records: list[dict], paths: dict[str, Path], *, unreadable: bool
           ) -> PageReport:
    """Page images of the new version (written as its pages.jsonl) and, with the colpali extra and a model,
    its page-vector index (relayrag.ingest.page_index)."""
    report = PageReport()
    recs = {**records, **{r["path"]: r for r in new_records}}
    files = [PageFile(key=src, doc=recs[src].get("name") or Path(src).name, sha256=recs[src].get("sha256", ""),
                      kind=recs[src].get("kind", ""), path=paths.get(src))
             for src in dict.fromkeys(c["source"] for c in chunks) if src in recs]
    old_pages = [] if unreadable else read_version_pages(ctx.blobstore, collection, current)
    entries = version_pages(ctx, collection, old_pages, [f for f in files if len(f.sha256) == 64], report)
    write_version_pages(ctx.blobstore, collection, version, entries)
    build_page_vectors(ctx, collection, version, entries, report)
    return report


def _best_effort(fn, *args, **kw) -> None:
    """Run a clean-up step; log and swallow its failure (e.g. another writer deleted the same files)."""
    try:
        fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - clean-up must not turn a committed ingest into an error
        log.warning("snapshot clean-up %s failed: %s: %s", getattr(fn, "__name__", fn), type(exc).__name__, exc)


def _read_current(store, collection: str, current: str | None) -> tuple[list[dict], np.ndarray, str | None]:
    """(chunks, vectors, None) of the current version, or ([], empty, reason) when it cannot be read."""
    empty = np.zeros((0, 384), np.float16)
    if not current:
        return [], empty, None
    try:
        chunks = read_chunks(store, collection, current)
        vectors = read_vectors(store, collection, current)
        if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
            raise ValueError(f"{vectors.shape[0] if vectors.ndim else 0} vectors for {len(chunks)} chunks")
    except (OSError, ValueError, KeyError, EOFError) as exc:  # JSONLError and numpy's format errors are ValueErrors
        reason = (f"the current snapshot {current} could not be read ({type(exc).__name__}: {exc}); "
                  f"it is replaced by a new one built from the files loaded now")
        log.warning("%s: %s", collection, reason)
        return [], empty, reason
    return chunks, vectors, None


def _snapshot_embedder(store, collection: str, version: str) -> str | None:
    """The `embedder` a snapshot's manifest names (None if it names none)."""
    try:
        return json.loads(store.get_bytes(prefix(collection, version) + "manifest.json")).get("embedder")
    except (OSError, ValueError):
        return None


def _key(path: Path) -> str:
    return str(Path(os.path.abspath(path)))
