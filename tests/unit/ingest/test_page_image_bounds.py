"""Page images and image frames in bounded memory (issue 24 rows 1 and 2): a PDF's pages and a TIFF's frames are
rendered, encoded and stored one at a time; every frame's size is checked before any is decoded; the pixels of
one file's page images and of one image file's frames are bounded. Each test builds its own small bomb."""

from __future__ import annotations

import gc
import io
import weakref
from pathlib import Path

import pytest

from relayrag.backends.blobstore import LocalBlobStore
from relayrag.errors import IngestError
from relayrag.ingest import image as imagemod
from relayrag.ingest import pages as pagestore
from relayrag.ingest.loaders import load_document

SHA = "a" * 64


def _pdf(path: Path, n: int, width_pt: float, height_pt: float) -> Path:
    """A PDF of `n` empty pages of width x height points (pypdfium2 writes it)."""
    import pypdfium2 as pdfium
    doc = pdfium.PdfDocument.new()
    for _ in range(n):
        doc.new_page(width_pt, height_pt).close()
    doc.save(str(path))
    doc.close()
    return path


def _tiff(path: Path, sizes: list[tuple[int, int]]) -> Path:
    from PIL import Image
    frames = [Image.new("L", s, 255) for s in sizes]
    frames[0].save(path, format="TIFF", save_all=True, append_images=frames[1:], compression="tiff_deflate")
    return path


class _LiveImages:
    """Spies on pages._png (every page image and thumbnail passes through it once): counts how many page images
    handed to it earlier are still alive when the next one arrives."""

    def __init__(self, monkeypatch):
        self.refs: list[weakref.ref] = []
        self.most_alive = 0
        real = pagestore._png

        def spy(image):
            if max(image.size) > pagestore.THUMB_SIDE:  # a page image (a thumbnail follows its page's image)
                gc.collect()
                alive = sum(1 for r in self.refs if r() is not None)
                self.most_alive = max(self.most_alive, alive)
                self.refs.append(weakref.ref(image))
            return real(image)

        monkeypatch.setattr(pagestore, "_png", spy)


@pytest.mark.parametrize("kind", ["pdf", "tiff"])
def test_pages_are_rendered_and_stored_one_at_a_time(tmp_path, monkeypatch, kind):
    live = _LiveImages(monkeypatch)
    if kind == "pdf":
        src, mime = _pdf(tmp_path / "big.pdf", 12, 14400, 14400), "application/pdf"
    else:
        src, mime = _tiff(tmp_path / "scan.tiff", [(600, 800)] * 12), "image/tiff"
    store = LocalBlobStore(tmp_path / "blobs")
    entries = pagestore.write_set(store, "c", SHA, pagestore.render_file(src, mime, 96))
    assert [e["page"] for e in entries] == list(range(1, 13))
    assert len(live.refs) == 12
    assert live.most_alive == 0  # no earlier page's image is alive while the next one is encoded
    if kind == "pdf":  # a 14400 pt square page is rendered with its long side at MAX_SIDE, not at 96 dpi
        assert (entries[0]["width"], entries[0]["height"]) == (pagestore.MAX_SIDE, pagestore.MAX_SIDE)


def test_page_images_of_one_file_are_bounded_in_pixels(tmp_path, monkeypatch):
    monkeypatch.setattr(pagestore, "MAX_FILE_PAGE_PIXELS", 3 * 816 * 1056 + 10)  # three Letter pages at 96 dpi
    pdf = _pdf(tmp_path / "long.pdf", 7, 612, 792)
    bound = pagestore.PixelBudget("long.pdf")
    store = LocalBlobStore(tmp_path / "blobs")
    entries = pagestore.write_set(store, "c", SHA, pagestore.render_file(pdf, "application/pdf", 96, bound))
    assert [e["page"] for e in entries] == [1, 2, 3]
    assert bound.stopped_at == 4 and "before page 4" in bound.note()
    assert store.exists(pagestore.set_prefix("c", SHA) + "set.json")


def test_every_tiff_frame_is_checked_before_decoding(tmp_path, monkeypatch):
    """A small first frame used to hide large later frames: only the first was checked."""
    monkeypatch.setattr(imagemod, "MAX_IMAGE_PIXELS", 50_000)
    tiff = _tiff(tmp_path / "hidden.tiff", [(100, 100), (100, 100), (400, 400)])
    decoded = []
    from PIL import Image
    real_convert = Image.Image.convert

    def convert(self, *a, **k):
        decoded.append(self.size)
        return real_convert(self, *a, **k)

    monkeypatch.setattr(Image.Image, "convert", convert)
    with pytest.raises(IngestError, match=r"hidden.tiff: frame 3 is 400x400 pixels, larger than the 50,000"):
        list(imagemod.iter_frames(tiff, "hidden.tiff"))
    assert decoded == []  # refused before the first frame was decoded
    with pytest.raises(IngestError, match="frame 3"):
        load_document(tiff)


def test_total_pixels_of_an_image_file_are_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(imagemod, "MAX_FILE_PIXELS", 40_000)
    tiff = _tiff(tmp_path / "many.tiff", [(100, 100)] * 5)
    with pytest.raises(IngestError, match=r"many.tiff: its 5 frames hold more than 40,000 pixels together"):
        list(imagemod.iter_frames(tiff, "many.tiff"))
    ok = _tiff(tmp_path / "four.tiff", [(100, 100)] * 4)
    assert len(list(imagemod.iter_frames(ok, "four.tiff"))) == 4


def test_pillow_limit_applies_when_it_is_lower(monkeypatch):
    from PIL import Image
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1_000)
    buf = io.BytesIO()
    Image.new("L", (40, 40)).save(buf, format="PNG")
    with pytest.raises(IngestError, match="1,000 pixels"):
        list(imagemod.iter_frames(buf.getvalue(), "x.png"))
