"""Page images: every PDF page and every image file's frame, rendered once per file content and kept in the blob
store next to the index snapshots, with a small thumbnail.

Layout (blob store: a local folder or the snapshots bucket):
    pages/<collection>/<sha256>/page-0001.png    the page at RELAYRAG_PAGE_IMAGE_DPI (PDF) or the image itself
                                                 (long side at most MAX_SIDE pixels), PNG
    pages/<collection>/<sha256>/thumb-0001.png   the same page, long side THUMB_SIDE pixels, PNG
    pages/<collection>/<sha256>/vectors/<model>.npz  page vectors of one page-image model (relayrag.retrieval.colpali)
    pages/<collection>/<sha256>/set.json         written last: the set's pages {page, image, thumbnail, width,
                                                 height, bytes}; a set without it is incomplete
    snapshots/<collection>/<version>/pages.jsonl  which page sets the version holds: one line per page
                                                 {source, doc, sha256, page, image, thumbnail, width, height}

A set is keyed by the file's sha256, so an unchanged file (or the same bytes under another name) reuses its
images and vectors. A version references sets; after a version flip, `gc_page_sets` deletes every set that no
kept version references (the same clean-up that deletes old versions), so deleting or replacing a file removes
its page images and page vectors with the flip that removes its chunks.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from relayrag import jsonl
from relayrag.backends.blobstore import BlobStore
from relayrag.naming import validate_collection

MAX_SIDE = 1600   # pixels: long side of a stored page image (a 96-dpi Letter page is 816 x 1056)
MAX_FILE_PAGE_PIXELS = 2_000_000_000  # pixels of page images per file (~2,300 Letter pages at 96 dpi, 780 at MAX_SIDE)
THUMB_SIDE = 256  # pixels: long side of a thumbnail (what MCP clients and the CLI show)
PDF_MIME = "application/pdf"


def set_prefix(collection: str, sha256: str) -> str:
    validate_collection(collection)
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    return f"pages/{collection}/{sha256}/"


def pages_key(collection: str, version: str) -> str:
    """The version's page list (relayrag.ingest.snapshot.prefix(collection, version) + "pages.jsonl")."""
    validate_collection(collection)
    return f"snapshots/{collection}/{version}/pages.jsonl"


@dataclass
class RenderedPage:
    page: int      # 1-based
    image: Any     # PIL.Image (RGB)


@dataclass
class PixelBudget:
    """Pixels of page images one file may still render (MAX_FILE_PAGE_PIXELS): a page that would pass the
    bound is not rendered, nor any after it; `stopped_at` is then its page number (the text is indexed anyway)."""
    name: str
    left: int = field(default_factory=lambda: MAX_FILE_PAGE_PIXELS)
    stopped_at: int = 0

    def take(self, page: int, width: int, height: int) -> bool:
        if width * height > self.left:
            self.stopped_at = page
            return False
        self.left -= width * height
        return True

    def note(self) -> str:
        return (f"page images stop before page {self.stopped_at}: the file's page images would pass "
                f"{MAX_FILE_PAGE_PIXELS:,} pixels (the text of every page is indexed)")


def _pdf_scale(width_pt: float, height_pt: float, dpi: int) -> float:
    """Render scale (pixels per point) of a page of width x height points: `dpi`, the long side at most MAX_SIDE."""
    long_side = max(abs(width_pt), abs(height_pt), 1.0)
    return min(dpi / 72.0, MAX_SIDE / long_side)


