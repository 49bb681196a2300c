"""Image files (PNG, JPEG, TIFF) as one-page documents: the text comes from OCR (tesseract), and the image
itself becomes the document's page image (relayrag.ingest.pages), so page-image search can find it.

A multi-frame TIFF is read frame by frame, one page per frame (a scanned form of several sheets): every frame's
size is checked before the first is decoded (per frame and for the file), then frames are decoded one at a time.
Errors: bytes that Pillow cannot open as the suffix says, or an image past the decompression-bomb limit,
raise IngestError; an image with no readable text (a photo, a chart without labels) still ingests as a page
with its file name as text, with a warning, so the page image can be found by page-image search.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

from relayrag.errors import IngestError
from relayrag.ingest.document import _MIME, LoadedDocument, Page
from relayrag.ingest.limits import FileBudget

MAX_IMAGE_PIXELS = 60_000_000  # per frame: the PDF renderer's cap (ingest.pdf.ocr._Renderer.MAX_PIXELS)
MAX_FILE_PIXELS = 1_000_000_000  # all frames of one file together (a 500-frame TIFF of 2 MP scans passes)
MAX_FRAMES = 500


def frame_limit() -> int:
    """Pixels one frame may have: MAX_IMAGE_PIXELS, or Pillow's own Image.MAX_IMAGE_PIXELS when lower."""
    from PIL import Image
    pillow = Image.MAX_IMAGE_PIXELS
    return min(MAX_IMAGE_PIXELS, int(pillow)) if pillow else MAX_IMAGE_PIXELS


def check_frames(im, name: str) -> int:
    """Check every frame of an open image before any is decoded (Pillow's seek reads a frame's header, not its
    pixels): at most MAX_FRAMES frames, each at most frame_limit() pixels, all together at most MAX_FILE_PIXELS.
    Returns the frame count; IngestError naming the frame and the bound otherwise."""
    n = getattr(im, "n_frames", 1)
    if n > MAX_FRAMES:
        raise IngestError(f"{name}: {n:,} frames; relayrag reads images of at most {MAX_FRAMES} frames")
    per_frame, total = frame_limit(), 0
    for i in range(n):
        if n > 1:
            im.seek(i)
        w, h = im.size
        if w * h > per_frame:
            where = f"frame {i + 1} is" if n > 1 else "image of"
            raise IngestError(f"{name}: {where} {w}x{h} pixels, larger than the {per_frame:,} pixels relayrag "
                              f"decodes per frame")
        total += w * h
        if total > MAX_FILE_PIXELS:
            raise IngestError(f"{name}: its {n} frames hold more than {MAX_FILE_PIXELS:,} pixels together "
                              f"(past frame {i + 1}); relayrag decodes at most that much per file")
    if n > 1:
        im.seek(0)
    return n


def iter_frames(source: Path | bytes, name: str) -> Iterator:
    """The frames of an image file as RGB PIL images (one for PNG/JPEG, each frame of a TIFF), decoded one at a
    time after every frame's size was checked (check_frames): memory holds one frame, whatever the count.
    Raises IngestError when the bytes are not an image or the image is too large to decode safely."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(source if isinstance(source, Path) else io.BytesIO(source)) as im:
            n = check_frames(im, name)
            for i in range(n):
                if n > 1:
                    im.seek(i)
                frame = im.convert("RGB")
                yield frame
                del frame
    except IngestError:
        raise
    except (UnidentifiedImageError, Image.DecompressionBombError) as exc:
        raise IngestError(f"{name}: not a readable image ({type(exc).__name__}: {exc})") from None
    except (OSError, ValueError, SyntaxError, EOFError) as exc:  # truncated or corrupt data
        raise IngestError(f"{name}: corrupt image ({exc})") from None


def open_frames(data: bytes, name: str) -> list:
    """All frames at once (iter_frames as a list): for callers that need them together; ingestion streams."""
    return list(iter_frames(data, name))


def load_image(path: Path, data: bytes, lang: str = "eng", budget: FileBudget | None = None) -> LoadedDocument:
    """An image file as a LoadedDocument: one Page per frame, text by OCR ("ocr"), or the file's stem with a
    warning when OCR is unavailable or finds nothing (the page is still indexed for its image)."""
    from relayrag.ingest.pdf.ocr import _TESSERACT_MISSING, _OcrFailed, _ocr_page, _tesseract_available

    pages, warnings = [], []
    for i, frame in enumerate(iter_frames(data, path.name), start=1):
        if budget is not None:
            budget.check(f"page {i}")
        text = ""
        if not _tesseract_available():
            warnings.append(f"page {i}: {_TESSERACT_MISSING}; indexed by its file name only")
        else:
            try:
                text = _ocr_page(frame, lang).text.strip()
            except _OcrFailed as exc:
                warnings.append(f"page {i}: OCR failed ({exc}); indexed by its file name only")
            else:
                if not text:
                    warnings.append(f"page {i}: OCR found no text; indexed by its file name only")
        del frame  # only the text is kept: the next frame decodes into the memory this one leaves
        pages.append(Page(i, text or path.stem.replace("_", " ").replace("-", " "), "ocr" if text else "name"))
    return LoadedDocument(source=str(path), title=path.stem, pages=pages, mime=_MIME[path.suffix.lower()],
                          warnings=warnings)
