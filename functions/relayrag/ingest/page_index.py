"""The page side of one ingest: which page images a new snapshot version holds, and its page-vector index.

Called by relayrag.ingest.pipeline between building the chunk list and writing the snapshot:
- `version_pages` keeps the page entries of unchanged files (from the current version's pages.jsonl), renders the
  pages of new or changed PDFs and image files into content-addressed page sets (relayrag.ingest.pages), and
  renders those of unchanged files that have none yet (a snapshot written before page images existed);
- `build_page_vectors` encodes the pages whose file content has no stored vectors for this model yet, stores
  them with the page set, and writes the version's byaldi index (`snapshots/<c>/<v>/colpali/`). Without the
  `colpali` extra, or without a loadable model, it writes no index and returns the one line that says why.

Failures here never fail the ingest: a page that cannot be rendered is a warning, the text is still indexed.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from relayrag.ingest import pages as pagestore
from relayrag.ingest.snapshot import prefix

log = logging.getLogger(__name__)
PAGE_KINDS = ("application/pdf", "image/png", "image/jpeg", "image/tiff")
ENCODE_BATCH = 8  # page images decoded at once for the page-image model


@dataclass
class PageFile:
    """A file of the new version whose pages may need images: its source key, document name, content hash,
    MIME type (the record's `kind`) and a readable path (None when it is not at hand, e.g. unchanged sources)."""

    key: str
    doc: str
    sha256: str
    kind: str
    path: Path | None


@dataclass
class PageReport:
    indexed: int = 0          # pages with an image in the new version
    rendered: int = 0         # pages rendered by this ingest (new or changed content)
    embedded: int = 0         # pages encoded by this ingest (no stored vectors for this content and model)
    page_search: str = ""     # "on: ..." or the one line that says why page-image search is off
    warnings: list[dict] = field(default_factory=list)
    manifest: dict | None = None  # {"model", "model_key", "pages"} when the version has a page index

    def to_dict(self) -> dict:
        return {"indexed": self.indexed, "rendered": self.rendered, "embedded": self.embedded}


def version_pages(ctx, collection: str, old_pages: list[dict], files: list[PageFile], report: PageReport) -> list[dict]:
    """The page entries of the new version, in file order: `files` are all files the new version holds
    (new, changed and unchanged). Entries of a file come from its content's page set (reused when complete),
    rendered when missing and the file is at hand."""
    dpi = ctx.settings.page_image_dpi
    by_source: dict[str, list[dict]] = {}
    for e in old_pages:
        by_source.setdefault(e["source"], []).append(e)
    out: list[dict] = []
    for f in files:
        if f.kind not in PAGE_KINDS or dpi <= 0:
            continue
        old = [e for e in by_source.get(f.key, []) if e.get("sha256") == f.sha256]
        if old:
            out.extend(old)
            continue
        try:
            entries = pagestore.read_set(ctx.blobstore, collection, f.sha256)
            if entries is None:
                if f.path is None:
                    continue
                bound = pagestore.PixelBudget(f.key)
                entries = pagestore.write_set(ctx.blobstore, collection, f.sha256,
                                              pagestore.render_file(f.path, f.kind, dpi, bound))
                report.rendered += len(entries)
                if bound.stopped_at:
                    report.warnings.append({"path": f.key, "warning": bound.note()})
        except Exception as exc:  # a page image is an extra: the text of the file is indexed regardless
            report.warnings.append({"path": f.key, "warning": f"page images not rendered ({type(exc).__name__}: "
                                                              f"{' '.join(str(exc).split())[:200]})"})
            continue
        out.extend({"source": f.key, "doc": f.doc, "sha256": f.sha256, **e} for e in entries)
    for e in out:
        e.pop("bytes", None)
    report.indexed = len(out)
    return out


def build_page_vectors(ctx, collection: str, version: str, entries: list[dict], report: PageReport) -> None:
    """Encode what is missing, store it per page set, write the version's byaldi index. Sets report.manifest
    and report.page_search; never raises for an unavailable model (the reason goes to report.page_search)."""
    from relayrag.retrieval.colpali import PageSearchUnavailable

    if not entries:
        report.page_search = "page-image search: no page images in this collection"
        return
    off = ctx.page_search_off()  # no model here: nothing to load (the loader is not called)
    if off:
        report.page_search = off
        return
    try:
        encoder = ctx.page_encoder()
    except PageSearchUnavailable as exc:
        report.page_search = str(exc)
        return
    try:
        _encode_and_index(ctx, collection, version, entries, report, encoder)
    except Exception as exc:  # the text index is still good: page-image search is off for this version
        report.embedded = 0
        report.page_search = (f"page-image search is off for this version: encoding the pages failed "
                              f"({type(exc).__name__}: {' '.join(str(exc).split())[:300]})")
        report.warnings.append({"path": prefix(collection, version), "warning": report.page_search})


def _encode_and_index(ctx, collection: str, version: str, entries: list[dict], report: PageReport, encoder) -> None:
    from relayrag.retrieval.colpali import INDEX_DIR, load_vectors, model_key, save_vectors

    key = model_key(encoder.model_id)
    store = ctx.blobstore
    by_sha: dict[str, list[dict]] = {}
    for e in entries:
        by_sha.setdefault(e["sha256"], []).append(e)
    vectors: dict[tuple[str, int], object] = {}
    for sha, es in by_sha.items():
        vkey = pagestore.set_prefix(collection, sha) + f"vectors/{key}.npz"
        have: dict = {}
        if store.exists(vkey):
            try:
                have = load_vectors(store.get_bytes(vkey))
            except (OSError, ValueError):
                have = {}
        missing = [e for e in es if e["page"] not in have]
        for start in range(0, len(missing), ENCODE_BATCH):  # a few page images in memory, whatever the file's size
            batch = missing[start:start + ENCODE_BATCH]
            images = [pagestore.load_page_image(store, collection, sha, e["page"]) for e in batch]
            for e, v in zip(batch, encoder.encode_pages(images)):
                have[e["page"]] = v
            del images
        if missing:
            report.embedded += len(missing)
            store.put_bytes(vkey, save_vectors(have))
        for e in es:
            vectors[(sha, e["page"])] = have[e["page"]]
    with tempfile.TemporaryDirectory(prefix="relayrag-pages-") as tmp:
        folder = Path(tmp) / INDEX_DIR
        encoder.write_index(entries, [vectors[(e["sha256"], e["page"])] for e in entries], folder)
        base = prefix(collection, version) + INDEX_DIR + "/"
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            store.put_bytes(base + f.relative_to(folder).as_posix(), f.read_bytes())
    report.manifest = {"model": encoder.model_id, "model_key": key, "pages": len(entries)}
    report.page_search = f"page-image search: on ({len(entries)} pages, model {encoder.model_id})"