def render_pdf(source: Path | bytes, dpi: int, max_pages: int | None = None,
               budget: PixelBudget | None = None) -> Iterator[RenderedPage]:
    """The pages of a PDF as RGB images at `dpi` (pypdfium2), the long side capped at MAX_SIDE, one page at a
    time: a page's image is rendered when the caller asks for it and nothing keeps it after that, so memory
    does not grow with the page count. The size of each page (pypdfium2's page size, points) is checked
    against `budget` before it is rendered; rendering stops at the first page past it."""
    import pypdfium2 as pdfium

    budget = budget or PixelBudget("PDF")
    doc = pdfium.PdfDocument(str(source) if isinstance(source, Path) else source)
    try:
        n = len(doc) if max_pages is None else min(len(doc), max_pages)
        for i in range(n):
            page = doc[i]
            try:
                w, h = page.get_size()
                scale = _pdf_scale(w, h, dpi)
                if not budget.take(i + 1, max(1, round(abs(w) * scale)), max(1, round(abs(h) * scale))):
                    return
                bitmap = page.render(scale=scale)
                try:
                    image = bitmap.to_pil().convert("RGB")
                finally:
                    bitmap.close()
            finally:
                page.close()
            yield RenderedPage(i + 1, image)
            del image
    finally:
        doc.close()


def render_file(path: Path, mime: str, dpi: int, budget: PixelBudget | None = None) -> Iterator[RenderedPage]:
    """The page images of one ingested file, one at a time: PDF pages, or the frames of an image file (every
    frame's size checked before any is decoded, relayrag.ingest.image.iter_frames); none for text formats."""
    budget = budget or PixelBudget(path.name)
    if mime == PDF_MIME:
        yield from render_pdf(path, dpi, budget=budget)
    elif mime.startswith("image/"):
        from relayrag.ingest.image import iter_frames
        for i, frame in enumerate(iter_frames(path, path.name), start=1):
            image = _fit(frame, MAX_SIDE)
            del frame
            if not budget.take(i, *image.size):
                return
            yield RenderedPage(i, image)
            del image


def _fit(image: Any, side: int) -> Any:
    w, h = image.size
    if max(w, h) <= side:
        return image
    s = side / max(w, h)
    return image.resize((max(1, round(w * s)), max(1, round(h * s))))


def _png(image: Any) -> bytes:
    """PNG bytes; a page without colour is stored as 8-bit grayscale (examples/pdfs at 96 dpi: 127 KB a page
    mean instead of 293 KB as RGB; zlib level 6 ~ 60-110 ms a page on this machine, Pillow's optimize=True took
    740 ms for the same bytes)."""
    import numpy as np
    small = np.asarray(_fit(image, 128).convert("RGB"), dtype=np.int16)
    colourless = int(np.abs(small - small.mean(axis=2, keepdims=True)).max()) <= 6
    buf = io.BytesIO()
    (image.convert("L") if colourless else image).save(buf, format="PNG")
    return buf.getvalue()


def read_set(store: BlobStore, collection: str, sha256: str) -> list[dict] | None:
    """The pages of a complete set (its set.json), None if there is none."""
    key = set_prefix(collection, sha256) + "set.json"
    try:
        return json.loads(store.get_bytes(key))["pages"]
    except (FileNotFoundError, KeyError, ValueError):
        return None
    except OSError:
        return None


def write_set(store: BlobStore, collection: str, sha256: str, pages: Iterable[RenderedPage]) -> list[dict]:
    """Store the images and thumbnails of one file's pages, set.json last. Returns the set's page entries.
    `pages` is consumed one page at a time (render_file yields them lazily): each page is encoded and stored
    before the next is rendered."""
    p = set_prefix(collection, sha256)
    entries = []
    for rp in pages:
        img = _png(rp.image)
        thumb = _png(_fit(rp.image, THUMB_SIDE))
        image_key, thumb_key = p + f"page-{rp.page:04d}.png", p + f"thumb-{rp.page:04d}.png"
        store.put_bytes(image_key, img)
        store.put_bytes(thumb_key, thumb)
        w, h = rp.image.size
        entries.append({"page": rp.page, "image": image_key, "thumbnail": thumb_key, "width": w, "height": h,
                        "bytes": len(img) + len(thumb)})
        del rp, img, thumb  # the loop variable would keep this page's image alive while the next one renders
    store.put_bytes(p + "set.json", json.dumps({"sha256": sha256, "created_at": time.time(),
                                                "pages": entries}).encode("utf-8"))
    return entries


def page_images(store: BlobStore, collection: str, sha256: str, path: Path, mime: str, dpi: int) -> tuple[list[dict], bool]:
    """(page entries of the file's set, rendered now?): an existing complete set is reused as it is."""
    have = read_set(store, collection, sha256)
    if have is not None:
        return have, False
    return write_set(store, collection, sha256, render_file(path, mime, dpi)), True


def load_page_image(store: BlobStore, collection: str, sha256: str, page: int) -> Any:
    """One stored page image as an RGB PIL image."""
    from PIL import Image
    data = store.get_bytes(set_prefix(collection, sha256) + f"page-{page:04d}.png")
    return Image.open(io.BytesIO(data)).convert("RGB")


def write_version_pages(store: BlobStore, collection: str, version: str, pages: list[dict]) -> None:
    store.put_bytes(pages_key(collection, version), jsonl.dump_lines(pages))


def copy_version_pages(store: BlobStore, collection: str, source: str, target: str) -> int:
    """Copy version `source`'s page files (pages.jsonl and the colpali/ page-vector index) to version `target`
    (a segment merge's new version, which holds the same sources). Returns the number of files copied."""
    from relayrag.retrieval.colpali import INDEX_DIR

    src, dst = f"snapshots/{collection}/{source}/", f"snapshots/{collection}/{target}/"
    n = 0
    for key in store.list(src):
        rest = key[len(src):]
        if rest != "pages.jsonl" and not rest.startswith(INDEX_DIR + "/"):
            continue  # a pre-segment version also holds its chunks and vectors here: the merge rewrites those
        store.put_bytes(dst + rest, store.get_bytes(key))
        n += 1
    return n


def read_version_pages(store: BlobStore, collection: str, version: str | None) -> list[dict]:
    """The page entries a version holds ([] for a version without page images, e.g. written before them)."""
    if not version:
        return []
    key = pages_key(collection, version)
    try:
        if not store.exists(key):
            return []
        return jsonl.loads(store.get_bytes(key))
    except (OSError, ValueError):
        return []


def gc_page_sets(store: BlobStore, collection: str, keep_versions: set[str], min_age_s: float = 0.0) -> list[str]:
    """Delete every page set of `collection` that none of `keep_versions` references and that is at least
    `min_age_s` old (its set.json's created_at; an incomplete set by the time it is found twice). Returns the
    sha256 of the sets removed."""
    validate_collection(collection)
    root = f"pages/{collection}/"
    referenced = {e["sha256"] for v in keep_versions for e in read_version_pages(store, collection, v)}
    present = {key[len(root):].split("/", 1)[0] for key in store.list(root, include_partial=True)}
    removed = []
    now = time.time()
    for sha in sorted(present - referenced):
        if not sha:
            continue
        if min_age_s > 0:
            try:
                created = json.loads(store.get_bytes(root + sha + "/set.json")).get("created_at", 0.0)
            except (OSError, ValueError):
                created = 0.0  # incomplete: its writer may still be at work unless it is old; keep it this time
                if not _incomplete_seen_before(store, root + sha + "/"):
                    continue
            if now - float(created) < min_age_s:
                continue
        store.delete_prefix(root + sha + "/")
        removed.append(sha)
    return removed


def _incomplete_seen_before(store: BlobStore, set_root: str) -> bool:
    """An incomplete set is removed on the second GC that finds it (a marker remembers the first)."""
    marker = set_root + "incomplete.json"
    if store.exists(marker):
        try:
            return time.time() - json.loads(store.get_bytes(marker)).get("at", 0.0) > 900.0
        except (OSError, ValueError):
            return True
    store.put_bytes(marker, json.dumps({"at": time.time()}).encode("utf-8"))
    return False
